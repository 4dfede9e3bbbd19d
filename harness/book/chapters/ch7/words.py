"""The few chapter 7 sentences whose wording, not just their numbers, depends on the data (the rest of the prose is
in chapters/07-past-thread-per-request.qmd, with inline values)."""
from __future__ import annotations

import math

from harness.book.chapters.ch7.values import (Concurrency, FifteenK, HeldCount, LostUnnamed, OneWait, PastLimit, Pooled,
                                             ThreadCost)
from harness.book.claims import Judgement
from harness.book.prose import and_list, count, number, plural, printed_alike, significant, times, words


def _same(a: float, b: float) -> bool:
    """The same value (both not measured counts as the same)."""
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9)


def pooled_sentence(c: Concurrency, p: Pooled) -> str:
    """What the verdict table states of the concurrency claims the sentences before quote from one pass's runs: the
    same numbers, or the kept passes pooled."""
    own = (c.pool, c.virtual, c.loop, c.virtual_per_thread, c.loop_per_thread)
    book = (p.pool, p.virtual, p.loop, p.virtual_per_thread, p.loop_per_thread)
    if printed_alike(own, book):
        return "The verdicts below read the same numbers."
    pooling = (f"pool the chapter's {p.passes} kept passes" if p.passes > 1 else "judge the chapter's kept pass")
    return (f"Those are one pass's runs. The verdicts below {pooling} ({plural(p.rounds, 'round')}): there platform "
            f"threads' L was {count(p.pool)}, virtual threads' {count(p.virtual)} and the event loop's "
            f"{count(p.loop)}, about {count(p.virtual_per_thread)} and {count(p.loop_per_thread)} requests per thread.")


def memory_sigma_sentence(cost: ThreadCost | None, verdict: Judgement | None) -> str:
    """What the ± of a thread's memory is, and how the verdict below states the same claim (F002-d.1b)."""
    said = "The ± is the two least-squares slopes' standard errors"
    m = verdict.measured if verdict is not None else None
    if cost is None or m is None or not m.values or m.sigma is None:
        return said + "."
    if _same(m.value, cost.kib) and _same(m.sigma, cost.stderr_kib):
        return said + ", as in the verdict below."
    if m.passes > 1 and all(_same(v, cost.kib) for v in m.values):
        return (f"{said}. The verdict below says ± {significant(m.sigma)}: it pools the chapter's {m.passes} kept "
                "passes, each of which read these same runs of chapter 2, as if they were independent.")
    distinct = len(set(m.values))
    repeated = (f", from {plural(distinct, 'distinct value', 'distinct values')}: passes that found the same runs of "
                "chapter 2 recorded them again, and the ± pools them as if they were independent"
                if distinct < len(m.values) else "")
    return (f"{said}. The verdict below states what the chapter's {plural(m.passes, 'kept pass', 'kept passes')} "
            f"recorded: {significant(m.value)} ± {significant(m.sigma)} KiB{repeated}.")


def switches_sentence(cost: ThreadCost | None, verdict: Judgement | None = None) -> str:
    """Chapter 4's context switches per answered request at 800 and 200 threads, or why there are none; and how the
    verdict below (`verdict`, F002-d.1c) states the same ratio."""
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
            f"{cost.switch_pairs} pairs of runs; the rule's statistic, the mean of the pairs' ratios, is "
            f"{number(cost.switch_ratio, 2)}).{switches_verdict(cost, verdict)}")


def switches_verdict(cost: ThreadCost, verdict: Judgement | None) -> str:
    """How the verdict below states F002-d.1c beside the ratio the sentence quotes ("" without a verdict)."""
    m = verdict.measured if verdict is not None else None
    if m is None or not m.values:
        return ""
    if _same(m.value, cost.switch_ratio):
        return " The verdict below reads the same."
    distinct = len(set(m.values))
    repeated = (f", {count(distinct)} of them distinct: a pass records chapter 4's runs as it finds them, and the "
                "pooled spread counts a run that several passes found as several" if distinct < m.runs else "")
    return (f" The verdict below reads {number(m.value, 2)}: the same statistic over the {count(m.runs)} ratios the "
            f"chapter's {plural(m.passes, 'kept pass', 'kept passes')} recorded{repeated}.")


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


def held_count_sentence(h: HeldCount) -> str:
    """Whether the kernel's count of held connections (established less queued) ever passed the open-files limit,
    which the process itself cannot."""
    if not h.steps:
        return f"It stayed within the open-files limit in every step: at most {h.held:,}."
    return (f"It passed the open-files limit, which the process cannot, in {plural(h.steps, 'step')}, by up to "
            f"{h.most_over:,} ({h.step}: {h.held:,}): those counts include connections established on the port that "
            "the process had not yet accepted: ss reads the port's sockets one after another, not all at one instant.")


def lost_unnamed_sentence(lost: tuple[LostUnnamed, ...]) -> str:
    """The steps that lost users where the data names no limit, and what k6's summary shows beside Tomcat's
    connection-timeout (never empty: Quarto would print an empty inline value's source)."""
    if not lost:
        return "Every step that lost users lost them at a limit its data names (the server table below)."
    return " ".join(_lost_unnamed(one) for one in lost)


def _lost_unnamed(one: LostUnnamed) -> str:
    errors = and_list(f'{n:,} "{error}"' for error, n in one.errors)
    said = (f"The step {one.step} lost {one.failed:,} of {one.users:,} users where its data names no limit: it held "
            f"at most {one.peak_open_files:,} open files of its {one.nofile:,}, and k6 reported {errors}.")
    if not one.send_max_s > one.connection_timeout_s:
        return said + (f" Its requests took at most {one.send_max_s:.1f} s to send; the data does not say why they "
                       "failed.")
    return said + (f" k6's own summary shows a request that took {one.send_max_s:.1f} s to send on a connection k6 "
                   f"had opened, longer than Tomcat's connection-timeout of {one.connection_timeout_s:g} s, after "
                   "which Tomcat closes a connection that has sent nothing, and k6 reads that close as EOF. No step "
                   "of this edition isolates that cause.")
