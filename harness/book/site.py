"""The rendered book over http on this machine (`invoke serve`).

Quarto 1.9 loads its page scripts (table of contents, cross-reference previews, search) as ES modules, which
browsers refuse on file://; over http every page works, and nothing leaves the machine.
"""
from __future__ import annotations

import errno
import functools
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from harness import ROOT, LabError

SITE = ROOT / "_book"
HOST = "127.0.0.1"


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass  # a page loads dozens of files: one line each would bury the address


def site_server(port: int, site: Path = SITE) -> ThreadingHTTPServer:
    """A server for `site` on 127.0.0.1:`port` (0: any free port); clear errors for a missing site or a busy port."""
    if not (site / "index.html").is_file():
        raise LabError(f"no rendered book in {site}: run `invoke render` first")
    if not 0 <= port <= 65535:
        raise LabError(f"port {port} is not a TCP port (0-65535)")
    try:
        return ThreadingHTTPServer((HOST, port), functools.partial(QuietHandler, directory=str(site)))
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise LabError(f"port {port} on {HOST} is in use: stop what holds it or pass --port") from None
        raise LabError(f"cannot serve on {HOST}:{port}: {err.strerror}") from None


def address(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}/"
