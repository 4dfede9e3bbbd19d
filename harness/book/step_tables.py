"""Tables any spike chapter shows (chapter 3, the lab appendix): each step's setup, outcome and peaks against the model.
"""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown
from harness.book.analysis import spike_start_ms
from harness.lab.spec import SERVER_DEFAULTS
from harness.lab.store import ChapterData, answered
from harness.book.tables import people_table
from harness.book.charts import step_order


def completion_table(data: ChapterData) -> Markdown:
    """Per step: successes and failures predicted vs measured, and how far measured completion times lie from
    the predicted ones (the k-th earliest success against the model's k-th)."""
    rows = []
    for name in step_order(data):
        meta, requests = data.steps[name], data.requests[data.requests["step"] == name]
        ok = answered(requests)
        measured = sorted((requests.loc[ok, "end_ms"] - spike_start_ms(data)[name]) / 1000)
        predicted = [end / 1000 for end, count in meta["model"]["completions"] for _ in range(count)]
        gaps = [abs(m - p) for m, p in zip(measured, predicted, strict=False)]
        rows.append({
            "step": name,
            "answered (model)": meta["model"]["succeeded"], "answered (measured)": int(ok.sum()),
            "failed (model)": meta["model"]["failed"], "failed (measured)": int((~ok).sum()),
            "median gap (s)": round(pd.Series(gaps).median(), 2) if gaps else None,
            "largest gap (s)": round(max(gaps), 2) if gaps else None,
        })
    return people_table(pd.DataFrame(rows))


def steps_table(data: ChapterData) -> Markdown:
    """Per step, in run order: why it exists, the load, the server knobs it sets, and requests asked → answered."""
    rows = []
    for name in step_order(data):
        meta = data.steps[name]
        load, counts = meta["config"]["load"], meta["requests"]
        amount = f"for {load['duration']}" if "duration" in load else f"× {load.get('iterations', 1)} iteration(s)"
        rows.append({
            "step": name, "why": meta.get("why", ""),
            "load": f"{load['executor']}, {load['vus']} VUs {amount}, keep-alive {'on' if load.get('connection_reuse') else 'off'}",
            "server": ", ".join(f"{k}={v}" for k, v in meta["config"]["server"].items()) or "Spring Boot defaults",
            "asked": counts["asked"], "issued": counts["issued"], "answered": counts.get("succeeded"), "failed": counts.get("failed"),
        })
    return people_table(pd.DataFrame(rows))


def peaks_table(data: ChapterData) -> Markdown:
    """Per step: the highest values the samplers saw against the model's limits."""
    rows = []
    for name in step_order(data):
        model = data.steps[name]["model"]
        ss = data.ss[data.ss["step"] == name]
        busy = data.actuator[(data.actuator["step"] == name) & (data.actuator["metric"] == "tomcat.threads.busy")]
        rows.append({
            "step": name,
            "established (peak)": _peak(ss["estab"]), "ceiling (model)": model["ceiling"],
            "accept queue (peak)": _peak(ss["accept_queue"]),
            "busy threads (peak)": _peak(busy["value"]), "threads (model)": model["threads"],
            "listen overflows": int(ss["listen_overflows"].sum()),
        })
    return people_table(pd.DataFrame(rows))


def _peak(values: pd.Series) -> int | None:
    """The highest sample; None when the sampler got none (shown as an empty cell, not a crash)."""
    return None if values.dropna().empty else int(values.max())


def ceiling_sentences(data: ChapterData) -> str:
    """Per spike step, in words: its connection ceiling, who finds no room, and the waves if all are held."""
    lines = []
    for name in step_order(data):
        model, server = data.steps[name]["model"], data.steps[name]["config"]["server"]
        if "ceiling" not in model:
            continue
        room = ("so every user is held from the start" if model["over_ceiling"] == 0 else
                f"so {model['over_ceiling']} of the {model['requests']} users find no room at first")
        lines.append(
            f"- `{name}`: {model['threads']} threads at {model['service_ms']} ms per request, max-connections "
            f"{server.get('TOMCAT_MAX_CONNECTIONS', SERVER_DEFAULTS['TOMCAT_MAX_CONNECTIONS'])}, accept-count "
            f"{server.get('TOMCAT_ACCEPT_COUNT', SERVER_DEFAULTS['TOMCAT_ACCEPT_COUNT'])}: "
            f"a ceiling of **{model['ceiling']}** connections, {room}; the simulation predicts "
            f"{model['succeeded']} responses and {model['failed']} failures.")
    return "\n".join(lines)
