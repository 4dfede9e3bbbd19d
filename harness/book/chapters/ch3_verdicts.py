"""Chapter 3, from 300 to 15,000 users (seed 000): the verdicts F000-a … F000-l, computed from its steps.
"""
from __future__ import annotations

from harness.book.verdict import COUNT_TOLERANCE, INTERRUPTED_TEXT, MODEL_SLACK, QUEUE_RACE, REPRODUCED, TIME_SLACK_S, Verdict, verdict_of, within, within_abs
from harness.book.steps import PLUS_ONE, spec_steps, StepRun, StepRuns, all_ok, joined, judged_runs, keep_alive_s, matches_model, model_reason, no_data, outcome_text, step_run, unexplained, wave_counts, waves_match, waves_text
from harness.book.verdict import OVERFLOW_EXTRA


ARTICLE_000_HELD = 8293  # F000-f: 8192 + 100 + 1, the most connections `ss -s` showed and the VUs that succeeded




A_300, B_1000 = ("a-300-cv", "a-300-pv"), ("b-1000-cv", "b-1000-pv")


C_GRACE_30S, C_GRACE_5M = "c-2000-cv-grace30s", ("c-2000-cv-grace5m", "c-2000-pv")


D_T200, D_T500 = ("d-3000-t200-cv", "d-3000-t200-pv"), ("d-3000-t500-cv", "d-3000-t500-pv")


E_T500, E_T1000 = ("e-6000-t500-cv", "e-6000-t500-pv"), ("e-6000-t1000-cv", "e-6000-t1000-pv")


F_10K, G_10K = ("f-10k-cv", "f-10k-pv"), ("g-10k-mc20000-cv", "g-10k-mc20000-pv")


H_10K, I_10K = ("h-10k-ct30000-cv", "h-10k-ct30000-pv"), ("i-10k-ac2000-cv", "i-10k-ac2000-pv")


PLUS1 = spec_steps("chapter3", role=PLUS_ONE)


J_AC1, J_AC10 = ("j-1-1-1-cv", "j-1-1-1-pv"), ("j-1-1-10-cv", "j-1-1-10-pv")


J_ISOLATION = ("j-1-1-1-boot-timeout", "j-1-1-1-no-reuse", "j-1-1-10-no-reuse")


K_15K = ("k-15k-cv", "k-15k-pv")


def f000_verdicts(data) -> list[Verdict]:
    """F000-a … F000-l from chapter 3's data."""
    data = StepRuns(data)
    return [f000_a(data), f000_b(data), f000_c(data), f000_d(data), f000_e(data), f000_f(data),
            f000_g(data), f000_h(data), f000_i(data), f000_j(data), f000_k(data), f000_l(data)]


def f000_a(data) -> Verdict:
    article = "300 users, 200 threads: 200 answered at ~5 s, the other 100 at ~10 s"
    runs, notes = judged_runs(data, A_300)
    if not runs:
        return no_data("F000-a", article, notes)
    agrees = all(waves_match(r, [200, 100]) and r.failed == 0 for r in runs)
    return Verdict("F000-a", article, joined(runs, lambda r: f"{r.step}: {waves_text(r)}, {r.failed} failed", notes),
                   verdict_of(agrees),
                   "200 threads answer 200 users per 5 s sleep; the other 100 wait inside Tomcat for a free thread, "
                   "not refused" if agrees else "the answers do not come as 200 at 5 s and 100 at 10 s")


def f000_b(data) -> Verdict:
    article = "1000 users: 5 s waves, ~25 s in all, no error although 25 s > connection-timeout 20 s"
    runs, notes = judged_runs(data, B_1000)
    if not runs:
        return no_data("F000-b", article, notes)
    agrees = all(waves_match(r, [200] * 5) and r.failed == 0 and within_abs(r.last_ok_s(), 25, TIME_SLACK_S) for r in runs)
    timeout = runs[0].meta.get("server_info", {}).get("tomcat", {}).get("connectionTimeout") or runs[0].knob("TOMCAT_CONNECTION_TIMEOUT")
    timeout /= 1000
    measured = joined(runs, lambda r: f"{r.step}: {waves_text(r)}; last at {r.last_ok_s():.1f} s, {r.failed} failed", notes)
    return Verdict("F000-b", article, f"{measured} (connection-timeout here {timeout:.0f} s)", verdict_of(agrees),
                   "a request Tomcat has read waits for a thread under no server timeout (connection-timeout only bounds "
                   f"waiting for a request's bytes, and is {timeout:.0f} s here: F000-h varies it)" if agrees else
                   "the waves or the total time differ from five of 200 in 25 s, or some requests failed")


def f000_c(data) -> Verdict:
    article = "2000 users need gracefulStop longer than k6's 30 s default, else k6 stops first"
    short = step_run(data, C_GRACE_30S)
    runs, notes = judged_runs(data, C_GRACE_5M)
    if short is None or not runs:
        return no_data("F000-c", article, notes + ([] if short else [f"{C_GRACE_30S}: no data"]))
    interrupted = short.kinds().get(INTERRUPTED_TEXT, 0)
    stops_early = interrupted > 0 and within_abs(short.stop_s(), short.model["stop_ms"] / 1000, TIME_SLACK_S)
    agrees = stops_early and all(all_ok(r) for r in runs)
    sent = f" (issued {short.issued} of {short.asked})" if short.issued < short.asked else ""
    measured = (f"{C_GRACE_30S}{sent}: k6 stopped at {short.stop_s():.1f} s with {short.ok} answered and {interrupted} "
                f"interrupted (model: stop at {short.model['stop_ms'] / 1000:.0f} s, {short.model['interrupted']} "
                f"interrupted); " + joined(runs, lambda r: f"{r.step}: {r.ok} of {r.asked} ok, last at {r.last_ok_s():.1f} s", notes))
    return Verdict("F000-c", article, measured, verdict_of(agrees),
                   "ten waves of 200 need 50 s, but k6 waits only duration 1 s + gracefulStop 30 s for iterations in flight; "
                   "gracefulStop 5m outlasts the waves" if agrees else
                   "k6 did not stop at 1 s + gracefulStop with requests in flight, or the long gracefulStop did not let all finish")


def timeouts_at(run: StepRun) -> float:
    """The median time (from the spike) at which requests ended with k6's "request timeout"."""
    return float(run.requests.loc[run.requests["kind"] == "request timeout", "end_s"].median())


def fewer_and_more_threads(data, slow_ids, fast_ids) -> tuple[list[StepRun], list[StepRun], str, list[str]]:
    """F000-d and F000-e: the runs on fewer threads (the article saw timeouts), on more (all answered), the measured
    text, and the notes on steps not judged (for `no_data` when a side is missing)."""
    slow, slow_notes = judged_runs(data, slow_ids)
    fast, fast_notes = judged_runs(data, fast_ids)
    notes = slow_notes + fast_notes
    if not slow or not fast:
        return slow, fast, "", notes
    return slow, fast, (joined(slow, outcome_text, slow_notes) + "; " +
                        joined(fast, lambda r: f"{r.step}: {r.ok} of {r.asked} ok, last at {r.last_ok_s():.1f} s", fast_notes)), notes


def f000_d(data) -> Verdict:
    article = "3000 users, 200 threads: request timeouts after ~60 s (75 s needed); 500 threads: all succeed in ~30 s"
    slow, fast, measured, notes = fewer_and_more_threads(data, D_T200, D_T500)
    if not slow or not fast:
        return no_data("F000-d", article, notes)
    timeouts = all(r.kinds().get("request timeout", 0) > 0 and within_abs(timeouts_at(r), 60, TIME_SLACK_S) for r in slow)
    quick = all(all_ok(r) and within_abs(r.last_ok_s(), 30, TIME_SLACK_S) for r in fast)
    return Verdict("F000-d", article, measured, verdict_of(timeouts and quick),
                   "15 waves × 5 s = 75 s outlast k6's 60 s request timeout, so the last waves time out; 500 threads make "
                   "6 waves, 30 s" if timeouts and quick else
                   ("no request timeouts near 60 s at 200 threads" if not timeouts else "500 threads did not answer all in ~30 s"))


def f000_e(data) -> Verdict:
    article = "6000 users, 500 threads: timeouts; 1000 threads: all succeed"
    slow, fast, measured, notes = fewer_and_more_threads(data, E_T500, E_T1000)
    if not slow or not fast:
        return no_data("F000-e", article, notes)
    timeouts = all(r.kinds().get("request timeout", 0) > 0 for r in slow)
    quick = all(all_ok(r) for r in fast)
    boundary = "6000 / 500 = 12 waves: the last is due at 60 s, exactly k6's 60 s timeout, a boundary case"
    why = (f"{boundary} that a real response's milliseconds tip past it (as the model has it); 1000 threads need only 30 s"
           if timeouts and quick else f"{boundary}, and here the last wave made it in time" if not timeouts
           else "1000 threads did not answer all 6000")
    return Verdict("F000-e", article, measured, verdict_of(timeouts and quick, machine_bound=True), why)


def f000_f(data) -> Verdict:
    article = "10k users (1000 threads, 8192 + 100): errors; only ~8293 succeed; ss never shows more than ~8293 (+1 a mystery)"
    runs, notes = judged_runs(data, F_10K)
    if not runs:
        return no_data("F000-f", article, notes)
    plus1, _ = judged_runs(data, PLUS1)
    held = all(within(r.peak("estab"), ARTICLE_000_HELD, 0.01) for r in runs)
    # "~8293": at least that many, and no more than the SYN-RECV path adds (OVERFLOW_EXTRA)
    served = all(ARTICLE_000_HELD - MODEL_SLACK * r.asked <= r.ok <= ARTICLE_000_HELD + OVERFLOW_EXTRA * r.asked for r in runs)
    measured = joined(runs, lambda r: f"{outcome_text(r)}; at most {r.peak('estab'):.0f} established (ss)", notes)
    if plus1:
        measured += "; the +1: " + ", ".join(
            f"{r.step} at most {r.peak('estab'):.0f} established (ceiling {r.model['ceiling']}), accept queue at most "
            f"{r.peak('accept_queue'):.0f} (accept-count {r.knob('TOMCAT_ACCEPT_COUNT')})" for r in plus1)
    if held and served:
        why = ("Tomcat holds max-connections sockets and the kernel's accept queue accept-count + 1 (Linux tests a full "
               "queue with >, the article's +1); the rest retry their SYNs (1, 3, 7, 15 s) while kept-alive connections "
               "keep every slot (Tomcat closes an expired one on a worker thread, behind the queued requests), and k6 "
               "stops connecting at 30 s, before the 31 s retransmit")
    elif held and all(matches_model(r) for r in runs) and runs[0].model.get("keep_alive"):
        why = f"the ceiling is the article's 8293, but the number answered is not: {model_reason(runs[0])}"
    else:
        why = f"the server held at most {runs[0].peak('estab'):.0f}, not 8293" if not held else unexplained(runs[0])
    return Verdict("F000-f", article, measured, verdict_of(held and served), why)


def all_succeed_verdict(data, finding: str, article: str, step_ids, mechanism: str) -> Verdict:
    """A finding that says "this setting lets all users succeed" (F000-g, F000-i, F000-k)."""
    runs, notes = judged_runs(data, step_ids)
    if not runs:
        return no_data(finding, article, notes)
    agrees = all(all_ok(r) for r in runs)
    if agrees:
        why = mechanism
    elif all(matches_model(r) for r in runs) and runs[0].model.get("keep_alive"):
        why = model_reason(runs[0])
    else:
        why = unexplained(runs[0]) if not all(matches_model(r) for r in runs) else "the model predicts these failures too"
    return Verdict(finding, article, joined(runs, outcome_text, notes), verdict_of(agrees), why)


def f000_g(data) -> Verdict:
    return all_succeed_verdict(data, "F000-g", "max-connections 20000 lets all 10k users succeed", G_10K,
                               "a ceiling of 20000 + 100 + 1 holds every user from the start; 1000 threads answer them in "
                               "10 waves by 50 s, inside k6's 60 s")


def f000_h(data) -> Verdict:
    article = "connection-timeout 30000 does NOT fix 10k users: it is not a connect timeout"
    runs, notes = judged_runs(data, H_10K)
    if not runs:
        return no_data("F000-h", article, notes)
    baseline, _ = judged_runs(data, F_10K)
    agrees = all(r.failed > 0 for r in runs)
    measured = joined(runs, outcome_text, notes)
    if baseline:
        measured += f"; with the default connection-timeout ({baseline[0].step}): {baseline[0].ok} ok"
    return Verdict("F000-h", article, measured, verdict_of(agrees),
                   "connection-timeout bounds how long Tomcat waits for a request's bytes on a connection it has accepted "
                   "(and, unset, the keep-alive timeout); users beyond the ceiling never get that far" if agrees else
                   "all users succeeded with connection-timeout 30 s")


def f000_i(data) -> Verdict:
    return all_succeed_verdict(data, "F000-i", "accept-count 2000 (max-connections 8192) also lets all 10k succeed", I_10K,
                               "8192 + 2000 + 1 = 10193 holds every user: those Tomcat cannot take wait in the kernel's "
                               "accept queue and are accepted as slots free")


def isolation_text(runs: list[StepRun]) -> str:
    """F000-j's isolation steps in words, with their measured answers."""
    said = {"j-1-1-1-boot-timeout": "Spring Boot 3.5's own 60 s keep-alive answers {ok} of {asked}",
            "j-1-1-1-no-reuse": "without keep-alive the slot frees with every response: {ok} of {asked} with accept-count 1",
            "j-1-1-10-no-reuse": "and {ok} of {asked} with accept-count 10"}
    return ", ".join(said[r.step].format(ok=r.ok, asked=r.asked) for r in runs if r.step in said)


def f000_j(data) -> Verdict:
    article = "threads = max-connections = accept-count = 1, 10 users: 3 succeed, 7 fail; accept-count 10: all succeed"
    one, one_notes = judged_runs(data, J_AC1)
    ten, ten_notes = judged_runs(data, J_AC10)
    if not one or not ten:
        return no_data("F000-j", article, one_notes + ten_notes)
    isolation, iso_notes = judged_runs(data, J_ISOLATION)
    agrees = all(r.ok == 3 for r in one) and all(r.ok == 10 for r in ten)
    tally = lambda r: f"{r.step} {r.ok}/{r.asked} (model {r.model['succeeded']})"  # noqa: E731
    measured = "; ".join([joined(one + ten, tally, one_notes + ten_notes)]
                         + ([f"isolating keep-alive: {joined(isolation, tally, iso_notes)}"] if isolation else []))
    fits = sum(matches_model(r) for r in isolation)
    if agrees:
        why = "one thread answers one user per 5 s: the queue's room decides who is still waiting when k6 gives up"
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
    verdict = all_succeed_verdict(data, "F000-k", article, K_15K,
                                  "a ceiling of 55001 holds all 15000 and 2000 threads answer them in 8 waves by 40 s")
    if verdict.measured.startswith("no data"):
        return verdict
    nofile = next((data.steps[s].get("machine", {}).get("nofile_limit") for s in K_15K if s in data.steps), None)
    limit = (f"20k+ users not run: the open-files limit here is {nofile} per process and k6 needs one socket per user"
             if nofile else "20k+ users not run: the open-files limit of this machine caps one process's sockets")
    return Verdict("F000-k", article, f"{verdict.measured}; {limit}", verdict_of(verdict.verdict == REPRODUCED, machine_bound=True),
                   f"{verdict.why}; the 20k part is untestable on this machine (open-files limit)")


def f000_l(data) -> Verdict:
    """The article's three conclusions, each checked on the steps that show it."""
    article = ("threads.max sets throughput; max-connections + accept-count set the connections held; "
               "connection-timeout is unrelated to connect failures")
    groups = {"waves": A_300 + B_1000 + C_GRACE_5M + D_T200 + D_T500 + E_T500 + E_T1000, "f": F_10K, "plus1": PLUS1, "h": H_10K}
    judged = {name: judged_runs(data, ids) for name, ids in groups.items()}
    wave_steps, f_runs, plus1, h_runs = (judged[name][0] for name in groups)
    held_steps = f_runs + plus1
    if not wave_steps or not f_runs or not h_runs:  # plus1 only adds to the ceiling's evidence
        return no_data("F000-l", article, [n for name in ("waves", "f", "h") if not judged[name][0] for n in judged[name][1]])
    # throughput: the first wave is threads.max answers, whatever the users
    first = {r.step: (wave_counts(r).get(1, 0), r.model["threads"]) for r in wave_steps}
    throughput = all(within(n, t, COUNT_TOLERANCE) for n, t in first.values())
    # connections held: ss peaks at the model's ceiling, the kernel's share at accept-count + 1 (each may be passed
    # by one when two handshakes race past the kernel's unlocked queue check: QUEUE_RACE)
    ceiling = all(0 <= r.peak("estab") - r.model["ceiling"] <= QUEUE_RACE for r in held_steps) and all(
        0 <= r.peak("accept_queue") - (r.knob("TOMCAT_ACCEPT_COUNT") + 1) <= QUEUE_RACE for r in plus1)
    # connection-timeout: 30 s (h) leaves the users beyond the ceiling as failed as the default (f)
    unrelated = all(r.failed > 0 for r in f_runs + h_runs) and within(h_runs[0].ok, f_runs[0].ok, 0.02)
    by_threads: dict[int, list[int]] = {}
    for n, t in first.values():
        by_threads.setdefault(t, []).append(n)
    spread = lambda ns: f"{min(ns)}" if min(ns) == max(ns) else f"{min(ns)}–{max(ns)}"  # noqa: E731
    measured = ("first wave vs threads: " + ", ".join(f"{t} threads → {spread(ns)} at ~5 s" for t, ns in sorted(by_threads.items()))
                + "; established peak vs ceiling: " + ", ".join(f"{r.step} {r.peak('estab'):.0f}/{r.model['ceiling']}" for r in held_steps)
                + ("; accept queue peak vs accept-count + 1: " + ", ".join(
                    f"{r.step} {r.peak('accept_queue'):.0f}/{r.knob('TOMCAT_ACCEPT_COUNT') + 1}" for r in plus1) if plus1 else "")
                + f"; ok with connection-timeout 30 s vs default: {h_runs[0].ok} vs {f_runs[0].ok} of {f_runs[0].asked}")
    failed_parts = [name for name, ok in (("throughput", throughput), ("connections held", ceiling),
                                          ("connection-timeout", unrelated)) if not ok]
    return Verdict("F000-l", article, measured, verdict_of(not failed_parts),
                   "waves are threads.max wide, the kernel shows max-connections + accept-count + 1 connections at most, "
                   "and connection-timeout leaves the failures as they were" if not failed_parts else
                   f"not shown by the data: {', '.join(failed_parts)}")
