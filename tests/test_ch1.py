"""Chapter 1 (seed 002): each claim's statistic on small simulated runs, both sides of its threshold; judge() on the
reference data; and the numbers the chapter quotes against the data files themselves."""
from __future__ import annotations

import dataclasses

import heapq
import itertools
import json
import random

import pandas as pd
import pytest

from harness import LabError
from harness.book import claims
from harness.book.chapters import ch1
from harness.book.chapters.ch1 import claims as ch1_claims
from harness.book.chapters.ch1 import runs
from harness.book.chapters.ch1 import words as ch1_words
from harness.book.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED
from harness.lab import store

PATH = "/every-nth?n=10&sleepMs=2000"


def simulate(clients: int, threads: int = 100, requests: int = 5000, sleep_ms: float = 2000, every: int = 10,
             fast_ms: float = 1.0, oldest: int = 150, seed: int = 0) -> pd.DataFrame:
    """A closed loop against a pool: each client sends its next request when the last is answered; a free thread takes
    any of the `oldest` waiting requests (Tomcat's poller hands them out in no strict order); every `every`-th request
    a thread takes sleeps `sleep_ms`, the others take about `fast_ms`."""
    rng, order = random.Random(seed), itertools.count()
    events = [(0.0, next(order), None, c) for c in range(clients)]  # (when, order, started: None = a new request, client)
    waiting, rows, idle, sent, taken = [], [], threads, 0, 0
    while events:
        now, _, started, client = heapq.heappop(events)
        if started is None and sent < requests:
            sent += 1
            waiting.append((now, client))
        elif started is not None:
            idle += 1
            rows.append({"vu": client, "start_ms": started, "end_ms": now, "duration_ms": now - started, "status": 200,
                         "error_code": 0, "error": ""})
            heapq.heappush(events, (now, next(order), None, client))
        while idle and waiting:
            started_, client_ = waiting.pop(rng.randrange(min(len(waiting), oldest)))
            taken += 1
            idle -= 1
            service = sleep_ms if taken % every == 0 else fast_ms * rng.uniform(0.5, 1.5)
            heapq.heappush(events, (now + service, next(order), started_, client_))
    return pd.DataFrame(rows)


def run_of(name: str, clients: int, tool: str = "k6", threads: int = 100, busy: float | None = None,
           **simulation) -> runs.Run:
    requests = simulate(clients, threads, **simulation)
    rps = min(clients, threads) * 5
    meta = {"config": {"server": {"TOMCAT_MAX_THREADS": threads},
                       "load": {"tool": tool, "vus": clients, "path": PATH, "executor": "shared-iterations"}},
            "requests": {"asked": len(requests)},
            "model": {"rps": rps, "rps_low": len(requests) / (len(requests) / rps + 2), "concurrency": clients,
                      "mean_latency_ms": clients / rps * 1000, "duration_ms": len(requests) / rps * 1000}}
    peak = min(clients, threads) if busy is None else busy
    return runs.Run(name, meta, requests, pd.DataFrame({"ts_ms": [0.0, 500.0], "value": [peak, peak]}))


@pytest.fixture
def lab(monkeypatch):
    """A synthetic chapter 1: {step id: [runs]} that runs.runs reads instead of the data directory."""
    steps: dict[str, list[runs.Run]] = {}
    monkeypatch.setattr(runs, "runs", lambda step: steps[step])
    return steps


def article_like(steps, repeats: int = 3, **server):
    for tool in ("k6", "ab"):
        for c in (1, 10, 100, 500):
            n = 500 if c == 1 else 5000
            count = repeats if c >= 100 else 1
            steps[f"{tool}-c{c}"] = [run_of(f"{tool}-c{c}" + (f".{k + 1}" if k else ""), c, tool, requests=n,
                                            seed=k + (7 if tool == "ab" else 0), **server) for k in range(count)]


def judged(rule_id: str):
    rule = claims.rules("chapter1")[rule_id]
    return claims.judge(rule, ch1_claims.STATISTICS[rule_id](rule))


# ---- one run's statistics ------------------------------------------------------------------------------------------

def test_a_pool_of_100_answers_500_a_second_once_full():
    full = run_of("k6-c500", 500)
    assert runs.steady_rate(full) == pytest.approx(500, rel=0.03)
    assert runs.whole_rate(full) < runs.steady_rate(full)  # the tail of sleeps at the end
    assert runs.span_s(full) == pytest.approx(full.requests.end_ms.max() / 1000)


def test_the_steady_rate_leaves_out_the_start_and_the_tail():
    one = run_of("k6-c100", 100)
    inner = runs.steady_rate(one, (0.3, 0.7))
    assert inner == pytest.approx(runs.steady_rate(one), rel=0.05)


def test_latency_statistics_of_a_queue():
    queued = run_of("ab-c500", 500, "ab")
    assert runs.median_ms(queued) < 1000 < queued.requests["duration_ms"].quantile(0.7)
    assert 0.34 < runs.share_over(queued, 1000) <= 0.5
    assert runs.longest_ms(queued) == queued.requests["duration_ms"].max()
    assert 4000 <= runs.longest_ms(queued) < 6000  # a wait behind a sleep, then its own sleep


def test_one_client_at_5_a_second_has_a_small_spread_of_its_own():
    one = run_of("k6-c1", 1, requests=500)
    assert runs.whole_rate(one) == pytest.approx(5, rel=0.01)
    assert 0 <= runs.batch_sigma(one) < 0.05
    assert runs.batch_sigma(run_of("k6-c100", 100)) != runs.batch_sigma(run_of("k6-c100", 100))  # 10 s: nan


@pytest.mark.usefixtures("fixed_noise")
def test_the_busy_peak_is_judged_against_the_pool():
    assert ch1_claims.outside_pool(run_of("k6-c500", 500)) == 0
    assert ch1_claims.outside_pool(run_of("k6-c500", 500, busy=60)) == pytest.approx(40 - ch1_claims.most_stray(5000))
    assert ch1_claims.outside_pool(run_of("k6-c500", 500, busy=101)) == 1


def test_the_pool_comes_from_the_steps_config():
    pool = runs.pool_of_meta("k6-c1", run_of("k6-c1", 1, requests=20).meta)
    assert (pool.threads, pool.every, pool.sleep_ms, pool.mean_service_ms) == (100, 10, 2000, 200)
    assert pool.model_rps(500) == 500 and pool.model_rps(10) == 50


def test_steps_on_two_pools_are_refused():
    data = store.ChapterData("chapter1", {s: run_of(s, 1, threads=t, requests=20).meta for s, t in
                                          (("k6-c1", 100), ("ab-c1", 50))}, *(pd.DataFrame(),) * 4)
    with pytest.raises(LabError, match="expected every step on one pool"):
        runs.pool_of(data)


# ---- each claim, both sides of its threshold -----------------------------------------------------------------------

def test_a_server_like_the_articles_reproduces_the_rates_and_the_queue(lab):
    article_like(lab)
    for claim in ("F002-a.1", "F002-a.2", "F002-c.2", "F002-c.4", "F002-d.0a", "F002-d.0b"):
        assert judged(claim).outcome == REPRODUCED, claim
    assert judged("F002-c.1a").outcome == REPRODUCED
    # 1 ms fast requests, not the article's 107 ms; this synthetic lab records no CPUs, so no machine fact is shown
    assert judged("F002-c.1b").outcome in (NOT_REPRODUCED, INCONCLUSIVE)


def longest_at(run: runs.Run, ms: float) -> runs.Run:
    """The run with its slowest request taking `ms`."""
    requests = run.requests.copy()
    slowest = requests["duration_ms"].idxmax()
    requests.loc[slowest, ["duration_ms", "end_ms"]] = ms, requests.loc[slowest, "start_ms"] + ms
    return runs.Run(run.name, run.meta, requests, run.busy)


@pytest.mark.parametrize("longest_ms, expected", [((4500, 4700, 4900), REPRODUCED), ((6500, 6800, 7000), NOT_REPRODUCED),
                                                  ((3900, 4300, 4700), INCONCLUSIVE)])
def test_the_longest_request_lies_between_two_and_three_sleeps(lab, longest_ms, expected):
    article_like(lab)
    for step in ("k6-c500", "ab-c500"):
        lab[step] = [longest_at(r, ms) for r, ms in zip(lab[step], longest_ms, strict=True)]
    assert judged("F002-c.3").outcome == expected


def test_a_server_twice_as_fast_is_not_the_articles(lab):
    article_like(lab, sleep_ms=1000)
    assert judged("F002-b.1").outcome == NOT_REPRODUCED
    assert judged("F002-a.1").outcome == NOT_REPRODUCED
    assert judged("F002-c.3").outcome == NOT_REPRODUCED  # the longest: about two 1-s sleeps, not two 2-s ones


@pytest.mark.usefixtures("fixed_noise")
def test_a_pool_that_never_fills_is_not_the_limit(lab):
    article_like(lab)
    lab["k6-c500"] = [run_of(r.name, 500, busy=60) for r in lab["k6-c500"]]
    assert judged("F002-c.4").outcome == NOT_REPRODUCED and judged("F002-d.0a").outcome == NOT_REPRODUCED


def test_more_clients_that_get_more_answers_refute_the_premise(lab):
    article_like(lab)
    lab["ab-c500"] = [run_of(r.name, 500, "ab", threads=200, seed=k) for k, r in enumerate(lab["ab-c500"])]
    assert judged("F002-d.0b").outcome == NOT_REPRODUCED


def test_every_rule_has_its_statistic():
    assert set(claims.rules("chapter1")) == set(ch1_claims.STATISTICS)


# ---- the reference data ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference():
    return ch1.load()


def test_judge_runs_on_the_reference_data(reference):
    judged_ = ch1.judge()
    assert [j.rule.claim for j in judged_] == list(claims.rules("chapter1"))
    assert all(j.outcome in claims.OUTCOMES for j in judged_)
    repeated = {s: len(m) for s, m in reference.runs.items()}
    c2 = next(j for j in judged_ if j.rule.claim == "F002-c.2")
    assert c2.measured.runs == repeated["k6-c500"] + repeated["ab-c500"]  # both tools' runs, pooled


def files(step: str) -> tuple[dict, pd.DataFrame]:
    folder = store.data_root() / "chapter1" / step
    requests = store.read_parquet(folder / "requests.parquet", "requests")
    return json.loads((folder / "step.json").read_text()), requests[store.answered(requests)]


def every_run_name(reference, clients: int) -> list[str]:
    return [name for name in store.complete_steps("chapter1")
            if reference.runs and int(json.loads((store.data_root() / "chapter1" / name / "step.json").read_text())
                                      ["config"]["load"]["vus"]) == clients]


def test_the_queue_numbers_are_the_files(reference):
    q = ch1.queue(reference)
    medians = [files(name)[1]["duration_ms"].median() for name in every_run_name(reference, q.clients)]
    assert (q.median_low_ms, q.median_high_ms) == (pytest.approx(min(medians)), pytest.approx(max(medians)))
    shares = [(files(name)[1]["duration_ms"] > 1000).mean() for name in every_run_name(reference, q.clients)]
    assert (q.share_low, q.share_high) == (pytest.approx(min(shares)), pytest.approx(max(shares)))


def test_the_whole_run_shortfall_is_the_files(reference):
    r = ch1.rates(reference)
    short = []
    for clients in (100, 500):
        for name in every_run_name(reference, clients):
            meta, ok = files(name)
            short.append(1 - len(ok) / ((ok.end_ms.max() - ok.start_ms.min()) / 1000) / meta["model"]["rps"])
    assert (r.short_low, r.short_high) == (pytest.approx(min(short)), pytest.approx(max(short)))
    assert r.full_runs == len(short)


def test_the_articles_still_quite_similar_case_is_its_rate_with_the_pool_just_full(reference):
    """The article: "an estimated 500 RPS (100 concurrent request * 5 RPS). Still quite similar to the actual 484.10"."""
    r = ch1.rates(reference)
    assert (r.article_full, r.model_full) == (484.10, pytest.approx(500))


def test_the_pool_limit_for_the_answer_page(reference):
    (limit,) = ch1.limits()
    assert limit.order == 1 and limit.unit == "requests in service at once" and limit.chapter == "chapter1"
    assert limit.value == ch1.pool_of(ch1.load()).threads  # the title's unit: requests at once, the pool's threads
    assert f"{limit.rate:,.0f} requests per second" in limit.sentence
    assert 0.8 * 500 < limit.rate < 1.05 * 500  # 100 threads, 0.2 s a request: the model's 500/s


def test_the_busy_threads_are_actuators(reference):
    b = ch1.busy(reference)
    peaks = []
    for clients in (100, 500):
        for name in every_run_name(reference, clients):
            samples = pd.read_parquet(store.data_root() / "chapter1" / name / "actuator.parquet")
            peaks.append(samples.loc[samples["metric"] == "tomcat.threads.busy", "value"].max())
    assert (b.full_low, b.full_high) == (min(peaks), max(peaks))


def test_the_repeats_sentence_names_each_c_with_its_own_number_of_runs():
    from harness.book.chapters.ch1.values import repeats_text

    assert repeats_text({1: 1, 10: 1, 100: 3, 500: 5}) == "C = 100 run three times each, and those at C = 500 five times"
    assert repeats_text({500: 3, 100: 3}) == "C = 100 and 500 run three times each"
    assert repeats_text({1: 1}) == ""


def test_the_repeats_sentence_agrees_with_the_runs_in_the_data():
    """§1.2 once said C = 100 and 500 ran five times each while C = 100 ran three (issue 41): the sentence now
    comes from each C's runs in the committed data."""
    from harness.book.prose import words

    data = ch1.load()
    text = ch1.setup(data).repeats
    for step, meta in data.steps.items():
        n = len(data.runs.get(step, [meta]))
        if n > 1:
            clients = runs.clients_of(meta)
            assert f"{clients} run {words(n)} times" in text or f"{clients} {words(n)} times" in text, (step, n, text)


def test_the_longest_requests_are_counted_in_sleeps_as_the_data_says():
    def queue(low_s, high_s):
        return ch1.values.Queue(500, 400, 5, 30, 480, 0.34, 0.39, 1.0, low_s, high_s, 0.9, 0.92, 1.0)
    model = "a wait for a thread, then a sleep of their own"
    assert ch1.sleeps_words(queue(4.4, 5.9), 2.0) == f"between two and three sleeps, as the model puts them: {model}"
    assert ch1.sleeps_words(queue(4.372, 6.59), 2.0) == f"2.2–3.3 sleeps, where the model puts them between two and three: {model}"


def test_a_mean_of_signed_deviations_names_the_runs_on_each_side_it_hides():
    """F002-b's rule averages each run's signed deviation: runs 13% above and 5% below the model read as 0.1%."""
    mixed = (0.13, 0.10, -0.05, -0.02, -0.01)
    assert ch1.signed_mean_words(mixed, 0.03) == ("2 of 5 runs lie 10–13% above the model and 3 lie 1–5% below: "
                                                  "their mean, +3%, hides both")
    assert ch1.signed_mean_words((-0.05, -0.02), -0.035) == "every run lies 2–5% below the model, and so does their mean, −4%"
    assert ch1.signed_mean_words((0.0, -0.02), -0.01) == "their mean is −1%"  # a run on the model: no side
    assert ch1.signed_mean_words((), 0.0) == "their mean is 0%"


def test_the_busy_threads_sampling_interval_is_the_runs_setting(reference):
    intervals = {m["config"]["system"]["sample_interval_ms"] for m in reference.steps.values()}
    assert ch1.busy(reference).interval_ms in intervals and len(intervals) == 1


def test_the_tail_words_name_the_machines_cores():
    rates = dataclasses.replace(ch1.rates(ch1.load()), beyond_tail=1)
    assert "on two cores the server shares with the load tool" in ch1.tail_words(rates, 2)
    assert "on four cores" in ch1.tail_words(rates, 4)


def test_more_busy_threads_than_clients_below_the_pool_is_counted_and_explained_from_the_data():
    """C = 10 once showed 11 busy threads (ab-c10, one sample): the page said "at most 11 are busy" with nothing on how
    10 clients keep 11 threads busy. The words now count such samples, name their runs and say how a sample can."""
    busy = ch1.busy(ch1.load())
    data = ch1.load()
    samples = [r.busy["value"] for s in runs.steps_with(data, busy.part) for r in runs.runs(s)]
    over = sum(int((v > busy.part).sum()) for v in samples)
    text = ch1.busy_over_words(busy)
    if over:
        assert busy.part_peak > busy.part and f"in {over:,} of {sum(map(len, samples)):,} samples" in text
        assert all(name in text for name in busy.part_over)
    else:
        assert text == ", never more than the clients" and busy.part_peak <= busy.part
    none = ch1.values.Busy(100, 10, 10.0, (), 0, 400, 100, 100.0, 100.0, 500)
    assert ch1.busy_over_words(none) == ", never more than the clients"


def test_the_pace_holds_only_when_every_window_is_near_the_model():
    from harness.book.chapters.ch1.values import Pace

    held = ch1_words.pace_words(Pace(1, 10.0, 4.6, 5.4, 5.0, 100.2))
    assert held.startswith("the rate holds over the whole 100-s run: every 50 answers (10 s at the model's pace) came "
                           "at 4.6–5.4 requests per second") and "No warm-up or drift" in held
    slow = ch1_words.pace_words(Pace(1, 10.0, 4.0, 5.0, 5.0, 102.3))
    assert slow.startswith("the rate does not hold over the whole 102-s run") and "the slowest 20% below it" in slow
    assert "does not hold" in ch1_words.pace_words(Pace(1, 10.0, 5.0, 5.6, 5.0, 100.0))  # too fast is not holding


def test_a_window_of_the_pace_is_a_count_of_answers_so_bursts_do_not_alias():
    """Bursts of 10 answers every 2.05 s: windows of 10 s held 4 bursts or 5 (4.0 or 5.0 a second); windows of 50
    answers read the cycle's own pace, 50 / 10.25 s, every time."""
    import pandas as pd

    from harness.book.chapters.ch1.runs import Run
    from harness.book.chapters.ch1.values import window_rates

    ends = [cycle * 2050 + (2000 if k == 9 else k) for cycle in range(25) for k in range(10)]
    requests = pd.DataFrame({"start_ms": 0, "end_ms": ends, "status": 200, "error_code": 0, "error": None})
    rates = window_rates(Run("k6-c1", {}, requests, pd.DataFrame()), 50)
    assert len(rates) == 4 and rates.round(3).eq(round(50 / 10.25, 3)).all()
