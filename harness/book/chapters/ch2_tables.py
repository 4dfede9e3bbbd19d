"""Chapter 2's tables for people: the measurements of harness.book.chapters.ch2_lab with plain headers.
"""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch2_checks import Check, memory_bound_users
from harness.book.chapters.ch2_lab import (
    issued_runs,
    memory_table,
    noise_summary,
    noise_table,
    overflow_table,
    recorded_machine,
    redeploy_table,
    runs_table,
    sampler_cost_table,
    start_table,
)
from harness.book.prose import listed
from harness.book.steps import ANY_MACHINE
from harness.book.tables import people_table
from harness.lab.spec import FD_RESERVE, load_spec
from harness.lab.store import ChapterData


def check_table(checks: list[Check]) -> Markdown:
    """Chapter 2's closing table: what the book says of its lab, the numbers, and whether they bear it out."""
    return people_table(pd.DataFrame([{"The book says": c.claim, "We measured": c.measured, "Holds?": c.holds}
                                      for c in checks]))


def somaxconn_caps(chapter: str) -> str:
    """What net.core.somaxconn caps, and which of `chapter`'s steps raise it, for which accept-count (from its spec)."""
    raised: dict[int, list] = {}
    for step in load_spec(chapter, ANY_MACHINE).steps:
        if step.system["raise_somaxconn"]:
            raised.setdefault(step.knob("TOMCAT_ACCEPT_COUNT"), []).append(step)
    name = chapter.replace("chapter", "chapter ")
    if not raised:
        return f"silently caps Tomcat's accept-count; no step of {name} raises it"
    return f"silently caps Tomcat's accept-count; {name} raises it for " + "; ".join(
        f"its {listed({s.load['vus'] for s in steps})}-user steps' accept-count {count:,} "
        f"({', '.join(s.id for s in steps)})" for count, steps in sorted(raised.items()))


def nofile_caps(data: ChapterData, chapter: str) -> str:
    """How many users one k6 process can hold under the open-files limit, against `chapter`'s largest step."""
    most = max((s.load.get("vus", 0) for s in load_spec(chapter, ANY_MACHINE).steps), default=0)
    room = recorded_machine(data)["nofile_limit"] - FD_RESERVE
    name = chapter.replace("chapter", "chapter ")
    return (f"one socket per user: k6 and the server each need one per user held, so a step may ask for at most {room:,} "
            f"users here ({FD_RESERVE} files kept for each process's own); {name}'s largest step has {most:,}")


def ceilings(data: ChapterData, chapter: str) -> dict[str, tuple[str, str]]:
    """What each of the machine's ceilings caps in the book, worded from step.json and `chapter`'s spec (the book's
    largest experiment)."""
    low, high = (int(p) for p in recorded_machine(data).get("local_port_range", (0, -1)))
    return {
        "cores": ("CPU cores", "k6, the server and the samplers share them: k6's start-up speed and every timing depend on it"),
        "memory_bytes": ("memory", "k6's users and the server's threads and connections: at the cost measured above, "
                         f"about {memory_bound_users(data):,.0f} users"),
        "nofile_limit": ("open files per process (hard limit)", nofile_caps(data, chapter)),
        "somaxconn": ("net.core.somaxconn", somaxconn_caps(chapter)),
        "local_port_range": ("local port range", "client ports to one server address and port: at most "
                             f"{high - low + 1:,} connections at once"),
        "pid_max": ("kernel.pid_max", "every server thread takes a pid: N threads plus everything else must fit"),
        "threads_max": ("kernel.threads-max", "threads system-wide"),
    }


def ceilings_table(data: ChapterData, chapter: str) -> Markdown:
    """The machine's ceilings as recorded with the data, and what each caps in the chapters (`chapter`: the largest)."""
    machine = recorded_machine(data)
    rows = []
    for key, (name, caps) in ceilings(data, chapter).items():
        value = machine.get(key)
        if key == "memory_bytes" and value:
            value = f"{value / 2**30:.1f} GiB"
        elif key == "local_port_range" and value:
            value = f"{value[0]}–{value[1]} ({int(value[1]) - int(value[0]) + 1:,} ports)"
        elif isinstance(value, int):
            value = f"{value:,}"
        rows.append({"ceiling": name, "on this machine": value if value is not None else "not recorded", "what it caps": caps})
    return people_table(pd.DataFrame(rows))


def starts_summary(data: ChapterData) -> Markdown:
    table = start_table(data)
    return people_table(table.rename(columns={"users": "users asked", "issued": "requests issued", "started_1s": "started within 1 s",
                                              "p50_s": "half started (s)", "p95_s": "95 % started (s)",
                                              "spread_s": "all started (s)"}).round(2))


def memory_summary(data: ChapterData) -> Markdown:
    table = memory_table(data)
    return people_table(table.rename(columns={"k6_mib": "k6 peak (MiB)", "server_mib": "server peak (MiB)",
                                              "server_idle_mib": "server at start (MiB)", "connections": "connections (peak)",
                                              "threads": "threads (peak)"}).round(0))


def redeploy_summary(data: ChapterData) -> Markdown:
    return people_table(redeploy_table(data).rename(columns={
        "launch": "how the JVM started", "median_ms": "median (ms)", "min_ms": "fastest (ms)", "max_ms": "slowest (ms)",
        "rss_mib": "memory when healthy (MiB)"}).round(0))


def sampler_summary(data: ChapterData) -> Markdown:
    table = sampler_cost_table(data)
    return people_table(table.assign(core_share=(table["core_share"] * 100).round(1)).rename(
        columns={"connections": "connections (peak)", "core_share": "% of one core", "ss_cpu_s": "ss + nstat CPU (s)",
                 "actuator_cpu_s": "Actuator CPU (s)", "process_cpu_s": "/proc CPU (s)", "load_s": "load (s)"}).round(2))


def noise_runs(data: ChapterData) -> Markdown:
    return people_table(runs_table(noise_table(data)).rename(columns={
        "sampled": "samplers on", "ok": "answered", "model_failed": "failed (model)"}))


def noise_waves(data: ChapterData) -> Markdown:
    return people_table(noise_summary(noise_table(data)).rename(columns={
        "median_s": "median (s)", "min_s": "earliest (s)", "max_s": "latest (s)", "range_s": "range (s)",
        "unsampled_min_s": "samplers off: earliest (s)", "unsampled_max_s": "samplers off: latest (s)"}).round(2))


def overflow_summary(data: ChapterData) -> Markdown:
    return people_table(overflow_table(data).rename(columns={
        "users": "users", "listen_overflows": "accept-queue overflows", "syn_retransmits": "SYN retransmits",
        "accept_queue_peak": "accept queue (peak)", "interrupted": "cut off by k6"}))


def issued_repeats(data: ChapterData) -> Markdown:
    return people_table(issued_runs(data).rename(columns={
        "users": "users asked", "issued": "requests issued", "last_start_s": "last request started (s)"}).round(2))
