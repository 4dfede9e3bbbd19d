"""Load tools for a step (k6, or the articles' ab) behind one interface: `load_tool(name)`; each gives one row
per request."""
from __future__ import annotations

from harness.lab.load.ab import AbTool
from harness.lab.load.k6 import K6Tool


def load_tool(name: str):
    return {"k6": K6Tool, "ab": AbTool}[name]()
