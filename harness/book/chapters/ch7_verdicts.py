"""Chapter 7, past thread-per-request: the verdicts F002-d (the ways out of a thread pool, measured) and F000-k
re-judged with its "errors above 20k", both from chapter 7's step table (harness.book.chapters.ch7_steps).

Every rule's threshold is a named constant below; every number in a verdict's text comes from the data.
"""
from __future__ import annotations

import pandas as pd

from harness.book.chapters.ch7_steps import OPEN_FILES, pick
from harness.book.prose import and_list
from harness.book.verdict import Verdict, verdict_of

# F002-d: a way out "holds every user with one wait" when it answers all of them and its last answer comes no later
# than one wait plus this slack after the last user started (k6 and the server share 2 cores while 15,000 start).
ONE_WAIT_SLACK_S = 5.0
# … and without a thread per user: its JVM runs fewer threads than this share of the users.
FEW_THREADS = 0.01
# F000-k: "15k users succeed" (the article's settings: 2000 threads, max-connections 50,000).
F000K_USERS = 15_000
# "errors above 20k": the steps with more users than this.
F000K_ABOVE = 20_000


def ch7_verdicts(table: pd.DataFrame) -> list[Verdict]:
    return [ways_out_verdict(table), twenty_k_verdict(table)]


def held_users(table: pd.DataFrame) -> int:
    """The most users of a step every model answered in full: where the open-files limit does not yet bind."""
    full = table.groupby("users").apply(lambda g: bool((g.succeeded == g.asked).all()), include_groups=False)
    return int(full[full].index.max()) if full.any() else int(table.users.min())


def one_wait(row: pd.Series) -> bool:
    return row.succeeded == row.asked and row.last_ok_s <= row.last_start_s + row.sleep_s + ONE_WAIT_SLACK_S


def ways_out_verdict(table: pd.DataFrame) -> Verdict:
    article = ("the ways out of a full pool are a bigger pool (memory, context switches), asynchronous processing "
               "(an event loop) or green threads (on the JVM: virtual threads)")
    users = held_users(table)
    pool, virtual, loop = (pick(table, m, users) for m in ("platform threads", "virtual threads", "event loop"))
    if pool is None or virtual is None or loop is None:
        return Verdict("F002-d", article, "not measured", verdict_of(False), "the steps are missing")
    def said(row):
        return (f"{row.model} answered {row.succeeded:,.0f} of {row.asked:,.0f}, the last at second {row.last_ok_s:.0f} "
                f"with {row.peak_threads:,.0f} JVM threads and {row.rss_peak / 2**20:,.0f} MiB resident")
    ways = [one_wait(r) and r.peak_threads < FEW_THREADS * r.users for r in (virtual, loop)]
    above = table[table.users > users]
    limits = sorted({r.limit for r in above.itertuples()})
    measured = (f"{users:,} users arriving at once (their first requests spread over {pool.start_spread_s:.0f} s): "
                + "; ".join(said(r) for r in (pool, virtual, loop)))
    if len(above):
        measured += (f". Above {users:,} users the limits the models reached: {and_list(limits)} "
                     f"(most open files: {above.peak_open_files.max():,.0f} of {above.nofile.iloc[0]:,.0f})")
    agrees = all(ways) and pool.succeeded == pool.asked
    return Verdict(
        "F002-d", article, measured, verdict_of(agrees),
        "a virtual thread or a timer waits without a pool thread, so all held users are answered after one wait, "
        "while the bigger pool answers them in waves of its size; none of the three moves the next limit, the "
        f"process's {OPEN_FILES}: one socket per connection" if agrees else
        "a way out did not answer every user after one wait with few threads; see the steps table")


def twenty_k_verdict(table: pd.DataFrame) -> Verdict:
    article = "15k users succeed with 2000 threads, max-connections 50000, accept-count 5000; errors above 20k"
    fifteen = pick(table, "platform threads", F000K_USERS)
    above = table[(table.model == "platform threads") & (table.users > F000K_ABOVE)]
    if fifteen is None or above.empty:
        return Verdict("F000-k", article, "not measured", verdict_of(False), "the steps are missing")
    failing = above[above.failed > 0]
    measured = (f"2000 platform threads, max-connections 50,000, accept-count 4,096 (the kernel's somaxconn): "
                f"{fifteen.succeeded:,.0f} of {fifteen.asked:,.0f} answered at {F000K_USERS:,} users; "
                + "; ".join(f"{r.users:,} users: {r.failed:,.0f} failed ({r.dial_timeouts:,.0f} could not connect, "
                            f"{r.request_timeouts:,.0f} timed out), the server at {r.peak_open_files:,.0f} open files"
                            for r in above.itertuples()))
    agrees = fifteen.succeeded == fifteen.asked and len(failing) == len(above)
    named = sorted({r.limit for r in above.itertuples()})
    return Verdict(
        "F000-k", article, measured, verdict_of(agrees, machine_bound=True),
        f"max-connections is not what stops it: the limit the data names is {and_list(named)} — one socket per "
        f"connection, {above.nofile.iloc[0]:,.0f} per process here — and users beyond it wait in the accept queue or "
        "in SYN retries until k6 gives up connecting after 30 s" if agrees else
        "the 15k step or the steps above 20k did not come out as the article says; see the steps table")
