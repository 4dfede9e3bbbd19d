"""Every page of the rendered book checked by axe-core (node_modules/axe-core, pinned in package.json) as a reader's
browser shows it, at a desktop's width and a phone's, with its charts drawn: no serious or critical violation of the
WCAG 2.1 A and AA rules axe checks (contrast, names of links and images, table headers, …). Issue 41, item 6."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness import ROOT

from book_pages import book_chapters, html_path  # noqa: E402,I001 (beside this file)
from browser import serve  # noqa: E402

PAGES = [html_path(chapter) for chapter in book_chapters()]
WIDTHS = (1400, 390)  # as tests/test_site.py reads each page: a laptop's browser, a phone held upright
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
DRAWN_JS = """() => Array.from(document.querySelectorAll('.lab-chart')).every(
  el => el.querySelector('svg, canvas') && el.getAttribute('data-lab-state') !== 'drawing')"""
# axe's WCAG 2.0/2.1 A and AA rules; a violation's impact is minor, moderate, serious or critical.
AXE_JS = """async () => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
                                          resultTypes: ['violations']});
  return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => ({
    rule: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
    where: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + (n.failureSummary || '').split('\\n')[1])}));
}"""


@pytest.fixture(scope="module")
def site(book) -> Iterator[str]:
    with serve(book) as base:
        yield base


def violations(browser, url: str, width: int) -> list[dict]:
    """axe's serious and critical violations on the page at `url`, in a window `width` px wide, charts drawn."""
    page, _ = browser.open(url, width=width)
    try:
        page.wait_for_load_state("load")
        page.wait_for_function(DRAWN_JS, timeout=30_000)
        page.add_script_tag(path=str(AXE))
        return page.evaluate(AXE_JS)
    finally:
        page.context.close()


def test_axe_core_is_installed_where_the_tests_load_it():
    assert AXE.is_file(), f"{AXE} is missing: `npm ci` installs the versions package-lock.json pins (`invoke setup`)"


@pytest.mark.parametrize("width", WIDTHS, ids=[f"{w}px" for w in WIDTHS])
@pytest.mark.parametrize("page", PAGES)
def test_no_page_has_a_serious_or_critical_accessibility_violation(page, width, site, browser):
    found = violations(browser, site + page, width)
    assert not found, f"{page} at {width} px:\n  " + "\n  ".join(
        f"{v['impact']} {v['rule']} ({v['count']}×): {v['help']}; {v['where']}" for v in found)


def test_axe_finds_what_it_names(tmp_path, browser):
    """The check can fail: a page with an image without a text alternative, grey on white text and an empty link."""
    (tmp_path / "index.html").write_text(
        '<!doctype html><html lang="en"><head><title>t</title></head><body><main><h1>t</h1>'
        '<img src="x.png"><p style="color:#bbb;background:#fff">faint</p><a href="#x"></a></main></body></html>')
    with serve(tmp_path) as base:
        found = {v["rule"] for v in violations(browser, base + "index.html", 1400)}
    assert {"image-alt", "color-contrast", "link-name"} <= found, found
