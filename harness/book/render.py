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
"""
from __future__ import annotations

import json
import uuid

import altair as alt

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


# Loads the libraries once per page, then draws the chart; a failure shows in the page and the console.
# Where require.js is on the page (Quarto adds it, from a CDN, to pages with HTML cell outputs), the libraries'
# UMD bundles register as AMD modules instead of globals, so they are asked of require.js by name.
LOADER_JS = """(function (id, scripts, fallbackRoot, options) {
  var meta = document.querySelector('meta[name="quarto:offset"]');
  var root = meta ? meta.getAttribute("content") : fallbackRoot;
  if (root && root.slice(-1) !== "/") root += "/";
  function load(src) {
    return new Promise(function (resolve, reject) {
      var tag = document.createElement("script");
      tag.src = root + src;
      tag.onload = resolve;
      tag.onerror = function () { reject(new Error("cannot load " + tag.src)); };
      document.head.appendChild(tag);
    });
  }
  function viaScriptTags() {
    return scripts.reduce(function (ready, src) {
      return ready.then(function () { return load(src); });
    }, Promise.resolve()).then(function () { return window.vegaEmbed; });
  }
  function viaRequireJs() {
    var paths = {};
    scripts.forEach(function (src) { paths[src.split("/")[1]] = root + src.replace(/\\.js$/, ""); });
    window.requirejs.config({paths: paths});
    return new Promise(function (resolve, reject) {
      window.requirejs(["vega-embed"], resolve, function (err) {
        reject(new Error("cannot load the chart libraries through require.js: " + err.message));
      });
    });
  }
  var amd = typeof window.define === "function" && window.define.amd && typeof window.requirejs === "function";
  window.labVega = window.labVega || (amd ? viaRequireJs() : viaScriptTags());
  var el = document.getElementById(id);
  var spec = JSON.parse(document.getElementById(id + "-spec").textContent);
  window.labVega
    .then(function (embed) { return embed(el, spec, options); })
    .catch(function (err) {
      el.innerHTML = '<p class="lab-chart-error" style="color:#b00"></p>';
      el.firstChild.textContent = "Chart not drawn: " + err.message;
      console.error(err);
    });
})"""


def _script_json(value) -> str:
    """JSON safe inside <script>: no '<' can close the tag early."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")


def chart_html(spec: dict, embed_options: dict | None = None) -> str:
    """A chart as an HTML fragment: its div, its spec as JSON, and the loader call."""
    chart_id = f"lab-chart-{uuid.uuid4().hex[:10]}"
    args = ", ".join(_script_json(v) for v in (chart_id, list(VEGA_SCRIPTS), FALLBACK_ROOT,
                                                {**EMBED_OPTIONS, **(embed_options or {})}))
    return (f'<div class="lab-chart" id="{chart_id}"></div>\n'
            f'<script type="application/json" id="{chart_id}-spec">{_script_json(spec)}</script>\n'
            f"<script>{LOADER_JS}({args});</script>\n")


def raw_html(html: str) -> str:
    """HTML as Markdown that Pandoc passes through untouched."""
    return f"```{{=html}}\n{html}\n```\n"


def offline_renderer(spec: dict, **metadata) -> dict:
    """A chart as Markdown holding raw HTML, not as a text/html output: Quarto adds require.js and jQuery from a
    CDN to every page with an HTML cell output, which an offline reader cannot load."""
    return {"text/markdown": raw_html(chart_html(spec, metadata.get("embed_options"))), "text/plain": "<chart>"}


alt.renderers.register(RENDERER, offline_renderer)


alt.renderers.enable(RENDERER)


alt.theme.enable(THEME)


# Altair refuses to embed more than 5000 rows (its default): builders aggregate first, so keep that guard.
alt.data_transformers.enable("default", max_rows=5000)
