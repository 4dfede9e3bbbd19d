"""Chapter 1's verdicts (seed 002) on synthetic data: each can come out either way."""
import pandas as pd

from harness.lab.store import ChapterData
from harness.book.chapters.ch1_pool import f002_verdicts
from harness.book.verdict import NOT_REPRODUCED, REPRODUCED

FAST_AND_SLOW = [5] * 9 + [2000]  # one request in ten sleeps 2 s
PATH = "/every-nth?n=10&sleepMs=2000"


def step_requests(step: str, rps: float, durations: list[float], n: int = 2000) -> pd.DataFrame:
    starts = [k * 1000 / rps for k in range(n)]
    # The run ends with its last start: requests that would outlast it are fast ones (no long tail).
    ends = [min(s + durations[k % len(durations)], starts[-1] + 5) for k, s in enumerate(starts)]
    frame = pd.DataFrame({"step": step, "start_ms": starts, "end_ms": ends, "status": 200, "error_code": 0})
    return frame.assign(duration_ms=frame.end_ms - frame.start_ms)


def chapter(rps_at: dict[int, float], c500_durations=None, busy_peak=100, threads=100, path=PATH,
            mean_service_ms=200.0) -> ChapterData:
    """Both tools at each C; the model's numbers for a pool of `threads` on `path` (`mean_service_ms` a request)."""
    frames, metas = [], {}
    for tool in ("k6", "ab"):
        for c, rps in rps_at.items():
            step = f"{tool}-c{c}"
            durations = c500_durations if (c == 500 and c500_durations) else FAST_AND_SLOW
            frames.append(step_requests(step, rps, durations))
            model_rps = min(c, threads) * 1000 / mean_service_ms
            metas[step] = {"config": {"load": {"vus": c, "tool": tool, "executor": "shared-iterations", "path": path},
                                      "server": {"TOMCAT_MAX_THREADS": threads}, "system": {}},
                           "requests": {"asked": 2000, "issued": 2000, "succeeded": 2000},
                           "model": {"rps": model_rps, "rps_low": 2000 / (2000 / model_rps + 2), "threads": threads,
                                     "mean_service_ms": mean_service_ms, "concurrency": c,
                                     "mean_latency_ms": c / model_rps * 1000, "duration_ms": 2000 / model_rps * 1000},
                           "findings": []}
    busy = pd.DataFrame({"step": ["k6-c500", "ab-c500"], "ts_ms": 0, "metric": "tomcat.threads.busy", "value": busy_peak})
    empty = pd.DataFrame()
    return ChapterData("chapter1", metas, pd.concat(frames, ignore_index=True), empty, busy, empty)


ARTICLE_LIKE = {1: 5, 10: 50, 100: 490, 500: 490}
QUEUED = [5] * 6 + [1500, 2500, 3000, 4000]  # mean ~1.1 s, median fast, a tail past one sleep


def verdicts(data) -> dict[str, str]:
    return {v.finding: v.verdict for v in f002_verdicts(data)}


def test_article_like_data_reproduces_everything():
    assert verdicts(chapter(ARTICLE_LIKE, QUEUED)) == dict.fromkeys(["F002-a", "F002-b", "F002-c", "F002-d"], REPRODUCED)


def test_a_server_twice_as_fast_does_not_reproduce_the_rates():
    result = verdicts(chapter({1: 10, 10: 100, 100: 980, 500: 980}, QUEUED))
    assert result["F002-a"] != REPRODUCED and result["F002-b"] == NOT_REPRODUCED


def test_no_queueing_at_500_is_not_reproduced():
    assert verdicts(chapter(ARTICLE_LIKE, FAST_AND_SLOW))["F002-c"] == NOT_REPRODUCED


def test_a_pool_that_never_fills_is_not_the_limit():
    assert verdicts(chapter(ARTICLE_LIKE, QUEUED, busy_peak=60))["F002-d"] == NOT_REPRODUCED
    rising = verdicts(chapter({1: 5, 10: 50, 100: 490, 500: 700}, QUEUED))
    assert rising["F002-d"] == NOT_REPRODUCED
