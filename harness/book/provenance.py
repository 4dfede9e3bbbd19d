"""Where a chapter's data came from: the Reproduce box that opens each chapter and the preface's machines table.

The box is five short lines a reader takes in at a glance (the command, the machine, the software, the run, where
the data is), with the per-step details folded below them; a partial re-run on another machine or commit shows as
several values, never as one that is true of only some steps.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime

import pandas as pd
from IPython.display import Markdown

from harness import ROOT
from harness.book.downloads import folder_link
from harness.book.prose import NBSP, and_list
from harness.book.prose import duration as duration_text
from harness.book.tables import captioned, folded, markdown_table
from harness.book.verdict_tables import protocol_note
from harness.lab.profile import PROFILE_FILE
from harness.lab.store import complete_steps, data_root

# The versions a step records, in the order they are shown, with their names for people.
VERSION_NAMES = {"java": "Java", "spring_boot": "Spring Boot", "k6": "k6", "ab": "ab", "wrk": "wrk", "python": "Python"}
SERVICE_NAMES = {"postgres": "PostgreSQL", "nginx": "nginx", "netty": "RESTEasy (Netty)",
                 "webflux": "Spring Boot (WebFlux)"}  # a step's [services.*] by kind, with the version each reported


def reproduce_box(chapter: str) -> Markdown:
    """A callout: the command that re-runs the chapter, the machine and software its data came from, when and how long
    the run took, and where the data is; then, for a chapter that judges claims, its protocol and where its passes
    stand (verdict_tables.protocol_note)."""
    steps = dict(sorted(complete_steps(chapter).items(), key=lambda item: item[1].get("started_ms", 0)))
    lines = [f"**Re-run it:** `invoke run {chapter}`"]
    details = ""
    if steps:
        lines += [f"**Measured on:** {machine_text(steps)}", f"**Software:** {versions_text(steps)}",
                  f"**This edition's run:** {run_text(steps)}", f"**Data:** {folder_link(chapter)}"]
        details = step_details(steps)
    else:
        lines.append(f"No complete steps in `data/{chapter}/` yet: the command above runs them.")
    # A backslash ends a line inside the paragraph: short lines, one block.
    box = "\n\n".join(['::: {.callout-note title="Reproduce this chapter"}', "\\\n".join(lines), details, ":::"])
    return Markdown("\n\n".join(filter(None, [box, protocol_note(chapter).data])))


def run_text(steps: dict[str, dict]) -> str:
    """"39 steps on 24 Nov 2026, 29 min 43 s in all with start-ups, from commit `c6cc607` (with uncommitted changes)"."""
    total = sum(m.get("wall_s", 0) for m in steps.values())
    commits = sorted({commit_text(m.get("git_commit", "unknown")) for m in steps.values()})
    source = f"from commit {commits[0]}" if len(commits) == 1 else f"from {len(commits)} commits (each step's below)"
    return f"{plural(len(steps), 'step')} on {days_text(steps)}, {duration_text(total)} in all with start-ups, {source}"


def plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def days_text(steps: dict[str, dict]) -> str:
    """The day the steps ran, or the first and last: "24 Nov 2026", "23–24 Nov 2026", "30 Nov 2026 to 2 Dec 2026"."""
    days = sorted({m["started_ms"] // 86_400_000 for m in steps.values()})
    first, last = (datetime.fromtimestamp(day * 86_400, UTC) for day in (days[0], days[-1]))
    if first == last:
        return first.strftime("%-d %b %Y")
    if (first.year, first.month) == (last.year, last.month):
        return f"{first.day}–{last.strftime('%-d %b %Y')}"
    return f"{first.strftime('%-d %b %Y')} to {last.strftime('%-d %b %Y')}"


def step_details(steps: dict[str, dict]) -> str:
    """Each step's start, duration, commit and (when they differ) machine and software, in a folded block."""
    rows = [{"step": name, "started (UTC)": utc_text(m["started_ms"]), "took": duration_text(m.get("wall_s", 0)),
             "commit": commit_text(m.get("git_commit", "unknown"))} for name, m in steps.items()]
    for key, describe in (("machine", machine_of), ("software", versions_of)):
        if len({describe(m) for m in steps.values()}) > 1:
            for row, meta in zip(rows, steps.values(), strict=True):
                row[key] = describe(meta)
    return folded("Each step: when it ran, how long it took, from which commit", markdown_table(pd.DataFrame(rows)))


def utc_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")


def short_commit(commit: str) -> str:
    """c72e12708fca…+dirty → c72e127+dirty: short, but still saying the tree had uncommitted changes."""
    return re.sub(r"^([0-9a-f]{7})[0-9a-f]*", r"\1", commit)


def commit_text(commit: str) -> str:
    """The short commit as code, in words: "`c72e127` (with uncommitted changes)". Code, not prose: a short hash of
    digits only (544600b) is an identifier, not a number to write with separators."""
    short = short_commit(commit)
    return f"`{short.removesuffix('+dirty')}`" + (" (with uncommitted changes)" if short.endswith("+dirty") else "")


def hardware_of(meta: dict) -> str:
    return f"{cpus_of(meta)}, {meta.get('machine', {}).get('memory_bytes', 0) / 2**30:.1f}{NBSP}GiB of memory"


def kernel_of(meta: dict) -> str:
    return meta.get("machine", {}).get("kernel") or meta.get("versions", {}).get("kernel", "?")


def machine_of(meta: dict) -> str:
    return f"{hardware_of(meta)}, Linux {kernel_of(meta)}"


def versions_of(meta: dict) -> str:
    """The versions one step ran with: only the tools it used (an ab step has no k6)."""
    return ", ".join(f"{name} {version}" for name, version in _named_versions(meta))


def _named_versions(meta: dict) -> list[tuple[str, str]]:
    """(name, version) of the tools a step recorded, in VERSION_NAMES' order, then its services' in name order."""
    versions = meta.get("versions", {})
    tools = [(name, versions[key]) for key, name in VERSION_NAMES.items() if key in versions]
    services = {(SERVICE_NAMES.get(s["kind"], s["kind"]), s["version"]) for s in meta.get("services", {}).values()
                if s.get("version")}
    return tools + sorted(services)


def machine_text(steps: dict[str, dict]) -> str:
    machines = sorted({machine_of(m) for m in steps.values()})
    return machines[0] if len(machines) == 1 else f"{len(machines)} machines (each step's below)"


def cpus_of(meta: dict) -> str:
    """A step's CPUs: "2 cores (AMD EPYC)"."""
    machine = meta.get("machine", {})
    return f"{machine.get('cores', '?')} cores ({machine.get('cpu_model', 'CPU unknown')})"


def machines_compared(ours: dict[str, dict], theirs: dict[str, dict], our_name: str, their_name: str) -> str:
    """Whether the steps a chapter borrows (theirs) ran on CPUs like the steps it weighs them against (ours): "on the
    same CPUs, 2 cores (AMD EPYC)", or "on other CPUs: chapter 2's on 2 cores (AMD EPYC), chapter 3's on …"."""
    mine, other = sorted({cpus_of(m) for m in ours.values()}), sorted({cpus_of(m) for m in theirs.values()})
    if not (mine and other):
        return f"on CPUs this book cannot compare: {our_name if not mine else their_name} has no runs of it here"
    if mine == other:
        return f"on the same CPUs, {and_list(mine)}"
    return f"on other CPUs: {their_name}'s on {and_list(other)}, {our_name}'s on {and_list(mine)}"


def versions_text(steps: dict[str, dict]) -> str:
    """Every tool's and service's version over the steps; one measured at two versions shows both."""
    found: dict[str, list[str]] = {}
    for meta in steps.values():
        for name, version in _named_versions(meta):
            if version not in found.setdefault(name, []):
                found[name].append(version)
    order = [*VERSION_NAMES.values(), *sorted(set(found) - set(VERSION_NAMES.values()))]
    return ", ".join(f"{name} {' / '.join(found[name])}" for name in order if name in found)


def machines_table() -> Markdown:
    """The preface's account of the reference data: the machine(s) in a sentence, then a numbered table with, per data
    folder, its chapter, how many steps, when, how long and with which software."""
    root = data_root()
    folders = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.exists() else []
    measured = {folder: steps for folder in folders if (steps := complete_steps(folder))}
    if not measured:
        return Markdown("*No complete step in `data/` yet.*")
    pages = chapter_pages()
    rows = [{"Chapter": pages.get(folder, "–"), "Data": folder_link(folder, "`data/{chapter}/`"), "Steps": len(steps),
             "Measured": days_text(steps), "Took": duration_text(sum(m.get("wall_s", 0) for m in steps.values())),
             "Software": versions_text(steps)} for folder, steps in measured.items()]
    metas = [meta for steps in measured.values() for meta in steps.values()]
    machines, kernels = sorted({hardware_of(m) for m in metas}), sorted({kernel_of(m) for m in metas})
    where = f"one machine, {machines[0]}" if len(machines) == 1 else f"{len(machines)} machines: {'; '.join(machines)}"
    sentence = (f"All of it was measured on {where}, running Linux {and_list(kernels)}. Each chapter's Reproduce box "
                "names its own, and its steps' details.")
    table = captioned(markdown_table(pd.DataFrame(rows)), "Where the reference data comes from: per data folder, its "
                      "chapter, its steps, when they ran, how long they took (start-ups included) and the software.")
    return Markdown(f"{sentence}\n\n{table.data}")


def chapter_pages() -> dict[str, str]:
    """Each data folder → a cross-reference to the chapter whose Reproduce box names it ("@sec-from-300-to-15000"),
    and each capacity profile's folder (one with a profile.json) → the page that reads profiles (it calls
    `your_server.profiles()`), read from the chapters' sources."""
    pages = {}
    profiles = [p.parent.name for p in data_root().glob(f"*/{PROFILE_FILE}")] if data_root().exists() else []
    for source in sorted((ROOT / "chapters").glob("*.qmd")):
        text = source.read_text()
        heading = re.search(r"^# .*\{[^}]*#(sec-[\w-]+)[^}]*\}", text, re.M)
        page = f"@{heading.group(1)}" if heading else "–"
        for folder in re.findall(r'reproduce_box\("([^"]+)"\)', text):
            pages[folder] = page
        if "your_server.profiles()" in text:
            pages.update(dict.fromkeys(profiles, page))
    return pages


COMMAND_WIDTH = 40  # characters: a line of code that fits a phone's column (390 px) without scrolling


def readme_commands() -> Markdown:
    """README's set-up commands (its first bash block), quoted so the book cannot drift from the README; a long line
    is broken before its `&&`s (the shell reads it the same), so a phone shows it without scrolling sideways."""
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    if not block:
        return Markdown("*README.md has no bash block.*")
    lines = [folded_line for line in block.group(1).splitlines() for folded_line in command_lines(line)]
    return Markdown("::: {.lab-command}\n```bash\n" + "\n".join(lines) + "\n```\n:::")


def command_lines(line: str, width: int = COMMAND_WIDTH) -> list[str]:
    """One shell line as lines of at most `width` characters where it can: broken before `&&`, continued with `\\`."""
    parts = line.split(" && ")
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + len(part) + 4 <= width:
            lines[-1] += " && " + part
        else:
            lines.append("  && " + part)
    return [text + " \\" for text in lines[:-1]] + lines[-1:]


def run_length_text(chapter: str) -> str:
    """How long measuring a chapter took for the committed data, e.g. "31 min 7 s for its 39 steps, start-up included"."""
    steps = complete_steps(chapter)
    if not steps:
        return "not measured yet"
    machines = and_list(sorted({cpus_of(m) for m in steps.values()}))
    return (f"{duration_text(sum(m.get('wall_s', 0) for m in steps.values()))} for its {len(steps)} step"
            f"{'s' if len(steps) > 1 else ''}, start-up included, on {machines}")


def first_run_sentence(chapter: str) -> Markdown:
    """The preface's account of README's commands, with how long `chapter` (the book's main experiment) took to measure."""
    return Markdown(
        "The first command installs the pinned Python packages, builds the pinned k6, the sample server and the chart "
        f"libraries, and measures the book's main experiment, {chapter.replace('chapter', 'chapter ')} "
        f"({run_length_text(chapter)}), on your machine; the second runs every test. Then `invoke run <chapter>` "
        "re-measures a chapter and `invoke render` rebuilds this book from your data.")
