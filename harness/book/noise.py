"""The lab's own run-to-run noise, measured once for the whole book: ε, the rate of stray failures (requests that
fail where the model predicts every request answered: `predicts_every_answer`), and from it the most failures a step of N requests may have and still count as
"every request answered" (no all-or-nothing counts: one stray failure among 15,000 is noise, not a verdict)."""
from __future__ import annotations

import math
from functools import cache

from harness.lab.store import complete_steps

CLEAN_CHAPTERS = ("chapter2", "chapter3", "chapter7")  # spikes whose model says who must be answered
QUANTILE = 0.99865  # one-sided 3σ of a normal: the same k = 3 as the rules


def predicts_every_answer(model: dict) -> bool:
    """Does a step's model say every request is answered, with nothing it predicts going wrong: no failure, no request
    cut off when k6 stops, no user beyond the connection ceiling (whose SYN retries may time out)? Only such a step's
    failures are strays: a failure the model predicts is the model's, not noise."""
    return model.get("failed") == 0 and not model.get("interrupted") and not model.get("over_ceiling")


@cache
def stray_failures() -> tuple[int, int]:
    """(failed, requests) over every complete step whose model predicts every answer and that issued all it asked."""
    failed = requests = 0
    for chapter in CLEAN_CHAPTERS:
        for meta in complete_steps(chapter).values():
            model, counts = meta.get("model") or {}, meta.get("requests") or {}
            if predicts_every_answer(model) and counts.get("asked") and counts.get("issued") == counts.get("asked"):
                failed += counts.get("failed", 0)
                requests += counts["asked"]
    return failed, requests


def epsilon() -> float:
    failed, requests = stray_failures()
    return (failed + 1) / (requests + 1)  # never 0: a rate seen over finitely many requests


def most_stray(n: int, rate: float | None = None) -> int:
    """The most failures among n requests that stray failures explain: the Poisson(rate·n) quantile QUANTILE."""
    mean = (epsilon() if rate is None else rate) * n
    k, term = 0, math.exp(-mean)
    total = term
    while total < QUANTILE:
        k += 1
        term *= mean / k
        total += term
    return k
