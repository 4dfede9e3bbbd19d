"""The few chapter 7 sentences whose wording, not just their numbers, depends on the data (the rest of the prose is
in chapters/07-past-thread-per-request.qmd, with inline values)."""
from __future__ import annotations

import math

from harness.book.chapters.ch7.values import FifteenK, OneWait, PastLimit, ThreadCost
from harness.book.prose import and_list, times, words


def switches_sentence(cost: ThreadCost | None) -> str:
    """Chapter 4's context switches per answered request at 800 and 200 threads, or why there are none."""
    if cost is None or math.isnan(cost.switch_ratio):
        return ("Chapter 4's data has no count of the server's context switches yet (step.json's `during_load`): "
                "the claim stays open until a run of chapter 4 records them.")
    if round(cost.switch_ratio, 1) == 1:  # "1.0 times as many, more" would say a difference the numbers do not show
        compared = "about as many with either pool"
    else:
        more = "more" if cost.switch_ratio > 1 else "fewer"
        compared = f"{times(cost.switch_ratio)} as many, {more} with the bigger pool"
    return (f"With {cost.more_threads:,} threads the server switched {cost.switches_more:,.1f} times per answered "
            f"request, with {cost.fewer_threads:,} {cost.switches_fewer:,.1f}: {compared} (the mean of "
            f"{cost.switch_pairs} pairs of runs).")


def one_wait_sentence(w: OneWait) -> str:
    """Whether every model answered every user at this count, and when each answered its last."""
    said = and_list([f"the pool by second {w.pool_last_s:.0f}", f"virtual threads by second {w.virtual_last_s:.0f}",
                     f"the event loop by second {w.loop_last_s:.0f}"])
    every = "every server answered every user" if w.everyone else "not every server answered every user"
    return f"At {w.users:,} users {every}: {said}."


def fifteen_k_sentence(f: FifteenK) -> str:
    """platform-15k's runs, and chapter 3's k-15k-pv beside them."""
    if not f.answered:
        return "The 15,000-user step on platform threads has not been measured yet."
    runs = and_list(f"{n:,}" for n in f.answered)
    counted = f"the {words(len(f.answered))} run{'s' if len(f.answered) > 1 else ''}"
    beside = (f" Chapter 3 ran the same users with the article's accept-count of 5,000, which needed `somaxconn` "
              f"raised to {f.chapter3_somaxconn:,} (an OS setting the article did not touch): "
              f"{f.chapter3_answered:,} answered." if f.chapter3_answered is not None else "")
    return (f"On platform threads with the article's settings and no setting raised beyond the lab's open-files limit "
            f"(itself a raised setting: F000-k.0 judges that premise), {counted} of "
            f"{f.users:,} users answered {runs}; the lab's stray failures would explain up to {f.stray:,} lost."
            + beside)


def failed_above_sentence(p: PastLimit) -> str:
    """F000-k.2's steps: how many users failed on platform threads at each count above the limit."""
    if not p.platform_failed:
        return "The platform-thread steps above 20,000 users have not been measured yet."
    said = and_list(f"{failed:,} of {users:,}" for users, failed in p.platform_failed)
    return f"On platform threads, with the article's settings, {said} users failed."
