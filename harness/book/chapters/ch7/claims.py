"""Chapter 7's claims judged (experiments/claims/chapter7.toml): one small function per claim's statistic, computed
once per run of the steps it names, and `judge()`.

The steps are the rules' own, fixed before the data: the three server models at 10,000 and 15,000 users (3 runs
each, run k of every step in round k), the platform-thread steps above 20,000 users (one run each), and chapters 2,
3 and 4's steps through harness.book.chapters.ch7.elsewhere.

- L, the requests in service at once: Little's law on the service stage. Every answered request was in service for
  one wait S, so the answered × S spread over the span from the first service's start (first answer − S) to the last
  answer is the mean number in service: L = answered × S / (last − first + S). Read from the first to the last
  answered second, and nearby from the 1st to the 99th percentile of answer times (`in_service`).
- Unanswered beyond the stray failures: the users not answered less harness.book.noise.most_stray(N), the most
  failures of N requests the lab's own stray-failure rate explains.
"""
from __future__ import annotations

import functools
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from harness.book import claims
from harness.book.chapters.ch7 import elsewhere
from harness.book.chapters.ch7.runs import CHAPTER, LOOP, PLATFORM, VIRTUAL, peak_threads
from harness.book.noise import most_stray
from harness.book.prose import and_list
from harness.lab import store
from harness.lab.store import answered, run_of

JUDGED_USERS = (10_000, 15_000)  # the rules' user counts, below the open-files ceiling (harness.models.ceilings)
JUDGED = {PLATFORM: ("platform-10k", "platform-15k"), VIRTUAL: ("virtual-10k", "virtual-15k"),
          LOOP: ("loop-10k", "loop-15k")}  # the rules' steps at those user counts
FIFTEEN_K = "platform-15k"  # F000-k.1: the article's settings, nothing raised
ABOVE_20K = ("platform-30k", "platform-50k")  # F000-k.2: "over 20k"
NEARBY_SHARE = 0.01  # the nearby window: from the 1st to the 99th percentile of answer times


@dataclass(frozen=True)
class Run:
    """What one run of a step says for the claims: its users, answers per second, wait and the JVM's threads."""

    run_id: str
    asked: int
    succeeded: int
    sleep_s: float
    answers: tuple[tuple[int, int], ...]  # (second of the recording, answered in it)
    threads: float  # the most live threads of the serving JVM
    nofile: float = float("nan")  # the open-files limit of the machine it ran on (step.json's machine.nofile_limit)

    @property
    def unanswered(self) -> int:
        return self.asked - self.succeeded

    def in_service(self, share: float = 0.0) -> float:
        return in_service(self.answers, self.sleep_s, share)


def in_service(answers, sleep_s: float, share: float = 0.0) -> float:
    """L = answered × S / (last − first + S) over the seconds from where `share` of the answers had come to where
    1 − `share` had (share 0: the first and the last answered second)."""
    frame = pd.DataFrame(list(answers), columns=["second", "answered"]).groupby("second")["answered"].sum()
    frame = frame[frame > 0].sort_index()
    if frame.empty:
        return float("nan")
    done = frame.cumsum() / frame.sum()
    first = done.index[done >= share][0] if share else frame.index[0]
    last = done.index[done >= 1 - share][0] if share else frame.index[-1]
    return float(frame.loc[first:last].sum() * sleep_s / (last - first + sleep_s))


def beyond_stray(run: Run) -> int:
    """The users a run did not answer beyond the stray failures its size allows (≤ 0: all answered, as the lab goes)."""
    return run.unanswered - most_stray(run.asked)


@functools.cache
def _run(root: str, run_id: str, started_ms: int) -> Run:
    data = store.load_run(CHAPTER, run_id)
    meta = data.steps[run_id]
    outcomes = data.outcomes[answered(data.outcomes)]
    per_second = outcomes.groupby("second")["requests"].sum()
    return Run(run_id, meta["requests"]["asked"], meta["requests"]["succeeded"], meta["model"]["service_ms"] / 1000,
               tuple((int(s), int(n)) for s, n in per_second.items()), peak_threads(data, run_id),
               float(meta.get("machine", {}).get("nofile_limit", float("nan"))))


def runs(step: str) -> list[Run]:
    """Every run of a step in the chapter's data, run 1 first."""
    metas = store.complete_steps(CHAPTER) if (store.data_root() / CHAPTER).is_dir() else {}
    found = sorted((run_of(s)[1], s) for s in metas if run_of(s)[0] == step)
    return [_run(str(store.data_root()), s, metas[s]["started_ms"]) for _, s in found]


def rounds(steps: tuple[str, ...]) -> list[tuple[Run, ...]]:
    """Run k of every step together, for each k every step has."""
    return list(zip(*(runs(s) for s in steps), strict=False))


def per_round(steps: tuple[str, ...], stat: Callable[[Run], float], combine=max, note: str = "") -> claims.Measured:
    """One value per round: `combine` of `stat` over the steps' run k; the nearby window's mean when `stat` takes a
    share."""
    together = rounds(steps)
    values = tuple(float(combine(stat(r) for r in group)) for group in together)
    return claims.Measured(values, note=note or runs_note(steps, together))


def per_round_windows(steps: tuple[str, ...], stat: Callable[[Run, float], float], combine) -> claims.Measured:
    """Like `per_round` for a statistic read over the analysis window, and over the nearby one."""
    together = rounds(steps)
    values = tuple(float(combine(stat(r, 0.0) for r in group)) for group in together)
    nearby = tuple(float(combine(stat(r, NEARBY_SHARE) for r in group)) for group in together)
    return claims.Measured(values, nearby=(statistics.fmean(nearby),) if nearby else (),
                           note=runs_note(steps, together))


def runs_note(steps: tuple[str, ...], together: list[tuple[Run, ...]]) -> str:
    return f"{and_list(steps)}: {len(together)} round(s) of runs" if together else f"{and_list(steps)}: not measured"


# ---- F000-k: 15k users with the article's settings; errors above 20k --------------------------------------------

def fifteen_k() -> claims.Measured:
    """F000-k.1: unanswered beyond the stray failures on platform-15k (nothing raised), each run."""
    beside = elsewhere.article_15k()
    note = (f"Beside it, chapter 3's {elsewhere.ARTICLE_15K} (accept-count {beside['accept_count']:,} with somaxconn "
            f"raised to {beside['somaxconn']:,}): {beside['succeeded']:,} of {beside['asked']:,} answered"
            if beside else f"Chapter 3's {elsewhere.ARTICLE_15K} is not in the data")
    return per_round((FIFTEEN_K,), beyond_stray, note=f"{runs_note((FIFTEEN_K,), rounds((FIFTEEN_K,)))}. {note}")


DEFAULT_NOFILE = 1024  # the common default soft limit of open files (`ulimit -n`) of a stock Linux login


def open_files_limit() -> claims.Measured:
    """F000-k.0: the premise "without adjusting OS-level settings (such as ulimit)": the open-files limit of the
    machine platform-15k ran on (step.json's machine.nofile_limit), each run; exact, a setting."""
    together = rounds((FIFTEEN_K,))
    values = tuple(group[0].nofile for group in together)
    return claims.Measured(values, exact=True, sigma_source="a setting, read from each run's step.json",
                           note=f"{runs_note((FIFTEEN_K,), together)}; the common default is {DEFAULT_NOFILE:,}")


def above_twenty_k() -> claims.Measured:
    """F000-k.2: the fewer unanswered beyond the stray failures of platform-30k and platform-50k (one run each); σ
    borrowed from the spread of failures past a connection ceiling in chapter 2's noise runs."""
    found = rounds(ABOVE_20K)[:1]
    values = tuple(float(min(beyond_stray(r) for r in group)) for group in found)
    noise = elsewhere.noise_failures()
    source = (f"the spread of failed requests over chapter 2's {len(noise)} runs of chapter 3's 10,000 users past "
              "its connection ceiling (noise)" if len(noise) >= 2 else
              "nowhere: chapter 2's runs of chapter 3's 10,000 users (noise) are not in this data")
    return claims.Measured(values, borrowed_sigma=elsewhere.noise_sigma(), sigma_source=source,
                           note=runs_note(ABOVE_20K, found))


# ---- F002-d: a bigger pool ---------------------------------------------------------------------------------------

def pool_concurrency() -> claims.Measured:
    """F002-d.1a: L on platform threads, the larger of platform-10k and platform-15k, each round."""
    return per_round_windows(JUDGED[PLATFORM], Run.in_service, max)


def thread_memory() -> claims.Measured:
    """F002-d.1b: KiB per thread, chapter 2's hold-N slope less its queue-N slope; σ the slopes' standard errors."""
    memory = elsewhere.thread_memory()
    if memory is None:
        return claims.Measured((), note="chapter 2's hold-N and queue-N steps are not in the data")
    return claims.Measured((memory.kib,), borrowed_sigma=memory.stderr_kib,
                           sigma_source="the standard errors of the two least-squares slopes",
                           note=f"hold-N {memory.hold.slope / elsewhere.KIB:,.1f} KiB per user over "
                                f"{len(memory.hold.users)} sizes, queue-N {memory.queue.slope / elsewhere.KIB:,.1f} "
                                f"over {len(memory.queue.users)}")


def switch_ratio() -> claims.Measured:
    """F002-d.1c: context switches per answered request at threads.max 800 over 200 (chapter 4), run k beside run k."""
    pair = elsewhere.switches()
    if not pair.ratios:
        return claims.Measured((), note=f"chapter 4's {elsewhere.MORE_THREADS} and {elsewhere.FEWER_THREADS} have no "
                                        "context-switch counts (step.json's during_load) in this data")
    return claims.Measured(pair.ratios, note=f"{elsewhere.MORE_THREADS} over {elsewhere.FEWER_THREADS}, "
                                             f"{len(pair.ratios)} pairs of runs")


# ---- F002-d: an event loop and virtual threads --------------------------------------------------------------------

def answers_all(model: str) -> Callable[[], claims.Measured]:
    """F002-d.2a / .3a: the larger unanswered beyond the stray failures of the model's 10k and 15k steps."""
    return lambda: per_round(JUDGED[model], beyond_stray)


def concurrency(model: str) -> Callable[[], claims.Measured]:
    """F002-d.2b / .3b: L, the smaller of the model's 10k and 15k steps."""
    return lambda: per_round_windows(JUDGED[model], Run.in_service, min)


def per_thread(model: str) -> Callable[[], claims.Measured]:
    """F002-d.2c / .3c: L per live JVM thread (its peak), the smaller of the model's 10k and 15k steps."""
    return lambda: per_round_windows(JUDGED[model], lambda r, share: r.in_service(share) / r.threads, min)


STATISTICS: dict[str, Callable[[], claims.Measured]] = {
    "F000-k.0": open_files_limit, "F000-k.1": fifteen_k, "F000-k.2": above_twenty_k,
    "F002-d.1a": pool_concurrency, "F002-d.1b": thread_memory, "F002-d.1c": switch_ratio,
    "F002-d.2a": answers_all(LOOP), "F002-d.2b": concurrency(LOOP), "F002-d.2c": per_thread(LOOP),
    "F002-d.3a": answers_all(VIRTUAL), "F002-d.3b": concurrency(VIRTUAL), "F002-d.3c": per_thread(VIRTUAL),
}


def judge() -> list[claims.Judgement]:
    """Every claim of experiments/claims/chapter7.toml judged on the data being read, in the file's order."""
    return claims.judge_chapter(CHAPTER, {claim: lambda rule, f=f: f() for claim, f in STATISTICS.items()})
