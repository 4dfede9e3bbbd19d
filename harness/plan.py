"""A step's plan, made above the lab and handed to it: the model's prediction (stored in step.json beside what was
measured, so the book can set one against the other) and how long the step is expected to take (the run's progress
and ETA). The lab runs a step without knowing any model (harness.lab.runner takes a `plan` function); this module
is where the two meet.
"""
from __future__ import annotations

from harness.lab.spec import Step
from harness.models import MODEL_VERSION, expected_step_ms, predict


def plan_step(step: Step) -> dict:
    """{"model": the prediction (None for a step without load), "model_version", "expected_ms"}."""
    load = step.kind == "load"
    return {"model": predict(step).as_dict() if load else None, "model_version": MODEL_VERSION if load else None,
            "expected_ms": expected_step_ms(step)}
