"""A run's plan, made above the lab and handed to it: each step's model prediction (stored in step.json beside what
was measured, so the book can set one against the other), how long it is expected to take and how many requests it
should send (the run's ETA and progress lines). The lab runs steps without knowing any model (harness.lab.runner
takes a `plan` function); this module is where the two meet.
"""
from __future__ import annotations

from harness.lab.services import pgcluster
from harness.lab.spec import Step
from harness.models import MODEL_VERSION, predict
from harness.models.duration import estimate_run


def template_ready(knobs: dict) -> bool:
    """A postgres service's cluster is cached already (its first load is not part of this run)."""
    files = pgcluster.sql_files(knobs["sql_dir"], knobs["template"])
    return pgcluster.Cluster(knobs["template"], knobs["rows"], files).ready()


def plan_steps(steps: list[Step]) -> dict[str, dict]:
    """{step id: {"model": the prediction (None without load), "model_version", "expected_ms", "expected_requests"}}
    for a run of `steps` in that order (the first step that loads a postgres template pays for it)."""
    plans = {}
    for step, estimate in zip(steps, estimate_run(steps, template_ready), strict=True):
        load = step.kind == "load"
        plans[step.id] = {"model": predict(step).as_dict() if load else None,
                          "model_version": MODEL_VERSION if load else None,
                          "expected_ms": estimate.duration_ms, "expected_requests": estimate.requests}
    return plans
