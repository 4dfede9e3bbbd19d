"""Headless Chromium, driven over the DevTools protocol, to see whether a page's charts really draw.

The protocol runs over a pipe (--remote-debugging-pipe: commands on the browser's fd 3, replies on fd 4,
each message JSON ended by a NUL byte), so there is no port to find and no websocket library to install.
The network is shut: every request goes to a dead proxy (loopback included) and name lookups fail, so a
chart that needs a CDN fails here as it would for an offline reader. Pages are opened from file://.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

BINARIES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-extensions", "--disable-sync", "--no-first-run", "--no-default-browser-check",
    "--disable-dev-shm-usage", "--mute-audio",
    "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-pipe",
)
# Per chart div: is there an svg or canvas, how many data marks did Vega draw, did the loader report an error.
STATUS_JS = """JSON.stringify(Array.from(document.querySelectorAll(%s)).map(function (el) {
  var error = el.querySelector('.lab-chart-error, .error');
  return {id: el.id, drawn: !!el.querySelector('svg, canvas'),
          marks: el.querySelectorAll('svg .role-mark > *').length,
          error: error ? error.textContent : null};
}))"""


def find_binary() -> str | None:
    return next((path for name in BINARIES if (path := shutil.which(name))), None)


@dataclass
class PageReport:
    url: str
    charts: list[dict] = field(default_factory=list)  # STATUS_JS entries
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads

    @property
    def ok(self) -> bool:
        return bool(self.charts) and not self.errors and all(c["drawn"] and not c["error"] for c in self.charts)

    def summary(self) -> str:
        charts = "; ".join(f"{c['id']}: drawn={c['drawn']} marks={c['marks']} error={c['error']}" for c in self.charts)
        return f"{self.url}\n  charts: {charts or 'none found'}\n  errors: {self.errors or 'none'}"


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

    def _log(self, mode: str):
        return open(os.path.join(self.profile, "stderr.log"), mode)

    def _exited(self) -> RuntimeError:
        with self._log("r") as log:
            tail = log.read()[-2000:]
        return RuntimeError(f"Chromium exited (code {self.process.poll()}); its stderr ends:\n{tail}")

    def call(self, method: str, session: str | None = None, timeout: float = 30, **params) -> dict:
        """Send one command and wait for its reply; events that arrive meanwhile are kept in `events`."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        try:
            os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        except BrokenPipeError:
            raise self._exited() from None
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
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

    def check(self, url: str, selector: str = ".lab-chart", timeout: float = 20) -> PageReport:
        """Open `url`, wait until every chart matched by `selector` is drawn or failed, collect console errors."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.call(domain, session)
        self.events.clear()
        self.call("Page.navigate", session, url=url)
        report = PageReport(url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            report.charts = self._status(session, selector)
            settled = report.charts and all(c["drawn"] or c["error"] for c in report.charts)
            if self._loaded(session) and (settled or self._errors(session)):
                break
            time.sleep(0.1)
        time.sleep(0.2)  # let late console messages arrive
        report.charts = self._status(session, selector)
        report.errors = self._errors(session)
        self.call("Target.closeTarget", targetId=target)
        return report

    def _errors(self, session: str) -> list[str]:
        return console_errors(e for e in self.events if e.get("sessionId") == session)

    def _status(self, session: str, selector: str) -> list[dict]:
        result = self.call("Runtime.evaluate", session, expression=STATUS_JS % json.dumps(selector), returnByValue=True)
        return json.loads(result["result"].get("value") or "[]")

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
    exceptions, and resources that failed to load."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
            found.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            found.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            found.append(f"{entry.get('text')} {entry.get('url', '')}".strip())
    return found
