"""Predictions made before any data: what a step should show if Tomcat and Linux work as documented.

Three models: the spike simulation (harness.models.spike), the closed loop (harness.models.closed_loop,
with Little's law) and the operational bounds of the /work endpoint under sustained load (harness.models.work). They know nothing of files or charts; `predict(step)` picks the one a step needs.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from harness.lab.spec import Step
from harness.lab.units import duration_ms
from harness.models.closed_loop import ThroughputPrediction, is_closed_loop, predict_throughput
from harness.models.duration import estimate
from harness.models.spike import Prediction, predict_spike
from harness.models.work import WorkPrediction, is_work, predict_work

# Stored in step.json beside each prediction: bump it when a model's predictions change, so data made with an older
# model can be told apart.
MODEL_VERSION = 2


MODELLED = ("per-vu-iterations", "constant-vus", "shared-iterations")  # spikes and closed loops of one GET


@dataclass(frozen=True)
class NoPrediction:
    """A step no model covers yet (ramping and open-model executors, multi-request scenarios): what it asks, and
    that the load phase lasts at least its scheduled time."""

    requests: int
    executor: str
    reason: str
    stop_ms: int
    min_duration_ms: int

    def as_dict(self) -> dict:
        return asdict(self)


def predict(step: Step, requests: int | None = None) -> Prediction | ThroughputPrediction | WorkPrediction | NoPrediction:
    """The prediction for a step; `requests` defaults to what the step asks for."""
    executor = step.load["executor"]
    if is_work(step) and executor in ("ramping-vus", "constant-vus", "constant-arrival-rate"):
        return predict_work(step)
    unknown = not step.target_model or step.target_model.get("sleep_ms") is None
    if unknown or executor not in MODELLED or len(step.load.get("requests") or [None]) > 1:
        what = (f"server ({step.target}: its kind gives the model nothing to go on)" if unknown else
                f"executor {executor}" if executor not in MODELLED else "a scenario of several requests")
        return NoPrediction(step.requests_asked if requests is None else requests, executor,
                            f"no model for this {what} yet", step.stop_ms,
                            step.stop_ms - duration_ms(step.load["graceful_stop"]))
    return predict_throughput(step) if is_closed_loop(step) else predict_spike(step, requests)


def expected_step_ms(step: Step) -> int:
    """A wall-time estimate for progress messages: the whole step, start to written (harness.models.duration)."""
    return estimate(step).duration_ms
