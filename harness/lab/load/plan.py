"""The load plan as k6 gets it: options.load_plan as compact JSON in one variable of its environment (LAB_PLAN=…),
which Linux limits to 128 KiB as it does one argument of a command line, so a longer plan is refused with its spec."""
from __future__ import annotations

import json

from harness.lab.load.options import load_plan

PLAN_VARIABLE = "LAB_PLAN"
# Linux holds at most 32 pages (128 KiB) in one string of a new process's arguments or environment (MAX_ARG_STRLEN,
# with its ending NUL), and k6 gets the plan as one: LAB_PLAN=…
MAX_VARIABLE_BYTES = 32 * 4096 - 1


def plan_text(load: dict) -> str:
    """The load plan as k6 gets it (LAB_PLAN=<this> in its environment)."""
    return json.dumps(load_plan(load), separators=(",", ":"))


def k6_environment(load: dict, target: str) -> dict[str, str]:
    """What k6 and lab.js read from the environment, locally and in k6-operator's runners alike: the plan, the target,
    k6's CSV timestamps in microseconds (recording.py reads them so), no usage report."""
    return {PLAN_VARIABLE: plan_text(load), "TARGET": target,
            "K6_CSV_TIME_FORMAT": "unix_micro", "K6_NO_USAGE_REPORT": "true"}


def plan_problem(load: dict) -> str:
    """Why k6 cannot be given this plan ("" when it can): one variable of its environment holds at most 128 KiB."""
    try:
        size = len(f"{PLAN_VARIABLE}={plan_text(load)}".encode())
    except (KeyError, TypeError, ValueError):  # a load the checks found wrong otherwise (values dropped as mistyped)
        return ""
    if size <= MAX_VARIABLE_BYTES:
        return ""
    return (f"the load plan is {size / 1024:,.0f} KiB, and k6 gets it as one environment variable, which holds at "
            f"most 128 KiB: shorten the requests' bodies or headers")
