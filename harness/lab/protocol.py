"""A chapter's protocol, declared before its data beside its claims (`[protocol]` in experiments/claims/chapterN.toml):
how many clean passes the book keeps, which code computes the claims' statistics (part of the rules), and the rule
that voids a run.

A run is void when other processes took more than `void_outside_cpu` of the machine's CPUs during its load
(step.json's `outside_cpu`, measured by the runner for every step). The runner then measures the step again in place,
at once, up to `reruns` times, and keeps every void attempt beside it (`<id>.void-<n>`, status "void"): the rule is
applied by code, to every step of every pass, never by hand after looking at outcomes. How many runs of each step a
pass makes is the spec's `runs = n` (experiments/chapterN.toml), which the rules' digest also covers.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache

from harness import EXPERIMENTS, ROOT, LabError

CLAIMS_DIR = EXPERIMENTS / "claims"
KEYS = {"passes", "void_outside_cpu", "reruns", "statistic", "changed"}
LEAST_PASSES = 3  # the book keeps at least three clean passes of every chapter that judges claims
# Code every chapter's verdicts run through: the judgement, the stray-failure allowance and the pooling of passes.
COMMON_STATISTIC = ("harness/book/claims.py", "harness/book/noise.py", "harness/book/passes.py")


@dataclass(frozen=True)
class Protocol:
    chapter: str
    passes: int = LEAST_PASSES  # clean passes the book keeps
    void_outside_cpu: float = 0.25  # a run is void above this share of the machine's CPUs used by other processes
    reruns: int = 2  # a void run is measured again at once up to this many times
    statistic: tuple[str, ...] = ()  # the chapter's files that compute its claims' statistics (repository paths)
    changed: str = ""  # when the protocol changed since first declared: why, and from which pass on it applies

    @property
    def code(self) -> tuple[str, ...]:
        """Every file whose bytes are part of the rules: the chapter's statistic and the common judgement."""
        return (*self.statistic, *COMMON_STATISTIC)

    def void(self, meta: dict) -> str:
        """Why a complete step's run is void under this protocol ("" when it stands)."""
        share = (meta.get("outside_cpu") or {}).get("share", 0.0)
        if share > self.void_outside_cpu:
            return (f"other processes used {share:.0%} of the machine's CPUs during the load, above the protocol's "
                    f"{self.void_outside_cpu:.0%}")
        return ""


@cache
def protocol(chapter: str) -> Protocol | None:
    """The chapter's declared protocol, or None when it judges no claims (no rules file)."""
    path = CLAIMS_DIR / f"{chapter}.toml"
    if not path.is_file():
        return None
    try:
        table = tomllib.loads(path.read_text()).get("protocol")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise LabError(f"{path} is not valid TOML: {err}") from None
    except RecursionError:
        raise LabError(f"{path}: its arrays or inline tables nest too deep to read") from None
    if table is None:
        raise LabError(f"{path} declares claims but no [protocol] (passes, void_outside_cpu, reruns, statistic)")
    return checked(chapter, table, str(path))


def checked(chapter: str, table: dict, where: str) -> Protocol:
    """A [protocol] table as a Protocol; every problem named at once."""
    problems = [f"unknown key {key!r} (known: {', '.join(sorted(KEYS))})" for key in sorted(set(table) - KEYS)]
    passes, share, reruns = table.get("passes", LEAST_PASSES), table.get("void_outside_cpu", 0.25), table.get("reruns", 2)
    if not _whole(passes) or passes < LEAST_PASSES:
        problems.append(f"passes must be a whole number of at least {LEAST_PASSES}, got {passes!r}")
    if not isinstance(share, int | float) or isinstance(share, bool) or not 0 < share < 1:
        problems.append(f"void_outside_cpu must be a share between 0 and 1, got {share!r}")
    if not _whole(reruns) or not 0 <= reruns <= 5:
        problems.append(f"reruns must be a whole number from 0 to 5, got {reruns!r}")
    statistic = table.get("statistic", [])
    if not isinstance(statistic, list) or not all(isinstance(p, str) for p in statistic):
        problems.append(f"statistic must be a list of file paths, got {statistic!r}")
        statistic = []
    problems += [f"statistic names {p!r}, which is not a file of the repository" for p in statistic
                 if not (ROOT / p).is_file()]
    if problems:
        raise LabError(f"{where} [protocol] has {len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems))
    return Protocol(chapter, passes, float(share), reruns, tuple(statistic), str(table.get("changed", "")))


def _whole(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)
