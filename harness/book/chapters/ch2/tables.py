"""Chapter 2's tables for people: plain headers, the book's number formats (harness.book.tables), and the checks with
their rules and margins."""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch2.lab_checks import MINUS, RULES, SIGMA, Check
from harness.book.chapters.ch2.lab import (
    SERIES,
    issued_runs,
    memory_bound_users,
    memory_costs,
    memory_table,
    noise_table,
    overflow_table,
    recorded_machine,
    redeploy_table,
    runs_table,
    start_table,
)
from harness.book.chapters.ch2.values import spreads
from harness.book.chapters.ch2.words import outcome
from harness.book.claims import Rule, margin
from harness.book.tables import folded, markdown_table, people_table
from harness.book.verdict_tables import number
from harness.lab import store
from harness.lab.spec import FD_RESERVE
from harness.lab.store import ChapterData


def starts_table(data: ChapterData) -> Markdown:
    table = start_table(data)
    return people_table(table.drop(columns="step").rename(columns={
        "series": "sent", "users": "users asked", "issued": "requests issued", "started_1s": "started within 1 s",
        "p50_s": "half started (s)", "p95_s": "95% started (s)", "spread_s": "all started (s)"}))


def overflows_table(data: ChapterData) -> Markdown:
    """Accept-queue overflows per N (rows) and way of sending (columns): what the sentence beside it sums up."""
    table = overflow_table(data)
    pivot = table.pivot_table(index="users", columns="series", values="listen_overflows", aggfunc="sum")
    pivot = pivot[[s for s in SERIES.values() if s in pivot.columns]]
    pivot.index.name = "users"
    pivot.columns.name = None
    return people_table(pivot.astype("Int64"))


def issued_table(data: ChapterData) -> Markdown:
    return people_table(issued_runs(data).rename(columns={
        "run": "run", "users": "users asked", "issued": "requests issued", "last_start_s": "last request started (s)"}))


COSTS = {"k6_per_user": ("k6, per user (one VU per user)", "hold-N and queue-N"),
         "k6_per_batch_user": ("k6, per user (http.batch)", "batch-N"),
         "server_per_connection": ("the server, per held connection", "queue-N (200 threads)"),
         "server_per_connection_and_thread": ("the server, per connection with its own thread", "hold-N (N threads)"),
         "server_per_thread": ("the server, per thread", "the difference of the two")}


def memory_costs_table(data: ChapterData) -> Markdown:
    """Each cost (KiB) with its standard error and the steps its line runs through."""
    costs = memory_costs(memory_table(data))
    frame = pd.DataFrame([{"cost": name, "KiB": costs[key][0], "± (standard error)": costs[key][1], "line through": steps}
                          for key, (name, steps) in COSTS.items()])
    return people_table(frame, formats={"KiB": "{:,.0f}", "± (standard error)": "{:,.1f}"})


def memory_peaks_table(data: ChapterData) -> Markdown:
    return people_table(memory_table(data).rename(columns={
        "series": "sent", "k6_mib": "k6 peak (MiB)", "server_mib": "server peak (MiB)",
        "server_idle_mib": "server at start (MiB)", "connections": "connections (peak)", "threads": "threads (peak)"}
    ).round(0))


def redeploys_table(data: ChapterData) -> Markdown:
    return people_table(redeploy_table(data).drop(columns=["median_ms"]).rename(columns={
        "launch": "how the JVM started", "starts": "starts", "mean_ms": "mean (ms)", "sd_ms": "σ of one start (ms)",
        "min_ms": "fastest (ms)", "max_ms": "slowest (ms)", "rss_mib": "memory when healthy (MiB)"}).round(0))


def noise_runs_table(data: ChapterData) -> Markdown:
    return people_table(runs_table(noise_table(data)).rename(columns={
        "sampled": "samplers on", "ok": "answered", "failed": "failed", "model_failed": "failed (model)",
        "last_start_s": "last user started (s)", "lag_s": "waves' lag behind the model (s)"}),
        formats={"last user started (s)": "{:.2f}", "waves' lag behind the model (s)": "{:.2f}"})


def spreads_table(data: ChapterData) -> Markdown:
    """Counts as whole numbers, seconds with two decimals: one format per row, so the cells come as text."""
    table = spreads(data)
    cells = {column: [f"{v:,.{2 if '(s)' in m else 0}f}" for m, v in zip(table.measure, table[column], strict=True)]
             for column in ("mean", "sigma", "lowest", "highest")}
    return people_table(pd.DataFrame({"per run": table.measure, **cells}).rename(columns={"sigma": "σ of one run"}))


# ---- the machine's ceilings --------------------------------------------------------------------------------------

REFERENCES = {"chapter3": "@sec-from-300-to-15000"}  # the chapter with the book's largest spikes, as Quarto links it

def book_steps(chapter: str) -> dict[str, dict]:
    """Another chapter's steps as they ran (their step.json), read through the store; {} when it has no data."""
    return store.complete_steps(chapter) if (store.data_root() / chapter).is_dir() else {}


def somaxconn_caps(chapter: str) -> str:
    """What net.core.somaxconn caps, and which of `chapter`'s steps raised it, for which accept-count (as they ran)."""
    raised: dict[int, list[tuple[str, int]]] = {}
    for step, meta in book_steps(chapter).items():
        if meta["config"].get("system", {}).get("raise_somaxconn"):
            count = meta["config"]["server"].get("TOMCAT_ACCEPT_COUNT", 100)
            raised.setdefault(count, []).append((step, meta["config"]["load"].get("vus", 0)))
    name = REFERENCES.get(chapter, chapter)
    if not raised:
        return f"silently caps Tomcat's accept-count; no step of {name} raised it"
    return f"silently caps Tomcat's accept-count; {name} raised it for " + "; ".join(
        f"accept-count {count:,} ({', '.join(s for s, _ in sorted(steps))})" for count, steps in sorted(raised.items()))


def nofile_caps(data: ChapterData, chapter: str) -> str:
    """How many users one k6 process can hold under the open-files limit, against `chapter`'s largest step."""
    most = max((m["config"]["load"].get("vus", 0) for m in book_steps(chapter).values()), default=0)
    room = recorded_machine(data)["nofile_limit"] - FD_RESERVE
    name = REFERENCES.get(chapter, chapter)
    return (f"one socket per user: k6 and the server each need one per user held, so a step may ask for at most {room:,} "
            f"users here ({FD_RESERVE} files kept for each process's own); the largest step of {name} had {most:,}")


def ceilings(data: ChapterData, chapter: str) -> dict[str, tuple[str, str]]:
    """What each of the machine's ceilings caps in the book, from step.json (`chapter`: the book's largest spikes)."""
    low, high = (int(p) for p in recorded_machine(data).get("local_port_range", (0, -1)))
    return {
        "cores": ("CPU cores", "k6, the server and the samplers share them: k6's start-up speed and every timing depend on it"),
        "memory_bytes": ("memory", "k6's users and the server's threads and connections: at the cost measured above, "
                         f"about {memory_bound_users(data)[0]:,.0f} users"),
        "nofile_limit": ("open files per process (hard limit)", nofile_caps(data, chapter)),
        "somaxconn": ("net.core.somaxconn", somaxconn_caps(chapter)),
        "local_port_range": ("local port range", "client ports to one server address and port: at most "
                             f"{high - low + 1:,} connections at once"),
        "pid_max": ("kernel.pid_max", "every server thread takes a pid: N threads plus everything else must fit"),
        "threads_max": ("kernel.threads-max", "threads system-wide"),
    }


def ceilings_table(data: ChapterData, chapter: str = "chapter3") -> Markdown:
    machine = recorded_machine(data)
    rows = []
    for key, (name, caps) in ceilings(data, chapter).items():
        value = machine.get(key)
        if key == "memory_bytes" and value:
            value = f"{value / 2**30:.1f} GiB"
        elif key == "local_port_range" and value:
            value = f"{int(value[0]):,}–{int(value[1]):,}"
        elif isinstance(value, int):
            value = f"{value:,}"
        rows.append({"ceiling": name, "on this machine": value if value is not None else "not recorded", "what it caps": caps})
    return people_table(pd.DataFrame(rows))


# ---- the checks ---------------------------------------------------------------------------------------------------

def holds_when(rule: Rule) -> str:
    if rule.unit == SIGMA:
        return f"the difference within {rule.threshold:g}σ"
    if rule.claim == "files-first":
        return "more than the open-files limit"
    limit = number(rule.threshold, rule.unit)
    return {"below": f"< {limit}", "above": f"> {limit}"}.get(rule.shape, limit)


def rules_table() -> Markdown:
    """The checks as declared, before any data: what is measured, when it holds, and where the threshold comes from."""
    return Markdown(markdown_table(pd.DataFrame([
        {"Check": r.claim, "The book relies on": r.quote, "Measured": r.measure, "Holds when": holds_when(r),
         "Threshold from": r.source} for r in RULES])))


def measured_text(check: Check) -> str:
    measured, unit = check.judgement.measured, check.rule.unit
    if not measured.values:
        return "not measured"
    if check.identical:
        return "no difference: every run gave the same number"
    if unit == SIGMA:
        return f"{check.shown} ({abs(measured.value):.1f}σ)"
    sigma = measured.sigma
    return number(measured.value, unit) + (f" ± {number(sigma, unit)}" if sigma else " (exact)" if sigma == 0 else "")


def checks_table(checked: list[Check]) -> Markdown:
    """Each check with its measured value, rule, margin, runs and outcome; the evidence folded below."""
    frame = pd.DataFrame([{
        "Check": c.rule.claim, "The book relies on": c.rule.quote, "Measured": measured_text(c),
        "Holds when": holds_when(c.rule) if c.rule.claim != "files-first" else f"> {number(c.rule.threshold, 'users')}",
        "Margin": margin_text(c), "Runs": runs_text(c),
        "Outcome": f"**{outcome(c)}**" + (f": {c.judgement.why}" if c.judgement.why else "")} for c in checked])
    evidence = "\n\n".join(f"**{c.rule.claim}**: {c.rule.measure}; σ from {c.judgement.measured.sigma_source}"
                           + (f". {c.judgement.measured.note}" if c.judgement.measured.note else "")
                           + f". Threshold: {c.rule.source}." for c in checked)
    return Markdown(markdown_table(frame) + "\n\n" + folded("The evidence behind each check", evidence))


def margin_text(check: Check) -> str:
    """The distance to the rule's boundary: in σ where a spread is known, in the unit for an exact count; none where
    every run gave one number (no spread to measure a distance in)."""
    if check.identical:
        return "–"
    if check.margin_sigma is not None:
        return f"{check.margin_sigma:+.1f}σ".replace("-", MINUS)
    if check.judgement.measured.exact and check.judgement.measured.values:
        return number(margin(check.rule, check.judgement.measured.value), check.rule.unit).replace("-", MINUS) + " (exact)"
    return "–"


def runs_text(check: Check) -> str:
    """The runs behind a value: for a comparison of two settings, each side's ("4 and 1")."""
    measured = check.judgement.measured
    if check.rule.unit == SIGMA and measured.values:
        return measured.sigma_source.split(" runs")[0]
    return f"{measured.runs}"
