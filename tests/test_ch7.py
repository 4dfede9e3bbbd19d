"""Chapter 7's claims, statistic by statistic, on small made-up inputs on both sides of each rule's threshold; the
limit a step's numbers name; the reads of chapters 2 and 4 (memory per thread, context switches); the sentences
whose wording depends on the data; and judge() and limits() on the reference data (their numbers computed from the
files, never remembered)."""
from __future__ import annotations

import math
import re
from dataclasses import astuple

import numpy as np
import pytest

from harness import ROOT
from harness.book import claims as book_claims
from harness.book.chapters import ch7
from harness.book.chapters.ch7 import claims, elsewhere, values, words
from harness.book.chapters.ch7.runs import (ACCEPTOR, LOAD, LOOP, NONE, OPEN_FILES, PLATFORM, THREADS, VIRTUAL,
                                            limit_of)
from harness.book.noise import most_stray
from harness.lab import store

S = 5.0  # the wait, s
CHAPTER_QMD = ROOT / "chapters" / "07-past-thread-per-request.qmd"


def waves(users: int, threads: int, first: int = 10) -> tuple[tuple[int, int], ...]:
    """A pool's answers: `threads` every S seconds from `first` until every user is answered."""
    done, second, answers = 0, first, []
    while done < users:
        answers.append((second, min(threads, users - done)))
        done += answers[-1][1]
        second += int(S)
    return tuple(answers)


def one_wave(users: int, first: int = 10, spread: int = 8) -> tuple[tuple[int, int], ...]:
    """Every user answered one wait after it arrived, arrivals spread evenly over `spread` seconds."""
    per = users // spread
    return tuple((first + i, per + (users - per * spread if i == spread - 1 else 0)) for i in range(spread))


def run(answers, asked: int | None = None, threads: float = 20.0, run_id: str = "x") -> claims.Run:
    answered = sum(n for _, n in answers)
    return claims.Run(run_id, asked if asked is not None else answered, answered, S, tuple(answers), threads)


def rule(claim: str) -> book_claims.Rule:
    book_claims._rules.cache_clear()
    return book_claims.rules("chapter7")[claim]


@pytest.fixture
def rounds_of(monkeypatch):
    """Make every step named have these runs (one list per step id), instead of reading data."""
    def use(runs_by_step: dict[str, list[claims.Run]]):
        monkeypatch.setattr(claims, "runs", lambda step: runs_by_step.get(step, []))
    return use


# ---- L, Little's law on the service stage -------------------------------------------------------------------------

def test_a_pool_of_two_thousand_serves_at_most_two_thousand_at_once():
    assert claims.in_service(waves(15_000, 2000), S) == pytest.approx(15_000 * S / (35 + S))  # 8 waves: 10 … 45 s
    assert claims.in_service(waves(15_000, 2000), S) < 2000
    assert claims.in_service(waves(10_000, 2000), S) == 2000  # full waves back to back: exactly the pool


def test_one_wait_for_everyone_serves_them_all_at_once():
    assert claims.in_service(one_wave(15_000), S) == pytest.approx(15_000 * S / (7 + S))
    assert claims.in_service(one_wave(15_000), S) > 2000


def test_the_nearby_window_leaves_out_the_first_and_last_percent():
    answers = ((5, 10), *one_wave(10_000, first=10), (60, 10))  # two stragglers far from the rest
    assert claims.in_service(answers, S) < claims.in_service(answers, S, share=0.01)
    assert claims.in_service(answers, S, share=0.01) == pytest.approx(10_000 * S / (7 + S))
    assert math.isnan(claims.in_service((), S))


def test_unanswered_beyond_the_stray_failures():
    allowed = most_stray(15_000)
    assert claims.beyond_stray(run(one_wave(15_000), asked=15_000)) == -allowed
    assert claims.beyond_stray(run(one_wave(15_000 - allowed - 1), asked=15_000)) == 1


# ---- each claim's statistic, both sides of its threshold ----------------------------------------------------------

def outcome(claim: str) -> str:
    return book_claims.judge(rule(claim), claims.STATISTICS[claim]()).outcome


def test_every_declared_claim_has_its_statistic():
    book_claims._rules.cache_clear()
    assert list(claims.STATISTICS) == list(book_claims.rules("chapter7"))


def test_the_pool_claim_holds_under_its_threads_and_fails_over_them(rounds_of):
    steps = claims.JUDGED[PLATFORM]
    rounds_of({steps[0]: [run(waves(9_000, 2000, f)) for f in (9, 10, 11)],
               steps[1]: [run(waves(15_000, 2000, f)) for f in (9, 10, 11)]})
    measured = claims.STATISTICS["F002-d.1a"]()
    assert measured.runs == 3 and measured.nearby
    assert measured.values[0] == pytest.approx(claims.in_service(waves(15_000, 2000, 9), S))  # the larger
    assert outcome("F002-d.1a") == book_claims.REPRODUCED
    rounds_of({steps[0]: [run(one_wave(10_000, spread=s)) for s in (5, 6, 7)],
               steps[1]: [run(one_wave(15_000, spread=s)) for s in (5, 6, 7)]})
    assert outcome("F002-d.1a") == book_claims.NOT_REPRODUCED


@pytest.mark.parametrize("model, answers_all, more, per_thread", [
    (LOOP, "F002-d.2a", "F002-d.2b", "F002-d.2c"), (VIRTUAL, "F002-d.3a", "F002-d.3b", "F002-d.3c")])
def test_a_way_out_answers_everyone_at_once_on_few_threads(rounds_of, model, answers_all, more, per_thread):
    steps = claims.JUDGED[model]
    rounds_of({steps[0]: [run(one_wave(10_000, spread=s), threads=20 + s) for s in (5, 6, 7)],
               steps[1]: [run(one_wave(15_000, spread=s), threads=20 + s) for s in (7, 8, 9)]})
    assert {outcome(c) for c in (answers_all, more, per_thread)} == {book_claims.REPRODUCED}
    assert claims.STATISTICS[more]().values[0] == pytest.approx(claims.in_service(one_wave(10_000, spread=5), S))


@pytest.mark.parametrize("model, answers_all, more, per_thread", [
    (LOOP, "F002-d.2a", "F002-d.2b", "F002-d.2c"), (VIRTUAL, "F002-d.3a", "F002-d.3b", "F002-d.3c")])
def test_a_way_out_in_waves_or_on_many_threads_is_not_reproduced(rounds_of, model, answers_all, more, per_thread):
    steps = claims.JUDGED[model]
    lost = most_stray(15_000) + 500
    rounds_of({steps[0]: [run(waves(10_000, 2000, f), threads=3000) for f in (9, 10, 11)],
               steps[1]: [run(waves(15_000 - lost, 2000, f), asked=15_000, threads=3000) for f in (9, 10, 11)]})
    assert {outcome(c) for c in (answers_all, more, per_thread)} == {book_claims.NOT_REPRODUCED}


def test_fifteen_k_holds_when_every_run_answers_everyone(rounds_of, monkeypatch):
    monkeypatch.setattr(elsewhere, "article_15k", lambda: {"asked": 15_000, "succeeded": 14_990, "somaxconn": 5000,
                                                           "accept_count": 5000})
    rounds_of({claims.FIFTEEN_K: [run(one_wave(15_000), asked=15_000, run_id=f"r{k}") for k in (1, 2, 3)]})
    assert outcome("F000-k.1") == book_claims.REPRODUCED
    assert "14,990 of 15,000 answered" in claims.STATISTICS["F000-k.1"]().note
    rounds_of({claims.FIFTEEN_K: [run(one_wave(15_000 - n), asked=15_000) for n in (900, 1000, 1100)]})
    assert outcome("F000-k.1") == book_claims.NOT_REPRODUCED


@pytest.mark.usefixtures("fixed_noise")
def test_errors_above_twenty_k_read_the_fewer_and_borrow_the_noise_runs_spread(rounds_of, monkeypatch):
    monkeypatch.setattr(elsewhere, "noise_failures", lambda: (1700, 1710, 1690, 1705, 1698))
    monkeypatch.setattr(elsewhere, "noise_sigma", lambda: float(np.std([1700, 1710, 1690, 1705, 1698], ddof=1)))
    rounds_of({"platform-30k": [run(one_wave(28_000), asked=30_000)],
               "platform-50k": [run(one_wave(34_000), asked=50_000)]})
    measured = claims.STATISTICS["F000-k.2"]()
    assert measured.values == (2000 - most_stray(30_000),) and "5 runs" in measured.sigma_source
    assert outcome("F000-k.2") == book_claims.REPRODUCED
    rounds_of({"platform-30k": [run(one_wave(30_000), asked=30_000)],
               "platform-50k": [run(one_wave(34_000), asked=50_000)]})
    assert outcome("F000-k.2") == book_claims.INCONCLUSIVE  # no error at 30k: 0 − most_stray, inside the noise runs' σ
    monkeypatch.setattr(elsewhere, "noise_sigma", lambda: 0.1)
    # Its rule names a machine fact (the open files) that is no CPU's share: the data cannot show it, a miss is a miss.
    assert outcome("F000-k.2") == book_claims.NOT_REPRODUCED


def test_a_claim_without_its_steps_is_inconclusive_not_an_error(rounds_of):
    rounds_of({})
    assert outcome("F002-d.2b") == book_claims.INCONCLUSIVE


# ---- chapters 2 and 4: memory per thread, context switches --------------------------------------------------------

def test_memory_per_thread_is_the_difference_of_two_slopes(monkeypatch):
    users = [300, 1000, 3000, 6000, 10_000, 15_000]
    hold = elsewhere.fit(users, [200e6 + 250 * 1024 * u + (-1) ** i * 1e6 for i, u in enumerate(users)])
    queue = elsewhere.fit(users, [200e6 + 26 * 1024 * u + (-1) ** i * 1e5 for i, u in enumerate(users)])
    memory = elsewhere.ThreadMemory(hold, queue, 200)
    assert memory.kib == pytest.approx(224, abs=1) and 0 < memory.stderr_kib < 5
    monkeypatch.setattr(elsewhere, "thread_memory", lambda: memory)
    assert outcome("F002-d.1b") == book_claims.REPRODUCED
    monkeypatch.setattr(elsewhere, "thread_memory", lambda: elsewhere.ThreadMemory(queue, queue, 200))
    assert outcome("F002-d.1b") != book_claims.REPRODUCED


def test_context_switches_pair_run_k_with_run_k(monkeypatch):
    def meta(switches: int, answered: int = 1000, threads: int = 200) -> dict:
        return {"during_load": {"server": {"voluntary": switches, "involuntary": 0}},
                "requests": {"succeeded": answered}, "server_info": {"tomcat": {"maxThreads": threads}},
                "config": {"load": {"stages": [{"duration": "10s", "target": 800}, {"duration": "30s", "target": 800}]}}}
    metas = {"sweep-800": meta(2000), "sweep-800.2": meta(2100), "threads-800-800": meta(2600, threads=800),
             "threads-800-800.2": meta(2500), "threads-800-800.3": meta(2400), "sweep-800.3": {"requests": {}}}
    monkeypatch.setattr(elsewhere, "_complete", lambda chapter: metas)
    pair = elsewhere.switches()
    assert pair.ratios == pytest.approx((1.3, 2500 / 2100))  # run 3 of sweep-800 has no count: no third pair
    assert (pair.more_threads, pair.fewer_threads, pair.users) == (800, 200, 800)
    assert outcome("F002-d.1c") == book_claims.REPRODUCED
    metas.update({"threads-800-800": meta(2000, threads=800), "threads-800-800.2": meta(2100)})
    assert outcome("F002-d.1c") != book_claims.REPRODUCED


def test_no_context_switch_counts_leave_the_claim_open(monkeypatch):
    monkeypatch.setattr(elsewhere, "_complete", lambda chapter: {"sweep-800": {"requests": {"succeeded": 10}}})
    measured = claims.STATISTICS["F002-d.1c"]()
    assert not measured.values and "during_load" in measured.note
    assert "no count of the server's context switches" in words.switches_sentence(None)


# ---- the limit a step names, the sentences whose wording depends on the data --------------------------------------

def step(model: str, users: int, **changed) -> dict:
    held = min(users, 19_800)
    return {"model": model, "users": users, "asked": users, "issued": users, "failed": users - held,
            "peak_open_files": held + 60, "nofile": 20_000, "accept_queue_max": 100.0, "backlog": 4096,
            "peak_threads": 2026.0 if model == PLATFORM else 21.0} | changed


def test_the_limit_is_named_from_the_data():
    assert limit_of(step(VIRTUAL, 30_000)) == OPEN_FILES
    assert limit_of(step(PLATFORM, 15_000)) == THREADS
    assert limit_of(step(LOOP, 15_000)) == NONE
    assert limit_of(step(LOOP, 15_000, issued=14_000)) == LOAD
    assert limit_of(step(LOOP, 15_000, failed=900, accept_queue_max=4097.0)) == ACCEPTOR


def test_the_wording_follows_the_data():
    w = values.OneWait(15_000, 11.0, 8, S, 44.0, 20.0, 16.0, everyone=True)
    assert words.one_wait_sentence(w).startswith("At 15,000 users every server answered every user: the pool by "
                                                 "second 44, virtual threads by second 20")
    assert "not every server" in words.one_wait_sentence(values.OneWait(15_000, 11.0, 8, S, 44, 20, 16, False))
    cost = values.ThreadCost(228, 13, 254, 26, 200, 300, 15_000, 2.0, 2.5, 1.25, 5, 200, 800, 800)
    assert "2.5 times per answered request, with 200 2.0: 1.2 times as many, more with the bigger pool" in \
        words.switches_sentence(cost)
    same = values.ThreadCost(228, 13, 254, 26, 200, 300, 15_000, 5.9, 5.9, 1.01, 5, 200, 800, 800)
    assert ": about as many with either pool (the mean of 5 pairs" in words.switches_sentence(same)
    f = values.FifteenK(15_000, (15_000, 15_000, 14_999), 7, None, None, 15_000, 15_061)
    assert "the three runs of 15,000 users answered 15,000, 15,000 and 14,999" in words.fifteen_k_sentence(f)
    p = values.PastLimit(50_000, 3, 11.5, 34_000, 36_000, 20_000, 20_000, 7, 9, 184, ((30_000, 1733), (50_000, 15_771)),
                         24_154, 24_097)
    assert words.failed_above_sentence(p).endswith("1,733 of 30,000 and 15,771 of 50,000 users failed.")


# ---- the reference data ------------------------------------------------------------------------------------------

def reference_or_skip():
    if not store.complete_steps("chapter7"):
        pytest.skip(f"no chapter 7 steps in {store.data_root()}: run `invoke run chapter7` first")


def test_judge_runs_on_the_reference_data_in_the_claims_files_order():
    reference_or_skip()
    judged = ch7.judge()
    assert [j.rule.claim for j in judged] == list(book_claims.rules("chapter7"))
    assert all(j.outcome in book_claims.OUTCOMES for j in judged)
    by_claim = {j.rule.claim: j for j in judged}
    fifteen = claims.runs(claims.FIFTEEN_K)
    assert by_claim["F000-k.1"].measured.values == tuple(float(beyond) for beyond in map(claims.beyond_stray, fifteen))


def test_the_limits_quote_the_data_and_point_at_the_chapters_sections():
    reference_or_skip()
    limits = ch7.limits()
    anchors = set(re.findall(r"\{#(sec-[a-z0-9-]+)\}", CHAPTER_QMD.read_text()))
    assert limits and all(limit.anchor in anchors and limit.chapter == "chapter7" for limit in limits)
    assert [limit.order for limit in limits] == sorted(limit.order for limit in limits)
    data = ch7.load()
    table = ch7.steps_table(data)
    files = next(limit for limit in limits if limit.name == "open files")
    assert files.value == table.nofile.iloc[0] and f"{int(table.peak_open_files.max()):,} open files" in files.sentence


def tooltips(spec) -> list[dict]:
    """Every tooltip field of a Vega-Lite spec, at any depth."""
    if isinstance(spec, dict):
        found = [t for t in spec.get("tooltip", []) if isinstance(t, dict)] if isinstance(spec.get("tooltip"), list) else []
        return found + [t for key, value in spec.items() if key != "tooltip" for t in tooltips(value)]
    return [t for item in spec for t in tooltips(item)] if isinstance(spec, list) else []


def test_every_chart_names_its_tooltips_in_words():
    reference_or_skip()
    data = ch7.load()
    table = ch7.steps_table(data)
    charts = [ch7.answers_chart(data, table, max(ch7.JUDGED_USERS)), ch7.concurrency_chart(2000),
              ch7.thread_memory_chart(), ch7.limit_chart(data, table, int(table.users.max()))]
    for chart in charts:
        fields = tooltips(chart.to_dict())
        assert fields and all(f.get("title") and "_" not in f["title"] for f in fields), fields


# ---- this pass's numbers beside the verdicts' pooled ones ------------------------------------------------------------

def judgement(claim: str, values_: tuple[float, ...], passes: int = 1, sigma: float | None = None,
              borrowed: float | None = None) -> book_claims.Judgement:
    """A claim judged on `values_`; pooled over `passes` kept passes (mean and σ as given) when passes > 1."""
    pooled = {"pooled_value": float(np.mean(values_)), "pooled_sigma": sigma, "passes": passes} if passes > 1 else {}
    return book_claims.Judgement(rule(claim), book_claims.Measured(values_, borrowed_sigma=borrowed, **pooled),
                                 book_claims.REPRODUCED, 3.0)


CONCURRENCY = values.Concurrency(3, 1836.8, 4615.4, 5000.0, 21, 19, 219.8, 277.8)


def test_the_pooled_concurrency_is_the_verdicts_values():
    said = dict(zip(values.CONCURRENCY_CLAIMS, (1788.9, 4577.2, 4960.7, 218.0, 270.7), strict=True))
    claim = {c: judgement(c, (v, v, v), passes=3, sigma=1.0) for c, v in said.items()}
    assert astuple(values.pooled(claim)) == pytest.approx((3, 3, 1788.9, 4577.2, 4960.7, 218.0, 270.7))


def test_one_pass_and_the_pooled_verdicts_are_told_apart():
    same = values.Pooled(1, 3, 1836.8, 4615.4, 5000.0, 219.8, 277.8)
    assert words.pooled_sentence(CONCURRENCY, same) == "The verdicts below read the same numbers."
    pooled = values.Pooled(3, 9, 1788.9, 4577.2, 4960.7, 218.0, 270.7)
    assert words.pooled_sentence(CONCURRENCY, pooled) == (
        "Those are one pass's runs. The verdicts below pool the chapter's 3 kept passes (9 rounds): there platform "
        "threads' L was 1,789, virtual threads' 4,577 and the event loop's 4,961, about 218 and 271 requests per "
        "thread.")
    other = values.Pooled(1, 3, 1800.0, 4615.4, 5000.0, 219.8, 277.8)
    assert "The verdicts below judge the chapter's kept pass (3 rounds): there platform threads' L was 1,800" in \
        words.pooled_sentence(CONCURRENCY, other)


COST = values.ThreadCost(228.9, 17.6, 253.5, 24.6, 200, 300, 15_000, 5.87, 5.88, 1.0027, 5, 200, 800, 800)


def test_a_threads_memory_says_how_the_verdict_states_its_spread():
    said = "The ± is the two least-squares slopes' standard errors"
    assert words.memory_sigma_sentence(COST, None) == said + "."
    assert words.memory_sigma_sentence(None, judgement("F002-d.1b", (228.9,), borrowed=17.6)) == said + "."
    assert words.memory_sigma_sentence(COST, judgement("F002-d.1b", (228.9,), borrowed=17.6)) == \
        said + ", as in the verdict below."
    thrice = judgement("F002-d.1b", (228.9, 228.9, 228.9), passes=3, sigma=10.16)
    assert words.memory_sigma_sentence(COST, thrice) == (
        f"{said}. The verdict below says ± 10.2: it pools the chapter's 3 kept passes, each of which read these same "
        "runs of chapter 2, as if they were independent.")
    moved = judgement("F002-d.1b", (228.9, 240.0, 235.0), passes=3, sigma=3.2)
    assert words.memory_sigma_sentence(COST, moved) == (
        f"{said}. The verdict below states what the chapter's 3 kept passes recorded: 235 ± 3.2 KiB.")
    older = judgement("F002-d.1b", (231.5, 231.5, 231.5), passes=3, sigma=10.1)
    assert words.memory_sigma_sentence(COST, older) == (
        f"{said}. The verdict below states what the chapter's 3 kept passes recorded: 232 ± 10.1 KiB, from 1 distinct "
        "value: passes that found the same runs of chapter 2 recorded them again, and the ± pools them as if they "
        "were independent.")


def test_the_switches_ratio_is_the_rules_statistic_beside_the_verdicts():
    base = words.switches_sentence(COST)
    assert base.endswith("(the mean of 5 pairs of runs; the rule's statistic, the mean of the pairs' ratios, is 1.00).")
    assert words.switches_sentence(COST, None) == base
    same = judgement("F002-d.1c", (1.0027,))
    assert words.switches_sentence(COST, same) == base + " The verdict below reads the same."
    recorded = judgement("F002-d.1c", (0.97, 1.06, 0.99, 1.05, 1.16) * 3, passes=3, sigma=0.019)
    assert words.switches_sentence(COST, recorded) == base + (
        " The verdict below reads 1.05: the same statistic over the 15 ratios the chapter's 3 kept passes recorded, "
        "5 of them distinct: a pass records chapter 4's runs as it finds them, and the pooled spread counts a run that "
        "several passes found as several.")
    distinct = judgement("F002-d.1c", tuple(1 + k / 100 for k in range(15)), passes=3, sigma=0.019)
    assert words.switches_sentence(COST, distinct).endswith("over the 15 ratios the chapter's 3 kept passes recorded.")
    empty = book_claims.Judgement(rule("F002-d.1c"), book_claims.Measured(()), book_claims.INCONCLUSIVE, None)
    assert words.switches_sentence(COST, empty) == base


def test_a_held_count_past_the_open_files_limit_is_named():
    import pandas as pd

    frame = pd.DataFrame({"step": ["a", "b", "c"], "nofile": [20_000] * 3,
                          "peak_connections": [19_989.0, 20_026.0, 20_775.0]})
    over = values.held_count(frame)
    assert over == values.HeldCount(2, 20_000, 775, "c", 20_775)
    assert words.held_count_sentence(over) == (
        "It passed the open-files limit, which the process cannot, in 2 steps, by up to 775 (c: 20,775): those counts "
        "include connections established on the port that the process had not yet accepted: ss reads the port's "
        "sockets one after another, not all at one instant.")
    within = values.held_count(frame.iloc[:1])
    assert within == values.HeldCount(0, 20_000, 0, "", 19_989)
    assert words.held_count_sentence(within) == "It stayed within the open-files limit in every step: at most 19,989."


def test_the_answer_pages_way_out_names_virtual_threads_and_the_pooled_values(monkeypatch):
    import importlib

    ch7_limits = importlib.import_module("harness.book.chapters.ch7.limits")  # the package exports limits(), not it

    monkeypatch.setattr(values, "concurrency", lambda: CONCURRENCY)
    same = ch7_limits.ways_out(2000, values.Pooled(1, 3, 1836.8, 4615.4, 5000.0, 219.8, 277.8))
    assert same.name == "past a thread per request (virtual threads)" and same.value == CONCURRENCY.virtual
    assert same.sentence.endswith("where 2,000 platform threads served at most 1,837.")
    pooled = ch7_limits.ways_out(2000, values.Pooled(3, 9, 1788.9, 4577.2, 4960.7, 218.0, 270.7))
    assert pooled.sentence.endswith("at most 1,837 in this edition's run; the chapter's verdicts, pooled over its 3 "
                                    "kept passes, read 4,577, 4,961 and 1,789.")
    one = ch7_limits.ways_out(2000, values.Pooled(1, 3, 1800.0, 4615.4, 5000.0, 219.8, 277.8))
    assert "the chapter's verdicts, on its kept pass, read 4,615, 5,000 and 1,800." in one.sentence


def test_the_page_reads_its_pooled_numbers_from_the_verdicts_claims():
    reference_or_skip()
    from harness.book.verdict_tables import book_verdicts

    claim = {j.rule.claim: j for j in book_verdicts("chapter7", ch7.judge())}
    p = ch7.pooled(claim)
    assert (p.pool, p.virtual, p.loop) == tuple(claim[c].measured.value for c in ("F002-d.1a", "F002-d.3b", "F002-d.2b"))
    h = ch7.held_count(ch7.steps_table(ch7.load()))
    assert h.steps == 0 or h.held > h.nofile


def test_users_lost_where_no_limit_is_named_are_told_with_k6s_send_time_beside_tomcats_timeout():
    from harness.book.chapters.ch7.values import LostUnnamed

    late = LostUnnamed("virtual-20k", 20_000, 3_248, (("EOF", 3_246), ("http: server closed idle connection", 2)),
                       16_228, 20_000, 23.97, 20.0)
    said = words.lost_unnamed_sentence((late,))
    assert said.startswith('The step virtual-20k lost 3,248 of 20,000 users where its data names no limit: it held at '
                           'most 16,228 open files of its 20,000, and k6 reported 3,246 "EOF" and 2 "http: server '
                           'closed idle connection".')
    assert "took 24.0 s to send" in said and "connection-timeout of 20 s" in said and said.endswith("that cause.")
    prompt = LostUnnamed("x", 10, 1, (("EOF", 1),), 5, 20_000, 4.4, 20.0)
    assert words.lost_unnamed_sentence((prompt,)).endswith("took at most 4.4 s to send; the data does not say why they "
                                                           "failed.")
    assert words.lost_unnamed_sentence(()).startswith("Every step that lost users lost them at a limit")
