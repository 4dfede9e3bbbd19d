"""`invoke serve`'s server: the site over http, and one clear error for a missing site or a busy port."""
import socket
import threading
import urllib.request

import pytest

from harness import LabError
from harness.book.site import address, site_server


def test_serves_the_site_on_loopback(tmp_path):
    (tmp_path / "index.html").write_text("<p>the book</p>")
    server = site_server(0, tmp_path)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert address(server).startswith("http://127.0.0.1:")
        assert urllib.request.urlopen(address(server), timeout=5).read() == b"<p>the book</p>"
    finally:
        server.shutdown()
        server.server_close()


def test_a_missing_site_says_to_render(tmp_path):
    with pytest.raises(LabError, match="invoke render"):
        site_server(0, tmp_path)


def test_a_busy_port_is_named(tmp_path):
    (tmp_path / "index.html").write_text("x")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(LabError, match=f"port {port} on 127.0.0.1 is in use"):
            site_server(port, tmp_path)
