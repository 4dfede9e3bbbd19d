"""Chapter 6 (seed 003): each claim's statistic on made-up runs, both sides of its threshold; judge() on the reference
data; and the numbers the chapter quotes against the data files themselves."""
from __future__ import annotations

from dataclasses import replace

import json
import statistics

import numpy as np
import pandas as pd
import pytest

from harness.book import claims
from harness.book.chapters import ch6
from harness.book.chapters.ch6 import claims as ch6_claims
from harness.book.chapters.ch6.charts import label
from harness.book.chapters.ch6.model import LOAD_TOOL, ROUND_TRIPS, SERVERS, limit_of
from harness.book.chapters.ch6.runs import COLUMNS
from harness.book.chapters.ch6.values import Bottleneck
from harness.book.claims import DIFFERS, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED
from harness.lab import store
from harness.lab.store import ChapterData


def row(step: str, tps: float, route: str = "nginx → service", keepalive: float = 0, **values) -> pd.Series:
    base = dict.fromkeys(COLUMNS, np.nan) | {"step": step, "route": route, "tps": tps, "keepalive": keepalive,
                                             "users": 200, "network": "loopback", "tool": "wrk", "workers": 1,
                                             "connection_header": "", "duration_s": 20}
    return pd.Series(base | values)


def requests(medians_ms: list[float], seconds: float = 10, per_s: int = 100, connects: int = 0) -> pd.DataFrame:
    """One user's requests over `seconds`, their durations around a median that moves from the first to the last of
    `medians_ms` over the run; the first `connects` opened a connection."""
    n = int(seconds * per_s)
    start = np.arange(n) * 1000 / per_s
    median = np.interp(start, np.linspace(0, start[-1], len(medians_ms)), medians_ms)
    duration = median * np.where(np.arange(n) % 2, 0.9, 1.1)
    return pd.DataFrame({"start_ms": start, "end_ms": start + duration, "duration_ms": duration, "status": 200,
                         "error_code": 0, "error": "", "connecting_ms": np.where(np.arange(n) < connects, 0.05, 0.0)})


def run(name: str, frame: pd.DataFrame) -> ChapterData:
    meta = {"config": {"load": {"vus": 1}}}
    empty = pd.DataFrame()
    return ChapterData("chapter6", {name: meta}, frame.assign(step=name), empty, empty, empty)


@pytest.fixture
def lab(monkeypatch):
    """Made-up runs: {step: [rows]} and {step: [ChapterData]} that the claims read instead of the data directory."""
    rows: dict[str, list[pd.Series]] = {}
    tables: dict[str, list[ChapterData]] = {}
    monkeypatch.setattr(ch6_claims, "run_rows", lambda step: rows.get(step, []))
    monkeypatch.setattr(ch6_claims, "runs_of", lambda step: tables.get(step, []))
    return rows, tables


def wrk(rows, alone=(18000, 18500, 17800), nginx=(128000,), proxied=(3100, 3200, 3000), kept8=(4700, 4800, 4750),
        kept32=(6000, 6100, 5900), kept256=(10300, 10200, 10400)):
    for step, rates in (("wrk-alone", alone), ("wrk-nginx-alone", nginx), ("wrk-proxied", proxied),
                        ("wrk-keepalive-8", kept8), ("wrk-keepalive-32", kept32), ("wrk-keepalive-256", kept256)):
        rows[step] = [row(step + (f".{k + 1}" if k else ""), tps) for k, tps in enumerate(rates)]


def judged(claim: str, busy: float | None = None):
    """The claim judged on the stand-in steps; `busy`: how busy their CPUs were (the machine fact a rule may name)."""
    return claims.judge(claims.rules("chapter6")[claim], replace(ch6_claims.STATISTICS[claim](), busy=busy))


def test_a_proxy_that_stalls_far_below_either_alone(lab):
    wrk(lab[0])
    j = judged("F003-a.1")
    assert j.outcome == REPRODUCED and j.measured.values[0] == pytest.approx(3100 / 18000)
    wrk(lab[0], proxied=(15000, 16000, 15500))  # no stall: 85 % of the service alone
    assert judged("F003-a.1").outcome == NOT_REPRODUCED


def test_the_articles_rates_differ_on_this_hardware_and_one_run_borrows_the_wrk_spread(lab):
    wrk(lab[0])
    assert judged("F003-a.2a", busy=0.98).outcome == DIFFERS and judged("F003-a.2c", busy=0.98).outcome == DIFFERS
    # The machine fact must be shown by the steps' data: CPUs half idle, or not read, and a miss is a miss.
    assert judged("F003-a.2a", busy=0.5).outcome == NOT_REPRODUCED and judged("F003-a.2c").outcome == NOT_REPRODUCED
    nginx = ch6_claims.STATISTICS["F003-a.2b"]()
    assert nginx.runs == 1 and "repeated wrk steps" in nginx.sigma_source
    shares = [statistics.stdev(v) / statistics.fmean(v) for v in ((18000, 18500, 17800), (3100, 3200, 3000),
                                                                  (4700, 4800, 4750), (6000, 6100, 5900),
                                                                  (10300, 10200, 10400))]
    assert nginx.borrowed_sigma == pytest.approx(128000 * np.sqrt(np.mean(np.square(shares))))
    assert judged("F003-a.2b", busy=0.98).outcome == DIFFERS
    wrk(lab[0], nginx=(22000,))  # the article's own: inside its ±500, but not by three of wrk's ±2 % spreads
    assert judged("F003-a.2b").outcome == INCONCLUSIVE


def test_keep_alive_climbs_and_32_kept_connections_are_enough_or_not(lab):
    wrk(lab[0])
    assert judged("F003-b.1").outcome == INCONCLUSIVE  # 4,750 / 3,100 = 1.53: within 3σ of √2.2 = 1.49
    assert judged("F003-b.2").outcome == NOT_REPRODUCED  # 6,000 of 10,300: 0.58 < 0.64
    wrk(lab[0], kept8=(6200, 6300, 6250))  # ×2.0, as the article's ×2.2
    assert judged("F003-b.1").outcome == REPRODUCED
    wrk(lab[0], kept8=(3000, 3200, 3100), kept32=(9800, 10000, 9900))
    assert judged("F003-b.1").outcome != REPRODUCED and judged("F003-b.2").outcome == REPRODUCED


def test_a_step_without_data_leaves_its_claim_inconclusive_and_says_so(lab):
    wrk(lab[0])
    del lab[0]["wrk-keepalive-32"]
    j = judged("F003-b.2")
    assert j.outcome == INCONCLUSIVE and "wrk-keepalive-32" in j.why


def connect_reuse(tables, new_ms=(0.5, 0.3), kept_ms=(0.2, 0.2), reconnects=1):
    tables["connect"] = [run(f"connect.{k + 1}", requests([m * (1 + k / 50) for m in new_ms])) for k in range(3)]
    tables["reuse"] = [run(f"reuse.{k + 1}", requests([m * (1 + k / 50) for m in kept_ms], connects=reconnects))
                       for k in range(3)]


def test_a_new_connection_costs_time_after_the_warm_up(lab):
    connect_reuse(lab[1])
    assert judged("F003-c.1").outcome == REPRODUCED
    connect_reuse(lab[1], new_ms=(0.2, 0.2))
    assert judged("F003-c.1").outcome != REPRODUCED


def test_the_cost_read_over_other_windows(lab):
    connect_reuse(lab[1], new_ms=(0.6, 0.2), kept_ms=(0.2, 0.2))  # only the warm-up is slower
    measured = ch6_claims.new_connection_costs()
    whole, last = measured.nearby
    assert whole > measured.value and last == pytest.approx(measured.value, rel=0.25)


def test_three_latencies_cannot_be_measured_here():
    j = judged("F003-c.2")
    assert j.outcome == INCONCLUSIVE and "link_delay_ms = 10" in j.why and "netem" in j.why


def test_keep_alive_opens_no_connection_after_the_first(lab):
    connect_reuse(lab[1], reconnects=1)
    assert judged("F003-c.3").outcome == REPRODUCED
    connect_reuse(lab[1], reconnects=40)
    assert judged("F003-c.3").outcome == NOT_REPRODUCED


def test_every_rule_has_its_statistic():
    assert set(claims.rules("chapter6")) == set(ch6_claims.STATISTICS)


# ---- words and limits on made-up rows -------------------------------------------------------------------------------

def test_a_step_is_named_by_its_route_and_keep_alive():
    assert label(row("wrk-keepalive-8", 1, keepalive=8, connection_header="Keep-Alive")) == \
        "wrk: proxied, keepalive 8 (Connection: Keep-Alive)"
    assert label(row("proxied-workers-2", 1, tool="k6", workers=2)) == "proxied, no keep-alive (2 workers)"
    assert label(row("alone", 1, route="service alone", tool="k6")) == "service alone"


def test_the_limit_is_the_full_core():
    assert limit_of(row("a", 1, tool="k6", k6_cpu=0.97, service_cpu=0.5, nginx_cpu=0.0)) == f"{LOAD_TOOL} (k6)"
    assert limit_of(row("b", 1, wrk_cpu=0.3, service_cpu=0.7, nginx_cpu=0.25)) == SERVERS
    assert limit_of(row("c", 1, wrk_cpu=0.3, service_cpu=0.3, nginx_cpu=0.1)) == ROUND_TRIPS


NONE_BEATEN = ((), float("nan"), float("nan"), float("nan"), True)


def test_the_missed_steps_are_named_or_none_is():
    some = Bottleneck(3, 0.9, 1, 1, 2, 0, 0.3, 0.05, ("hosts-keepalive-8", "wrk-keepalive-256"), *NONE_BEATEN)
    assert ch6.missed_words(some).startswith("The steps hosts-keepalive-8 and wrk-keepalive-256 answered more than 25% below")
    none = Bottleneck(3, 0.9, 1, 1, 2, 0, 0.3, 0.05, (), *NONE_BEATEN)
    assert ch6.missed_words(none).startswith("Every step CPU 1 limited") and "too low" not in ch6.missed_words(none)


def test_steps_that_answered_above_the_cpu_bound_are_named_and_the_bound_called_an_estimate_there():
    """Table 6.1 showed proxied answering 2,373/s against a CPU bound of 971/s, and the page said only where the
    bound was too high (issue 41's reading): steps above it now get their sentence, from the data."""
    b = ch6.bottleneck(ch6.table(ch6.load()))
    frame = ch6.model.model_frame(ch6.table(ch6.load()))
    over = frame[frame["tps"] > 1.25 * frame["cpu_bound"]]
    assert set(b.beaten) == set(over["step"]) and len(b.beaten) > 0  # the committed data has such steps
    text = ch6.missed_words(b)
    assert f"too low for {len(b.beaten)} steps" in text and f"in {b.beaten[0]}:" in text
    assert f"at most {1000 / b.beaten_tps:.2f} ms for each" in text and b.beaten_tps * b.beaten_cpu_ms > 1000
    one = Bottleneck(3, 0.9, 1, 1, 2, 0, 0.3, 0.05, (), ("proxied",), 2.0, 2000.0, 1.0, False)
    assert "too low for one step" in ch6.missed_words(one) and "opened upstream" not in ch6.missed_words(one)


def test_chapter_6_shows_no_limit_on_the_answer_page():
    assert ch6.limits() == []


# ---- the reference data ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference():
    data = ch6.load()
    return data, ch6.table(data)


def names(step: str) -> list[str]:
    return [n for n in store.complete_steps("chapter6") if store.run_of(n)[0] == step]


def test_judge_runs_on_the_reference_data(reference):
    judged_ = ch6.judge()
    assert [j.rule.claim for j in judged_] == list(claims.rules("chapter6"))
    assert all(j.outcome in claims.OUTCOMES for j in judged_)
    c1 = next(j for j in judged_ if j.rule.claim == "F003-c.1")
    assert c1.measured.runs == len(names("connect"))


def wrk_rate(name: str) -> float:
    summary = json.loads((store.data_root() / "chapter6" / name / "wrk-summary.json").read_text())
    return (summary["requests"] - summary["errors"]["status"]) / (summary["duration_us"] / 1e6)


def test_the_stall_numbers_are_wrks_own(reference):
    _, table = reference
    stall = ch6.stall(table)
    for value, step in ((stall.alone, "wrk-alone"), (stall.proxied, "wrk-proxied"), (stall.nginx, "wrk-nginx-alone")):
        assert value == pytest.approx(statistics.fmean(wrk_rate(n) for n in names(step)))


def test_the_handshake_medians_are_the_requests(reference):
    _, table = reference
    hs = ch6.handshake(*reference)
    for value, step in ((hs.new_ms, "connect"), (hs.kept_ms, "reuse")):
        medians = []
        for name in names(step):
            frame = store.read_parquet(store.data_root() / "chapter6" / name / "requests.parquet", "requests")
            medians.append(frame[store.answered(frame)]["duration_ms"].median())
        assert value == pytest.approx(statistics.fmean(medians))


def test_the_climb_numbers_are_wrks_own(reference):
    _, table = reference
    climb = ch6.climb(table)
    for value, step in ((climb.kept8, "wrk-keepalive-8"), (climb.kept256, "wrk-keepalive-256")):
        assert value == pytest.approx(statistics.fmean(wrk_rate(n) for n in names(step)))


def test_the_setup_says_how_many_times_the_repeated_steps_ran_as_the_steps_table_shows(reference):
    """§6.2 once said the repeated steps ran seven times each where the steps table shows 3, 6 and 7 (issue 41)."""
    from harness.book.chapters.ch6.values import runs_range

    _, table = reference
    repeated = table[table["runs"] > 1]["runs"]
    said = ch6.setup(table)
    assert said.repeated == len(repeated)
    assert said.runs == (repeated.min(), repeated.max())
    assert runs_range(pd.Series([3, 6, 7, 3])) == (3, 7) and runs_range(pd.Series([3, 3])) == (3, 3)


def test_a_second_worker_is_compared_with_the_step_that_differs_from_it_in_workers_alone(reference):
    """keepalive-8-workers-2 sends Connection "" as keepalive-8-empty does; it was once set beside keepalive-8, which
    sends the article's Keep-Alive: its baseline is the one-worker step whose recorded config differs only in workers."""
    from harness.book.chapters.ch6.values import one_worker

    data, table = reference

    def settings(step: str) -> dict:
        config = json.loads(json.dumps(data.steps[step]["config"]))
        config["services"]["api"].pop("port", None)  # each step gets a port of its own
        config["services"]["edge"].pop("worker_processes")
        return config

    for two in ("proxied-workers-2", "keepalive-8-workers-2"):
        one = one_worker(table, two).step
        assert data.steps[one]["config"]["services"]["edge"]["worker_processes"] == 1
        assert settings(one) == settings(two), (one, two)
    v = ch6.variants(table)
    assert v.kept_one_step == "keepalive-8-empty" and v.kept_one == v.empty_tps  # the sentence's `""`
    assert v.kept_two == ch6.values.pick(table, "keepalive-8-workers-2").tps
    with pytest.raises(ValueError):
        one_worker(table.assign(workers=2), "keepalive-8-workers-2")


def test_the_ports_share_never_reads_all_while_some_are_left():
    """"at most 28,125 of the 28,232 ports were in TIME_WAIT (100%)" beside "it never ran out"."""
    from harness.book.chapters.ch6.values import Wall
    wall = Wall(60, 2797, 16, 14189, 28232, 702, 0.53, 470.5, None, 28125, 0, 0)
    assert "28,125 of the 28,232 ports were in TIME_WAIT (99.6%)" in ch6.ports_words(wall)


def test_the_warm_up_the_text_names_is_the_claims_window(reference):
    from harness.book.chapters.ch6.claims import WARMUP_S

    assert ch6.handshake(*reference).warmup_s == WARMUP_S


def test_the_steps_tables_caption_names_the_warm_up_its_failures_leave_out():
    from harness import ROOT
    from harness.book.chapters.ch6.runs import WARMUP_S

    page = (ROOT / "chapters" / "06-a-proxy-in-between.qmd").read_text()
    assert f"failures (k6: over its plateau, after the first {WARMUP_S} seconds; wrk: its whole run)" in page


def test_the_stall_rates_the_verdicts_pool_are_given_where_they_differ_from_this_editions():
    from harness.book.chapters.ch6.values import Stall
    from harness.book.chapters.ch6.words import STALL_CLAIMS, pooled_stall_words
    from harness.book.claims import Judgement, Measured, REPRODUCED, Rule

    stall = Stall(21_252, 221_383, 4_077, 0.19, 4_000, 0.05, 0.06, 5_000, "k6-alone", 0.9, 0.5, 4_000, 6_000)

    def verdicts(rates, passes):
        return {claim: Judgement(Rule(claim, "F003-a", "003", "q", "m", "band", [0, 1], "s"),
                                 Measured((rates[name],), pooled_value=rates[name], passes=passes), REPRODUCED, 3.0)
                for name, claim in STALL_CLAIMS.items()}

    same = {"alone": 21_252.4, "nginx": 221_383.0, "proxied": 4_077.2}
    assert pooled_stall_words(stall, verdicts(same, 4)) == "The verdicts below read the same rates."
    pooled = verdicts({"alone": 11_266, "nginx": 168_569, "proxied": 2_337}, 4)
    assert pooled_stall_words(stall, pooled) == ("Those are this edition's runs; the verdicts below pool the chapter's "
                                                 "4 kept passes: the service alone 11,266/s, nginx alone 168,569/s, "
                                                 "through nginx 2,337/s.")
    assert pooled_stall_words(stall, {}).startswith("The verdicts below have not judged")
