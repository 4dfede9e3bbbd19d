"""Chapter 1's computed sentences: on the committed data (numbers read here straight from data/chapter1's files), and
on synthetic data where each must say something else."""
import json

import pandas as pd
import pytest

from harness.lab import store
from harness import ROOT
from harness.lab.store import load
from harness.book.chapters import ch1_sentences as ch1
from harness.book.chapters.ch1_pool import busy_steps, phase_steps, queue_steps, rate_steps

from test_verdicts_f002 import ARTICLE_LIKE, QUEUED, chapter, step_requests  # noqa: I001

DATA = ROOT / "data" / "chapter1"


@pytest.fixture(scope="module")
def data():
    return load("chapter1")


def meta(step: str) -> dict:
    return json.loads((DATA / step / "step.json").read_text())


def answered(step: str) -> pd.DataFrame:
    requests = store.read_parquet(DATA / step / "requests.parquet", "requests")
    return requests[(requests.status >= 200) & (requests.status < 400) & (requests.error_code == 0)]


def whole_run_rps(step: str) -> float:
    ok = answered(step)
    return len(ok) / ((ok.end_ms.max() - ok.start_ms.min()) / 1000)


def test_steps_are_chosen_by_role_and_finding(data):
    assert sorted(rate_steps(data).steps) == ["ab-c1", "k6-c1"]
    assert queue_steps(data) == ["k6-c100", "ab-c100", "k6-c500", "ab-c500"]
    assert sorted(busy_steps(data).steps) == ["ab-c10", "ab-c100", "ab-c500", "k6-c10", "k6-c100", "k6-c500"]
    assert sorted(phase_steps(data).steps) == ["k6-c100", "k6-c500"]


def test_setup_and_model_come_from_the_steps(data):
    threads = meta("k6-c100")["config"]["server"]["TOMCAT_MAX_THREADS"]
    path = meta("k6-c100")["config"]["load"]["path"]
    assert f"we set it to the article's {threads}" in ch1.setup_sentence(data)
    assert f"`{path}`" in ch1.setup_sentence(data) and "Spring Boot's default 200" in ch1.setup_sentence(data)
    assert f"\\min(C, {threads}) \\times 5$$" in ch1.model_sentence(data)
    assert "a request spends 1 s in the server on average, five times its 0.2 s of work" in ch1.little_model_sentence(data)


def test_load_sentence_reads_requests_and_run_time(data):
    c1 = meta("k6-c1")
    text = ch1.load_sentence(data)
    assert f"until {meta('k6-c500')['requests']['asked']:,} requests are done" in text
    assert f"we send {c1['requests']['asked']:,}, which take {c1['model']['duration_ms'] / 1000:,.0f} s" in text


def test_rps_sentence_gives_the_shortfall_where_the_pool_is_full(data):
    short = [1 - whole_run_rps(s) / meta(s)["model"]["rps"] for s in ("k6-c100", "ab-c100", "k6-c500", "ab-c500")]
    expected = f"{min(short) * 100:.0f}–{max(short) * 100:.0f}% short of it at C = 100 and 500"
    text = ch1.rps_sentence(data)
    assert expected in text and text.startswith("Both tools land on the model") and "That is the end of the run" in text


def test_rps_sentence_says_when_the_tail_does_not_explain_it():
    text = ch1.rps_sentence(chapter({1: 5, 10: 50, 100: 300, 500: 300}, QUEUED))
    assert text.startswith("Not every step lands") and "more than the end of the run explains" in text


def test_pace_sentence_on_the_c1_runs(data):
    rates = []
    for step in ("k6-c1", "ab-c1"):
        ok = answered(step)
        since = (ok.end_ms - ok.start_ms.min()) / 1000
        windows = int(since.max() // 10)
        rates += [((since // 10) == w).sum() / 10 for w in range(windows)]
    text = ch1.pace_sentence(data)
    assert f"answers {min(rates):.1f}–{max(rates):.1f} requests per second" in text and "keeps the same pace" in text
    # ab stamps starts in whole seconds: its windows may be off by a second's answers at each edge; the text says so
    # where that, not the server, is what spreads the rates
    assert ("whole seconds" in text) == (max(rates) - min(rates) > ch1.PACE_TOLERANCE * meta("k6-c1")["model"]["rps"])


def test_pace_sentence_sees_a_drift():
    data = chapter(ARTICLE_LIKE, QUEUED)
    slower = step_requests("k6-c1", 2.5, [5] * 9 + [2000]).assign(
        start_ms=lambda f: f.start_ms + 200_000, end_ms=lambda f: f.end_ms + 200_000)
    requests = pd.concat([data.requests[data.requests.step != "k6-c1"],
                          step_requests("k6-c1", 5, [5] * 9 + [2000], 1000), slower.head(500)], ignore_index=True)
    drifting = type(data)(data.chapter, data.steps, requests, data.ss, data.actuator, data.process)
    assert "the pace does not hold" in ch1.pace_sentence(drifting)


def test_pace_sentence_allows_for_whole_second_stamps_only_where_they_are():
    """The same steady 5/s, once with ab's whole-second start stamps: windows then read 4–6/s, which is rounding,
    not drift; with fine stamps the same spread is a drift."""
    data = chapter(ARTICLE_LIKE, QUEUED)

    def jittered(stamp):  # every 7th window loses a second of answers to the next, as rounding can do
        requests = data.requests.copy()
        one = requests.step == "ab-c1"
        since = requests.loc[one, "end_ms"] - requests.loc[one, "start_ms"].min()
        late = one & ((since // 10_000) % 7 == 3) & (since % 10_000 > 9_000)
        requests.loc[late, ["start_ms", "end_ms"]] += 1_000
        requests.loc[one, "start_ms"] = stamp(requests.loc[one, "start_ms"])
        requests.loc[one, "end_ms"] = requests.loc[one, "start_ms"] + requests.loc[one, "duration_ms"]
        return type(data)(data.chapter, data.steps, requests, data.ss, data.actuator, data.process)

    coarse = ch1.pace_sentence(jittered(lambda s: (s // 1000) * 1000))
    assert "keeps the same pace" in coarse and "whole seconds" in coarse
    fine = ch1.pace_sentence(jittered(lambda s: s + 0.5))
    assert "does not hold" in fine


def test_little_sentence(data):
    def product(step):
        ok = answered(step)
        return whole_run_rps(step) * ok.duration_ms.mean() / 1000
    at500 = [product("k6-c500"), product("ab-c500")]
    text = ch1.little_sentence(data)
    assert f"comes out at {min(at500):,.0f}–{max(at500):,.0f}, " in text
    assert f"{(1 - max(at500) / 500) * 100:.0f}–{(1 - min(at500) / 500) * 100:.0f}% short" in text
    upto = [abs(product(s) / meta(s)["config"]["load"]["vus"] - 1) for s in ("k6-c1", "ab-c1", "k6-c10", "ab-c10",
                                                                             "k6-c100", "ab-c100")]
    assert text.startswith(f"It does, to within {max(upto) * 100:.0f}%, up to C = 100.")


def closed_loop(step: str, clients: int, durations: list[float], n: int = 2000) -> pd.DataFrame:
    """`clients` each sending the next request when the last is answered, durations in turn: Little's law exactly."""
    rows, free = [], [0.0] * clients
    for k in range(n):
        client = k % clients
        start = free[client]
        free[client] = start + durations[k % len(durations)]
        rows.append({"step": step, "start_ms": start, "end_ms": free[client]})
    frame = pd.DataFrame(rows).assign(status=200, error_code=0)
    return frame.assign(duration_ms=frame.end_ms - frame.start_ms)


def test_little_sentence_when_the_queue_drains_evenly():
    data = chapter(ARTICLE_LIKE, QUEUED)
    requests = pd.concat([closed_loop(s, m["config"]["load"]["vus"], [1000] if m["config"]["load"]["vus"] == 500 else [200])
                          for s, m in data.steps.items()], ignore_index=True)
    even = type(data)(data.chapter, data.steps, requests, data.ss, data.actuator, data.process)
    text = ch1.little_sentence(even)
    assert text.startswith("It does, to within 0%, up to C = 100.") and "At C = 500 it holds too: the product comes out at 500." in text


def test_latency_sentences(data):
    full = [answered(s).duration_ms for s in ("k6-c100", "ab-c100")]
    queued = [answered(s).duration_ms for s in ("k6-c500", "ab-c500")]
    fast = sorted(f"{(d < 200).mean() * 100:.0f}" for d in full)
    text = ch1.latency_sentences(data)
    assert f"{fast[0] if fast[0] == fast[1] else fast[0] + '–' + fast[1]}% of requests are answered within 200 ms" in text
    assert f"the slowest after {min(d.max() for d in full):,.0f}–{max(d.max() for d in full):,.0f} ms" in text
    assert "400 of the 500 requests in flight wait" in text
    assert f"wait {min(d.max() for d in queued) / 1000:.1f}–{max(d.max() for d in queued) / 1000:.1f} s, more than two" in text
    p99 = [d.quantile(0.99) for d in queued]
    assert f"the 99th percentile (k6 {p99[0]:,.0f} ms, ab {p99[1]:,.0f} ms)" in text


def test_latency_sentences_when_the_tools_agree():
    text = ch1.latency_sentences(chapter(ARTICLE_LIKE, QUEUED))
    assert "the queue releases requests alike for both" in text and "may differ" not in text


def test_busy_and_premise_sentences(data):
    busy = pd.concat(pd.read_parquet(DATA / s / "actuator.parquet").assign(step=s) for s in ("k6-c10", "ab-c10"))
    peak = busy[busy.metric == "tomcat.threads.busy"]["value"].max()
    assert peak == 10
    assert ch1.busy_sentence(data).startswith("At C = 10 ten threads are busy; from C = 100 on, all 100 are")
    assert ch1.premise_sentence(data).startswith("All three start from the premise our data confirms")


def test_busy_and_premise_sentences_when_the_pool_never_fills():
    data = chapter(ARTICLE_LIKE, QUEUED, busy_peak=60)
    assert "busy threads peak at 60 of 100" in ch1.busy_sentence(data)
    assert "does not bear out here" in ch1.premise_sentence(data)


def test_another_pool_changes_the_setup():
    data = chapter({1: 4, 10: 40, 100: 200, 500: 200}, QUEUED, threads=50, path="/every-nth?n=4&sleepMs=1000",
                   mean_service_ms=250.0)
    assert "we set it to 50 (the article's pool is 100)" in ch1.setup_sentence(data)
    assert "sleeps 1 s on every 4th; the other three return at once" in ch1.setup_sentence(data)
    assert "\\min(C, 50) \\times 4$$" in ch1.model_sentence(data)


def test_default_pool_sentence():
    assert "A pool of 200 threads (Spring Boot's default)" in ch1.default_pool_sentence()
    assert "at most 4,000 requests per second" in ch1.default_pool_sentence(50)
    assert "at most 2,000 requests per second" in ch1.default_pool_sentence(100)
