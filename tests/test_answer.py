"""The answer page (harness/answer.py): its numbers against the committed data, read independently from the files,
and on small synthetic chapters where each limit holds or does not, and the text says which."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.lab import store
from harness import DATA
from harness.book.chapters import ch0_answer as answer
from harness.lab.spec import SERVER_DEFAULTS, SERVER_KEYS
from harness.lab.store import COLUMNS, ChapterData, load

# ---- the committed data, read straight from the files ------------------------------------------------------


def step_file(chapter: str, step: str, name: str):
    path = DATA / chapter / step / name
    return json.loads(path.read_text()) if name.endswith(".json") else store.read_parquet(path, path.stem)


@pytest.fixture(scope="module")
def book():
    return {c: load(c) for c in ("chapter1", "chapter2", "chapter3")}


def test_pool_throughput_is_the_saturated_steps_rps(book):
    expected = {}
    for step in ("k6-c100", "k6-c500", "ab-c100", "ab-c500"):
        meta, rows = step_file("chapter1", step, "step.json"), step_file("chapter1", step, "requests.parquet")
        ok = rows[rows["status"] == 200]
        expected[step] = len(ok) / ((ok["end_ms"].max() - ok["start_ms"].min()) / 1000)
        assert meta["config"]["load"]["vus"] >= meta["config"]["server"]["TOMCAT_MAX_THREADS"]
    pool = answer.pool_throughput(book["chapter1"])
    assert set(pool.steps) == set(expected)  # C = 1 and 10 leave threads idle: not in the plateau
    assert pool.low_rps == pytest.approx(min(expected.values()))
    assert pool.high_rps == pytest.approx(max(expected.values()))
    assert (pool.threads, pool.model_rps, pool.hold_s) == (100, 500, 0.2)
    busy = pd.concat(step_file("chapter1", s, "actuator.parquet") for s in expected)
    assert pool.busy_peak == busy.loc[busy["metric"] == "tomcat.threads.busy", "value"].max() == 100
    assert pool.matched
    assert f"{min(expected.values()):,.0f}–{max(expected.values()):,.0f} requests/s" in pool.text()


def test_waves_are_threads_max_wide(book):
    result = answer.waves(book["chapter3"])
    for step in answer.WAVE_STEPS:
        rows = step_file("chapter3", step, "requests.parquet")
        ok = rows[(rows["status"] == 200) & (rows["error_code"] == 0)]
        largest = ((ok["end_ms"] - rows["start_ms"].min()) / 5000).round().value_counts().max()
        threads = step_file("chapter3", step, "step.json")["config"]["server"].get("TOMCAT_MAX_THREADS", 200)
        assert largest <= result.largest[threads]
        assert largest == threads or threads == 200  # the 200-thread steps share one entry
    assert result.largest == {200: 200, 500: 500, 1000: 1000} and result.hold_s == 5 and result.matched


def test_ceiling_is_the_ss_peak_against_what_the_server_reported(book):
    result = answer.ceiling(book["chapter3"], book["chapter2"])
    for held in result.all:
        tomcat = step_file("chapter3", held.step, "step.json")["server_info"]["tomcat"]
        assert held.ceiling == tomcat["maxConnections"] + tomcat["acceptCount"] + 1
        assert held.peak == step_file("chapter3", held.step, "ss.parquet")["estab"].max()
    peak = int(step_file("chapter3", "f-10k-pv", "ss.parquet")["estab"].max())  # the user's own run, after `invoke run`
    assert result.headline.step == "f-10k-pv" and result.headline.peak == peak and result.headline.ceiling == 8293
    assert [h.step for h in result.small] == ["plus1-mc2-ac1", "plus1-mc2-ac4", "plus1-mc5-ac1"]
    repeats = [step_file("chapter2", f"noise-{k}", "ss.parquet")["estab"].max() for k in range(1, 6)]
    assert list(result.repeats) == repeats
    assert result.matched and f"at most {peak:,} connections" in result.text()


def test_failures_are_k6s_timeouts_on_each_requests_own_clock(book):
    result = answer.failures(book["chapter3"])
    rows = step_file("chapter3", "f-10k-pv", "requests.parquet")
    dial = rows[rows["error"].fillna("").str.endswith("dial: i/o timeout")]
    counted = step_file("chapter3", "f-10k-pv", "step.json")["requests"]["errors"]["dial: i/o timeout"]
    kinds = {kind: (count, s) for kind, count, s in result.steps["f-10k-pv"][2]}
    assert kinds["i/o timeout"] == (len(dial), pytest.approx(dial["duration_ms"].median() / 1000)) and len(dial) == counted
    rows = step_file("chapter3", "d-3000-t200-pv", "requests.parquet")  # too many users for the threads
    waited = rows[rows["error"].fillna("").str.contains("request timeout")]
    assert [(k, n) for k, n, _ in result.steps["d-3000-t200-pv"][2]] == [("request timeout", len(waited))] and len(waited)
    assert result.steps["d-3000-t200-pv"][2][0][2] == pytest.approx(60, abs=1)
    assert (result.dial_timeout_s, result.request_timeout_s, result.refused) == (30, 60, 0)
    assert result.matched and f"{len(dial):,} gave up connecting after {dial['duration_ms'].median() / 1000:.1f} s" in result.text()


def test_defaults_agree_with_what_the_running_server_reported(book):
    """spec.SERVER_DEFAULTS is typed by hand; the servers that left a knob unset report Spring Boot's/Tomcat's own."""
    datas = book.values()
    for env in answer.REPORTED_AS:
        reported = answer.reported_default(env, *datas)
        assert reported is not None, env
        if env in SERVER_DEFAULTS:
            assert SERVER_DEFAULTS[env] == reported, env
    assert answer.knob_defaults(*datas)["TOMCAT_MIN_SPARE_THREADS"] == 10  # only the server knows this one
    assert answer.recorded_somaxconn(*datas) == step_file("chapter1", "k6-c1", "step.json")["machine"]["somaxconn"]


def test_every_env_var_the_sample_server_maps_is_a_spec_key():
    env = answer.server_env_vars()
    assert env["server.tomcat.threads.max"] == "TOMCAT_MAX_THREADS"
    assert env["server.tomcat.keep-alive-timeout"] == "TOMCAT_KEEP_ALIVE_TIMEOUT"
    assert "spring.jpa.open-in-view" not in env  # chapter 5's pair-room knobs are not Tomcat's
    assert set(env.values()) <= set(SERVER_KEYS) and set(env.values()) == set(answer.REPORTED_AS)


def test_the_page_says_the_measured_numbers_with_separators(book):
    ch1, ch2, ch3 = book["chapter1"], book["chapter2"], book["chapter3"]
    paragraph = answer.answer_paragraph(ch1, ch3, ch2)
    peak = int(step_file("chapter3", "f-10k-pv", "ss.parquet")["estab"].max())
    rows = step_file("chapter3", "f-10k-pv", "requests.parquet")
    dial = rows[rows["error"].fillna("").str.endswith("dial: i/o timeout")]
    for said in ("8,192 + 100 + 1 = 8,293", f"at most {peak:,} connections", "8,293 in each of 5 repeats",
                 f"{len(dial):,} gave up connecting after {dial['duration_ms'].median() / 1000:.1f} s",
                 "gives up connecting after 30 s", "nobody got “connection refused”"):
        assert said in paragraph
    table = answer.answer_table(ch1, ch3, ch2).splitlines()
    assert table[0] == "| Limit | What sets it | Measured here | Chapter |" and len(table) == 5
    assert all(line.count(" | ") == 3 for line in table[2:])  # four cells per row, no index column
    assert "@sec-one-thread-one-request" in table[2] and "@sec-the-lab-and-its-limits" in table[3]
    glossary = answer.knobs_glossary(ch1, ch3)
    assert "Default: 8,192; env `TOMCAT_MAX_CONNECTIONS`" in glossary and "article's 20,000 ms" in glossary


# ---- synthetic chapters ----------------------------------------------------------------------------------

T0 = 1_800_000_000_000


def chapter(name: str, steps: dict[str, dict], requests: list[pd.DataFrame], ss=(), actuator=()) -> ChapterData:
    def frame(parts, table):
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["step", *COLUMNS[table]])
    return ChapterData(name, steps, frame(list(requests), "requests"), frame(list(ss), "ss"), frame(list(actuator), "actuator"),
                       pd.DataFrame(columns=["step", *COLUMNS["process"]]))


def closed_loop(step: str, clients: int, rps: float, threads: int = 100, seconds: int = 10, busy: int = 100):
    """A chapter-1 step answering `rps` requests per second for `seconds` (model: threads × 5 per second)."""
    count = int(rps * seconds)
    starts = T0 + pd.Series(range(count)) * 1000 / rps  # first start to last end: exactly `seconds`
    rows = pd.DataFrame({"step": step, "vu": 1, "iteration": range(count), "start_ms": starts, "end_ms": starts + 1000 / rps,
                         "duration_ms": 1000 / rps, "status": 200, "error_code": 0, "error": ""})
    meta = {"config": {"server": {"TOMCAT_MAX_THREADS": threads}, "load": {"vus": clients, "executor": "shared-iterations"}},
            "requests": {"asked": count, "issued": count},
            "model": {"threads": threads, "mean_service_ms": 200, "rps": threads * 5.0, "rps_low": threads * 5 / 1.2}}
    actuator = pd.DataFrame({"step": step, "ts_ms": [T0], "metric": ["tomcat.threads.busy"], "value": [busy]})
    return meta, rows, actuator


def chapter1(rps: float, busy: int = 100) -> ChapterData:
    built = {f"k6-c{c}": closed_loop(f"k6-c{c}", c, rps, busy=busy) for c in (100, 500)}
    return chapter("chapter1", {s: b[0] for s, b in built.items()}, [b[1] for b in built.values()],
                   actuator=[b[2] for b in built.values()])


def spike(step: str, server: dict, threads: int, ceiling: int, answers_s: list[float], failures=(), estab: int | None = None):
    """A chapter-3 step: answers ending at `answers_s`, failures (error text, seconds on their own clock), one ss peak."""
    ok = pd.DataFrame({"end_ms": [T0 + s * 1000 for s in answers_s], "status": 200, "error_code": 0, "error": ""})
    bad = pd.DataFrame({"end_ms": [T0 + s * 1000 for _, s in failures], "status": 0,
                        "error_code": [1050 if "request timeout" in e else 1000 for e, _ in failures],
                        "error": [e for e, _ in failures]})
    rows = pd.concat([ok, bad], ignore_index=True).assign(step=step, start_ms=float(T0), iteration=0)
    rows = rows.assign(vu=range(1, len(rows) + 1), duration_ms=rows["end_ms"] - T0)
    users = len(rows)
    meta = {"config": {"server": {"SLEEP_MS": 5000, **server}, "load": {"vus": users, "request_timeout": "60s"}},
            "requests": {"asked": users, "issued": users},
            "model": {"threads": threads, "service_ms": 5000, "ceiling": ceiling, "succeeded": len(answers_s)}}
    ss = pd.DataFrame({"step": step, "ts_ms": [T0, T0 + 1000], "estab": [0, users if estab is None else estab],
                       "accept_queue": 0})
    return meta, rows, ss


DIAL = "Get \"http://127.0.0.1:8080/hello\": dial tcp 127.0.0.1:8080: i/o timeout"
TIMEOUT = "request timeout"


def chapter3(estab: int = 11, wave: int = 4, dial_s: float = 30.0, timeout_s: float = 60.0, refused: int = 0) -> ChapterData:
    """20 users on max-connections 8 + accept-count 2 + 1 = 11; 8 threads; the others give up at k6's timeouts."""
    failures = [(DIAL, dial_s)] * 7 + [(TIMEOUT, timeout_s)] * 2
    failures += [("Get \"http://127.0.0.1:8080/hello\": dial tcp 127.0.0.1:8080: connect: connection refused", 0.01)] * refused
    built = {
        "f-10k-pv": spike("f-10k-pv", {"TOMCAT_MAX_THREADS": 8, "TOMCAT_MAX_CONNECTIONS": 8, "TOMCAT_ACCEPT_COUNT": 2}, 8, 11,
                          [5.0] * 8 + [10.0] * 3, failures, estab),
        "a-300-pv": spike("a-300-pv", {"TOMCAT_MAX_THREADS": 4}, 4, 8293, [5.0] * wave + [10.0] * (8 - wave)),
    }
    return chapter("chapter3", {s: b[0] for s, b in built.items()}, [b[1] for b in built.values()],
                   ss=[b[2] for b in built.values()])


def test_synthetic_plateau_matches_the_model_or_says_it_does_not():
    near = answer.pool_throughput(chapter1(rps=450))
    assert near.matched and near.rps == "450" and near.short() == "10 %"
    assert "10 % under 100 ÷ 0.2 s = 500" in answer.model_text(near)
    slow = answer.pool_throughput(chapter1(rps=300))
    assert not slow.matched and slow.text().endswith("not what the threads predict")
    assert "here the threads do not explain the rate" in answer.model_text(slow)
    idle = answer.pool_throughput(chapter1(rps=450, busy=60))  # the rate fits, but the pool was never full
    assert not idle.matched and "at most 60 busy" in idle.text()


def test_synthetic_waves_are_or_are_not_threads_max_wide():
    assert answer.waves(chapter3(wave=4)).largest == {4: 4} and answer.waves(chapter3(wave=4)).matched
    wide = answer.waves(chapter3(wave=6))  # 6 answers at 5 s on 4 threads
    assert not wide.matched and wide.text().endswith("not one wave of threads.max")


@pytest.mark.parametrize("estab, fits, said", [
    (11, True, "at most 11 connections"),
    (12, True, "at most 12 connections (one over"),
    (14, False, "at most 14 connections (3 over the ceiling)"),
    (9, False, "at most 9 connections (2 under the ceiling)"),
])
def test_synthetic_ceiling(estab, fits, said):
    data = chapter3(estab=estab)
    result = answer.ceiling(data)
    assert result.headline.ceiling == 11 and result.headline.peak == estab
    assert result.matched is fits and said in result.text()
    paragraph = answer.answer_paragraph(chapter1(450), data)
    assert (": not the ceiling of 11." in paragraph) is not fits


def test_a_step_that_never_passes_its_ceiling_says_nothing_of_it():
    assert answer.held(chapter3(), "a-300-pv") is None  # 8 users against 8,293
    assert answer.held(chapter3(), "missing") is None


def test_synthetic_failures_at_and_off_k6s_timeouts():
    result = answer.failures(chapter3())
    assert result.steps["f-10k-pv"][2] == [("i/o timeout", 7, 30.0), ("request timeout", 2, 60.0)]
    assert result.matched and "7 gave up connecting after 30.0 s and 2 gave up waiting for an answer after 60.0 s" in result.text()
    early = answer.failures(chapter3(timeout_s=20.0))  # requests ending at 20 s are not k6's 60 s timeout
    assert not early.matched and early.text().endswith("not at k6's timeouts")
    assert ", not at k6's timeouts; nobody got" in answer.answer_paragraph(chapter1(450), chapter3(timeout_s=20.0))
    refused = answer.failures(chapter3(refused=3))
    assert refused.refused == 3 and not refused.matched and "3 got “connection refused”" in refused.text()
    assert "connection attempts are not refused" not in answer.answer_paragraph(chapter1(450), chapter3(refused=3))


def test_synthetic_table_and_defaults_without_server_reports():
    table = answer.answer_table(chapter1(450), chapter3())
    lines = table.splitlines()
    assert len(lines) == 5 and "8 + 2 + 1 = 11" in lines[3] and "@sec-the-lab-and-its-limits" not in lines[3]
    assert "keep-alive-timeout` (default" not in lines[3]  # no server reported it: no default is made up
    defaults = answer.knob_defaults(chapter3())
    assert defaults["TOMCAT_MAX_CONNECTIONS"] == SERVER_DEFAULTS["TOMCAT_MAX_CONNECTIONS"]
    assert defaults["TOMCAT_MIN_SPARE_THREADS"] is None


def test_reported_default_skips_steps_that_set_the_knob_or_what_it_falls_back_to():
    def step(server, reported):
        return {"config": {"server": server}, "server_info": {"tomcat": reported}}
    data = chapter("chapter3", {"set": step({"TOMCAT_CONNECTION_TIMEOUT": 20000}, {"keepAliveTimeout": 20000}),
                                "unset": step({}, {"keepAliveTimeout": 60000})}, [])
    assert answer.reported_default("TOMCAT_KEEP_ALIVE_TIMEOUT", data) == 60000
