"""Headless Chromium (the system's, driven by Playwright: no browser is downloaded) to see whether a page's charts
really draw. The network is shut: every request to a host other than 127.0.0.1 fails, so a chart that needs a CDN
fails here as it would for an offline reader. Pages are opened from file:// or from a test's own http server on
127.0.0.1 (a rendered Quarto site needs http: its page scripts are ES modules, which Chromium blocks on file://).
`check(url, routes=...)` plays an online reader instead: the listed external URLs are answered from local files, and
every other external request fails and is reported.
"""
from __future__ import annotations

import contextlib
import json
import mimetypes
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import Error, Page, sync_playwright

from harness import ROOT
from harness.book.site import address, site_server

BINARIES = ("chromium", "chromium-browser", "google-chrome")
# Names resolve nowhere but 127.0.0.1: a request that slips past the routes below still cannot leave the machine.
FLAGS = ("--disable-gpu", "--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
# Per chart div: is there an svg or canvas (and has the book's loader finished fitting it to its column), how many
# data marks did Vega draw, did the loader report an error.
STATUS_JS = """selector => Array.from(document.querySelectorAll(selector)).map(function (el) {
  var error = el.querySelector('.lab-chart-error, .error');
  return {id: el.id, drawn: !!el.querySelector('svg, canvas') && el.getAttribute('data-lab-state') !== 'drawing',
          marks: el.querySelectorAll('svg .role-mark > *').length,
          error: error ? error.textContent : null};
})"""
# Where the text column, the charts and their legends sit, and what sticks out of the window (page_layout.py).
LAYOUT_JS = (Path(__file__).parent / "page_layout.js").read_text().strip()
LOCAL_HOSTS = ("127.0.0.1",)
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"  # pinned in package.json
# axe's WCAG 2.0/2.1 A and AA rules; a violation's impact is minor, moderate, serious or critical.
AXE_JS = """async () => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
                                          resultTypes: ['violations']});
  return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => ({
    rule: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
    where: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + (n.failureSummary || '').split('\\n')[1])}));
}"""


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """`folder` over http on 127.0.0.1 (a free port), as `invoke serve` serves the book; a base URL ending in "/"."""
    server = site_server(0, folder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield address(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def axe_violations(page: Page) -> list[dict]:
    """axe-core's serious and critical violations on the page as it stands (tests/test_accessibility.py)."""
    page.add_script_tag(path=str(AXE))
    return page.evaluate(AXE_JS)


def find_binary() -> str | None:
    return next((path for name in BINARIES if (path := shutil.which(name))), None)


def drew(chart: dict) -> bool:
    """Drawn: an svg (or canvas) with data marks, and no error shown in the chart's place."""
    return chart["drawn"] and chart["marks"] > 0 and not chart["error"]


@dataclass
class PageReport:
    url: str
    charts: list[dict] = field(default_factory=list)  # STATUS_JS entries
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed requests
    expected: int | None = None  # charts the page must have; None: at least one
    layout: dict | None = None  # where the column, the charts and their legends sit (page_layout.js), with a width
    inspected: object = None  # what check's `inspect` found on the page once its charts were drawn

    @property
    def ok(self) -> bool:
        count_ok = bool(self.charts) if self.expected is None else len(self.charts) == self.expected
        return count_ok and not self.errors and all(drew(c) for c in self.charts)

    def summary(self) -> str:
        charts = "; ".join(f"{c['id']}: drawn={c['drawn']} marks={c['marks']} error={c['error']}" for c in self.charts)
        expected = "at least 1" if self.expected is None else self.expected
        errors = "".join(f"\n    {e}" for e in self.errors) or " none"
        return (f"{self.url}\n  charts: {sum(map(drew, self.charts))} of {expected} expected drawn ({charts or 'none found'})"
                f"\n  errors:{errors}")


class Watch:
    """What one page did: its console errors and warnings (Vega logs its warnings there), uncaught exceptions, failed
    requests (HTTP status 400 or more too; the browser's own /favicon.ico aside), the requests still in flight, and
    the external requests no route answered."""

    def __init__(self, page: Page, routes: dict[str, Path] | None):
        self.errors: list[str] = []
        self.unexpected: list[str] = []
        self.in_flight: set = set()
        self.routes = {url: Path(path) for url, path in (routes or {}).items()}
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("request", lambda request: self.in_flight.add(request))  # a builtin cannot be a Playwright handler
        page.on("requestfinished", self._finished)
        page.on("requestfailed", self._failed)
        page.route("**/*", self._route)

    def _console(self, message) -> None:
        if message.type in ("error", "warning", "assert") and not message.text.startswith("Failed to load resource"):
            self.errors.append(message.text)

    def _finished(self, request) -> None:
        self.in_flight.discard(request)
        response = request.response()
        if response and response.status >= 400 and urlsplit(request.url).path != "/favicon.ico":
            self.errors.append(f"failed request: HTTP {response.status} {request.url}")

    def _failed(self, request) -> None:
        self.in_flight.discard(request)
        if request.url not in self.unexpected:  # reported once, as unexpected
            self.errors.append(f"failed request: {request.url} ({request.failure})")

    def _route(self, route) -> None:
        """127.0.0.1 and files go on; with routes, a routed URL gets its local file; any other request fails."""
        url = route.request.url
        if url.startswith("file:") or urlsplit(url).hostname in LOCAL_HOSTS:
            route.continue_()
        elif (path := self.routes.get(url.split("#")[0].split("?")[0])) and path.is_file():
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            # CORS allowed: Quarto's CDN script tags say crossorigin="anonymous".
            route.fulfill(status=200, body=path.read_bytes(), headers={"Content-Type": kind,
                                                                      "Access-Control-Allow-Origin": "*"})
        else:
            if self.routes:
                self.unexpected.append(url)
            route.abort("blockedbyclient")


def status(page: Page, selector: str) -> list[dict]:
    """The charts' state; none while the page is still replacing its document (no context to evaluate in)."""
    try:
        return page.evaluate(STATUS_JS, selector)
    except Error:
        return []


def loaded(page: Page) -> bool:
    try:
        return page.evaluate("document.readyState") == "complete"
    except Error:
        return False


class Chromium:
    """One headless browser; `check(url)` opens a page in a fresh context and reports on its charts. Playwright's
    sync API belongs to the thread that started it: a second thread starts its own Chromium."""

    def __init__(self, binary: str):
        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(executable_path=binary, args=list(FLAGS),
                                                       chromium_sandbox=False)

    def open(self, url: str, width: int | None = None, routes: dict[str, Path] | None = None) -> tuple[Page, Watch]:
        """A fresh context (no cache, no cookies) and page at `url`, with what it does watched."""
        size = {"viewport": {"width": width, "height": 900}, "is_mobile": width < 600} if width else {}
        page = self.browser.new_context(**size).new_page()
        watch = Watch(page, routes)
        page.goto(url, wait_until="commit")
        return page, watch

    def check(self, url: str, selector: str = ".lab-chart", timeout: float = 20, expected: int | None = None,
              routes: dict[str, Path] | None = None, grace: float = 2, width: int | None = None,
              column: str = "main", inspect: Callable[[Page], object] | None = None) -> PageReport:
        """Open `url`, wait until the page has loaded, no request is in flight and every chart matched by
        `selector` is drawn or failed (at most `grace` seconds more once an error showed), collect errors.
        expected: the number of charts the page must have (0 for a page without charts); None: at least one.
        routes: play an online reader: external requests are answered from these local files (by exact URL, query
        and fragment ignored); any other external request fails and is reported as an error. None: offline.
        width: open the page in a window this many CSS pixels wide (below 600 as a phone: the page's viewport
        tag applies) and record the layout of the text column (`column`, a selector) and the charts in it.
        inspect: asked of the page once it has settled (e.g. `axe_violations`), its answer kept in the report, so
        that one visit serves another check of the same page.
        """
        page, watch = self.open(url, width, {} if routes is None else routes)
        report = PageReport(url, expected=expected)
        try:
            deadline, first_error = time.monotonic() + timeout, None
            while time.monotonic() < deadline:
                report.charts = status(page, selector)
                enough = bool(report.charts) if expected is None else len(report.charts) >= expected
                settled = enough and all(c["drawn"] or c["error"] for c in report.charts)
                if first_error is None and (watch.unexpected or watch.errors):
                    first_error = time.monotonic()
                if loaded(page) and not watch.in_flight:
                    if settled or (first_error is not None and time.monotonic() - first_error > grace):
                        break
                page.wait_for_timeout(100)
            page.wait_for_timeout(200)  # let late console messages arrive
            report.charts = page.evaluate(STATUS_JS, selector)
            if width is not None:
                report.layout = json.loads(page.evaluate(f"() => {LAYOUT_JS}({json.dumps(column)}, "
                                                         f"{json.dumps(selector)})") or "null")
            report.errors = [f"unexpected external request: {u}" for u in watch.unexpected] + watch.errors
            if inspect is not None:  # after the errors are taken: its own scripts are not the page's
                report.inspected = inspect(page)
        finally:
            page.context.close()
        return report

    def close(self) -> None:
        self.browser.close()
        self.playwright.stop()
