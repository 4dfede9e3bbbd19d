"""Chapter 3's tables: the model's predictions, requests issued, the "+1" steps and failures by kind.
"""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.analysis import spike_start_ms
from harness.book.charts import step_order
from harness.book.steps import PLUS_ONE, spec_steps
from harness.book.tables import people_table
from harness.book.verdict import failure_kinds
from harness.lab.spec import SERVER_DEFAULTS
from harness.lab.store import ChapterData, answered


def spike_predictions_table(data: ChapterData) -> Markdown:
    """The model's prediction for every spike step, from step.json, before any measurement."""
    rows = []
    for name in step_order(data):
        meta = data.steps[name]
        model, server = meta["model"], meta["config"]["server"]
        if "ceiling" not in model:
            continue
        timeout = server.get("TOMCAT_KEEP_ALIVE_TIMEOUT",
                             server.get("TOMCAT_CONNECTION_TIMEOUT", SERVER_DEFAULTS["TOMCAT_CONNECTION_TIMEOUT"]))
        rows.append({"step": name, "users": model["requests"], "threads": model["threads"], "ceiling": model["ceiling"],
                     "keep-alive": f"{timeout // 1000} s" if model["keep_alive"] else "off",
                     "waves": model["waves"], "answered (model)": model["succeeded"], "failed (model)": model["failed"],
                     "cut by k6 (model)": model["interrupted"],
                     "last answer (model, s)": max((t for t, _ in model["completions"]), default=0) / 1000})
    return people_table(pd.DataFrame(rows))


def issued_table(data: ChapterData) -> Markdown:
    """Per step: requests asked and sent, and how long k6 took to send them all (its start-up spread)."""
    rows = []
    for name in step_order(data):
        meta, requests = data.steps[name], data.requests[data.requests["step"] == name]
        rows.append({"step": name, "executor": meta["config"]["load"]["executor"], "asked": meta["requests"]["asked"],
                     "issued": meta["requests"]["issued"],
                     "all sent within (s)": round((requests["start_ms"].max() - requests["start_ms"].min()) / 1000, 1)
                     if len(requests) else None})
    return people_table(pd.DataFrame(rows))


def plus_one_table(data: ChapterData) -> Markdown:
    """Whose is the +1? Per step of that role: the limits, and the peaks of Tomcat's count, the accept queue and ESTAB."""
    rows = []
    for name in (s for s in spec_steps(data.chapter, role=PLUS_ONE) if s in data.steps):
        server = data.steps[name]["config"]["server"]
        ss = data.ss[data.ss["step"] == name]
        tomcat = data.actuator[(data.actuator["step"] == name) & (data.actuator["metric"] == "tomcat.connections.current")]
        rows.append({"step": name, "max-connections": server["TOMCAT_MAX_CONNECTIONS"],
                     "accept-count": server["TOMCAT_ACCEPT_COUNT"],
                     "Tomcat's connections (peak)": int(tomcat["value"].max()) if len(tomcat) else None,
                     "accept queue, ss Recv-Q (peak)": int(ss["accept_queue"].max()) if len(ss) else None,
                     "established, ss (peak)": int(ss["estab"].max()) if len(ss) else None,
                     "ceiling (model)": data.steps[name]["model"]["ceiling"]})
    return people_table(pd.DataFrame(rows))


def failure_summary(data: ChapterData) -> Markdown:
    """Per step and kind of failure: how many, and when (seconds after the first request: first, median, last)."""
    rows = []
    for name in step_order(data):
        requests = data.requests[data.requests["step"] == name]
        failed = requests[~answered(requests)]
        if failed.empty:
            continue
        ends = (failed["end_ms"].fillna(failed["start_ms"]) - spike_start_ms(data)[name]) / 1000
        for kind, times in ends.groupby(failure_kinds(failed)):
            rows.append({"step": name, "failure": kind, "requests": len(times), "first (s)": round(times.min(), 1),
                         "median (s)": round(times.median(), 1), "last (s)": round(times.max(), 1)})
    if not rows:
        return Markdown("*No request failed in these steps.*")
    return people_table(pd.DataFrame(rows))
