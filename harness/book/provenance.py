"""Where a chapter's data came from: the Reproduce box that opens each chapter and the preface's machines table.

The box is four lines a reader takes in at a glance (the command, the machine, the versions, the run), with the
per-step details folded below them; a partial re-run on another machine or commit shows as several values,
never as one that is true of only some steps.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime

import pandas as pd
from IPython.display import Markdown

from harness import ROOT
from harness.book.tables import folded, markdown_table
from harness.lab.store import complete_steps, data_root

# The versions a step records, in the order they are shown, with their names for people.
VERSION_NAMES = {"java": "Java", "spring_boot": "Spring Boot", "k6": "k6", "ab": "ab", "wrk": "wrk", "python": "Python"}
SERVICE_NAMES = {"postgres": "PostgreSQL", "nginx": "nginx", "netty": "RESTEasy (Netty)",
                 "webflux": "Spring Boot (WebFlux)"}  # a step's [services.*] by kind, with the version each reported


def reproduce_box(chapter: str) -> Markdown:
    """A callout: the command that re-runs the chapter, the machine and versions its data came from, how long it took."""
    steps = dict(sorted(complete_steps(chapter).items(), key=lambda item: item[1].get("started_ms", 0)))
    lines = [f"**Command:** `invoke run {chapter}`"]
    details = ""
    if steps:
        lines += [f"**Machine:** {machine_text(steps)}", f"**Versions:** {versions_text(steps)}", f"**Run:** {run_text(steps)}"]
        details = step_details(steps)
    else:
        lines.append(f"No complete steps in `data/{chapter}/` yet: the command above runs them.")
    # A backslash ends a line inside the paragraph: four short lines, one block.
    return Markdown("\n\n".join(['::: {.callout-note title="Reproduce this chapter"}', "\\\n".join(lines), details, ":::"]))


def run_text(steps: dict[str, dict]) -> str:
    first = min(m["started_ms"] for m in steps.values())
    total = sum(m.get("wall_s", 0) for m in steps.values())
    count = f"{len(steps)} step" + ("s" if len(steps) > 1 else "")
    commits = sorted({short_commit(m.get("git_commit", "unknown")) for m in steps.values()})
    commit_text = f"commit {commits[0]}" if len(commits) == 1 else f"{len(commits)} commits (below)"
    return f"{count} from {commit_text}, started {utc_text(first)}, {duration_text(total)} in all, start-up included"


def step_details(steps: dict[str, dict]) -> str:
    """Each step's start, duration, commit and (when they differ) machine, in a folded block."""
    rows = [{"step": name, "started": utc_text(m["started_ms"]), "duration": duration_text(m.get("wall_s", 0)),
             "commit": short_commit(m.get("git_commit", "unknown"))} for name, m in steps.items()]
    for key, describe in (("machine", machine_of), ("versions", versions_of)):
        if len({describe(m) for m in steps.values()}) > 1:
            for row, meta in zip(rows, steps.values(), strict=True):
                row[key] = describe(meta)
    return folded("Each step: when it ran, how long it took, from which commit", markdown_table(pd.DataFrame(rows)))


def utc_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def short_commit(commit: str) -> str:
    """c72e12708fca…+dirty → c72e127+dirty: short, but still saying the tree had uncommitted changes."""
    return re.sub(r"^([0-9a-f]{7})[0-9a-f]*", r"\1", commit)


def machine_of(meta: dict) -> str:
    machine = meta.get("machine", {})
    kernel = machine.get("kernel") or meta.get("versions", {}).get("kernel", "?")
    return (f"{machine.get('cores', '?')} cores ({machine.get('cpu_model', 'CPU unknown')}), "
            f"{machine.get('memory_bytes', 0) / 2**30:.1f} GiB memory, Linux {kernel}")


def versions_of(meta: dict) -> str:
    """The versions one step ran with: only the tools it used (an ab step has no k6)."""
    versions = meta.get("versions", {})
    tools = [f"{name} {versions[key]}" for key, name in VERSION_NAMES.items() if key in versions]
    services = [f"{SERVICE_NAMES.get(s['kind'], s['kind'])} {s['version']}" for s in meta.get("services", {}).values()
                if s.get("version")]
    return ", ".join(tools + sorted(set(services)))


def machine_text(steps: dict[str, dict]) -> str:
    machines = sorted({machine_of(m) for m in steps.values()})
    return machines[0] if len(machines) == 1 else f"{len(machines)} machines (each step's below)"


def versions_text(steps: dict[str, dict]) -> str:
    """Every tool's version over the steps; a tool measured at two versions shows both."""
    found: dict[str, list[str]] = {}
    for meta in steps.values():
        for key, value in meta.get("versions", {}).items():
            if key in VERSION_NAMES and value not in found.setdefault(key, []):
                found[key].append(value)
    return ", ".join(f"{VERSION_NAMES[key]} {' / '.join(found[key])}" for key in VERSION_NAMES if key in found)


def duration_text(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def machines_table() -> Markdown:
    """Every machine and set of versions behind the committed data, with the experiments measured on it."""
    groups: dict[tuple[str, str], dict[str, int]] = {}
    root = data_root()
    chapters = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.exists() else []
    for chapter in chapters:
        for meta in complete_steps(chapter).values():
            counts = groups.setdefault((machine_of(meta), versions_of(meta)), {})
            counts[chapter] = counts.get(chapter, 0) + 1
    if not groups:
        return Markdown("*No complete step in `data/` yet.*")
    rows = [{"Machine": machine, "Versions": versions,
             "Steps measured on it": ", ".join(f"{chapter} ({n} step{'s' if n > 1 else ''})" for chapter, n in counts.items())}
            for (machine, versions), counts in groups.items()]
    return Markdown(markdown_table(pd.DataFrame(rows)))


def readme_commands() -> Markdown:
    """README's set-up commands (its first bash block), quoted so the book cannot drift from the README."""
    block = re.search(r"```bash\n.*?```", (ROOT / "README.md").read_text(), re.S)
    return Markdown(block.group(0) if block else "*README.md has no bash block.*")


def run_length_text(chapter: str) -> str:
    """How long measuring a chapter took for the committed data, e.g. "31 min 7 s for its 39 steps, start-up included"."""
    steps = complete_steps(chapter)
    if not steps:
        return "not measured yet"
    return (f"{duration_text(sum(m.get('wall_s', 0) for m in steps.values()))} for its {len(steps)} step"
            f"{'s' if len(steps) > 1 else ''}, start-up included, on the reference machine below")


def first_run_sentence(chapter: str) -> Markdown:
    """The preface's account of README's commands, with how long `chapter` (the book's main experiment) took to measure."""
    return Markdown(
        "The first command installs the pinned Python packages, builds the pinned k6, the sample server and the chart "
        f"libraries, and measures the book's main experiment, {chapter.replace('chapter', 'chapter ')} "
        f"({run_length_text(chapter)}), on your machine; the second runs every test. Then `invoke run <chapter>` "
        "re-measures a chapter and `invoke render` rebuilds this book from your data.")
