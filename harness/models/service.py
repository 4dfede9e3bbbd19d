"""How long a request holds a thread, from the step's server settings (the sample server's sleep).
"""
from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from harness.lab.spec import Step


def request_path(step: Step) -> str:
    """The path every request asks for: load.path, or a one-request scenario's (with ${vars} the model cannot read)."""
    requests = step.load.get("requests") or [{"path": step.load["path"]}]
    return requests[0]["path"]


def _service_ms(step: Step) -> int:
    """The wait a request asks for: ?sleepMs= (the sample server's /hello) or ?ms= (the event loop's /sleep) in the
    path wins over the target's own setting (its kind's `sleep_ms`: SLEEP_MS, or the webflux service's sleep_ms)."""
    query = parse_qs(urlsplit(request_path(step)).query)
    for name in ("sleepMs", "ms"):
        if name in query:
            return int(query[name][0])
    own = (step.target_model or {}).get("sleep_ms")
    return step.knob("SLEEP_MS") if own is None else own


def longest_service_ms(step: Step) -> int:
    """The longest a request holds a thread: /every-nth's sleep, or /hello's."""
    url = urlsplit(request_path(step))
    if url.path == "/every-nth":
        return int(parse_qs(url.query).get("sleepMs", ["2000"])[0])
    return _service_ms(step)


def mean_service_ms(step: Step) -> float:
    """Mean thread time per request: /every-nth sleeps on one request in n (defaults n=10, 2000 ms)."""
    url = urlsplit(request_path(step))
    if url.path == "/every-nth":
        query = parse_qs(url.query)
        return int(query.get("sleepMs", ["2000"])[0]) / int(query.get("n", ["10"])[0])
    return _service_ms(step)
