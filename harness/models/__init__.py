"""Predictions made before any data: what a step should show if Tomcat and Linux work as documented.

Two models: the spike simulation (harness.models.spike) and the closed loop (harness.models.closed_loop,
with Little's law). They know nothing of files or charts; `predict(step)` picks the one a step needs.
"""
from __future__ import annotations

from harness.lab.spec import Step
from harness.models.closed_loop import ThroughputPrediction, is_closed_loop, predict_throughput
from harness.models.spike import Prediction, predict_spike

# Stored in step.json beside each prediction: bump it when a model's predictions change, so data made with an older
# model can be told apart.
MODEL_VERSION = 2
STARTUP_ALLOWANCE_MS = 4000  # redeploy-to-healthy plus teardown, for progress estimates only


def predict(step: Step, requests: int | None = None) -> Prediction | ThroughputPrediction:
    """The prediction for a step; `requests` defaults to what the step asks for."""
    return predict_throughput(step) if is_closed_loop(step) else predict_spike(step, requests)


def expected_step_ms(step: Step) -> int:
    """A wall-time estimate for progress messages: start-up plus the load phase (a redeploy step: start-ups)."""
    if step.kind == "redeploy":
        return STARTUP_ALLOWANCE_MS * step.starts
    return STARTUP_ALLOWANCE_MS + predict(step).min_duration_ms
