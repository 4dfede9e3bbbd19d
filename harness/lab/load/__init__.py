"""Load tools for a step (k6, the articles' ab, wrk as a closed-loop cross-check) behind one interface (harness.lab.load.tool.LoadTool):
`load_tool(name)`. k6 and ab give one row per request (k6 per-second series for big steps), wrk its end-of-test
totals only (a "summary" recording). `options` holds the [load] keys and checks (imported by the spec, hence the
tools load lazily here)."""
from __future__ import annotations

from harness.lab.load.tool import LoadTool


def load_tool(name: str) -> LoadTool:
    from harness.lab.load.ab import AbTool
    from harness.lab.load.k6 import K6Tool
    from harness.lab.load.wrk import WrkTool

    return {"k6": K6Tool, "ab": AbTool, "wrk": WrkTool}[name]()
