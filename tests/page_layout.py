"""What a reader at a given window width would find wrong with a page's layout, from what page_layout.js measured
(Chromium.check(..., width=...) records it): a chart wider than the text column (or outside it), a legend cut off
by its chart's edge, a table wider than its box (which then scrolls sideways), a page that scrolls sideways. A chart
that opts out of fitting (charts.scrolling) is judged by its scrolling box, which must fit the column; the chart
inside it may be wider."""
from __future__ import annotations

SLACK_PX = 1  # sub-pixel rounding of boxes


def problems(layout: dict) -> list[str]:
    """One line per problem, naming the chart (its figure label when it has one) and the sizes."""
    found = []
    if not layout["column"]["found"]:
        found.append("no text column found on the page (the column selector matched nothing)")
    column = layout["column"]
    for chart in layout["charts"]:
        found += chart_problems(chart, column)
    found += [f"{t['name']}: {t['width']} px wide in a box of {t['room']:.0f} px" + (" (as cards)" if t["cards"] else "")
              for t in layout["tables"] if t["width"] > t["room"] + SLACK_PX]  # a table fits, or is shown as cards
    if layout["scroll"] > layout["view"] + SLACK_PX:
        wide = ", ".join(f"{w['element']} (to {w['right']} px)" for w in layout["wide"]) or "nothing found outside"
        found.append(f"the page scrolls sideways: {layout['scroll']} px of content in a {layout['view']} px window; "
                     f"sticking out: {wide}")
    return found


def chart_problems(chart: dict, column: dict) -> list[str]:
    name = f"chart {chart['figure'] or chart['id']}"
    box, found = chart["box"], []
    if box["left"] < column["left"] - SLACK_PX or box["right"] > column["right"] + SLACK_PX:
        what = "its scrolling box" if chart["scrolls"] else "it"
        found.append(f"{name}: {what} is {box['width']:.0f} px wide, from {box['left']:.0f} to {box['right']:.0f} px; "
                     f"the text column is {column['width']:.0f} px, from {column['left']:.0f} to {column['right']:.0f} px")
    svg = chart["svg"]
    for legend in chart["legends"] if svg else []:
        if any((legend["left"] < svg["left"] - SLACK_PX, legend["right"] > svg["right"] + SLACK_PX,
                legend["top"] < svg["top"] - SLACK_PX, legend["bottom"] > svg["bottom"] + SLACK_PX)):
            found.append(f"{name}: a legend is cut off: it spans {legend['left']:.0f}–{legend['right']:.0f} px across and "
                         f"{legend['top']:.0f}–{legend['bottom']:.0f} px down, the chart {svg['left']:.0f}–{svg['right']:.0f} "
                         f"and {svg['top']:.0f}–{svg['bottom']:.0f}")
    return found
