"""Chapter 3, from 300 to 15,000 users (seed 000): the verdicts F000-a … F000-l, computed from its steps.

Steps are chosen by finding and role from the spec (ch3_steps); every number in a verdict's text comes from the data
or the step's model; the ceiling's verdicts (F000-f, F000-l) and their rules live in ch3_ceiling.
"""
from __future__ import annotations

from harness.book.chapters.ch3_ceiling import f000_f, f000_l
from harness.book.chapters.ch3_steps import (
    ACCEPT_1,
    ACCEPT_10,
    ARTICLES_RUN,
    DEFAULT_GRACE,
    ENOUGH_THREADS,
    FEW_THREADS,
    ISOLATES_J,
    LONG_GRACE,
    f000_steps,
)
from harness.book.steps import (
    StepRun,
    StepRuns,
    all_ok,
    joined,
    judged_runs,
    keep_alive_s,
    matches_model,
    model_reason,
    no_data,
    outcome_text,
    step_run,
    unexplained,
    waves_match,
    waves_text,
)
from harness.book.verdict import INTERRUPTED_TEXT, REPRODUCED, TIME_SLACK_S, Verdict, verdict_of, within_abs
from harness.lab.spec import SERVER_DEFAULTS

__all__ = ["f000_verdicts", "f000_f", "f000_l"]


def seconds(ms: float) -> str:
    """A model time in ms as whole seconds, e.g. "50 s"."""
    return f"{ms / 1000:.0f} s"


def waves_of(run: StepRun) -> str:
    """The model's waves for a step, e.g. "10 waves by 50 s"."""
    return f"{run.model['waves']} waves by {seconds(run.model['wave_ms'][-1])}"


def f000_verdicts(data) -> list[Verdict]:
    """F000-a … F000-l from chapter 3's data."""
    data = StepRuns(data)
    return [f000_a(data), f000_b(data), f000_c(data), f000_d(data), f000_e(data), f000_f(data),
            f000_g(data), f000_h(data), f000_i(data), f000_j(data), f000_k(data), f000_l(data)]


def f000_a(data) -> Verdict:
    article = "300 users, 200 threads: 200 answered at ~5 s, the other 100 at ~10 s"
    runs, notes = judged_runs(data, f000_steps("F000-a"))
    if not runs:
        return no_data("F000-a", article, notes)
    agrees = all(waves_match(r, [200, 100]) and r.failed == 0 for r in runs)
    threads, sleep = runs[0].model["threads"], seconds(runs[0].model["service_ms"])
    return Verdict("F000-a", article, joined(runs, lambda r: f"{r.step}: {waves_text(r)}, {r.failed} failed", notes),
                   verdict_of(agrees),
                   f"{threads} threads answer {threads} users per {sleep} sleep; the other {runs[0].asked - threads} wait "
                   "inside Tomcat for a free thread, not refused" if agrees else
                   "the answers do not come as the article's 200 at 5 s and 100 at 10 s")


def f000_b(data) -> Verdict:
    article = "1000 users: 5 s waves, ~25 s in all, no error although 25 s > connection-timeout 20 s"
    runs, notes = judged_runs(data, f000_steps("F000-b"))
    if not runs:
        return no_data("F000-b", article, notes)
    agrees = all(waves_match(r, [200] * 5) and r.failed == 0 and within_abs(r.last_ok_s(), 25, TIME_SLACK_S) for r in runs)
    timeout = runs[0].meta.get("server_info", {}).get("tomcat", {}).get("connectionTimeout") or runs[0].knob("TOMCAT_CONNECTION_TIMEOUT")
    timeout /= 1000
    measured = joined(runs, lambda r: f"{r.step}: {waves_text(r)}; last at {r.last_ok_s():.1f} s, {r.failed} failed", notes)
    return Verdict("F000-b", article, f"{measured} (connection-timeout here {timeout:.0f} s)", verdict_of(agrees),
                   "a request Tomcat has read waits for a thread under no server timeout (connection-timeout only bounds "
                   f"waiting for a request's bytes, and is {timeout:.0f} s here: F000-h varies it)" if agrees else
                   "the waves or the total time differ from the article's five of 200 in 25 s, or some requests failed")


def grace_text(run: StepRun) -> str:
    """k6's load duration and gracefulStop for a step, e.g. "duration 1s + gracefulStop 30s"."""
    load = run.meta["config"]["load"]
    return " + ".join(f"{name} {load[key]}" for name, key in (("duration", "duration"), ("gracefulStop", "graceful_stop"))
                      if key in load)


def f000_c(data) -> Verdict:
    article = "2000 users need gracefulStop longer than k6's 30 s default, else k6 stops first"
    short_ids = f000_steps("F000-c", role=DEFAULT_GRACE)
    short = next(filter(None, (step_run(data, s) for s in short_ids)), None)
    runs, notes = judged_runs(data, f000_steps("F000-c", role=LONG_GRACE))
    if short is None or not runs:
        return no_data("F000-c", article, notes + ([] if short else [f"{s}: no data" for s in short_ids]))
    interrupted = short.kinds().get(INTERRUPTED_TEXT, 0)
    stops_early = interrupted > 0 and within_abs(short.stop_s(), short.model["stop_ms"] / 1000, TIME_SLACK_S)
    agrees = stops_early and all(all_ok(r) for r in runs)
    sent = f" (issued {short.issued} of {short.asked})" if short.issued < short.asked else ""
    measured = (f"{short.step}{sent}: k6 stopped at {short.stop_s():.1f} s with {short.ok} answered and {interrupted} "
                f"interrupted (model: stop at {seconds(short.model['stop_ms'])}, {short.model['interrupted']} "
                f"interrupted); " + joined(runs, lambda r: f"{r.step}: {r.ok} of {r.asked} ok, last at {r.last_ok_s():.1f} s", notes))
    long_grace = runs[0].meta["config"]["load"].get("graceful_stop")
    return Verdict("F000-c", article, measured, verdict_of(agrees),
                   f"{short.model['waves']} waves of {short.model['threads']} need {seconds(short.model['wave_ms'][-1])}, "
                   f"but k6 waits only {grace_text(short)} ({seconds(short.model['stop_ms'])}) for "
                   f"iterations in flight; gracefulStop {long_grace} outlasts the waves" if agrees else
                   "k6 did not stop at duration + gracefulStop with requests in flight, or the long gracefulStop did not "
                   "let all finish")


def timeouts_at(run: StepRun) -> float:
    """The median time (from the spike) at which requests ended with k6's "request timeout"."""
    return float(run.requests.loc[run.requests["kind"] == "request timeout", "end_s"].median())


def fewer_and_more_threads(data, finding: str) -> tuple[list[StepRun], list[StepRun], str, list[str]]:
    """F000-d and F000-e: the runs on too few threads (the article saw timeouts), on enough (all answered), the
    measured text, and the notes on steps not judged (for `no_data` when a side is missing)."""
    slow, slow_notes = judged_runs(data, f000_steps(finding, role=FEW_THREADS))
    fast, fast_notes = judged_runs(data, f000_steps(finding, role=ENOUGH_THREADS))
    notes = slow_notes + fast_notes
    if not slow or not fast:
        return slow, fast, "", notes
    return slow, fast, (joined(slow, outcome_text, slow_notes) + "; " +
                        joined(fast, lambda r: f"{r.step}: {r.ok} of {r.asked} ok, last at {r.last_ok_s():.1f} s", fast_notes)), notes


def f000_d(data) -> Verdict:
    article = "3000 users, 200 threads: request timeouts after ~60 s (75 s needed); 500 threads: all succeed in ~30 s"
    slow, fast, measured, notes = fewer_and_more_threads(data, "F000-d")
    if not slow or not fast:
        return no_data("F000-d", article, notes)
    timeouts = all(r.kinds().get("request timeout", 0) > 0 and within_abs(timeouts_at(r), 60, TIME_SLACK_S) for r in slow)
    quick = all(all_ok(r) and within_abs(r.last_ok_s(), 30, TIME_SLACK_S) for r in fast)
    s, f = slow[0].model, fast[0].model
    return Verdict("F000-d", article, measured, verdict_of(timeouts and quick),
                   f"{s['waves']} waves × {seconds(s['service_ms'])} = {seconds(s['wave_ms'][-1])} outlast k6's "
                   f"{seconds(s['client_timeout_ms'])} request timeout, so the last waves time out; {f['threads']} threads "
                   f"make {f['waves']} waves, {seconds(f['wave_ms'][-1])}" if timeouts and quick else
                   (f"no request timeouts near 60 s at {s['threads']} threads" if not timeouts
                    else f"{f['threads']} threads did not answer all in ~30 s"))


def f000_e(data) -> Verdict:
    article = "6000 users, 500 threads: timeouts; 1000 threads: all succeed"
    slow, fast, measured, notes = fewer_and_more_threads(data, "F000-e")
    if not slow or not fast:
        return no_data("F000-e", article, notes)
    timeouts = all(r.kinds().get("request timeout", 0) > 0 for r in slow)
    quick = all(all_ok(r) for r in fast)
    s, f = slow[0].model, fast[0].model
    due, timeout = s["wave_ms"][-1], s["client_timeout_ms"]
    boundary = (f"{s['requests']} / {s['threads']} = {s['waves']} waves: the last is due at {seconds(due)}"
                + (f", exactly k6's {seconds(timeout)} timeout, a boundary case" if due == timeout else
                   f", against k6's {seconds(timeout)} timeout"))
    why = (f"{boundary} that a real response's milliseconds tip past it (as the model has it); {f['threads']} threads "
           f"need only {seconds(f['wave_ms'][-1])}" if timeouts and quick else
           f"{boundary}, and here the last wave made it in time" if not timeouts
           else f"{f['threads']} threads did not answer all {f['requests']}")
    return Verdict("F000-e", article, measured, verdict_of(timeouts and quick, machine_bound=True), why)


def all_succeed_verdict(data, finding: str, article: str, step_ids, mechanism) -> Verdict:
    """A finding that says "this setting lets all users succeed" (F000-g, F000-i, F000-k); `mechanism(run)` says why
    in the first judged run's numbers."""
    runs, notes = judged_runs(data, step_ids)
    if not runs:
        return no_data(finding, article, notes)
    agrees = all(all_ok(r) for r in runs)
    if agrees:
        why = mechanism(runs[0])
    elif all(matches_model(r) for r in runs) and runs[0].model.get("keep_alive"):
        why = model_reason(runs[0])
    else:
        why = unexplained(runs[0]) if not all(matches_model(r) for r in runs) else "the model predicts these failures too"
    return Verdict(finding, article, joined(runs, outcome_text, notes), verdict_of(agrees), why)


def ceiling_sum(run: StepRun) -> str:
    """e.g. "20000 + 100 + 1 = 20101": max-connections + accept-count + the kernel's one."""
    return f"{run.knob('TOMCAT_MAX_CONNECTIONS')} + {run.knob('TOMCAT_ACCEPT_COUNT')} + 1 = {run.model['ceiling']}"


def f000_g(data) -> Verdict:
    return all_succeed_verdict(data, "F000-g", "max-connections 20000 lets all 10k users succeed", f000_steps("F000-g"),
                               lambda r: f"a ceiling of {ceiling_sum(r)} holds all {r.asked} users from the start; "
                                         f"{r.model['threads']} threads answer them in {waves_of(r)}, inside k6's "
                                         f"{seconds(r.model['client_timeout_ms'])}")


def f000_h(data) -> Verdict:
    article = "connection-timeout 30000 does NOT fix 10k users: it is not a connect timeout"
    runs, notes = judged_runs(data, f000_steps("F000-h", role=ARTICLES_RUN))
    if not runs:
        return no_data("F000-h", article, notes)
    baseline, _ = judged_runs(data, f000_steps("F000-f", role=ARTICLES_RUN))
    agrees = all(r.failed > 0 for r in runs)
    measured = joined(runs, outcome_text, notes)
    if baseline:
        measured += (f"; with connection-timeout {seconds(baseline[0].knob('TOMCAT_CONNECTION_TIMEOUT'))} "
                     f"({baseline[0].step}): {baseline[0].ok} ok")
    return Verdict("F000-h", article, measured, verdict_of(agrees),
                   "connection-timeout bounds how long Tomcat waits for a request's bytes on a connection it has accepted "
                   "(and, unset, the keep-alive timeout); users beyond the ceiling never get that far" if agrees else
                   f"all users succeeded with connection-timeout {seconds(runs[0].knob('TOMCAT_CONNECTION_TIMEOUT'))}")


def f000_i(data) -> Verdict:
    return all_succeed_verdict(data, "F000-i", "accept-count 2000 (max-connections 8192) also lets all 10k succeed",
                               f000_steps("F000-i"),
                               lambda r: f"{ceiling_sum(r)} holds every user: the "
                                         f"{max(0, r.asked - r.knob('TOMCAT_MAX_CONNECTIONS'))} Tomcat cannot take wait in "
                                         "the kernel's accept queue and are accepted as slots free")


def isolation_text(runs: list[StepRun]) -> str:
    """F000-j's isolating steps in words, from their settings, with their measured answers."""
    parts, closed = [], False
    for r in runs:
        if r.model.get("keep_alive"):
            own = (" (Tomcat's own: Spring Boot 3.5 sets none)"
                   if keep_alive_s(r) * 1000 == SERVER_DEFAULTS["TOMCAT_CONNECTION_TIMEOUT"] else "")
            parts.append(f"a {keep_alive_s(r):.0f} s keep-alive{own} answers {r.ok} of {r.asked}")
        else:
            parts.append(("and " if closed else "without keep-alive the slot frees with every response: ")
                         + f"{r.ok} of {r.asked} with accept-count {r.knob('TOMCAT_ACCEPT_COUNT')}")
            closed = True
    return ", ".join(parts)


def f000_j(data) -> Verdict:
    article = "threads = max-connections = accept-count = 1, 10 users: 3 succeed, 7 fail; accept-count 10: all succeed"
    one, one_notes = judged_runs(data, f000_steps("F000-j", role=ACCEPT_1))
    ten, ten_notes = judged_runs(data, f000_steps("F000-j", role=ACCEPT_10))
    if not one or not ten:
        return no_data("F000-j", article, one_notes + ten_notes)
    isolation, iso_notes = judged_runs(data, f000_steps("F000-j", role=ISOLATES_J))
    agrees = all(r.ok == 3 for r in one) and all(r.ok == 10 for r in ten)
    tally = lambda r: f"{r.step} {r.ok}/{r.asked} (model {r.model['succeeded']})"  # noqa: E731
    measured = "; ".join([joined(one + ten, tally, one_notes + ten_notes)]
                         + ([f"isolating keep-alive: {joined(isolation, tally, iso_notes)}"] if isolation else []))
    fits = sum(matches_model(r) for r in isolation)
    if agrees:
        why = (f"{one[0].model['threads']} thread answers one user per {seconds(one[0].model['service_ms'])}: the queue's "
               "room decides who is still waiting when k6 gives up")
    elif all(matches_model(r) for r in one + ten):
        why = (f"with keep-alive the one Tomcat slot stays taken for the {keep_alive_s(one[0]):.0f} s keep-alive timeout "
               f"after each response, so only {one[0].model['succeeded']} of {one[0].asked} is answered whatever the accept-count"
               + (f"; isolating it: {isolation_text(isolation)}; the isolation steps match the model in {fits} of "
                  f"{len(isolation)} (past the ceiling the model is a lower bound: users also get in through SYN-RECV)"
                  if isolation else ""))
    else:
        why = unexplained(next(r for r in one + ten if not matches_model(r)))
    return Verdict("F000-j", article, measured, verdict_of(agrees), why)


def f000_k(data) -> Verdict:
    article = "15k users succeed with 2000 threads, max-connections 50000, accept-count 5000; errors above 20k"
    steps = f000_steps("F000-k")
    verdict = all_succeed_verdict(data, "F000-k", article, steps,
                                  lambda r: f"a ceiling of {r.model['ceiling']} holds all {r.asked} and "
                                            f"{r.model['threads']} threads answer them in {waves_of(r)}")
    if verdict.measured.startswith("no data"):
        return verdict
    nofile = next((data.steps[s].get("machine", {}).get("nofile_limit") for s in steps if s in data.steps), None)
    limit = (f"20k+ users not run: the open-files limit here is {nofile} per process and k6 needs one socket per user"
             if nofile else "20k+ users not run: the open-files limit of this machine caps one process's sockets")
    return Verdict("F000-k", article, f"{verdict.measured}; {limit}", verdict_of(verdict.verdict == REPRODUCED, machine_bound=True),
                   f"{verdict.why}; the 20k part needs more than one k6 process here (open-files limit): chapter 7 "
                   f"runs it")
