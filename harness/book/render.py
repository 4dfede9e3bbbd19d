"""The book's chart renderer: every Altair chart as Markdown holding a raw HTML block that draws it offline.


Offline charts. Altair's own HTML renderer fetches vega, vega-lite and vega-embed from a CDN when the
page opens, so a chart is blank without internet and depends on a third party at read time. The book
serves the copies pinned in package.json instead: `npm ci` puts them in node_modules/, `_quarto.yml`
lists the three files as project resources (Quarto copies them to _book/node_modules/), and each chart
loads them relative to the site root that Quarto writes into every page (<meta name="quarto:offset">).
A page without that tag (a test page) is taken to sit one folder below the root, as chapters/ does.

No cell emits HTML: charts are Markdown holding a raw HTML block, tables are Markdown (harness.book.tables).
Quarto adds require.js and jQuery from a CDN to any page with an HTML cell output; offline they fail to
load, and online require.js turns the chart libraries into AMD modules (the loader copes with that too).

Charts fit the text column. Vega-Lite's own answer, `width: "container"`, serves single and layered views
only, and the book also draws facets (row and column) and concatenations. So the loader (chart_loader.js)
does one thing for every kind: it draws the chart as designed, and when that is wider than its column it
multiplies every width in the spec (views, default view sizes, band steps) by one factor and draws again,
until the whole chart (axes, labels, legend, the actions button) is as wide as the column; a top legend
too wide for the column gets columns of entries first, and panels side by side (hconcat) that do not fit
are stacked one above the other. It fits again when the column's width changes
(a phone turned, a window resized). Chapter code gives design widths (charts.WIDTH) and never a width
from the page. A chart that must keep its size (a wide table-like chart) opts out with
`charts.scrolling(chart)`: it is drawn as designed inside a box of its own that scrolls sideways.
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path

import altair as alt

from harness.book import render_cache
from harness.book.charts import THEME

RENDERER = "concurrency-lab-offline"


# Site-relative paths of the chart libraries, in load order (vega-lite needs vega, vega-embed both).
VEGA_SCRIPTS = (
    "node_modules/vega/build/vega.min.js",
    "node_modules/vega-lite/build/vega-lite.min.js",
    "node_modules/vega-embed/build/vega-embed.min.js",
)


FALLBACK_ROOT = "../"  # where the site root is for a page without Quarto's offset tag


# svg: crisp, and its marks are DOM nodes a test can count; no "open in editor" (it needs the internet).
EMBED_OPTIONS = {"renderer": "svg", "actions": {"export": True, "source": False, "compiled": False, "editor": False}}


# Loads the libraries once per page, then draws the chart fitted to its column (see the module's docstring).
LOADER_JS = (Path(__file__).parent / "chart_loader.js").read_text().strip()


def _script_json(value) -> str:
    """JSON safe inside <script>: no '<' can close the tag early."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")


def chart_html(spec: dict, embed_options: dict | None = None) -> str:
    """A chart as an HTML fragment: its div, its spec as JSON, and the loader call. A chart that does not fit
    (`scrolling`) sits in a box of its own that scrolls sideways, so the page never does."""
    chart_id = f"lab-chart-{uuid.uuid4().hex[:10]}"
    args = ", ".join(_script_json(v) for v in (chart_id, list(VEGA_SCRIPTS), FALLBACK_ROOT,
                                                {**EMBED_OPTIONS, **(embed_options or {})}))
    html = (f'<div class="lab-chart" id="{chart_id}"></div>\n'
            f'<script type="application/json" id="{chart_id}-spec">{_script_json(spec)}</script>\n'
            f"<script>{LOADER_JS}({args});</script>\n")
    return html if fits(spec) else f'<div class="lab-chart-scroll" style="overflow-x: auto; max-width: 100%">\n{html}</div>\n'


def fits(spec: dict) -> bool:
    """Whether the loader fits the chart to its column (the default) or draws it at its own size."""
    return spec.get("usermeta", {}).get("lab", {}).get("fit", True) is not False


def raw_html(html: str) -> str:
    """HTML as Markdown that Pandoc passes through untouched."""
    return f"```{{=html}}\n{html}\n```\n"


def offline_renderer(spec: dict, **metadata) -> dict:
    """A chart as Markdown holding raw HTML, not as a text/html output: Quarto adds require.js and jQuery from a
    CDN to every page with an HTML cell output, which an offline reader cannot load."""
    return {"text/markdown": raw_html(chart_html(spec, metadata.get("embed_options"))), "text/plain": "<chart>"}


def setup() -> None:
    """What every page calls in its first cell (importing the book sets nothing up): the render cache's note of what
    the page reads, the book's theme, the offline renderer, and Altair's guard of 5000 rows a chart may embed
    (builders aggregate first, so it stays)."""
    render_cache.record()  # inside a page Quarto renders: note what it reads, so its frozen output is never stale
    alt.renderers.register(RENDERER, offline_renderer)
    alt.renderers.enable(RENDERER)
    alt.theme.enable(THEME)
    alt.data_transformers.enable("default", max_rows=5000)
