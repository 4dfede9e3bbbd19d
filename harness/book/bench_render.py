"""How long `invoke render` takes, page by page: a benchmark, not a test (its numbers depend on the machine and its load).

    python -m harness.book.bench_render              # cold (no render cache), then warm (nothing changed)
    python -m harness.book.bench_render --runs 3     # each state three times, the median shown

It runs `quarto render` as `invoke render` does and times Quarto's own progress lines as they arrive: per page, the
kernel's start (from the page's line to "Executing"), its cells (to the last cell's "Done"; the slowest cell named),
and the rest (Markdown to HTML, to the next page). "Cold" first deletes the render cache (_freeze/ and
.cache/book-inputs/, see harness.book.render_cache; .cache/book-results/ too, harness.book.memo), so every page runs;
"warm" renders again with nothing changed. The machine's cores and load average are printed with the numbers.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import time
from dataclasses import dataclass, field

from harness import LabError
from harness.book.render_cache import FREEZER, MANIFESTS
from harness.book.memo import RESULTS
from harness.book.quarto import COLOUR, render

PAGE = re.compile(r"^\[\s*\d+/\d+\]\s+(\S+\.qmd)")
CELL = re.compile(r"^\s*Cell (\d+)/\d+: '([^']*)'")


@dataclass
class Page:
    name: str
    start: float
    executing: float | None = None
    cells: list[tuple[float, str]] = field(default_factory=list)  # (done at, label)
    end: float = 0.0

    @property
    def kernel_s(self) -> float:
        return self.executing - self.start if self.executing else 0.0

    @property
    def cells_s(self) -> float:
        return self.cells[-1][0] - self.executing if self.cells and self.executing else 0.0

    @property
    def total_s(self) -> float:
        return self.end - self.start

    def slowest(self) -> str:
        if not self.cells or not self.executing:
            return ""
        times = [(done - before, label or f"cell {i + 1}") for i, ((done, label), before)
                 in enumerate(zip(self.cells, [self.executing] + [t for t, _ in self.cells], strict=False))]
        seconds, label = max(times)
        return f"{label} {seconds:.1f} s"


@dataclass
class Render:
    seconds: float
    pages: list[Page]


def timed_render() -> Render:
    """`quarto render` from the project's root as `invoke render` runs it, its progress lines timed as they arrive."""
    start = time.monotonic()
    pages: list[Page] = []

    def timed(raw: str) -> None:
        now, line = time.monotonic() - start, COLOUR.sub("", raw)
        if match := PAGE.match(line):
            if pages:
                pages[-1].end = now
            pages.append(Page(match.group(1), now))
        elif pages and line.startswith("Executing "):
            pages[-1].executing = now
        elif pages and (match := CELL.match(line)):
            pages[-1].cells.append((now, match.group(2)))

    rendered = render(on_line=timed)
    if rendered.code:
        raise LabError(f"quarto render failed ({rendered.code}):\n" + "\n".join(rendered.tail[-40:]))
    seconds = time.monotonic() - start
    if pages:
        pages[-1].end = seconds
    return Render(seconds, pages)


def clear_cache() -> None:
    for folder in (FREEZER, MANIFESTS, RESULTS):
        shutil.rmtree(folder, ignore_errors=True)


def report(state: str, renders: list[Render]) -> str:
    """Per page the median over the runs: kernel start, cells (and the slowest), the rest, the page in all."""
    lines = [f"{state}: {statistics.median(r.seconds for r in renders):.1f} s in all "
             f"(runs: {', '.join(f'{r.seconds:.1f}' for r in renders)})",
             f"  {'page':<46} {'kernel':>7} {'cells':>7} {'rest':>7} {'page':>7}  slowest cell"]
    for i, page in enumerate(renders[0].pages):
        same = [r.pages[i] for r in renders if i < len(r.pages)]
        median = {key: statistics.median(getattr(p, key) for p in same) for key in ("kernel_s", "cells_s", "total_s")}
        rest = median["total_s"] - median["kernel_s"] - median["cells_s"]
        lines.append(f"  {page.name:<46} {median['kernel_s']:>7.1f} {median['cells_s']:>7.1f} {rest:>7.1f} "
                     f"{median['total_s']:>7.1f}  {page.slowest()}")
    after = statistics.median(r.seconds - sum(p.total_s for p in r.pages) for r in renders)
    lines.append(f"  {'(before the first page, after the last)':<46} {'':>7} {'':>7} {after:>7.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="renders per state (the median is shown)")
    parser.add_argument("--warm-only", action="store_true", help="keep the render cache: measure warm renders only")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} at the start")
    if not args.warm_only:
        cold = []
        for _ in range(args.runs):
            clear_cache()
            cold.append(timed_render())
        print(report("cold (every page runs)", cold))
    warm = [timed_render() for _ in range(args.runs)]
    print(report("warm (nothing changed)", warm))
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} at the end")


if __name__ == "__main__":
    main()
