"""Chapter 3's tables: the model's predictions and what k6 sent (before the results), then one table per result.
Numbers stay numbers (right-aligned, thousands separators: harness.book.tables); columns are named in words.
"""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch3 import runs as r
from harness.book.chapters.ch3.ceiling import fixes, isolating, one_connection, plus_one, syn_cookies
from harness.book.chapters.ch3.runs import DIAL_TIMEOUT, REQUEST_TIMEOUT
from harness.book.chapters.ch3.values import timeouts
from harness.book.prose import and_list, in_book_style
from harness.book.tables import markdown_table
from harness.lab.store import run_of

SECONDS = "{:.1f}"


def table(rows: list[dict], formats: dict | None = None) -> Markdown:
    return Markdown(markdown_table(pd.DataFrame(rows), formats))


def keep_alive_text(seconds: float | None) -> str:
    return "off (k6 closes)" if seconds is None else f"{seconds:g} s"


def first_runs() -> list[r.Run]:
    """The first run of every step, in the order the steps ran."""
    names = [n for n in r.names() if run_of(n)[1] == 1]
    return sorted(map(r.run, names), key=lambda x: x.meta.get("started_ms", 0))


def predictions_table() -> Markdown:
    """The model's prediction for every step, as step.json recorded it before the load ran."""
    rows = []
    for name, meta in sorted(r.names().items(), key=lambda item: item[1].get("started_ms", 0)):
        model = meta["model"]
        if run_of(name)[1] != 1 or "ceiling" not in model:
            continue
        reuse = meta["config"]["load"].get("connection_reuse", True)
        rows.append({"step": name, "users": model["requests"], "threads.max": model["threads"],
                     "connections held": model["ceiling"],
                     "keep-alive": keep_alive_text(r.run(name).keep_alive_s if reuse else None),
                     "waves": model["waves"], "answered": model["succeeded"], "failed": model["failed"],
                     "of them after k6 stops": model["interrupted"],
                     "last answer (s)": max((t for t, _ in model["completions"]), default=0) / 1000})
    return table(rows, {"last answer (s)": "{:.0f}"})


def issued_table() -> Markdown:
    """Per constant-vus step: users asked for, requests k6 sent, and how long it took to send them."""
    rows = [{"step": x.name, "users": x.users, "requests sent": x.issued, "all sent within (s)": x.start_spread_s}
            for x in first_runs() if x.executor == "constant-vus"]
    return table(rows, {"all sent within (s)": SECONDS})


def timeouts_table() -> Markdown:
    """F000-d and F000-e, every run: the waves the model needs against k6's timeout, and what each run answered."""
    rows = []
    for step in ("d-3000-t200-pv", "d-3000-t500-pv", "e-6000-t500-pv", "e-6000-t1000-pv"):
        t = timeouts(step)
        for k in range(t.runs):
            rows.append({"step": step if t.runs == 1 else f"{step}, run {k + 1}", "users": t.users,
                         "threads.max": t.threads, "waves": t.waves, "last wave due (s)": t.due_s,
                         "answered": t.answered[k], "request timeouts": t.timed_out[k],
                         "timed out after (s)": t.timeout_median_s[k], "last answer (s)": t.longest_s[k]})
    return table(rows, {"last wave due (s)": "{:.0f}", "timed out after (s)": SECONDS, "last answer (s)": SECONDS})


def headline_table() -> Markdown:
    """Every run of the headline step, this chapter's and chapter 2's."""
    rows = []
    for x in r.headline_runs():
        rows.append({"run": f"{x.name} ({x.chapter.replace('chapter', 'chapter ')})", "answered": x.ok,
                     "of those beyond the ceiling": x.ok - x.ceiling, "gave up connecting": x.count(DIAL_TIMEOUT),
                     "request timed out": x.count(REQUEST_TIMEOUT),
                     "other failures": x.failed - x.count(DIAL_TIMEOUT) - x.count(REQUEST_TIMEOUT),
                     "established at most": x.peak("estab") if x.sampled else None,
                     "SYN cookies sent": syn_cookies(x) if x.sampled else None})
    return table(rows, {"established at most": "{:,.0f}", "SYN cookies sent": "{:,.0f}"})


def isolating_table() -> Markdown:
    """The steps that isolate the ceiling's cause: what each changed of the headline step (read from both steps'
    settings), why, and what it answered against the model."""
    rows = [{"step": i.step, f"changed from {r.HEADLINE}": and_list(i.changes), "why": in_book_style(i.why),
             "threads.max": i.threads, "keep-alive": keep_alive_text(i.keep_alive_s),
             "answered": i.answered, "model": i.model,
             "failed": ", ".join(f"{n:,} {kind}" for kind, n in i.kinds.items()) or "none"} for i in isolating()]
    return table(rows)


def fixes_table() -> Markdown:
    """The article's three fixes at 10,000 users, beside the headline run."""
    base = r.first(r.HEADLINE)
    rows = [{"step": base.name, "setting": "the defaults (connection-timeout 20 s)", "runs": len(r.headline_runs()),
             "answered": base.ok, "established at most": base.peak("estab"),
             "accept queue at most": base.peak("accept_queue"), "gave up connecting": base.count(DIAL_TIMEOUT),
             "request timed out": base.count(REQUEST_TIMEOUT), "SYN cookies sent": syn_cookies(base)}]
    for f in fixes().values():
        rows.append({"step": f.step, "setting": f.setting, "runs": len(f.answered),
                     "answered": ", ".join(f"{a:,}" for a in f.answered), "established at most": f.peak,
                     "accept queue at most": f.queue_peak, "gave up connecting": f.dial_timeouts,
                     "request timed out": f.request_timeouts, "SYN cookies sent": f.syn_cookies})
    return table(rows, {"established at most": "{:,.0f}", "accept queue at most": "{:,.0f}"})


def plus_one_table() -> Markdown:
    rows = [{"step": p.step, "max-connections": p.max_connections, "accept-count": p.accept_count,
             "Tomcat's connections at most": p.tomcat_peak, "accept queue at most": p.queue_peak,
             "established at most": p.estab_peak, "max-connections + accept-count + 1": p.ceiling} for p in plus_one()]
    return table(rows)


def one_connection_table() -> Markdown:
    rows = [{"step": o.step, "accept-count": o.accept_count, "keep-alive": keep_alive_text(o.keep_alive_s),
             "users": o.users, "answered": o.answered, "model": o.model,
             "answered at (s)": ", ".join(f"{t:.0f}" for t in o.answer_times_s)} for o in one_connection().values()]
    return table(rows)
