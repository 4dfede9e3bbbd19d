"""One step's run as verdicts see it (`StepRun`): counts, peaks, waves and failures in words.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness.book.verdict import failure_kinds
from harness.lab.steps import server_knob
from harness.lab.store import answered

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
        return server_knob(self.meta, name)

    def start_spread_s(self) -> float:
        """How long k6 took to send every first request (constant-vus and 2 cores: up to seconds)."""
        return float(self.requests["start_ms"].max() - self.t0_ms) / 1000 if len(self.requests) else 0.0




def step_run(data, step_id: str) -> StepRun | None:
    if step_id not in data.steps:
        return None
    rows = data.requests[data.requests["step"] == step_id]
    t0 = float(rows["start_ms"].min())
    rows = rows.assign(ok=answered(rows), kind=failure_kinds(rows), end_s=(rows["end_ms"] - t0) / 1000)
    return StepRun(step_id, data.steps[step_id], rows, data.ss[data.ss["step"] == step_id], t0)


def wave_counts(run: StepRun, bucket_s: float = SLEEP_000_S) -> dict[int, int]:
    """Answers per wave: wave k holds the answers that ended nearest k × sleep (round(t / 5 s))."""
    ends = run.requests.loc[run.requests["ok"], "end_s"]
    return {int(k): int(n) for k, n in (ends / bucket_s).round().value_counts().sort_index().items()}


def kinds_text(run: StepRun) -> str:
    """Failures by kind and when they ended, e.g. "600 request timeout at 60.0 s"."""
    parts = []
    for kind, count in run.kinds().items():
        ends = run.requests.loc[run.requests["kind"] == kind, "end_s"].dropna()
        when = ("when k6 stopped" if ends.empty else f"at {ends.min():.1f} s" if ends.max() - ends.min() < 1
                else f"at {ends.min():.0f}–{ends.max():.0f} s")
        parts.append(f"{count} {kind} {when}")
    return ", ".join(parts) or "no failures"


def sampled(run: StepRun) -> bool:
    """Did the `ss` sampler run in this step? (chapter 2 repeats some steps with the samplers off)"""
    return "estab" in run.ss and bool(run.ss["estab"].notna().any())


def keep_alive_s(run: StepRun) -> float:
    """Tomcat's keep-alive timeout as the server reported it (it falls back to the connection-timeout)."""
    reported = run.meta.get("server_info", {}).get("tomcat", {}).get("keepAliveTimeout")
    fallback = run.meta["config"]["server"].get("TOMCAT_KEEP_ALIVE_TIMEOUT", run.knob("TOMCAT_CONNECTION_TIMEOUT"))
    return (reported or fallback) / 1000
