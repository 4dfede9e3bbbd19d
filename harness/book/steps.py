"""One step's run as verdicts see it (`StepRun`): counts, peaks, waves and failures in words.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from harness.book.verdict import COUNT_TOLERANCE, DIFFERS, MODEL_SLACK, MOST, NOT_REPRODUCED, Verdict, failure_kinds
from harness.lab.spec import SERVER_DEFAULTS, Step, load_spec
from harness.lab.steps import step_from_config
from harness.lab.store import answered
from harness.models.spike import K6_DIAL_TIMEOUT_MS, simulate_measured_arrivals

SLEEP_000_S = 5  # GET /hello sleeps 5 s: answers come in waves, one every 5 s


@dataclass(frozen=True, eq=False)
class StepRun:
    """One step reduced to what the seed-000 verdicts compare. Times are seconds since its first request
    started (the spike), the origin of the model's predictions."""

    step: str
    meta: dict
    requests: pd.DataFrame  # the step's rows plus `ok`, `kind` ("" when ok) and `end_s`
    ss: pd.DataFrame
    t0_ms: float

    @property
    def model(self) -> dict:
        return self.meta["model"]

    @property
    def asked(self) -> int:
        return self.meta["requests"]["asked"]

    @property
    def issued(self) -> int:
        return self.meta["requests"]["issued"]

    @property
    def ok(self) -> int:
        return int(self.requests["ok"].sum())

    @property
    def failed(self) -> int:
        return len(self.requests) - self.ok

    def kinds(self) -> dict[str, int]:
        return self.requests.loc[~self.requests["ok"], "kind"].value_counts().to_dict()

    def last_ok_s(self) -> float:
        return float(self.requests.loc[self.requests["ok"], "end_s"].max())

    def peak(self, column: str) -> float:
        """The highest `ss` sample of a column (nan without samples)."""
        return float(self.ss[column].max()) if column in self.ss and len(self.ss) else float("nan")

    def stop_s(self) -> float:
        """When k6 finished, from the spike."""
        return (self.meta.get("load_ended_ms", self.meta.get("ended_ms", float("nan"))) - self.t0_ms) / 1000

    def knob(self, name: str) -> int:
        return self.meta["config"]["server"].get(name, SERVER_DEFAULTS.get(name))

    def start_spread_s(self) -> float:
        """How long k6 took to send every first request (constant-vus and 2 cores: up to seconds)."""
        return float(self.requests["start_ms"].max() - self.t0_ms) / 1000 if len(self.requests) else 0.0

    @cached_property
    def arrivals_ok(self) -> int:
        """Successes of model.simulate fed with the measured start of every request, rather than all at once."""
        if self.start_spread_s() == 0:
            return self.model["succeeded"]
        step = step_from_config(self.meta.get("chapter", "chapter3"), self.step, self.meta["config"])
        return sum(o.ok for o in simulate_measured_arrivals(step, self.requests["start_ms"].tolist()))


def step_run(data, step_id: str) -> StepRun | None:
    if isinstance(data, StepRuns):
        return data.run(step_id)
    if step_id not in data.steps:
        return None
    rows = data.requests[data.requests["step"] == step_id]
    t0 = float(rows["start_ms"].min())
    rows = rows.assign(ok=answered(rows), kind=failure_kinds(rows), end_s=(rows["end_ms"] - t0) / 1000)
    return StepRun(step_id, data.steps[step_id], rows, data.ss[data.ss["step"] == step_id], t0)


class StepRuns:
    """A chapter's steps as StepRuns, each built once: several verdicts read the same step (f: F000-f, h, l)."""

    def __init__(self, data):
        self.data, self.steps, self._runs = data, data.steps, {}

    def run(self, step_id: str) -> StepRun | None:
        if step_id not in self._runs:
            self._runs[step_id] = step_run(self.data, step_id)
        return self._runs[step_id]


def judged_runs(data, step_ids) -> tuple[list[StepRun], list[str]]:
    """The runs a verdict rests on (steps that issued every request) and a note on each step left out.
    `data` is a ChapterData or the StepRuns of one."""
    runs, notes = [], []
    for step_id in step_ids:
        run = step_run(data, step_id)
        if run is None:
            notes.append(f"{step_id}: no data")
        elif run.issued < run.asked:
            notes.append(f"{step_id} issued only {run.issued} of {run.asked} requests (k6 did not start every user "
                         "within constant-vus' 1 s on this machine), so it is not judged")
        else:
            runs.append(run)
    return runs, notes


def no_data(finding: str, article: str, notes: list[str]) -> Verdict:
    """A verdict without the steps it needs: "not reproduced" when some never ran, "differs on this hardware" when
    they ran but k6 could not issue every request here."""
    missing = [n.removesuffix(": no data") for n in notes if n.endswith(": no data")]
    if missing:
        return Verdict(finding, article, f"no data for {', '.join(missing)} (`invoke run chapter3` runs it)",
                       NOT_REPRODUCED, "nothing measured to judge on")
    return Verdict(finding, article, "; ".join(notes), DIFFERS, "no step issued every request on this machine")


def wave_counts(run: StepRun, bucket_s: float = SLEEP_000_S) -> dict[int, int]:
    """Answers per wave: wave k holds the answers that ended nearest k × sleep (round(t / 5 s))."""
    ends = run.requests.loc[run.requests["ok"], "end_s"]
    return {int(k): int(n) for k, n in (ends / bucket_s).round().value_counts().sort_index().items()}


def waves_match(run: StepRun, sizes: list[int]) -> bool:
    """Do the measured waves have these sizes (wave 1 at one sleep, …) and no others, within COUNT_TOLERANCE?"""
    counts, expected = wave_counts(run), dict(enumerate(sizes, start=1))
    slack = COUNT_TOLERANCE * max(sizes)
    return all(abs(counts.get(k, 0) - expected.get(k, 0)) <= slack for k in set(counts) | set(expected))


def waves_text(run: StepRun, shown: int = 5) -> str:
    counts = list(wave_counts(run).items())
    text = ", ".join(f"{n} at ~{k * SLEEP_000_S} s" for k, n in counts[:shown])
    return text + (f", … ({len(counts)} waves)" if len(counts) > shown else "") if counts else "no answers"


def kinds_text(run: StepRun) -> str:
    """Failures by kind and when they ended, e.g. "600 request timeout at 60.0 s"."""
    parts = []
    for kind, count in run.kinds().items():
        ends = run.requests.loc[run.requests["kind"] == kind, "end_s"].dropna()
        when = ("when k6 stopped" if ends.empty else f"at {ends.min():.1f} s" if ends.max() - ends.min() < 1
                else f"at {ends.min():.0f}–{ends.max():.0f} s")
        parts.append(f"{count} {kind} {when}")
    return ", ".join(parts) or "no failures"


def outcome_text(run: StepRun) -> str:
    """e.g. "f-10k-pv: 8192 of 10000 ok (model 8192), failed: 1808 request timeout at 60.0 s"; the model fed with
    the measured start times too when it predicts otherwise."""
    extra = f" ({run.issued} requests: some users retried)" if run.issued > run.asked else ""
    model = f"model {run.model['succeeded']}"
    if run.arrivals_ok != run.model["succeeded"]:
        model += f"; {run.arrivals_ok} with k6's measured start times, spread over {run.start_spread_s():.1f} s"
    text = f"{run.step}: {run.ok} of {run.asked} ok{extra} ({model})"
    return text + (f", failed: {kinds_text(run)}" if run.failed else "")


def matches_model(run: StepRun) -> bool:
    """Measured successes match the model's (all users at once, or at their measured start times): within MODEL_SLACK
    of its count while every user is held.

    Past the connection ceiling the model is a lower bound (harness.models.spike: users the kernel leaves in SYN-RECV
    get in later than it says), so there a measurement matches from that count up to the point where most (MOST) of
    the users the model fails would have got in after all."""
    slack = MODEL_SLACK * run.asked
    past = run.model.get("over_ceiling", 0) > 0
    return any(ok - slack <= run.ok <= ok + slack + (MOST * (run.asked - ok) if past else 0)
               for ok in (run.model["succeeded"], run.arrivals_ok))


def sampled(run: StepRun) -> bool:
    """Did the `ss` sampler run in this step? (chapter 2 repeats some steps with the samplers off)"""
    return "estab" in run.ss and bool(run.ss["estab"].notna().any())


def all_ok(run: StepRun) -> bool:
    return run.ok >= run.asked and run.failed == 0


def keep_alive_s(run: StepRun) -> float:
    """Tomcat's keep-alive timeout as the server reported it (it falls back to the connection-timeout)."""
    reported = run.meta.get("server_info", {}).get("tomcat", {}).get("keepAliveTimeout")
    fallback = run.meta["config"]["server"].get("TOMCAT_KEEP_ALIVE_TIMEOUT", run.knob("TOMCAT_CONNECTION_TIMEOUT"))
    return (reported or fallback) / 1000


def model_reason(run: StepRun) -> str:
    """The model's mechanism for a spike's outcome, in the direction its numbers go (model.simulate): no more answered
    than the server holds at once (max-connections + accept-count + 1), or more, because slots free in time."""
    model = run.model
    timeout = model["client_timeout_ms"] / 1000
    if not model.get("keep_alive"):
        return f"connections close after each response, so slots free at once; the model predicts {model['succeeded']}"
    held = (f"keep-alive keeps each answered connection's Tomcat slot for the {keep_alive_s(run):.0f} s keep-alive "
            f"timeout")
    if model["succeeded"] <= model["ceiling"]:
        return (f"{held}, so slots free too late for the users beyond the ceiling (k6 stops connecting after "
                f"{K6_DIAL_TIMEOUT_MS / 1000:.0f} s) and no more get in than the server holds at once (max-connections + "
                f"accept-count + 1 = {model['ceiling']}); the model predicts {model['succeeded']}")
    return (f"{held}, then frees it, and users waiting in SYN retries take the freed slots before k6's {timeout:.0f} s "
            f"timeout; the model predicts {model['succeeded']}, more than the {model['ceiling']} the server holds at once")


def unexplained(run: StepRun) -> str:
    return f"{run.step} matches neither the article nor the model ({run.model['succeeded']} ok): see its failures chart"


def joined(runs: list[StepRun], describe, notes: list[str]) -> str:
    return "; ".join([describe(r) for r in runs] + notes)


# Roles the book selects steps by (the spec's `role` key), where findings alone do not say which steps a table needs.
PLUS_ONE = "the +1"  # chapter 3's small steps that isolate the kernel's extra connection


# The spec as the book reads it: only which steps there are, so this machine's limits do not matter.
ANY_MACHINE = {"nofile": 1 << 30, "somaxconn": 1 << 30, "can_raise_somaxconn": True, "cores": 1 << 10}


@functools.cache
def _spec_steps(chapter: str) -> tuple[Step, ...]:
    return tuple(load_spec(chapter, ANY_MACHINE).steps)


def spec_steps(chapter: str, finding: str | None = None, role: str | None = None,
               executor: str | None = None) -> tuple[str, ...]:
    """Ids of a chapter's steps, in spec order, that test `finding` and/or have `role` (and run `executor`, e.g.
    "per-vu-iterations"): chapters choose steps by what they test, so a step id is written once, in the spec."""
    return tuple(s.id for s in _spec_steps(chapter)
                 if (finding is None or finding in s.findings) and (role is None or s.role == role)
                 and (executor is None or s.load.get("executor") == executor))
