"""The load plan as k6 gets it: options.load_plan as JSON in a file, k6-plan.json in the step's folder, which lab.js
opens at the path k6's environment names (LAB_PLAN_FILE). A file holds a plan of any size and shows it to no other
user, where one argument of a command line or one variable of the environment holds at most 128 KiB on Linux and an
argument is shown by `ps`. The step keeps the file: the plan k6 read, byte for byte."""
from __future__ import annotations

import json
from pathlib import Path

from harness.lab.load.options import load_plan

PLAN_FILE = "k6-plan.json"
PLAN_PATH_VARIABLE = "LAB_PLAN_FILE"


def plan_text(load: dict) -> str:
    """The load plan as k6 reads it from PLAN_FILE."""
    return json.dumps(load_plan(load), indent=1) + "\n"


def write_plan(load: dict, folder: Path) -> Path:
    """The step's plan, written into `folder` for k6 to read; its absolute path (k6 opens a relative one from the
    script's folder, not the working directory)."""
    path = folder.absolute() / PLAN_FILE
    path.write_text(plan_text(load))
    return path


def k6_environment(plan_path: str, target: str) -> dict[str, str]:
    """What k6 and lab.js read from the environment, locally and in k6-operator's runners alike: where the plan is,
    the target, k6's CSV timestamps in microseconds (recording.py reads them so), no usage report."""
    return {PLAN_PATH_VARIABLE: plan_path, "TARGET": target,
            "K6_CSV_TIME_FORMAT": "unix_micro", "K6_NO_USAGE_REPORT": "true"}
