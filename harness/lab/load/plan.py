"""The load plan as k6 gets it: options.load_plan as compact JSON in one argument of its command line
(-e LAB_PLAN=…), which Linux limits to 128 KiB, so a longer plan is refused with its spec."""
from __future__ import annotations

import json

from harness.lab.load.options import load_plan

PLAN_VARIABLE = "LAB_PLAN"
# Linux holds at most 32 pages (128 KiB) in one argument of a command line, and k6 gets the plan as one: -e LAB_PLAN=…
MAX_ARGUMENT_BYTES = 32 * 4096 - 1


def plan_text(load: dict) -> str:
    """The load plan as k6 gets it (-e LAB_PLAN=<this>)."""
    return json.dumps(load_plan(load), separators=(",", ":"))


def plan_problem(load: dict) -> str:
    """Why k6 cannot be given this plan ("" when it can): one argument of its command line holds at most 128 KiB."""
    try:
        size = len(f"{PLAN_VARIABLE}={plan_text(load)}".encode())
    except (KeyError, TypeError, ValueError):  # a load the checks found wrong otherwise (values dropped as mistyped)
        return ""
    if size <= MAX_ARGUMENT_BYTES:
        return ""
    return (f"the load plan is {size / 1024:,.0f} KiB, and k6 gets it as one command-line argument, which holds at "
            f"most 128 KiB: shorten the requests' bodies or headers")
