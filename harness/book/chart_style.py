"""How every chart of the book looks and reads: the theme, design widths, colours, legends, tooltips, scales.

Chapters import these from here or from harness.book.charts (which uses them). The conventions:

- Widths are design widths (WIDTH): the renderer fits every chart to the text column at any window width
  (harness.book.render). A chart that must keep its size opts out with `scrolling(chart)`.
- Series and legend entries are named in words a reader uses ("answered", "busy threads", "ceiling (model)"),
  and keep one colour across the book (PALETTE).
- Tooltips name their fields in words and format numbers the book's way: `tip("peak_tps:Q", "transactions/s")`
  gives "transactions/s: 8,293", never "peak_tps: 8293". Numbers without a format get thousands separators and at
  most six significant digits (the theme's tooltip format).
- Axes cover the data, not the decades around it: `log_scale(values)` for a log axis.
"""
from __future__ import annotations

import json
import math
import re

import altair as alt
import pandas as pd

from harness.book.prose import in_book_style

THEME = "concurrency-lab"


WIDTH, ROW_HEIGHT = 600, 150


T_TITLE = "seconds since the first request"


# An axis of counts: 4,000 and 1,500. d3's "," alone has no type, so Vega rounds each tick to the axis's precision
# in significant digits and writes "4e+3" and "1.5e+3"; a fixed-point type keeps whole numbers.
THOUSANDS_AXIS = ",~f"
TOOLTIP_NUMBER_FORMAT = ",~r"  # 8,293; 0.25 (not 0.25000000000000006); d3's minus sign


# One colour per series, the same in every chart of the book.
PALETTE = {
    "answered": "#4c78a8",
    "failed": "#e45756",
    "answered (model)": "#222222",
    "failed (model)": "#b279a2",
    "established": "#4c78a8",
    "accept queue": "#f58518",
    "ceiling (model)": "#e45756",
    "busy threads": "#54a24b",
    "max threads (model)": "#e45756",
    "k6": "#4c78a8",
    "ab": "#f58518",
    "model": "#222222",
}
# The names these series had before they were named in words, for chapter code that still uses them.
OLD_SERIES_NAMES = {"measured: ok": "answered", "measured: failed": "failed", "model: ok": "answered (model)",
                    "model: failed": "failed (model)"}
PALETTE.update({old: PALETTE[new] for old, new in OLD_SERIES_NAMES.items()})


@alt.theme.register(THEME, enable=False)
def lab_theme() -> alt.theme.ThemeConfig:
    """Quiet axes, legend on top (where a reader looks first) with whole labels, the page's sans-serif font,
    tooltips with thousands separators."""
    return {
        "config": {
            "font": "system-ui, -apple-system, 'Segoe UI', sans-serif",
            "view": {"stroke": None},
            "axis": {"gridColor": "#eeeeee", "labelFontSize": 11, "titleFontSize": 12, "titleFontWeight": "normal"},
            # labelLimit 0: a label is never cut to "…"; the renderer breaks a legend too wide into columns.
            "legend": {"orient": "top", "labelFontSize": 11, "titleFontSize": 11, "symbolStrokeWidth": 2,
                       "labelLimit": 0},
            "header": {"labelFontSize": 12, "labelFontWeight": "bold", "labelAngle": 0, "labelAlign": "left"},
            "title": {"fontSize": 14, "anchor": "start"},
            "tooltipFormat": {"numberFormat": TOOLTIP_NUMBER_FORMAT},
        }
    }


def scrolling(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """Draw `chart` at its designed size inside a box of its own that scrolls sideways, instead of fitting it to the
    column: for a wide, table-like chart whose columns must stay readable. The page itself never scrolls."""
    return chart.properties(usermeta={"lab": {"fit": False}})


D3_FORMAT = re.compile(r"^(?P<head>(?:.?[<>=^])?[-+( ]?[$#]?0?\d*)(?P<comma>,?)(?P<tail>(?:\.\d+)?~?(?P<type>[a-z%]?))$")


def thousands(fmt: str) -> str:
    """A d3 number format with thousands separators: ".1f" → ",.1f", "+.0%" → "+,.0%"; one that has them, or an SI,
    exponent or non-decimal one ("s", "e", "x"), as it is."""
    match = D3_FORMAT.match(fmt)
    if not match or match["comma"] or match["type"] in ("s", "e", "x", "o", "b", "c"):
        return fmt
    return f"{match['head']},{match['tail']}"


def tip(field: str, title: str, format: str | None = None) -> alt.Tooltip:  # noqa: A002 - Altair's name
    """One tooltip line: `field` with its type ("peak_tps:Q"), a title in words, numbers with thousands separators
    (`format` a d3 format: ".1f", ".0%"; without one the theme's)."""
    if format is None:
        return alt.Tooltip(field, title=title)
    return alt.Tooltip(field, title=title, format=thousands(format))


def series_color(series: pd.Series, title: str | None = None) -> alt.Color:
    """Fixed colours for the series present, in PALETTE's order."""
    present = [name for name in PALETTE if name in set(series)]
    scale = alt.Scale(domain=present, range=[PALETTE[name] for name in present])
    return alt.Color("series:N", scale=scale, title=title)


def legend_highlight() -> alt.Parameter:
    """Click a legend entry to highlight that series (shift-click adds more); double-click resets."""
    return alt.selection_point(fields=["series"], bind="legend")


def faded_unless(selection: alt.Parameter) -> dict:
    return alt.condition(selection, alt.value(1.0), alt.value(0.15))


# A panel title's width in px, cut with "…" past it: a title is not scaled with its chart, and the renderer narrows a
# chart to a phone's column (about 340 px) by its plot width alone, so a longer title would stick out of the column.
HEADER_LIMIT = 260


def step_header(whys: dict[str, str]) -> alt.Header:
    """A small multiple's panel title: its step and what the step is for ("a-300-pv: 300 users, 200 threads: …"),
    not the bare id, cut with an ellipsis past HEADER_LIMIT px; the spec's words in the book's number format."""
    cases = "".join(f"datum.value === {json.dumps(step)} ? {json.dumps(f'{step}: {in_book_style(why)}' if why else step)} : "
                    for step, why in whys.items())
    return alt.Header(labelOrient="top", labelAnchor="start", labelLimit=HEADER_LIMIT, labelExpr=cases + "datum.value")


def log_scale(values, margin: float = 1.25) -> alt.Scale:
    """A log scale over the data (with a small margin), not rounded out to the powers of ten around it."""
    present = [float(v) for v in values if v is not None and not pd.isna(v) and float(v) > 0]
    if not present:
        return alt.Scale(type="log")
    low, high = min(present) / margin, max(present) * margin
    return alt.Scale(type="log", domain=[_round_down(low), _round_up(high)], nice=False)


def _round_down(value: float) -> float:
    step = 10 ** math.floor(math.log10(value))
    return math.floor(value / step) * step


def _round_up(value: float) -> float:
    step = 10 ** math.floor(math.log10(value))
    return math.ceil(value / step) * step
