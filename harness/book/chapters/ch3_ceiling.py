"""Chapter 3's connection ceiling: the rules F000-f and F000-l judge it by, and those two verdicts.

The ceiling is the model's, for each step's settings: max-connections + accept-count + 1 (harness.models.spike).
Two claims rest on it, each judged at the robustness the data supports:

- *The server never holds more*: `ss` shows established connections reach the ceiling and pass it by at most
  QUEUE_RACE (two handshakes racing past the kernel's unlocked full-queue check).
- *Only about the ceiling's worth of users succeed*: `ceiling_decides`, a rule a reader can check rather than a
  tolerance fitted to runs. See its docstring for why there is no tighter upper bound.
"""
from __future__ import annotations

from harness.book.chapters.ch3_steps import ARTICLES_RUN, LONG_GRACE, f000_steps
from harness.book.steps import (
    PLUS_ONE,
    SLEEP_000_S,
    StepRun,
    joined,
    judged_runs,
    model_reason,
    no_data,
    outcome_text,
    sampled,
    unexplained,
    wave_counts,
)
from harness.book.verdict import COUNT_TOLERANCE, MOST, QUEUE_RACE, Verdict, verdict_of, within
from harness.models.spike import K6_DIAL_TIMEOUT_MS, SYN_RETRY_MS


def holds_ceiling(run: StepRun) -> bool:
    """`ss` saw established connections reach the model's ceiling and pass it by no more than QUEUE_RACE."""
    return 0 <= run.peak("estab") - run.model["ceiling"] <= QUEUE_RACE


def held(run: StepRun) -> int:
    """Users the server holds at once: the model's ceiling, or every user when fewer."""
    return min(run.asked, run.model["ceiling"])


def ceiling_decides(run: StepRun) -> bool:
    """The article's "only ~8293 succeed" for a step with users beyond its ceiling: every user the server holds is
    answered (the model's ceiling is a lower bound), and most (MOST: more than half) of the users beyond it fail.

    Why no tighter upper bound: a user beyond the ceiling whose SYN reaches a momentarily not-full accept queue gets a
    SYN-ACK (from the kernel's request queue, capped at the backlog, then as a SYN cookie) and believes it is
    connected; when slots free it gets in through SYN-RECV, long after k6 stopped dialling the others. How many such
    users there are depends on the race between k6 starting users and Tomcat's one acceptor thread on two cores, not
    on any setting, so the model can only bound it by "all of them". The rule therefore asks what the article's claim
    means: the ceiling, not the number of users, decides who succeeds."""
    return held(run) <= run.ok and run.ok - held(run) < MOST * (run.asked - held(run))


def beyond_text(run: StepRun) -> str:
    """e.g. "102 of the 1707 users beyond the ceiling got in"."""
    return f"{run.ok - held(run)} of the {run.asked - held(run)} users beyond the ceiling got in"


def peak_text(run: StepRun) -> str:
    ceiling = run.model["ceiling"]
    return (f"at most {run.peak('estab'):.0f} established (ss) against a ceiling of {ceiling}" if sampled(run)
            else f"ss not sampled in this run (ceiling {ceiling})")


def retries_text() -> str:
    """The SYN retransmits a user beyond the ceiling gets before k6 gives up dialling, and the first one too late."""
    tried = [t // 1000 for t in SYN_RETRY_MS if t < K6_DIAL_TIMEOUT_MS]
    late = next(t // 1000 for t in SYN_RETRY_MS if t >= K6_DIAL_TIMEOUT_MS)
    return (f"the rest retry their SYNs ({', '.join(map(str, tried))} s) while kept-alive connections keep every slot "
            f"(Tomcat closes an expired one on a worker thread, behind the queued requests), and k6 stops connecting at "
            f"{K6_DIAL_TIMEOUT_MS // 1000} s, before the {late} s retransmit")


def ceiling_mechanism(run: StepRun) -> str:
    """Why the ceiling is what it is, in the step's numbers."""
    return (f"Tomcat holds max-connections ({run.knob('TOMCAT_MAX_CONNECTIONS')}) sockets and the kernel's accept queue "
            f"accept-count + 1 ({run.knob('TOMCAT_ACCEPT_COUNT') + 1}: Linux tests a full queue with >, the article's +1)")


def f000_f(data) -> Verdict:
    article = "10k users (1000 threads, 8192 + 100): errors; only ~8293 succeed; ss never shows more than ~8293 (+1 a mystery)"
    runs, notes = judged_runs(data, f000_steps("F000-f", role=ARTICLES_RUN))
    if not runs:
        return no_data("F000-f", article, notes)
    plus1, _ = judged_runs(data, f000_steps(role=PLUS_ONE))
    unheld = [r for r in runs if sampled(r) and not holds_ceiling(r)]
    served = all(ceiling_decides(r) for r in runs)
    measured = joined(runs, lambda r: f"{outcome_text(r)}; {peak_text(r)}; {beyond_text(r)}", notes)
    if plus1:
        measured += "; the +1: " + ", ".join(
            f"{r.step} at most {r.peak('estab'):.0f} established (ceiling {r.model['ceiling']}), accept queue at most "
            f"{r.peak('accept_queue'):.0f} (accept-count {r.knob('TOMCAT_ACCEPT_COUNT')})" for r in plus1)
    first = runs[0]
    if not unheld and served:
        late = (f"{beyond_text(first)} later through SYN-RECV (a handshake the client saw complete while the server's "
                "queue was full, which the model leaves out): fewer than half, so the ceiling decides who succeeds"
                if first.ok > held(first) else f"none of the {first.asked - held(first)} users beyond the ceiling got in")
        why = f"{ceiling_mechanism(first)}; {retries_text()}; {late}"
    elif unheld:
        why = (f"the server held at most {unheld[0].peak('estab'):.0f} connections, not the model's ceiling of "
               f"{unheld[0].model['ceiling']}")
    else:
        broke = next(r for r in runs if not ceiling_decides(r))
        if broke.ok < held(broke):
            why = (f"fewer users were answered ({broke.ok}) than the server holds at once ({held(broke)}): "
                   f"{unexplained(broke)}")
        elif broke.model["succeeded"] > held(broke):  # the model too lets users beyond the ceiling in
            why = (f"the ceiling is the model's {broke.model['ceiling']}, but most users beyond it got in "
                   f"({beyond_text(broke)}), as the model predicts: {model_reason(broke)}")
        else:
            why = f"most users beyond the ceiling got in ({beyond_text(broke)}): {unexplained(broke)}"
    return Verdict("F000-f", article, measured, verdict_of(not unheld and served), why)


def wave_steps() -> tuple[str, ...]:
    """The steps whose waves show threads.max at work: F000-a … F000-e, but the run k6 cuts short."""
    return (f000_steps("F000-a", "F000-b", "F000-d", "F000-e") + f000_steps("F000-c", role=LONG_GRACE))


def f000_l(data) -> Verdict:
    """The article's three conclusions, each checked on the steps that show it."""
    article = ("threads.max sets throughput; max-connections + accept-count set the connections held; "
               "connection-timeout is unrelated to connect failures")
    groups = {"waves": wave_steps(), "f": f000_steps("F000-f", role=ARTICLES_RUN), "plus1": f000_steps(role=PLUS_ONE),
              "h": f000_steps("F000-h", role=ARTICLES_RUN)}
    judged = {name: judged_runs(data, ids) for name, ids in groups.items()}
    wave_runs, f_runs, plus1, h_runs = (judged[name][0] for name in groups)
    held_steps = [r for r in f_runs if sampled(r)] + plus1  # a run without samplers has no `ss` to show it
    if not wave_runs or not f_runs or not h_runs:  # plus1 only adds to the ceiling's evidence
        return no_data("F000-l", article, [n for name in ("waves", "f", "h") if not judged[name][0] for n in judged[name][1]])
    # throughput: a full wave is threads.max answers, whatever the users. The widest wave, not the first: when k6
    # takes seconds to start thousands of users, the first wave straddles two 5 s buckets (a clean re-run of
    # e-6000-t1000-pv put 409 of its first 1000 answers in wave 1 and the rest in wave 2), while no wave can be
    # wider than the pool.
    first = {r.step: (max(wave_counts(r).values(), default=0), r.model["threads"]) for r in wave_runs}
    throughput = all(within(n, t, COUNT_TOLERANCE) for n, t in first.values())
    # connections held: ss peaks at the model's ceiling, the kernel's share at accept-count + 1 (each may be passed
    # by one when two handshakes race past the kernel's unlocked queue check: QUEUE_RACE)
    ceiling = bool(held_steps) and all(holds_ceiling(r) for r in held_steps) and all(
        0 <= r.peak("accept_queue") - (r.knob("TOMCAT_ACCEPT_COUNT") + 1) <= QUEUE_RACE for r in plus1)
    # connection-timeout: with 30 s (h) as with the default (f), the ceiling still decides who succeeds
    unrelated = all(ceiling_decides(r) for r in f_runs + h_runs)
    by_threads: dict[int, list[int]] = {}
    for n, t in first.values():
        by_threads.setdefault(t, []).append(n)
    spread = lambda ns: f"{min(ns)}" if min(ns) == max(ns) else f"{min(ns)}–{max(ns)}"  # noqa: E731
    measured = ("widest wave vs threads: " + ", ".join(f"{t} threads → {spread(ns)} per {SLEEP_000_S} s" for t, ns in sorted(by_threads.items()))
                + "; established peak vs ceiling: " + ", ".join(f"{r.step} {r.peak('estab'):.0f}/{r.model['ceiling']}" for r in held_steps)
                + ("; accept queue peak vs accept-count + 1: " + ", ".join(
                    f"{r.step} {r.peak('accept_queue'):.0f}/{r.knob('TOMCAT_ACCEPT_COUNT') + 1}" for r in plus1) if plus1 else "")
                + f"; ok with connection-timeout {h_runs[0].knob('TOMCAT_CONNECTION_TIMEOUT') / 1000:.0f} s vs "
                  f"{f_runs[0].knob('TOMCAT_CONNECTION_TIMEOUT') / 1000:.0f} s: {h_runs[0].ok} vs {f_runs[0].ok} of "
                  f"{f_runs[0].asked} ({beyond_text(h_runs[0])} vs {f_runs[0].ok - held(f_runs[0])})")
    failed_parts = [name for name, ok in (("throughput", throughput), ("connections held", ceiling),
                                          ("connection-timeout", unrelated)) if not ok]
    return Verdict("F000-l", article, measured, verdict_of(not failed_parts),
                   "waves are threads.max wide, the kernel shows max-connections + accept-count + 1 connections at most, "
                   "and with either connection-timeout the ceiling decides who succeeds (most users beyond it fail)"
                   if not failed_parts else f"not shown by the data: {', '.join(failed_parts)}")
