"""Chapter 2's prose: every number and clause it quotes agrees with the data beside it. On the reference data the
numbers are read here straight from the files (step.json, the parquet tables), not through the chapter's module; on
synthetic data each clause must say something else when the data does."""
import dataclasses
import json
import statistics

import numpy as np
import pandas as pd
import pytest

from harness.book.chapters import ch2
from harness.book.chapters.ch2 import lab, lab_checks, words
from harness.book.chapters.ch2.values import Batch, Noise, Overflows
from harness.lab import store

from ch2_synthetic import chapter, on_machine, repeated  # noqa: I001


def root():
    return store.data_root() / "chapter2"


def step_json(step: str) -> dict:
    return json.loads((root() / step / "step.json").read_text())


def runs_of(step: str) -> list[str]:
    """Every run's directory of a step, first run first."""
    found = [p.name for p in root().iterdir() if (p / "step.json").exists() and store.run_of(p.name)[0] == step]
    return sorted(found, key=lambda name: store.run_of(name)[1])


def series(prefix: str) -> list[str]:
    found = [p.name for p in root().iterdir() if p.name.startswith(prefix) and (p / "step.json").exists()]
    return sorted(found, key=lambda s: step_json(s)["config"]["load"]["vus"])


def table(step: str, name: str) -> pd.DataFrame:
    return store.read_parquet(root() / step / f"{name}.parquet", name)


def last_first_start_s(step: str) -> float:
    requests = table(step, "requests")
    first = requests["start_ms"] if step_json(step)["config"]["load"].get("spike_mode") == "batch" else \
        requests.groupby("vu")["start_ms"].min()
    return (first.max() - requests["start_ms"].min()) / 1000


@pytest.fixture(scope="module")
def data():
    return ch2.load()


def test_the_setup_says_what_the_steps_ran(data):
    s = ch2.setup(data)
    hold = series("hold-")
    assert s.levels == ", ".join(f"{step_json(x)['config']['load']['vus']:,}" for x in hold[:-1]) + \
        f" and {step_json(hold[-1])['config']['load']['vus']:,}"
    assert s.sleep_s == step_json(hold[0])["config"]["server"]["SLEEP_MS"] / 1000
    spread = max(last_first_start_s(x) for x in hold)
    assert f"the {spread:.1f} s k6 needed" in words.held(s)
    assert (s.noise_runs, s.unsampled_runs) == (len(runs_of("noise")), len(runs_of("unsampled")))
    assert s.same_as == step_json("noise")["config"]["same_as"]


def test_the_start_sentences_agree_with_the_start_times(data):
    spreads = {step_json(x)["config"]["load"]["vus"]: last_first_start_s(x) for x in series("hold-")}
    fast = [n for n in sorted(spreads) if all(spreads[m] <= 1 for m in sorted(spreads) if m <= n)]
    text = words.spike(ch2.starts(data))
    if len(fast) == len(spreads):
        assert text.startswith(f"all {max(spreads):,} users start within 1 s")
    else:
        slow = [v for v in spreads.values() if v > 1]
        assert text.startswith(f"up to {max(fast):,} users" if fast else "even the smallest")
        assert f"{min(slow):.1f}–{max(slow):.1f} s after the first" in text
    ramps = [n for n, v in spreads.items() if v > 5]
    assert (f"At {ramps[-1]:,} users" in words.ramps(ch2.starts(data), 5)) if ramps else \
        words.ramps(ch2.starts(data), 5).startswith("No step's")


def overflows_per_step() -> dict[str, int]:
    return {x: int(table(x, "ss")["listen_overflows"].sum()) for p in lab.SERIES for x in series(p)}


def test_the_overflow_sentence_names_every_step_of_the_table_that_overflowed(data):
    """Issue 30: the sentence said "from 3,000 users" above a table with overflows at 300 and 1,000."""
    counted = overflows_per_step()
    text = words.overflowed(ch2.overflows(data))
    for prefix, phrase in words.SERIES_WORDS.items():
        over = [step_json(x)["config"]["load"]["vus"] for x in series(prefix) if counted[x] > 0]
        expected = (", ".join(f"{n:,}" for n in over[:-1]) + " and " if len(over) > 1 else "") + f"{over[-1]:,}" \
            if over else ""
        assert (f"{phrase} at {expected} users" if over else f"{phrase} at no N") in text, prefix
    shown = ch2.overflows_table(data).data
    for x, count in counted.items():
        assert f"| {step_json(x)['config']['load']['vus']:,} |" in shown
        assert f" {count:,} " in shown or count == 0


def test_the_sampling_sentences_agree_with_the_runs(data):
    sampled = [step_json(x)["requests"]["failed"] for x in runs_of("noise")]
    unsampled = [step_json(x)["requests"]["failed"] for x in runs_of("unsampled")]
    n = ch2.noise(data)
    assert (n.failed_low, n.failed_high, n.off_failed_low, n.off_failed_high) == (
        min(sampled), max(sampled), min(unsampled), max(unsampled))
    outside = sum(not min(sampled) <= f <= max(sampled) for f in unsampled)
    assert n.off_outside == outside
    check = ch2.by_id(ch2.checks(data))["sampling-failures"]
    if len(set(sampled + unsampled)) == 1:  # a ceiling gives the same count in every run: no spread to divide by
        assert f"every run of both gave the same number (identical in every run: {sampled[0]:,}" in words.same(check, "x")
        assert words.outcome(check) == "holds"
        return
    z = (statistics.fmean(unsampled) - statistics.fmean(sampled)) / np.sqrt(
        statistics.variance(sampled) / len(sampled) + statistics.variance(unsampled) / len(unsampled))
    assert f"the difference is {abs(z):.1f}σ" in words.same(check, "x")
    assert words.outcome(check) == ("holds" if abs(z) < 3 else "does not hold")


def test_the_constant_vus_numbers_are_every_run_at_the_repeated_n(data):
    again = [p.name for p in root().iterdir() if p.name.startswith("again-cv-")]
    users = step_json(again[0])["config"]["load"]["vus"]
    issued = [step_json(x)["requests"]["issued"] for x in (f"cv-{users}", *runs_of(f"again-cv-{users}"))]
    cv = ch2.constant_vus(data)
    assert (cv.users, cv.runs, cv.issued_low, cv.issued_high) == (users, len(issued), min(issued), max(issued))
    starts = table(f"hold-{users}", "requests").groupby("vu")["start_ms"].min()
    assert cv.started == int(((starts - starts.min()) / 1000 <= 1).sum())


def test_the_memory_numbers_are_the_slopes_through_the_peaks(data):
    def slope(prefix):
        points = [(step_json(x)["config"]["load"]["vus"], table(x, "process").query("process == 'server'").rss_bytes.max())
                  for x in series(prefix)]
        return np.polyfit(*zip(*points, strict=True), 1)[0] / 1024

    m = ch2.memory(data)
    assert m.thread == pytest.approx(slope("hold-") - slope("queue-"))
    assert m.connection == pytest.approx(slope("queue-"))
    assert m.nofile == step_json("hold-300")["machine"]["nofile_limit"]


def test_the_redeploy_numbers_are_the_starts(data):
    starts = table("redeploy-cds", "startup")["startup_ms"]
    r = ch2.redeploys(data)
    assert (r.cds_s, r.starts) == (pytest.approx(starts.mean() / 1000), len(starts))


def test_the_ceilings_name_what_chapter_3s_steps_ran(data):
    raised = {p.name for p in (store.data_root() / "chapter3").iterdir() if (p / "step.json").exists()
              and json.loads((p / "step.json").read_text())["config"]["system"].get("raise_somaxconn")}
    text = ch2.tables.somaxconn_caps("chapter3")
    assert all(step in text for step in raised) and (("raised it for" in text) == bool(raised))


# ---- the clauses on synthetic data -------------------------------------------------------------------------------

def test_held_says_when_a_spike_outlasts_the_sleep():
    s = ch2.setup(chapter({300: 0.2, 3000: 30.0}, {}))  # the app's default sleep, 5 s
    assert words.held(s).startswith("shorter than the 30.0 s k6 needed")


def test_spike_and_ramp_clauses_when_every_spike_is_fast():
    st = ch2.starts(chapter({300: 0.2, 3000: 0.8}, {}))
    assert words.spike(st) == "all 3,000 users start within 1 s" and words.ramps(st, 5).startswith("No step's")
    assert words.spike_head(st).startswith("Every spike is a spike") and words.spike_tail(st) == ""


def test_batch_clauses():
    saturated = Batch(15000, 6.5, 13.0, 0.7, 1.2, "15,000", "")
    assert words.batch_pace(saturated) == "faster at every N"
    assert "k6 used 0.7 and the server 1.2 of the two cores. The machine was saturated" in words.batch_goal(
        saturated, 2.0, 2)
    idle = Batch(15000, 6.5, 13.0, 0.3, 0.4, "", "15,000")
    assert words.batch_pace(idle) == "no faster at any N" and "The cores had room" in words.batch_goal(idle, 2.0, 2)
    assert words.batch_goal(Batch(300, 0.1, 0.2, 0.1, 0.1, "300", ""), 2.0, 2).startswith("That is within")


def test_overflow_clauses_without_overflows_and_with_requests_cut_off():
    quiet = Overflows(16000, 100, 101, dict.fromkeys(lab.SERIES), dict.fromkeys(lab.SERIES, ""), 0, "", "", "", 0, 30)
    assert words.overflowed(quiet).count("at no N") == 4 and words.acceptor_head(quiet).endswith("kept up with every spike.")
    cut = Overflows(16000, 100, 101, dict.fromkeys(lab.SERIES), dict.fromkeys(lab.SERIES, ""), 0, "", "120", "3,000",
                    1, 30)
    late = "The users whose SYN was dropped arrive at the server later than k6 started them."
    assert words.late_users(cut).startswith(f"{late} The 120 requests k6 cut off (interrupted) in the constant-vus step "
                                            "at 3,000")
    assert words.late_users(quiet) == late  # never empty: Quarto would print the expression's source instead


def test_files_and_sampling_clauses_follow_their_checks():
    data = repeated({"noise": [(10, 0.0), (12, 0.1), (11, 0.2)], "unsampled": [(40, 0.1), (41, 0.0), (42, 0.2)]},
                    chapter({300: 0.1, 1000: 0.1, 3000: 0.2}, {}))
    checked = ch2.by_id(lab_checks.checks(on_machine(data, memory_bytes=2**30)))
    assert words.first_bound(checked["files-first"]) == "Memory binds before open files."  # 1 GiB: ≈ 3,600 users
    assert words.sampling_effect(checked["sampling-failures"], checked["sampling-waves"]).startswith(
        "switching them off moved the failures")
    n = ch2.noise(data)
    assert words.outside(n).startswith("all of the three runs without samplers")


def test_outside_counts_in_words():
    n = Noise(10000, 5, 3, *([0] * 8), 1, *([0.0] * 7))
    assert words.outside(n).startswith("one of the three runs without samplers")
    assert words.outside(dataclasses.replace(n, off_outside=0)).startswith("every run without samplers")
