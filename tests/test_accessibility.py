"""axe-core (node_modules/axe-core, pinned in package.json) as the site's checks run it: every page of the rendered
book, at a desktop's width and a phone's, its charts drawn, has no serious or critical violation of the WCAG 2.1 A
and AA rules axe checks (contrast, names of links and images, table headers, …). Issue 41, item 6. The pages are
checked in tests/test_site.py, on the same visit as the rest of what a reader sees (browser.axe_violations); here,
that the check is installed and can fail."""
from __future__ import annotations

from browser import AXE, axe_violations, serve  # noqa: I001 (beside this file)


def test_axe_core_is_installed_where_the_tests_load_it():
    assert AXE.is_file(), f"{AXE} is missing: `npm ci` installs the versions package-lock.json pins (`invoke setup`)"


def test_axe_finds_what_it_names(tmp_path, browser):
    """The check can fail: a page with an image without a text alternative, grey on white text and an empty link."""
    (tmp_path / "index.html").write_text(
        '<!doctype html><html lang="en"><head><title>t</title></head><body><main><h1>t</h1>'
        '<img src="x.png"><p style="color:#bbb;background:#fff">faint</p><a href="#x"></a></main></body></html>')
    with serve(tmp_path) as base:
        report = browser.check(base + "index.html", expected=0, width=1400, inspect=axe_violations)
    assert {v["rule"] for v in report.inspected} >= {"image-alt", "color-contrast", "link-name"}, report.inspected
