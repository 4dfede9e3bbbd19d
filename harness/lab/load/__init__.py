"""Load tools for a step (k6, or the articles' ab) behind one interface: `load_tool(name)`; each gives one row
per request. `options` holds the [load] keys and checks (imported by the spec, hence the tools load lazily here)."""
from __future__ import annotations


def load_tool(name: str):
    from harness.lab.load.ab import AbTool
    from harness.lab.load.k6 import K6Tool

    return {"k6": K6Tool, "ab": AbTool}[name]()
