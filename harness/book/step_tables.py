"""Tables and sentences any spike chapter shows (chapter 3, the lab appendix): each step's setup, outcome and peaks
against the model.
"""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.analysis import spike_start_ms
from harness.book.charts import step_order
from harness.book.prose import count, in_book_style, words
from harness.book.steps import kinds_text, step_run, wave_counts
from harness.book.tables import people_table
from harness.lab.load.options import peak_vus
from harness.lab.spec import SYSTEM_DEFAULTS
from harness.lab.steps import server_knob
from harness.lab.store import ChapterData, answered


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


def load_words(load: dict) -> str:
    """A step's load in a few words, for any executor: "per-vu-iterations, 300 VUs × 1 iteration(s)"."""
    executor = load["executor"]
    if executor in ("constant-arrival-rate", "ramping-arrival-rate"):
        rate = f"{load['rate']}" if "rate" in load else " → ".join(str(s["target"]) for s in load["stages"])
        return f"{executor}, {rate} per {load.get('time_unit', '1s')}, up to {peak_vus(load)} VUs"
    if executor == "ramping-vus":
        return f"{executor}, {' → '.join(str(s['target']) for s in load['stages'])} VUs"
    amount = f"for {load['duration']}" if "duration" in load else f"× {load.get('iterations', 1)} iteration(s)"
    return f"{executor}, {load['vus']} VUs {amount}"


def steps_table(data: ChapterData) -> Markdown:
    """Per step, in run order: why it exists, the load, the server knobs it sets, and requests asked → answered."""
    rows = []
    for name in step_order(data):
        meta = data.steps[name]
        load, counts = meta["config"]["load"], meta["requests"]
        rows.append({
            "step": name, "why": meta.get("why", ""),
            "load": f"{load_words(load)}, keep-alive {'on' if load.get('connection_reuse') else 'off'}",
            "server": ", ".join(f"`{k}={v}`" for k, v in meta["config"]["server"].items()) or "Spring Boot defaults",
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
        meta = data.steps[name]
        model = meta["model"]
        if "ceiling" not in model:
            continue
        m = {key: count(value) if isinstance(value, int | float) else value for key, value in model.items()}
        knob = {name: in_book_style(str(server_knob(meta, name))) for name in ("TOMCAT_MAX_CONNECTIONS",
                                                                          "TOMCAT_ACCEPT_COUNT")}
        room = ("so the model holds every user from the start" if model["over_ceiling"] == 0 else
                f"so in the model {m['over_ceiling']} of the {m['requests']} users find no room at first")
        lines.append(
            f"- `{name}`: {m['threads']} threads at {m['service_ms']} ms per request, max-connections "
            f"{knob['TOMCAT_MAX_CONNECTIONS']}, accept-count {knob['TOMCAT_ACCEPT_COUNT']}: "
            f"a ceiling of **{m['ceiling']}** connections, {room}; the simulation predicts "
            f"{m['succeeded']} responses and {m['failed']} failures.")
    return "\n".join(lines)


def scale_sentence(data: ChapterData) -> str:
    """A chapter's scale in words, from its steps: "`smoke`: two worker threads and ten users."."""
    threads = sorted({m["model"]["threads"] for m in data.steps.values()})
    users = sorted({peak_vus(m["config"]["load"]) for m in data.steps.values()})
    if not threads:
        return f"`{data.chapter}`, not run yet."
    return (f"`{data.chapter}`: {' or '.join(words(t) for t in threads)} worker thread{'s' if threads[-1] > 1 else ''} "
            f"and {' or '.join(words(u) for u in users)} user{'s' if users[-1] > 1 else ''}.")


def sampling_sentence(data: ChapterData) -> str:
    """The samplers' interval: the lab's default, and what the chapter's steps ran with."""
    default = SYSTEM_DEFAULTS["sample_interval_ms"]
    used = sorted({m["config"]["system"].get("sample_interval_ms", default) for m in data.steps.values()})
    return (f"The samplers take a sample every {default:,} ms unless a step sets `system.sample_interval_ms`; the "
            f"{data.chapter} steps ran at {' and '.join(f'{ms:,} ms' for ms in used) or 'no interval yet'}.")


def outcome_sentences(data: ChapterData) -> str:
    """Per step, what happened in words: without keep-alive, the answers and their waves; with keep-alive, the users
    whose connections kept Tomcat's slots and how the others failed."""
    lines = []
    for name in step_order(data):
        run, meta = step_run(data, name), data.steps[name]
        if run is None or "service_ms" not in run.model:
            continue
        answered_ = (f"all {words(run.asked)} users are answered" if run.ok == run.asked else
                     f"{words(run.ok)} of the {words(run.asked)} users are answered")
        if not meta["config"]["load"].get("connection_reuse", True):
            sizes = list(wave_counts(run, run.model["service_ms"] / 1000).values())
            waves = (f"in {words(len(sizes))} waves of {words(sizes[0])}" if len(set(sizes)) == 1 else
                     f"in waves of {', '.join(words(n) for n in sizes)}") if sizes else "none at all"
            lines.append(f"- Without keep-alive (`{name}`), slots free after every response: {answered_}, {waves}.")
            continue
        slots = run.knob("TOMCAT_MAX_CONNECTIONS")
        held = f", and with them all {words(slots)} of Tomcat's slots," if run.ok >= slots else ","
        timeout = f"k6's {run.model['client_timeout_ms'] / 1000:g} s timeout"
        rest = ("no user is left waiting" if not run.failed else
                f"the other {words(run.failed)} wait in the accept queue and in SYN retries until {timeout} gives up on them "
                f"({kinds_text(run)})" if set(run.kinds()) == {"request timeout"} else
                f"the other {words(run.failed)} wait in the accept queue and in SYN retries and fail: {kinds_text(run)}")
        lines.append(f"- With keep-alive (`{name}`), the first {words(run.ok)} users keep their connections{held} after "
                     f"their responses; {rest}.")
    return "\n".join(lines)
