"""Chapter 3's claims: each statistic on small synthetic runs, on both sides of its rule's threshold; σ borrowed from
the repeated steps; and judge() on the reference data (nothing here is a number of one particular run)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from harness.book import claims
from harness.book.chapters import ch3
from harness.book.chapters.ch3 import claims as c3
from harness.book.chapters.ch3 import runs as r
from harness.book.faces import Limit
from harness.book.noise import most_stray
from harness import ROOT
from harness.book.verdict import INTERRUPTED_TEXT, failure_kinds
from harness.lab import store

T0 = 1_800_000_000_000
RULES = claims.rules("chapter3")
THREADS, SLEEP_S = 200, 5.0


def run(ok_ends_s=(), failures=(), users=None, threads=THREADS, mc=8192, ac=100, estab=None, queue=None, name="x-pv"):
    """A synthetic run: answers ending at `ok_ends_s` (own clock = time since the spike), failures as (error, own s)."""
    rows = [(200, 0, "", s) for s in ok_ends_s]
    rows += [(0, -1 if text == INTERRUPTED_TEXT else 1050, text, s) for text, s in failures]
    frame = pd.DataFrame(rows, columns=["status", "error_code", "error", "own"])
    frame["error"] = frame["error"].astype("string")
    frame = frame.assign(start_ms=float(T0), end_ms=T0 + frame["own"] * 1000, duration_ms=frame["own"] * 1000)
    frame = frame.assign(ok=store.answered(frame), kind=failure_kinds(frame), own_s=frame["own"], end_s=frame["own"])
    users = len(frame) if users is None else users
    ss = pd.DataFrame({"ts_ms": [T0 - 500.0, T0 + 2000.0], "estab": [0, estab if estab is not None else 0],
                       "accept_queue": [0, queue or 0], "syncookies_sent": 0}) if estab is not None else pd.DataFrame()
    meta = {"config": {"server": {"SLEEP_MS": SLEEP_S * 1000, "TOMCAT_MAX_THREADS": threads,
                                  "TOMCAT_MAX_CONNECTIONS": mc, "TOMCAT_ACCEPT_COUNT": ac},
                       "load": {"executor": "per-vu-iterations", "request_timeout": "60s"}},
            "requests": {"asked": users, "issued": len(frame)}, "load_ended_ms": T0 + 31_000}
    return r.Run(name, "chapter3", meta, frame, ss, pd.DataFrame(columns=["ts_ms", "metric", "value"]))


def waves(users, threads=THREADS, offset=0.1):
    """Every user answered in waves of `threads`, one per sleep, `offset` after the wave is due."""
    return [(k // threads + 1) * SLEEP_S + offset for k in range(users)]


def holds(claim: str, value: float) -> bool:
    return claims.margin(RULES[claim], value) > 0


# ---- waves ---------------------------------------------------------------------------------------------------------

def test_a_full_pool_answers_exactly_one_wave_per_window():
    full = run(waves(300))
    assert r.widest(full, 4.5) == THREADS
    assert holds("F000-a.1a", r.outside_pool(full, 4.5))


def test_more_answers_in_a_window_than_threads_break_the_wave_rule():
    crowded = run([5.0] * (THREADS + 3) + [10.0] * 97)
    assert r.outside_pool(crowded, 4.5) == 3
    assert not holds("F000-a.1a", r.outside_pool(crowded, 4.5))


def test_a_pool_that_never_fills_breaks_the_wave_rule():
    thin = run(waves(300, threads=150))
    assert r.outside_pool(thin, 4.5) == THREADS - most_stray(300) - 150
    assert not holds("F000-l.1", r.outside_pool(thin, 4.5))


def test_wave_medians_are_read_on_the_requests_own_clock():
    on_time = run(waves(300, offset=0.2))
    assert r.wave_medians(on_time) == pytest.approx([5.2, 10.2])
    assert holds("F000-a.1b", r.wave_distance(on_time))
    late = run(waves(300, offset=3.0))
    assert not holds("F000-a.1b", r.wave_distance(late))


def test_the_longest_answer_decides_about_25_s():
    assert holds("F000-b.2", r.longest_s(run(waves(1000))))
    assert not holds("F000-b.2", r.longest_s(run(waves(1200))))  # a sixth wave: 30 s


# ---- counts -----------------------------------------------------------------------------------------------------------

def test_stray_failures_count_as_answered_and_more_do_not():
    stray = most_stray(1000)
    few = run(waves(1000 - stray), failures=[("request timeout", 60.0)] * stray, users=1000)
    many = run(waves(1000 - stray - 1), failures=[("request timeout", 60.0)] * (stray + 1), users=1000)
    assert holds("F000-b.3", c3.unanswered(few))
    assert not holds("F000-b.3", c3.unanswered(many))


def test_users_k6_never_started_count_as_unanswered():
    short = run(waves(900), users=1000)
    assert short.failed == 100


def test_timeouts_and_interruptions_are_counted_by_kind():
    mixed = run(waves(1200), failures=[(INTERRUPTED_TEXT, math.nan)] * 800 + [("request timeout", 60.0)] * 30)
    assert c3.interrupted(mixed) == 800 - most_stray(2030)
    assert holds("F000-c.1a", c3.interrupted(mixed))
    assert holds("F000-d.1a", c3.timed_out(mixed))
    assert not holds("F000-d.1a", c3.timed_out(run(waves(1200))))


def test_timeouts_after_a_minute_on_their_own_clock():
    timed = run(waves(10), failures=[("request timeout", 60.0)] * 5)
    assert holds("F000-d.1b", r.median_own_s(timed, "request timeout"))
    early = run(waves(10), failures=[("request timeout", 20.0)] * 5)
    assert not holds("F000-d.1b", r.median_own_s(early, "request timeout"))


# ---- the ceiling ------------------------------------------------------------------------------------------------------

def headline(answered: int, estab: int | None = 8293, failures=None):
    failures = failures or [("dial: i/o timeout", 30.5)] * (10_000 - answered)
    return run(waves(answered, threads=1000), failures=failures, users=10_000, threads=1000, estab=estab, queue=101)


def test_the_ceiling_deciding_who_gets_in():
    assert holds("F000-f.2a", r.beyond_share(headline(8293)))
    assert holds("F000-f.2a", r.beyond_share(headline(8293 + 800)))
    assert not holds("F000-f.2a", r.beyond_share(headline(8293 + 900)))


def test_every_user_the_server_holds_is_answered():
    assert holds("F000-f.2b", c3.held_unanswered(headline(8293)))
    assert not holds("F000-f.2b", c3.held_unanswered(headline(8293 - most_stray(10_000) - 1)))


@pytest.mark.usefixtures("fixed_noise")
def test_the_established_peak_against_the_ceiling():
    assert holds("F000-f.3a", r.ceiling_distance(headline(8293, estab=8294)))
    assert not holds("F000-f.3a", r.ceiling_distance(headline(8293, estab=8295)))
    assert not holds("F000-f.3a", r.ceiling_distance(headline(8293, estab=8192)))


def test_the_kernels_plus_one_is_a_band():
    small = run(waves(4), mc=2, ac=1, estab=4, queue=2)
    assert holds("F000-f.3b", c3.accept_queue_extra(small))
    assert not holds("F000-f.3b", c3.accept_queue_extra(run(waves(4), mc=2, ac=1, estab=3, queue=1)))


def test_the_articles_four_kinds_of_error():
    only_dial = headline(8293)
    assert c3.article_kinds(only_dial) == 1
    every = [("dial: i/o timeout", 30.5)] * 500 + [("read: connection reset by peer", 10.0)] * 500 + \
            [("request timeout", 20.5)] * 400 + [("cannot allocate memory", 1.0)] * 307
    assert c3.article_kinds(headline(8293, failures=every)) == 4
    late = [("dial: i/o timeout", 30.5)] * 1307 + [("request timeout", 60.0)] * 400
    assert c3.article_kinds(headline(8293, failures=late)) == 1  # a request timeout at 60 s is not the article's 20 s


def test_failures_end_at_k6s_connect_timeout_not_the_connection_timeout():
    assert holds("F000-l.3b", r.median_own_s(headline(8293)))
    assert not holds("F000-l.3b", r.median_own_s(headline(8293, failures=[("request timeout", 20.0)] * 1707)))


# ---- σ ------------------------------------------------------------------------------------------------------------

def test_sigma_is_borrowed_from_the_repeated_step_that_spreads_most(monkeypatch):
    repeated = {"quiet": [run(waves(10)), run(waves(10))], "noisy": [run(waves(10)), run(waves(8))],
                "once": [run(waves(10))]}
    monkeypatch.setattr(r, "runs_of", lambda step: repeated[step])
    sigma, source = c3.borrowed(lambda x: float(x.ok), ("quiet", "noisy", "once"))
    assert sigma == pytest.approx(math.sqrt(2)) and "noisy" in source
    assert c3.borrowed(lambda x: float(x.ok), ("once",))[0] is None


def test_a_step_with_runs_takes_its_own_spread(monkeypatch):
    three = [run(waves(10)), run(waves(9)), run(waves(8))]
    monkeypatch.setattr(r, "runs_of", lambda step: three)
    measured = c3.per_run(lambda x: float(x.ok), "any")
    assert measured.values == (10, 9, 8) and measured.sigma == pytest.approx(1 / math.sqrt(3))


# ---- on the reference data --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def judged():
    return ch3.judge()


def test_judge_gives_every_claim_in_the_claims_files_order(judged):
    assert [j.rule.claim for j in judged] == list(RULES)
    assert all(j.measured.values for j in judged), [j.rule.claim for j in judged if not j.measured.values]


def test_claims_on_repeated_steps_count_every_run(judged):
    by_claim = {j.rule.claim: j for j in judged}
    headline_runs = len(r.headline_runs())
    assert by_claim["F000-f.2a"].measured.runs == headline_runs
    assert by_claim["F000-i.1"].measured.runs == len(r.runs("i-10k-ac2000-pv"))
    assert by_claim["F000-e.1"].measured.runs == len(r.runs("e-6000-t500-pv"))


def test_a_step_without_data_is_not_measured(monkeypatch):
    monkeypatch.setattr(r, "runs_of", lambda step: [])
    monkeypatch.setattr(r, "paired", lambda *steps: [])
    measured = c3.STATISTICS["F000-a.1c"](RULES["F000-a.1c"])
    assert measured.values == () and "no data for a-300-pv" in measured.note
    assert claims.judge(RULES["F000-a.1c"], measured).outcome == claims.INCONCLUSIVE


def test_limits_come_from_the_data_and_name_their_sections():
    limits = ch3.limits()
    assert [type(x) for x in limits] == [Limit, Limit]
    first = r.first(r.HEADLINE)
    queue, ceiling = limits
    assert ceiling.value == first.ss["estab"].max() and queue.value == first.ss["accept_queue"].max()
    assert f"{int(ceiling.value):,}" in ceiling.sentence
    text = (ROOT / "chapters" / "03-from-300-to-15000-users.qmd").read_text()
    assert all(f"{{#{x.anchor}}}" in text for x in limits)

