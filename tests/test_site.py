"""The site Quarto renders into _book/, checked as a reader sees it: every page of the book loads in headless
Chromium, over http from 127.0.0.1 (Quarto's page scripts are ES modules, which browsers block on file://),
with no console error, no failed request, no uncaught exception, and every chart drawn. Twice:

- offline: only 127.0.0.1 answers, so a page that needs a CDN fails as it would for an offline reader;
- online: the CDN files Quarto references are answered from the copies pinned in package.json (request
  interception), and any other external request fails and is reported, so a new CDN dependency shows.

Each page is read in a window as wide as a desktop's (1,400 px) and a phone's (390 px): no chart is wider
than the text column, no legend is cut off, no page scrolls sideways (page_layout.py); and axe-core finds no serious
or critical accessibility violation in it, offline, at either width (tests/test_accessibility.py tests axe itself).

Also: the sidebar numbers the chapters as _quarto.yml lays them out. The book is rendered once per run
(`quarto render`, about 1.5 minutes, beside the end-to-end tests: tests/rendered.py, `invoke test`); without
Quarto these tests skip, unless LAB_REQUIRE_QUARTO=1.
"""
from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path

import altair as alt
import pytest

from harness import ROOT
from harness.book.charts import scrolling
from harness.book.render import VEGA_SCRIPTS, chart_html

# Helpers beside this file (pytest puts tests/ on sys.path).
from book_pages import book_chapters, html_path, table_of_contents  # noqa: E402,I001
from browser import Chromium, PageReport, axe_violations, find_binary, serve  # noqa: E402
import page_layout  # noqa: E402

PAGES = [html_path(chapter) for chapter in book_chapters()]
DESKTOP, PHONE = 1400, 390  # window widths in CSS pixels: a laptop's browser, a phone held upright
# Each page offline at both widths (the layout checks), online once (its requests).
READINGS = [("offline", DESKTOP), ("offline", PHONE), ("online", DESKTOP)]
OFFLINE_WIDTHS = [width for mode, width in READINGS if mode == "offline"]  # where axe reads each page too
COLUMN = "main#quarto-document-content"  # the book's text column
NODE_MODULES = ROOT / "node_modules"
# The CDN files Quarto 1.9 puts in pages, and the npm copies (package.json devDependencies) that answer them.
# require.js and jQuery: in every page with a text/html cell output (Quarto's src/core/jupyter/widgets.ts). The
# book emits none (harness.book), so no page should ask for them; a page that does must still draw its charts
# online. npm's requirejs ships require.js unminified. (Math is MathML and the theme loads no web font, so
# MathJax and Google Fonts are not expected: asking for them is an unexpected external request.)
CDN = {
    "https://cdn.jsdelivr.net/npm/requirejs@2.3.6/require.min.js": NODE_MODULES / "requirejs" / "require.js",
    "https://cdn.jsdelivr.net/npm/jquery@3.5.1/dist/jquery.min.js": NODE_MODULES / "jquery" / "dist" / "jquery.min.js",
}
# npm's files cannot match the hashes Quarto pins for jsDelivr's, so the online copy of the site drops them.
INTEGRITY = re.compile(r'\s+integrity="[^"]*"')
REQUIRE_JS = "https://cdn.jsdelivr.net/npm/requirejs@2.3.6/require.min.js"


# ---- fixtures: the rendered book, a browser, the site over http ------------------------------------------

def online_copy(site: Path, copy: Path) -> Path:
    """A copy of the site whose pages have no integrity="…" attributes (the site itself is left alone)."""
    shutil.copytree(site, copy, symlinks=True)
    for page in copy.rglob("*.html"):
        page.write_text(INTEGRITY.sub("", page.read_text()))
    return copy


@pytest.fixture(scope="module")
def sites(book, tmp_path_factory) -> Iterator[dict[str, tuple[Path, str]]]:
    """Per mode: the folder served and its base URL. Offline serves _book itself, online an integrity-free copy."""
    copy = online_copy(book, tmp_path_factory.mktemp("online") / "_book")
    with serve(book) as offline, serve(copy) as online:
        yield {"offline": (book, offline), "online": (copy, online)}


def check(browser: Chromium, base: str, page: str, mode: str, expected: int, width: int):
    """A page read as `mode` at `width`; offline, axe's violations too (what the reader's browser shows is checked
    once, on the same visit: the page's charts drawn)."""
    online = mode == "online"
    return browser.check(base + page, expected=expected, routes=CDN if online else None, width=width, column=COLUMN,
                         inspect=None if online else axe_violations)


@pytest.fixture(scope="module")
def readings(sites, browser) -> dict[tuple[str, str, int], PageReport]:
    """Every page in every reading, by (page, mode, width): its report, against the charts its HTML has. Two browsers
    check them at once, as a page's check mostly waits (for its charts, its requests, late console messages)."""
    todo = [(page, mode, width) for page in PAGES for mode, width in READINGS]

    def check_each(chromium: Chromium | None, share: list[tuple[str, str, int]]) -> dict:
        """One browser's share; None: a browser of this thread's own (Playwright's API stays in its thread)."""
        own = chromium is None
        chromium = chromium or Chromium(find_binary())
        try:
            found = {}
            for page, mode, width in share:
                folder, base = sites[mode]
                expected = (folder / page).read_text().count('class="lab-chart"')
                found[page, mode, width] = check(chromium, base, page, mode, expected, width)
            return found
        finally:
            if own:
                chromium.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        other = pool.submit(check_each, None, todo[1::2])
        return check_each(browser, todo[0::2]) | other.result()


# ---- the rendered site -----------------------------------------------------------------------------------

def test_quarto_renders_every_chapter_and_the_chart_libraries(book):
    missing = [p for p in [*PAGES, *VEGA_SCRIPTS] if not (book / p).is_file()]
    assert not missing, f"not in {book}: {missing}"


@pytest.mark.parametrize(("mode", "width"), READINGS, ids=[f"{m}-{w}px" for m, w in READINGS])
@pytest.mark.parametrize("page", PAGES)
def test_page_loads_cleanly_draws_every_chart_and_fits_the_window(page, mode, width, readings):
    report = readings[page, mode, width]
    assert report.ok, f"{page}, {mode}, {width} px: {report.summary()}"
    problems = page_layout.problems(report.layout)
    assert not problems, f"{page} at {width} px:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("width", OFFLINE_WIDTHS, ids=[f"{w}px" for w in OFFLINE_WIDTHS])
@pytest.mark.parametrize("page", PAGES)
def test_no_page_has_a_serious_or_critical_accessibility_violation(page, width, readings):
    found = readings[page, "offline", width].inspected  # None: axe did not run
    assert found == [], f"{page} at {width} px:\n  " + "\n  ".join(
        f"{v['impact']} {v['rule']} ({v['count']}×): {v['help']}; {v['where']}" for v in found or [])


# ---- the theme's files: the Korean font of the article quotes is served, and found from the compiled theme ----------

THEME_URL = re.compile(r"""url\(\s*["']?([^"')]+)["']?\s*\)""")


def missing_theme_files(site: Path) -> dict[str, list[str]]:
    """Per compiled theme stylesheet of the site, the relative url(...)s it names that are not files of the site."""
    missing = {}
    for css in (site / "site_libs" / "bootstrap").glob("bootstrap*.css"):
        local = [u for u in THEME_URL.findall(css.read_text()) if not re.match(r"^(data:|https?:|#)", u)]
        gone = [u for u in local if not (css.parent / u.split("?")[0]).resolve().is_file()]
        if gone:
            missing[css.name] = gone
    return missing


def test_the_theme_names_the_korean_font_and_every_file_it_names_is_served(book):
    css = "".join(c.read_text() for c in (book / "site_libs" / "bootstrap").glob("bootstrap*.css"))
    assert "noto-sans-kr-korean-400-normal.woff2" in css, "the theme has no @font-face for the quotes' Korean font"
    assert not missing_theme_files(book)


KOREAN_FONT_JS = """async () => { await document.fonts.ready;
  return Array.from(document.fonts).filter(f => f.family.replace(/"/g, '') === 'Noto Sans KR').map(f => f.status); }"""


@pytest.mark.parametrize(("page", "needed"), [("chapters/04-more-threads-more-throughput.html", True),
                                              ("chapters/01-one-thread-one-request.html", False)])
def test_only_a_page_with_hangul_downloads_the_korean_font_and_it_loads_offline(page, needed, sites, browser):
    base = sites["offline"][1]
    opened, _ = browser.open(base + page)
    try:
        opened.wait_for_load_state("load")
        statuses = opened.evaluate(KOREAN_FONT_JS)
    finally:
        opened.context.close()
    assert statuses == (["loaded"] if needed else ["unloaded"]), f"{page}: Noto Sans KR {statuses}"


def test_a_theme_url_to_a_missing_file_is_found(tmp_path):
    theme = tmp_path / "site_libs" / "bootstrap"
    theme.mkdir(parents=True)
    (tmp_path / "there.woff2").write_bytes(b"")
    (theme / "bootstrap-1.min.css").write_text('a{src:url("../../there.woff2")}b{src:url(../../gone.woff2)}'
                                               'c{background:url(data:image/png;base64,AAAA)}')
    assert missing_theme_files(tmp_path) == {"bootstrap-1.min.css": ["../../gone.woff2"]}


# ---- links: every local link leads to a file of the site (a chapter's data as CSV included) ----------------------

class LocalLinks(HTMLParser):
    """The page's links and sources that stay on the site: href of a and link, src of img and script."""

    ATTRIBUTES = {"a": "href", "link": "href", "img": "src", "script": "src"}

    def __init__(self):
        super().__init__()
        self.targets: list[str] = []

    def handle_starttag(self, tag, attrs):
        target = dict(attrs).get(self.ATTRIBUTES.get(tag, ""))
        if target and not re.match(r"^(#|[a-z][a-z0-9+.-]*:|//)", target):
            self.targets.append(target)


def broken_links(site: Path, page: str) -> list[str]:
    """Links to a file the site does not have, or to an id (…html#x) that the page they name does not hold."""
    parser = LocalLinks()
    parser.feed((site / page).read_text())
    folder = (site / page).parent
    broken = []
    for target in parser.targets:
        path = folder / target.split("#")[0].split("?")[0]
        fragment = target.partition("#")[2]
        if not (path / "index.html" if target.endswith("/") else path).exists():
            broken.append(target)
        elif fragment and path.suffix == ".html" and f'id="{fragment}"' not in path.read_text():
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", PAGES)
def test_every_local_link_leads_to_a_file_of_the_site(page, book):
    broken = broken_links(book, page)
    assert not broken, f"{page} links to files the site does not have: {broken}"


def test_the_link_check_finds_a_missing_file(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "data.csv").write_text("a\n")
    (tmp_path / "chapters" / "other.html").write_text('<p id="there">here</p>')
    (tmp_path / "chapters" / "page.html").write_text('<a href="data.csv">ok</a> <a href="gone.csv#x">gone</a> '
                                                    '<a href="#top">anchor</a> <a href="https://example.org/">away</a> '
                                                    '<a href="other.html#there">ok</a> <a href="other.html#nowhere">no</a>')
    assert broken_links(tmp_path, "chapters/page.html") == ["gone.csv#x", "other.html#nowhere"]


# ---- the sidebar's chapter numbers -------------------------------------------------------------------------

class Sidebar(HTMLParser):
    """The sidebar's chapter links (a.sidebar-link with an href; parts have none): href, number, title."""

    KINDS = ("chapter-number", "chapter-title", "menu-text")

    def __init__(self):
        super().__init__()
        self.links: list[dict[str, str]] = []
        self.link: dict[str, str] | None = None
        self.spans: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "a" and "sidebar-link" in classes and attributes.get("href"):
            self.link = {"href": attributes["href"], **dict.fromkeys(self.KINDS, "")}
        elif tag == "span" and self.link is not None:
            self.spans.append(next((c for c in classes if c in self.KINDS), None))

    def handle_endtag(self, tag):
        if tag == "span" and self.link is not None and self.spans:
            self.spans.pop()
        elif tag == "a" and self.link is not None:
            self.links.append(self.link)
            self.link, self.spans = None, []

    def handle_data(self, data):
        if self.link is not None:
            for kind in {s for s in self.spans if s}:
                self.link[kind] += data

    def entries(self) -> list[tuple[str, str | None, str]]:
        def clean(text: str) -> str:
            return " ".join(text.split())
        return [(link["href"], clean(link["chapter-number"]) or None,
                 clean(link["chapter-title"]) if link["chapter-number"] else clean(link["menu-text"]))
                for link in self.links]


def sidebar_of(page: Path) -> list[tuple[str, str | None, str]]:
    parser = Sidebar()
    parser.feed(page.read_text())
    return parser.entries()


def test_sidebar_numbers_the_chapters_as_quarto_yml_lays_them_out(book):
    """The preface unnumbered, the chapters 1, 2, 3 … across parts, appendices A, B …; each titled by its
    first heading."""
    expected = [(f"./{html_path(e.chapter)}", e.number, e.title) for e in table_of_contents()]
    shown = sidebar_of(book / "index.html")

    def listing(entries):
        return "\n".join(f"    {number or '(unnumbered)':>12}  {title}  [{href}]" for href, number, title in entries)
    assert shown == expected, f"the sidebar of {book / 'index.html'} shows\n{listing(shown)}\n  _quarto.yml and the " \
                              f"chapters' headings say\n{listing(expected)}"


def test_sidebar_parser_reads_numbered_and_unnumbered_links():
    parser = Sidebar()
    parser.feed('<a class="sidebar-link" data-bs-toggle="collapse"><span class="menu-text">A part</span></a>'
                '<a href="./index.html" class="sidebar-item-text sidebar-link active">\n <span class="menu-text">'
                'Preface</span></a><a href="./chapters/a.html" class="sidebar-link"><span class="menu-text">'
                '<span class="chapter-number">1</span>&nbsp; <span class="chapter-title">One, two</span></span></a>')
    assert parser.entries() == [("./index.html", None, "Preface"), ("./chapters/a.html", "1", "One, two")]


# ---- the checks can fail: small synthetic sites ------------------------------------------------------------

def small_chart() -> str:
    """A chart as the book writes one (harness.book's loader: vega from the site's node_modules)."""
    spec = alt.Chart(alt.Data(values=[{"x": 1, "y": 2}, {"x": 2, "y": 3}])).mark_point().encode(x="x:Q", y="y:Q")
    return chart_html(spec.to_dict())


def site(root: Path, body: str, libraries: bool = True) -> Path:
    """chapters/page.html below `root` (the loader's fallback site root is ../), node_modules optional."""
    (root / "chapters").mkdir(parents=True)
    (root / "index.html").write_text("<!DOCTYPE html><title>a site</title>")
    (root / "chapters" / "page.html").write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
        f'</head><body>{body}</body></html>')
    if libraries:
        (root / "node_modules").symlink_to(NODE_MODULES)
    return root


@pytest.mark.parametrize("libraries", [True, False], ids=["with-libraries", "without-libraries"])
def test_check_fails_when_the_chart_libraries_are_missing(libraries, browser, tmp_path):
    with serve(site(tmp_path, small_chart(), libraries)) as base:
        report = browser.check(base + "chapters/page.html", expected=1)
    if libraries:  # the control: the same page draws when vega is there
        assert report.ok, report.summary()
    else:
        assert not report.ok and not report.charts[0]["drawn"], report.summary()
        assert any("vega.min.js" in e for e in report.errors), report.summary()


def test_offline_check_fails_for_a_cdn_script(browser, tmp_path):
    """A page as Quarto makes it for an HTML cell output: a chart that draws, and require.js from a CDN, which cannot
    load offline."""
    with serve(site(tmp_path, f'<script src="{REQUIRE_JS}"></script>{small_chart()}')) as base:
        report = browser.check(base + "chapters/page.html", expected=1)
    assert not report.ok, report.summary()
    assert report.charts and report.charts[0]["marks"] > 0, report.summary()
    assert any(REQUIRE_JS in e for e in report.errors), report.summary()


QUARTO_WIDGET_HEAD = "".join(f'<script src="{url}" crossorigin="anonymous"></script>' for url in CDN) + \
    "<script>define('jquery', [], function () { return window.jQuery; })</script>"  # as Quarto writes it


def test_online_check_serves_quartos_cdn_files_from_npm(browser, tmp_path):
    """The control for the online mode: require.js and jQuery load, no error."""
    probe = '<script>if (!(window.requirejs && window.jQuery)) console.error("a CDN copy is missing")</script>'
    with serve(site(tmp_path, QUARTO_WIDGET_HEAD + probe, libraries=False)) as base:
        report = browser.check(base + "chapters/page.html", expected=0, routes=CDN)
    assert report.ok, report.summary()


def test_charts_draw_online_beside_quartos_require_js(browser, tmp_path):
    """With require.js on the page the chart libraries register as AMD modules, not globals: the loader must ask
    require.js for them (before it did, every chart of the online book said "vegaEmbed is not defined")."""
    with serve(site(tmp_path, QUARTO_WIDGET_HEAD + small_chart() + small_chart())) as base:
        report = browser.check(base + "chapters/page.html", expected=2, routes=CDN)
    assert report.ok, report.summary()
    assert all(c["marks"] > 0 for c in report.charts), report.summary()


def test_online_check_reports_an_unknown_external_url(browser, tmp_path):
    url = "https://cdn.example.org/new-dependency.js"
    with serve(site(tmp_path, f'<script src="{url}"></script>', libraries=False)) as base:
        report = browser.check(base + "chapters/page.html", expected=0, routes=CDN)
    assert not report.ok
    assert f"unexpected external request: {url}" in report.errors, report.summary()


def test_a_page_with_fewer_charts_than_expected_fails(browser, tmp_path):
    with serve(site(tmp_path, small_chart())) as base:
        report = browser.check(base + "chapters/page.html", expected=2, timeout=3)
    assert not report.ok and len(report.charts) == 1, report.summary()


def test_online_copy_drops_integrity_and_leaves_the_site_alone(tmp_path):
    page = tmp_path / "site" / "chapters" / "a.html"
    page.parent.mkdir(parents=True)
    original = f'<script src="{REQUIRE_JS}" integrity="sha384-abc sha384-def" crossorigin="anonymous"></script>'
    page.write_text(original)
    copy = online_copy(tmp_path / "site", tmp_path / "copy")
    assert (copy / "chapters" / "a.html").read_text() == f'<script src="{REQUIRE_JS}" crossorigin="anonymous"></script>'
    assert page.read_text() == original


# ---- the layout checks can fail: a chart or a table too wide, a legend cut off, a page that scrolls sideways -----

def wide_chart(**properties) -> alt.Chart:
    """A chart designed 1,200 px wide, with a legend of a few long names on top (the book's theme)."""
    rows = [{"x": x, "y": x * k, "series": f"a series with a long name {k}"} for x in range(5) for k in range(4)]
    return alt.Chart(alt.Data(values=rows)).mark_line().encode(x="x:Q", y="y:Q", color="series:N").properties(
        width=1200, height=120, **properties)


def in_column(html: str) -> str:
    """The page's text column, as the book has one: at most 700 px wide, centred."""
    return f'<main style="max-width: 700px; margin: 0 auto; padding: 0 12px">{html}</main>'


def measured(browser: Chromium, html: str, width: int, root: Path) -> dict:
    """What page_layout.js measures of `html` in the book's column, in a window `width` px wide."""
    with serve(site(root, in_column(html))) as base:
        report = browser.check(base + "chapters/page.html", expected=html.count('class="lab-chart"'), width=width)
    assert report.ok, report.summary()
    return report.layout


def layout_of(browser: Chromium, html: str, width: int, root: Path):
    return page_layout.problems(measured(browser, html, width, root))


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_a_wide_chart_is_fitted_to_the_column_or_scrolls_in_its_own_box(width, browser, tmp_path):
    """The controls: the loader fits the chart (its legend too); a chart that opts out scrolls inside its box."""
    fitted, boxed = chart_html(wide_chart().to_dict()), chart_html(scrolling(wide_chart()).to_dict())
    assert "lab-chart-scroll" in boxed and "lab-chart-scroll" not in fitted
    assert layout_of(browser, fitted + boxed, width, tmp_path) == []


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_a_chart_wider_than_the_column_fails(width, browser, tmp_path):
    """The same chart drawn at its own size without a box around it: wider than the column, and the page scrolls."""
    unboxed = chart_html(scrolling(wide_chart()).to_dict()).replace("overflow-x: auto", "overflow-x: visible")
    problems = layout_of(browser, unboxed, width, tmp_path)
    assert any(p.startswith("chart lab-chart-") and "wider" not in p and "px wide" in p for p in problems), problems
    assert any(p.startswith("the page scrolls sideways") for p in problems), problems


def test_a_legend_cut_off_by_the_chart_fails(browser, tmp_path):
    """A chart that does not grow to hold its legend (autosize none): the legend on the right is cut off."""
    clipped = wide_chart(autosize="none").properties(width=300).configure_legend(orient="right")
    problems = layout_of(browser, chart_html(clipped.to_dict()), DESKTOP, tmp_path)
    assert any("a legend is cut off" in p for p in problems), problems


TABLE_CARDS = (ROOT / "chapters" / "table_cards.html").read_text()  # the book's own script and style, as Quarto includes it


def table_html(columns: int) -> str:
    """A table as Pandoc writes one, in a div as Quarto puts it: a step's name, then counts that cannot wrap."""
    head = "".join(f"<th>count {i}</th>" for i in range(columns))
    cells = "".join('<td style="text-align: right;">1,234,567</td>' for _ in range(columns))
    return (f'<div><table class="table"><thead><tr><th>step</th>{head}</tr></thead>'
            f"<tbody><tr><td>a-15000-pv</td>{cells}</tr><tr><td>b-300</td>{cells}</tr></tbody></table></div>")


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_a_table_wider_than_its_column_fails(width, browser, tmp_path):
    """The control: a table of twelve columns of counts, without the book's script, sticks out of a 700 px column."""
    problems = layout_of(browser, table_html(12), width, tmp_path)
    assert any(p.startswith("table 1: ") and "px wide in a box of" in p for p in problems), problems


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_a_table_too_wide_for_its_column_is_shown_as_cards_and_a_narrow_one_as_a_table(width, browser, tmp_path):
    layout = measured(browser, table_html(12) + table_html(1) + TABLE_CARDS, width, tmp_path)
    assert page_layout.problems(layout) == []
    assert [t["cards"] for t in layout["tables"]] == [True, False]


def test_a_page_wider_than_the_window_fails(browser, tmp_path):
    problems = layout_of(browser, '<p style="width: 2000px">a line set wider than any window</p>', PHONE, tmp_path)
    assert len(problems) == 1 and "p (to 20" in problems[0], problems
