"""Chapter 5's numbers as its text quotes them, checked against the reference data computed another way (straight
from the steps' tables); the clauses whose wording depends on the data, on both sides; the face's limit; and the
charts, whose every tooltip and legend field has a name in words."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from harness import ROOT
from harness.book.chapters import ch5
from harness.book.chapters.ch5 import words as say
from harness.book.chapters.ch5 import values
from harness.book.chapters.ch5.runs import API, HOLD, load_seconds
from harness.book.claims import DIFFERS, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Judgement, Measured, Rule
from harness.lab.store import answered, load

QMD = ROOT / "chapters" / "05-the-pool-behind-the-pool.qmd"


@pytest.fixture(scope="module")
def chapter():
    data = load("chapter5")
    runs = ch5.runs_table()
    return data, runs, ch5.steps_table(runs)


def answered_per_second(data, step: str, first: int, last: int) -> float:
    """Answered requests per second over seconds [first, last) of a step's load, from its outcomes table."""
    rows = data.outcomes[(data.outcomes.step == step) & data.outcomes.second.between(first, last - 1)]
    return rows[answered(rows)]["requests"].sum() / (last - first)


def test_the_single_apis_rates_are_their_answers_over_their_load(chapter):
    data, runs, _ = chapter
    rates = {s: answered_per_second(data, s, 0, load_seconds(m["config"]["load"]))
             for s, m in data.steps.items() if "F001-b" in m["findings"]}
    a = values.apis(runs)
    assert a.tps_low == pytest.approx(min(rates.values())) and a.tps_high == pytest.approx(max(rates.values()))
    assert a.apis == len(rates) and a.pool == 10


def test_the_hold_times_are_hikaricps_own_sums_over_counts(chapter):
    data, _, steps = chapter
    o = values.open_in_view(steps)
    for step, quoted in ((values.SMALL_POOL, o.held_ms), (values.FREED, o.freed_ms)):
        meta = data.steps[step]
        t0 = meta["recording"]["t0_ms"]
        rows = data.actuator[(data.actuator.step == step)
                             & data.actuator.ts_ms.between(t0, t0 + load_seconds(meta["config"]["load"]) * 1000)]
        gained = {m: g["value"].iloc[-1] - g["value"].iloc[0] for m, g in rows.sort_values("ts_ms").groupby("metric")}
        held = gained["hikaricp.connections.usage.total"] * 1000 / gained["hikaricp.connections.usage.count"]
        if data.runs[step][1:]:  # the text quotes the mean of the runs: the first run is one of them
            continue
        assert quoted == pytest.approx(held)
    assert o.held_bound == pytest.approx(o.pool * 1000 / o.held_ms)


def test_the_final_rate_is_read_over_the_hold(chapter):
    data, _, steps = chapter
    f = values.final(steps)
    assert f.held_tps == pytest.approx(answered_per_second(data, "final", *HOLD))
    assert f.goal == pytest.approx(19_080_000 / 86_400)


def test_the_goal_and_the_models_numbers_before_any_data(chapter):
    data, runs, _ = chapter
    g = values.goal()
    assert round(g.goal, 2) == 220.83 and round(g.peak) == 883
    loads = values.loads(data)
    model = values.prediction(loads, values.setup(data, runs))
    assert model.bounds[10] == pytest.approx(10 / loads.stream_s * loads.session_requests)
    assert model.goal_db_ms == pytest.approx(1000 / g.goal)


def test_the_tomcat_series_names_each_runs_setting(chapter):
    _, runs, _ = chapter
    t = values.tomcat(runs)
    for knob, steps in ((t.threads, ch5.claims.THREAD_STEPS), (t.connections, ch5.claims.CONNECTION_STEPS)):
        for setting, mean in knob.items():
            assert mean.runs == (runs["step"] == steps[setting]).sum()
            assert mean.mean == pytest.approx(runs.loc[runs["step"] == steps[setting], "tps"].mean())


def test_the_limit_is_the_pools_measured_throughput_with_its_section(chapter):
    _, runs, _ = chapter
    (limit,) = ch5.limits()
    tps = runs.loc[runs["step"] == values.SMALL_POOL, "tps"].mean()
    assert limit.rate == pytest.approx(tps, abs=0.05) and limit.unit == "requests holding a connection at once"
    assert f"HikariCP's {limit.value:,.0f} connections" in limit.sentence
    assert f"{tps:,.1f} requests a second" in limit.sentence and "HikariCP" in limit.name
    assert "{#" + limit.anchor + "}" in QMD.read_text()


def apis(waited: int) -> values.Apis:
    return values.Apis(*(1.0,) * 6, 179.0, (150.0, 200.0), waited, 0.6, 0.9, 3.0, 9.0, 10, 0.5, 1.0, 20.0, 90.0, 7)


def judgement(claim: str, outcome: str) -> Judgement:
    rule = Rule(claim, claim.split(".")[0], "001", "q", "m", "above", 0.0, "article: s")
    return Judgement(rule, Measured((1.0,), exact=True), outcome, None)


def test_clauses_that_turn_with_the_data():
    assert say.waited(apis(7)) == "in every API" and say.waited(apis(3)) == "in 3 of the 7 APIs"
    assert say.bottleneck(judgement("F001-b.3", REPRODUCED), 7) == "The database was the bottleneck"
    rising = values.Pools({2: 4.0, 5: 6.0, 10: 8.0, 20: 9.0}, {2: 110.0, 5: 100.0}, {}, {}, {})
    peaked = values.Pools({2: 4.0, 5: 6.0, 10: 11.0, 20: 8.0}, {2: 90.0, 5: 100.0}, {}, {}, {})
    assert say.pool_shape(rising).endswith("pool 10 is not the best")
    assert say.pool_shape(peaked) == "Throughput peaks at pool 10, against the model: pool 10 is the best"
    assert say.pool_off(rising, 0.05) == ("the smallest pool did best, 2 (110 a second): more connections only add "
                                          "queries that wait for the same CPU inside the database")
    assert say.pool_off(rising, 0.18) == ("the smallest pool did best, 2 (110 a second), only 10% ahead of pool 5, "
                                          "less than the 18% the rules call a change")
    assert say.pool_off(peaked, 0.18).startswith("pool 5")
    assert say.pool_off(peaked, 0.18).endswith("only 11% ahead of pool 2, less than the 18% the rules call a change")
    assert say.pool_off(peaked, 0.05) == "pool 5 did best (100 a second)"  # 11% ahead: a difference the rules call one
    close = values.Pools({}, {2: 162.5, 5: 153.0, 10: 150.1, 20: 124.6}, {}, {}, {})
    assert "only 6% ahead of pool 5" in say.pool_off(close, 0.18)  # the runner-up, not the last, sets the lead
    flat = [judgement(c, REPRODUCED) for c in ("F001-d.1", "F001-e.1", "F001-f.1")]
    assert say.knobs(flat).startswith("Tomcat's knobs moved nothing")
    assert say.knobs([*flat[:2], judgement("F001-f.1", NOT_REPRODUCED)]).startswith("not every difference")
    every = values.Tomcat({}, {}, {}, {100: values.Mean(1.0, 0.0, 3), 150: values.Mean(1.0, 0.0, 3)}, {}, 300)
    some = values.Tomcat({}, {}, {}, {100: values.Mean(0.95, 0.01, 3), 150: values.Mean(1.0, 0.0, 3)}, {}, 300)
    assert say.success(every).startswith("have no counterpart") and say.success(some).startswith("compare")
    short = values.Final(3.0, 0.3, 200.0, 1.0, 221.0, 220.8, (25, 85), 500.0)
    assert say.final_reached(short, 220.8).startswith("The streams held the pool")
    assert "reached the goal" in say.final_reached(values.Final(221.0, 1.0, 221.0, 1.0, 221.0, 220.8, (25, 85), 500.0), 220.8)


def fields(spec) -> list[dict]:
    """Every tooltip and colour/shape encoding of a chart's spec, at any depth."""
    found = []
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key == "tooltip" and isinstance(value, list):
                found += value
            elif key in ("color", "shape") and isinstance(value, dict) and "field" in value:
                found.append(value)
            else:
                found += fields(value)
    elif isinstance(spec, list):
        for item in spec:
            found += fields(item)
    return found


def test_every_chart_names_its_fields_in_words(chapter):
    data, runs, _ = chapter
    loads = values.loads(data)
    charts = [ch5.apis_chart(runs), ch5.pool_chart(runs, loads), ch5.timeline_chart(data, "api-room-read"),
              ch5.tomcat_chart(runs), ch5.gc_chart(runs), ch5.final_chart(data, loads, values.goal().goal)]
    for chart in charts:
        for field in fields(chart.to_dict()):
            assert "title" in field, f"a field shown to readers by its name in the data: {field}"
            assert field["title"] is None or "_" not in field["title"], f"a raw field name shown to readers: {field}"


def test_the_pool_chart_gives_each_database_and_setting_its_own_panel(chapter):
    data, runs, _ = chapter
    frame = ch5.charts.pool_frame(runs, values.loads(data))
    means = frame[frame["series"] != ch5.charts.RUN]
    assert not means.duplicated(["panel", "series", "pool"]).any()  # one line per series in a panel
    assert frame["panel"].nunique() >= 2 and all(frame.groupby("panel")["pool"].nunique() > 1)
    assert set(frame.loc[frame["series"] == ch5.charts.MODEL, "panel"]) <= {p for p in frame["panel"] if p.endswith("on")}


def test_the_model_table_is_fed_the_measured_hold_times(chapter):
    _, _, steps = chapter
    frame = ch5.tables.model_frame(steps)
    api = steps[steps["kind"] == API].iloc[0]
    row = frame[frame["step"] == api["step"]].iloc[0]
    assert row["pool's bound (/s)"] == pytest.approx(api["pool"] * 1000 / api["hold_ms"])
    assert row["busy (answered × held)"] == pytest.approx(api["tps"] * api["hold_ms"] / 1000)
    assert not any(math.isinf(x) for x in frame.select_dtypes("number").to_numpy().ravel() if not np.isnan(x))


def test_steps_are_the_mean_of_their_runs(chapter):
    _, runs, steps = chapter
    repeated = runs["step"].value_counts()
    for step, n in repeated.items():
        row = steps[steps["step"] == step].iloc[0]
        assert row["runs"] == n and row["tps"] == pytest.approx(runs.loc[runs["step"] == step, "tps"].mean())
    assert isinstance(steps, pd.DataFrame) and steps["step"].is_unique


def test_the_bottleneck_clause_says_what_the_count_was_when_the_claim_failed():
    """F001-b.3 not reproduced once read "not clearly the bottleneck", an inconclusive outcome's words, where 0.667
    APIs against > 3.5 (−8.5σ) is a clear no: each outcome has its own words, the count the judgement's."""
    one = judgement("F001-b.3", NOT_REPRODUCED)
    assert say.bottleneck(one, 7) == ("The database was the bottleneck (throttled in most of its CPU periods while "
                                      "requests waited for a connection) in 1 of the 7 APIs, not in most")
    pooled = Judgement(one.rule, Measured((1.0, 0.0, 1.0), pooled_value=2 / 3, pooled_sigma=1 / 3, passes=3),
                       NOT_REPRODUCED, -8.5)
    assert say.bottleneck(pooled, 7).endswith("in 0–1 of the 7 APIs per kept pass, not in most")
    same = Judgement(one.rule, Measured((2.0, 2.0), pooled_value=2.0, pooled_sigma=0.0, passes=2), DIFFERS, -9.0)
    assert say.bottleneck(same, 7).endswith("in 2 of the 7 APIs per kept pass, not in most")
    once_most = Judgement(one.rule, Measured((0.0, 4.0, 0.0), pooled_value=4 / 3, pooled_sigma=1.3, passes=3),
                          NOT_REPRODUCED, -2.0)  # one pass found it in 4 of 7, most: "not in most" would be false
    assert say.bottleneck(once_most, 7).endswith("in 0–4 of the 7 APIs per kept pass, 1.3 on average, short of most")
    assert say.bottleneck(judgement("F001-b.3", INCONCLUSIVE), 7) == "The database was not clearly the bottleneck"
    unmeasured = Judgement(one.rule, Measured(()), NOT_REPRODUCED, None)  # no count to give: no number is made up
    assert say.bottleneck(unmeasured, 7) == "The database was not clearly the bottleneck"


def test_the_pages_bottleneck_clause_is_the_books_verdicts(chapter):
    from harness.book.verdict_tables import book_verdicts

    _, runs, _ = chapter
    j = {x.rule.claim: x for x in book_verdicts("chapter5", ch5.judge())}["F001-b.3"]
    said = say.bottleneck(j, values.apis(runs).apis)
    assert ("not clearly" in said) == (j.outcome == INCONCLUSIVE)
    if j.outcome in (NOT_REPRODUCED, DIFFERS):
        assert f"{max(j.measured.values):.0f} of the {values.apis(runs).apis} APIs" in said


def test_the_most_waiting_ranges_over_the_apis_where_requests_waited(chapter):
    """"up to 0–38 at once" read the two APIs where none waited as the range's low end."""
    _, runs, _ = chapter
    a = values.apis(runs)
    waited = runs.loc[(runs["kind"] == API) & (runs["pending_max"] > 0), "pending_max"]
    assert a.waited == len(waited) and a.pending_low == waited.min() > 0 and a.pending_high == waited.max()
    none = runs[runs["kind"] == API].assign(pending_max=0.0, pending_from_users=np.nan)
    assert values.apis(none).pending_low == 0 and values.apis(none).waited == 0


def test_the_repeated_steps_the_setup_names_are_every_repeated_step_with_its_runs(chapter):
    """The setup once typed "five times", "three times" and "twice": they are the steps table's runs column."""
    _, _, steps = chapter
    r = values.repeats(steps)
    runs = steps.set_index("step")["runs"]
    assert r.defaults == (runs[ch5.claims.DEFAULTS],) * 2
    assert r.knobs == (runs[list(values.KNOB_STEPS)].min(), runs[list(values.KNOB_STEPS)].max())
    assert r.pools == (runs[list(values.REPEATED_POOLS)].min(), runs[list(values.REPEATED_POOLS)].max())
    named = {ch5.claims.DEFAULTS, *values.KNOB_STEPS, *values.REPEATED_POOLS}
    assert set(runs[runs > 1].index) == named  # the text names every repeated step, and only those
    assert any(s.startswith("max-connections-") for s in values.KNOB_STEPS)  # "each max-connections-*"


def test_how_many_times_in_words():
    from harness.book.prose import how_many_times

    assert how_many_times(5, 5) == "five times" and how_many_times(3) == "three times"
    assert how_many_times(2, 2) == "twice" and how_many_times(1, 1) == "once" and how_many_times(0, 0) == "never"
    assert how_many_times(2, 3) == "two to three times" and how_many_times(3, 12) == "three to 12 times"
