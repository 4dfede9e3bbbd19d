"""Headless Chromium, driven over the DevTools protocol, to see whether a page's charts really draw.

The protocol runs over a pipe (--remote-debugging-pipe: commands on the browser's fd 3, replies on fd 4,
each message JSON ended by a NUL byte), so there is no port to find and no websocket library to install.
The network is shut: every request to a host other than 127.0.0.1 goes to a dead proxy and name lookups
fail, so a chart that needs a CDN fails here as it would for an offline reader. Pages are opened from
file:// or from a test's own http server on 127.0.0.1 (a rendered Quarto site needs http: its page
scripts are ES modules, which Chromium blocks on file://).

`check(url, routes=...)` plays an online reader instead: DevTools request interception answers the listed
external URLs from local files, and fails (and reports) every other external request.
"""
from __future__ import annotations

import base64
import json
import mimetypes
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

BINARIES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-extensions", "--disable-sync", "--no-first-run", "--no-default-browser-check",
    "--disable-dev-shm-usage", "--mute-audio",
    # Only 127.0.0.1 goes direct; everything else (localhost and [::1] included) to a dead proxy.
    "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>;127.0.0.1",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--remote-debugging-pipe",
)
# Per chart div: is there an svg or canvas (and has the book's loader finished fitting it to its column), how many
# data marks did Vega draw, did the loader report an error.
STATUS_JS = """JSON.stringify(Array.from(document.querySelectorAll(%s)).map(function (el) {
  var error = el.querySelector('.lab-chart-error, .error');
  return {id: el.id, drawn: !!el.querySelector('svg, canvas') && el.getAttribute('data-lab-state') !== 'drawing',
          marks: el.querySelectorAll('svg .role-mark > *').length,
          error: error ? error.textContent : null};
}))"""


# Where the text column, the charts and their legends sit, and what sticks out of the window (page_layout.py).
LAYOUT_JS = (Path(__file__).parent / "page_layout.js").read_text().strip()


LOCAL_HOSTS = ("127.0.0.1",)


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


class Routes:
    """External URLs answered from local files, by exact URL (query and fragment ignored)."""

    def __init__(self, routes: dict[str, Path]):
        self.routes = {url: Path(path) for url, path in routes.items()}

    def file_for(self, url: str) -> Path | None:
        return self.routes.get(url.split("#")[0].split("?")[0])


class Chromium:
    """One headless browser; `check(url)` opens a page in a fresh tab and reports on its charts."""

    def __init__(self, binary: str):
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()
        # bash maps our pipe ends onto fds 3 and 4, where Chromium expects them (dash takes one-digit fds only).
        script = f'exec "$0" "$@" 3<&{to_browser_read} 4>&{from_browser_write}'
        self.process = subprocess.Popen(
            ["bash", "-c", script, binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(to_browser_read, from_browser_write), stdout=subprocess.DEVNULL, stderr=self._log("w"),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer, self.next_id, self.events = b"", 0, []
        # Event method -> function called with the event as soon as it arrives (inside `call`), e.g. to answer
        # Fetch.requestPaused while Chromium waits; `send` lets it reply without waiting for an answer.
        self.handlers: dict[str, Callable[[dict], None]] = {}
        self.unawaited: set[int] = set()

    def _log(self, mode: str):
        return open(os.path.join(self.profile, "stderr.log"), mode)

    def _exited(self) -> RuntimeError:
        with self._log("r") as log:
            tail = log.read()[-2000:]
        return RuntimeError(f"Chromium exited (code {self.process.poll()}); its stderr ends:\n{tail}")

    def _write(self, method: str, session: str | None, params: dict) -> int:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        data = memoryview(json.dumps(message).encode() + b"\0")
        try:
            while data:
                data = data[os.write(self.to_browser, data):]
        except BrokenPipeError:
            raise self._exited() from None
        return self.next_id

    def send(self, method: str, session: str | None = None, **params) -> None:
        """Send one command without waiting: its reply is dropped when it arrives."""
        self.unawaited.add(self._write(method, session, params))

    def call(self, method: str, session: str | None = None, timeout: float = 30, **params) -> dict:
        """Send one command and wait for its reply; events that arrive meanwhile go to their handler (if any)
        and are kept in `events`."""
        sent = self._write(method, session, params)
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == sent:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "id" in reply:
                self.unawaited.discard(reply["id"])
                continue
            handler = self.handlers.get(reply.get("method"))
            if handler:
                handler(reply)
            self.events.append(reply)

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.from_browser], [], [], remaining)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise self._exited()
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def check(self, url: str, selector: str = ".lab-chart", timeout: float = 20, expected: int | None = None,
              routes: dict[str, Path] | None = None, grace: float = 2, width: int | None = None,
              column: str = "main") -> PageReport:
        """Open `url`, wait until the page has loaded, no request is in flight and every chart matched by
        `selector` is drawn or failed (at most `grace` seconds more once an error showed), collect errors.

        expected: the number of charts the page must have (0 for a page without charts); None: at least one.
        routes: play an online reader: requests to hosts other than 127.0.0.1 are answered from these local
        files (see Routes); any other external request fails and is reported as an error. None: offline.
        width: open the page in a window this many CSS pixels wide (below 600 as a phone: the page's viewport
        tag applies) and record the layout of the text column (`column`, a selector) and the charts in it.
        """
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable", "Network.enable"):
            self.call(domain, session)
        self.call("Network.setCacheDisabled", session, cacheDisabled=True)
        if width is not None:
            self.call("Emulation.setDeviceMetricsOverride", session, width=width, height=900, deviceScaleFactor=1,
                      mobile=width < 600)
        unexpected: list[str] = []
        if routes is not None:
            self.handlers["Fetch.requestPaused"] = self._answerer(session, Routes(routes), unexpected)
            self.call("Fetch.enable", session, patterns=[{"urlPattern": "*", "requestStage": "Request"}])
        self.events.clear()
        report = PageReport(url, expected=expected)
        try:
            self.call("Page.navigate", session, url=url)
            deadline, first_error = time.monotonic() + timeout, None
            while time.monotonic() < deadline:
                report.charts = self._status(session, selector)
                enough = bool(report.charts) if expected is None else len(report.charts) >= expected
                settled = enough and all(c["drawn"] or c["error"] for c in report.charts)
                if first_error is None and (unexpected or self._errors(session)):
                    first_error = time.monotonic()
                if self._loaded(session) and not self._in_flight(session):
                    if settled or (first_error is not None and time.monotonic() - first_error > grace):
                        break
                time.sleep(0.1)
            time.sleep(0.2)  # let late console messages arrive
            report.charts = self._status(session, selector)
            if width is not None:
                report.layout = self._evaluate(session, f"{LAYOUT_JS}({json.dumps(column)}, {json.dumps(selector)})")
            # A request failed here is reported once, as unexpected, not again as a failed request.
            blocked = {f"failed request: {u} (net::ERR_BLOCKED_BY_CLIENT" for u in unexpected}
            report.errors = [f"unexpected external request: {u}" for u in unexpected] + [
                e for e in self._errors(session) if not any(e.startswith(b) for b in blocked)]
        finally:
            self.handlers.pop("Fetch.requestPaused", None)
            self.call("Target.closeTarget", targetId=target)
        return report

    def _answerer(self, session: str, routes: Routes, unexpected: list[str]) -> Callable[[dict], None]:
        """Answers each paused request: 127.0.0.1 goes on, a routed URL gets its local file, the rest fails."""
        def answer(event: dict) -> None:
            if event.get("sessionId") != session:
                return
            request_id, url = event["params"]["requestId"], event["params"]["request"]["url"]
            if urlsplit(url).hostname in LOCAL_HOSTS:
                self.send("Fetch.continueRequest", session, requestId=request_id)
            elif (path := routes.file_for(url)) and path.is_file():
                kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                # CORS allowed: Quarto's CDN script tags say crossorigin="anonymous".
                headers = [{"name": "Content-Type", "value": kind}, {"name": "Access-Control-Allow-Origin", "value": "*"}]
                self.send("Fetch.fulfillRequest", session, requestId=request_id, responseCode=200,
                          responseHeaders=headers, body=base64.b64encode(path.read_bytes()).decode())
            else:
                unexpected.append(url)
                self.send("Fetch.failRequest", session, requestId=request_id, errorReason="BlockedByClient")
        return answer

    def _errors(self, session: str) -> list[str]:
        return console_errors(e for e in self.events if e.get("sessionId") == session)

    def _in_flight(self, session: str) -> bool:
        started, ended = set(), set()
        for event in self.events:
            if event.get("sessionId") == session:
                if event.get("method") == "Network.requestWillBeSent":
                    started.add(event["params"]["requestId"])
                elif event.get("method") in ("Network.loadingFinished", "Network.loadingFailed"):
                    ended.add(event["params"]["requestId"])
        return bool(started - ended)

    def _status(self, session: str, selector: str) -> list[dict]:
        return self._evaluate(session, STATUS_JS % json.dumps(selector)) or []

    def _evaluate(self, session: str, expression: str):
        """A JavaScript expression that returns JSON text, its value parsed."""
        result = self.call("Runtime.evaluate", session, expression=expression, returnByValue=True)
        return json.loads(result["result"].get("value") or "null")

    def _loaded(self, session: str) -> bool:
        result = self.call("Runtime.evaluate", session, expression="document.readyState", returnByValue=True)
        return result["result"].get("value") == "complete"

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self.to_browser, self.from_browser):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)


def console_errors(events) -> list[str]:
    """Console errors and warnings (Vega logs its warnings there: an empty scale, a bad field), uncaught
    exceptions, and failed requests: from the Network domain when it is on (request failed, HTTP status
    400 or more; the browser's own /favicon.ico request aside), else from the log's "Failed to load resource"
    lines."""
    events = list(events)
    network = any(str(e.get("method", "")).startswith("Network.") for e in events)
    urls, found = {}, []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
            found.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            found.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            if not (network and entry.get("source") == "network" and entry.get("text", "").startswith("Failed to load")):
                found.append(f"{entry.get('text')} {entry.get('url', '')}".strip())
        elif method == "Network.requestWillBeSent":
            if urlsplit(params["request"]["url"]).path == "/favicon.ico":
                continue  # the browser asks every http site for an icon on its own; the book declares none
            urls[params["requestId"]] = params["request"]["url"]
        elif params.get("requestId") not in urls and method in ("Network.responseReceived", "Network.loadingFailed"):
            continue
        elif method == "Network.responseReceived" and params["response"].get("status", 0) >= 400:
            found.append(f"failed request: HTTP {params['response']['status']} {params['response'].get('url')}")
        elif method == "Network.loadingFailed":
            found.append(f"failed request: {urls[params['requestId']]} ({params.get('errorText')}{', canceled' if params.get('canceled') else ''})")
    return found
