"""Chapter 3's sentences: every number the chapter's prose quotes, computed from its data, the steps' models and
Tomcat's defaults (SERVER_DEFAULTS). Each function returns Markdown for `Markdown(...)` in the .qmd.
"""
from __future__ import annotations

from harness.book.chapters.ch3_ceiling import ceiling_decides, held
from harness.book.chapters.ch3_steps import ACCEPT_1, ACCEPT_10, ARTICLES_RUN, FEW_THREADS, ISOLATES_F, ISOLATES_J, f000_steps
from harness.book.chapters.ch3_verdicts import seconds, timeouts_at
from harness.book.prose import and_list
from harness.book.steps import (
    ANY_MACHINE,
    PLUS_ONE,
    StepRun,
    judged_runs,
    keep_alive_s,
    kinds_text,
    sampled,
    step_run,
    wave_counts,
)
from harness.lab.spec import SERVER_DEFAULTS, load_spec
from harness.lab.store import ChapterData
from harness.models.spike import K6_DIAL_TIMEOUT_MS, SYN_RETRY_MS

NO_DATA = "*No data for this part yet (`invoke run chapter3` runs it).*"


def retries(before_ms: float | None = None) -> str:
    """Linux's SYN retransmits (s after the first SYN), those before `before_ms` only when given."""
    return and_list(t // 1000 for t in SYN_RETRY_MS if before_ms is None or t < before_ms)


def runs_of(data: ChapterData, *findings: str, role: str | None = None, one_each: bool = False) -> list[StepRun]:
    return judged_runs(data, f000_steps(*findings, role=role, one_each=one_each))[0]


def since_spike_s(run: StepRun, ts_ms) -> float:
    return (ts_ms - run.t0_ms) / 1000


# ---- the setup ----------------------------------------------------------------------------------------------------

def knobs_list() -> str:
    """The four limits on a request's path into Tomcat, with Spring Boot's and Tomcat's defaults."""
    d = SERVER_DEFAULTS
    return f"""1. **The kernel's accept queue** (`server.tomcat.accept-count`, {d['TOMCAT_ACCEPT_COUNT']:,} by default). A new
   connection completes its TCP handshake in the kernel and waits in this queue until Tomcat accepts it. Linux
   lets the queue hold accept-count + 1 connections. When it is full, the kernel drops the client's SYN without a
   word, and the client's kernel sends it again {retries()} s later.
2. **Tomcat's connections** (`server.tomcat.max-connections`, {d['TOMCAT_MAX_CONNECTIONS']:,}). Tomcat accepts
   connections until it holds this many; then it stops accepting and the queue above fills.
3. **Tomcat's threads** (`server.tomcat.threads.max`, {d['TOMCAT_MAX_THREADS']:,}). Each request holds a thread for its
   whole {seconds(d['SLEEP_MS'])}; the others wait inside Tomcat, connected, for a free thread.
4. **The connection's timeout** (`server.tomcat.connection-timeout`). How long Tomcat waits for a request's bytes on
   a connection it has accepted, and (unless set separately) how long it keeps an idle *keep-alive* connection open
   after a response. The article sets 20 s; Spring Boot 3.5 sets none, and Tomcat's own
   {seconds(d['TOMCAT_CONNECTION_TIMEOUT'])} applies."""


def executors_sentence(data: ChapterData) -> str:
    """Which constant-vus steps sent every request, against the users asked for."""
    cv = sorted((m["requests"]["asked"], m["requests"]["issued"], s) for s, m in data.steps.items()
                if m["config"]["load"]["executor"] == "constant-vus")
    short = [(asked, issued, s) for asked, issued, s in cv if issued < asked]
    if not cv:
        return NO_DATA
    if not short:
        return f"Both executors sent every request, up to {cv[-1][0]:,} users."
    first = short[0][0]
    full = max((asked for asked, _, _ in cv if asked < first), default=0)
    later = [c for c in cv if c[0] >= first]
    fewest = min(short, key=lambda c: c[1] / c[0])
    return (f"Up to {full:,} users, both executors sent every request. From {first:,} on, `constant-vus` fell short in "
            f"{len(short)} of its {len(later)} steps: it sends only the requests of the users k6 managed to start within "
            f"its one second (the table's `issued` column; `{fewest[2]}` sent {fewest[1]:,} of {fewest[0]:,}), however "
            "many were asked for.")


# ---- threads, waves and timeouts ----------------------------------------------------------------------------------

def waves_sentence(data: ChapterData) -> str:
    runs = runs_of(data, "F000-a", "F000-b", one_each=True)
    if not runs:
        return NO_DATA
    return (f"Every {seconds(runs[0].model['service_ms'])} the pool finishes one wave of threads.max requests and starts "
            "the next: " + ", ".join(f"{r.asked:,} users on {r.model['threads']:,} threads took {len(wave_counts(r))} "
                                     "waves" for r in runs) + ".")


def timeouts_sentence(data: ChapterData) -> str:
    runs = runs_of(data, "F000-d", "F000-e", role=FEW_THREADS, one_each=True)
    if not runs:
        return NO_DATA
    parts = []
    for r in runs:
        m = r.model
        timed_out = r.kinds().get("request timeout", 0)
        parts.append(f"{r.asked:,} users on {m['threads']:,} threads need {m['waves']} waves, the last due at "
                     f"{seconds(m['wave_ms'][-1])}, and {timed_out:,} of them timed out"
                     + (f" (median at {timeouts_at(r):.1f} s)" if timed_out else ""))
    return f"Against k6's {seconds(runs[0].model['client_timeout_ms'])} timeout, " + "; ".join(parts) + "."


# ---- the connection ceiling ---------------------------------------------------------------------------------------

def ceiling_paragraph(data: ChapterData) -> str:
    """What F000-f's run shows, from ss, Actuator and k6, and why so many were answered."""
    runs = runs_of(data, "F000-f", role=ARTICLES_RUN, one_each=True)
    if not runs or not sampled(runs[0]):
        return NO_DATA
    r = runs[0]
    ceiling, peak, threads = r.model["ceiling"], r.peak("estab"), r.model["threads"]
    at_ceiling = r.ss.loc[r.ss["estab"] >= ceiling, "ts_ms"]
    actuator = data.actuator[data.actuator["step"] == r.step]
    conns = actuator[actuator["metric"] == "tomcat.connections.current"]
    busy = actuator[actuator["metric"] == "tomcat.threads.busy"]
    full = conns.loc[conns["value"] >= r.knob("TOMCAT_MAX_CONNECTIONS"), "ts_ms"]
    late = next(t for t in SYN_RETRY_MS if t >= K6_DIAL_TIMEOUT_MS)
    race = " (one more: the kernel's race, below)" if peak > ceiling else ""
    inside = (f" (Actuator shows Tomcat holding {conns['value'].max():,.0f} connections, up to {busy['value'].max():,.0f} "
              f"of {threads:,} threads busy, until {since_spike_s(r, full.max()):.0f} s)" if len(full) and len(busy) else "")
    return (f"The server side looks like the article's `ss -s`: established connections climb to {peak:,.0f}, the "
            f"model's ceiling of max-connections + accept-count + 1 = {ceiling:,}{race}, and stay there from "
            f"{since_spike_s(r, at_ceiling.min()):.0f} s to {since_spike_s(r, at_ceiling.max()):.0f} s. The users beyond "
            f"it are not refused; their SYNs are dropped and their kernels retry after {retries(K6_DIAL_TIMEOUT_MS)} s. "
            "The slots they need stay taken: every answered connection is kept alive, and Tomcat closes an idle one when "
            f"its keep-alive timeout ({keep_alive_s(r):.0f} s) expires, but it runs that close *on a worker thread*, "
            f"behind the requests already queued for the pool{inside}. Meanwhile k6 gives up connecting after "
            f"{seconds(K6_DIAL_TIMEOUT_MS)} (`dial: i/o timeout`: k6's dialer has a fixed {seconds(K6_DIAL_TIMEOUT_MS)} "
            f"timeout, separate from the {seconds(r.model['client_timeout_ms'])} request timeout), "
            f"{seconds(late - K6_DIAL_TIMEOUT_MS)} before the next retransmit. So {r.ok:,} users are answered: the "
            f"{held(r):,} the server holds, and {r.ok - held(r):,} of the {r.asked - held(r):,} beyond it who got in "
            "later through SYN-RECV (a handshake the client sees complete while the server's queue is full). The reason "
            "is one the article did not see: a race between Linux's SYN retransmits, Tomcat's keep-alive closes and k6's "
            "connect timeout. The article's other errors (\"request timeout at ~20 s\", \"connection reset by peer\", "
            f"\"cannot allocate memory\") came from a k6 on a laptop across a network; on loopback `{r.step}` saw "
            f"{kinds_text(r)}.")


def repeats_of(step: str, chapter: str = "chapter2") -> tuple[str, ...]:
    """The steps of another chapter's spec that run chapter 3's `step` again (`same_as`)."""
    return tuple(s.id for s in load_spec(chapter, ANY_MACHINE).steps if s.same_as == f"chapter3:{step}")


def repeats_sentence(data: ChapterData, repeats: ChapterData) -> str:
    """F000-f's rule on every run of its step: this chapter's, and chapter 2's repeats of it (`repeats`)."""
    ours = runs_of(data, "F000-f", role=ARTICLES_RUN, one_each=True)
    if not ours:
        return NO_DATA
    runs = ours + [r for r in (step_run(repeats, s) for s in repeats_of(ours[0].step)) if r is not None]
    beyond = [r.ok - held(r) for r in runs]
    unsampled = sum(not sampled(r) for r in runs)
    meets = sum(ceiling_decides(r) for r in runs)
    return (f"This chapter's `{ours[0].step}` and chapter 2's {len(runs) - 1} repeats of it"
            + (f" ({unsampled} without samplers)" if unsampled else "")
            + f" answered {min(r.ok for r in runs):,} to {max(r.ok for r in runs):,} of {ours[0].asked:,}: "
            f"{min(beyond):,} to {max(beyond):,} of the {ours[0].asked - held(ours[0]):,} users beyond the ceiling got "
            f"in. {'All' if meets == len(runs) else f'{meets} of the'} {len(runs)} runs meet the rule"
            + ("" if meets == len(runs) else "; the others do not") + ", and the book's tests recompute every verdict of "
            "this chapter on each repeat.")


def isolation_list(data: ChapterData) -> str:
    """F000-f's isolating steps: why each exists (the spec) and what it measured, against the model and the ceiling."""
    runs = runs_of(data, "F000-f", role=ISOLATES_F)
    if not runs:
        return NO_DATA
    lines = [f"The {len(runs)} isolating steps each change one thing (the table above lists their failures):", ""]
    for r in runs:
        diff = r.ok - r.model["succeeded"]
        lines.append(f"- `{r.step}`: {r.meta.get('why', '')}. **{r.ok:,} of {r.asked:,} answered**; the model says "
                     f"{r.model['succeeded']:,} ({'as measured' if diff == 0 else f'{abs(diff):,} too ' + ('few' if diff > 0 else 'many')}), "
                     f"the ceiling is {r.model['ceiling']:,}; failed: {kinds_text(r)}.")
    return "\n".join(lines)


def fixes_sentence(data: ChapterData) -> str:
    g = runs_of(data, "F000-g", one_each=True)
    i = runs_of(data, "F000-i", one_each=True)
    h = runs_of(data, "F000-h", role=ARTICLES_RUN, one_each=True)
    f = runs_of(data, "F000-f", role=ARTICLES_RUN, one_each=True)
    if not (g and i and h and f):
        return NO_DATA
    g, i, h, f = g[0], i[0], h[0], f[0]
    ct = lambda r: seconds(r.knob("TOMCAT_CONNECTION_TIMEOUT"))  # noqa: E731
    return (f"The three fixes the article tried behave as it says. max-connections {g.knob('TOMCAT_MAX_CONNECTIONS'):,} "
            f"holds all {g.asked:,} users from the start: {g.ok:,} answered (F000-g). accept-count "
            f"{i.knob('TOMCAT_ACCEPT_COUNT'):,} lets the kernel queue the {i.asked - i.knob('TOMCAT_MAX_CONNECTIONS'):,} "
            f"users Tomcat cannot hold, and Tomcat accepts them as slots free: {i.ok:,} answered (F000-i). "
            f"connection-timeout {ct(h)} changes nothing (F000-h): {h.ok:,} answered against {f.ok:,} with "
            f"{ct(f)}, and with either most users beyond the ceiling fail.")


def plus_one_sentence(data: ChapterData) -> str:
    runs = runs_of(data, role=PLUS_ONE)
    if not runs:
        return NO_DATA
    return (f"**The \"+1\".** The article saw at most 8293 connections, max-connections + accept-count + 1, and left the "
            f"one extra a mystery. Here {len(runs)} small steps hold every connection for "
            f"{seconds(runs[0].model['service_ms'])} and change one limit at a time:")


# ---- one connection, and this machine's limit ---------------------------------------------------------------------

def one_connection_paragraph(data: ChapterData) -> str:
    one = runs_of(data, "F000-j", role=ACCEPT_1, one_each=True)
    ten = runs_of(data, "F000-j", role=ACCEPT_10, one_each=True)
    isolating = runs_of(data, "F000-j", role=ISOLATES_J)
    if not (one and ten):
        return NO_DATA
    one, ten = one[0], ten[0]
    times = and_list(f"{t:.0f}" for t in sorted(one.requests.loc[one.requests["ok"], "end_s"]))
    text = (f"With the article's {keep_alive_s(one):.0f} s that is one answer at {times} s, {one.ok} in k6's "
            f"{seconds(one.model['client_timeout_ms'])}, with accept-count {one.knob('TOMCAT_ACCEPT_COUNT')} and "
            f"{ten.knob('TOMCAT_ACCEPT_COUNT')} alike ({ten.ok} of {ten.asked} with the larger queue)")
    default = SERVER_DEFAULTS["TOMCAT_CONNECTION_TIMEOUT"]
    own = [r for r in isolating if r.model.get("keep_alive") and keep_alive_s(r) * 1000 == default]
    if own:
        text += f"; with Tomcat's own {seconds(default)} (Spring Boot 3.5 sets none), {own[0].ok}"
    closed = sorted((r for r in isolating if not r.model.get("keep_alive")), key=lambda r: -r.knob("TOMCAT_ACCEPT_COUNT"))
    if closed:
        big, small = closed[0], closed[1:]
        text += (". Without keep-alive (k6 closing each connection) the slot frees with every response, and an accept "
                 f"queue large enough for everyone (accept-count {big.knob('TOMCAT_ACCEPT_COUNT')}) serves {big.ok} of "
                 f"{big.asked}: the article's result, which needs connections that are not kept alive")
        for r in small:
            text += (f". With accept-count {r.knob('TOMCAT_ACCEPT_COUNT')} and no keep-alive, {r.ok} were answered where "
                     f"the model says {r.model['succeeded']}: users that found the queue full got in later through SYN "
                     "retransmits and the SYN-RECV path, which the model leaves out (it gives a lower bound there)")
    return text + "."


def machine_limit_sentence(data: ChapterData) -> str:
    runs = runs_of(data, "F000-k", one_each=True)
    if not runs:
        return NO_DATA
    r = runs[0]
    nofile = r.meta.get("machine", {}).get("nofile_limit")
    text = (f"With {r.model['threads']:,} threads, max-connections {r.knob('TOMCAT_MAX_CONNECTIONS'):,} and an "
            f"accept-count of {r.knob('TOMCAT_ACCEPT_COUNT'):,} (which needs `net.core.somaxconn` raised to at least "
            f"that, as the step records), {r.ok:,} of {r.asked:,} users were answered. The article also reports errors "
            "above 20,000 users. That part cannot be tested here")
    if nofile:
        text += (f": one process on this machine may hold at most {nofile:,} open files, and every connection is one on "
                 f"each side, so neither k6 nor the server can hold {nofile:,} connections")
    return text + ". It is a limit of the machine, not a result about Tomcat."


def meaning_list() -> str:
    """What the chapter means for a real server, with Tomcat's defaults for the worked example."""
    threads, sleep_s = SERVER_DEFAULTS["TOMCAT_MAX_THREADS"], SERVER_DEFAULTS["SLEEP_MS"] / 1000
    return f"""- **Throughput is threads ÷ time per request.** {threads:,} threads and {sleep_s:g} s per request answer
  {threads / sleep_s:g} requests per second, and no other setting changes that.
- **Connections held ≤ max-connections + accept-count + 1.** Users beyond that are not refused; their SYNs are dropped
  and retried after {retries()} s, so they look like slow connects, not errors, until the client's timeout.
- **Timeouts come when waves × time per request pass the client's timeout.** With N users at once on T threads, the
  last answer comes after ⌈N / T⌉ × the time per request.
- **Keep-alive holds a connection slot after the answer.** A kept-alive idle connection counts against max-connections
  until the keep-alive timeout; with clients that keep connections open, max-connections is a limit on users, not on
  requests in flight.
- **connection-timeout is not a connect timeout.** It bounds the wait for a request's bytes and, by default, an idle
  keep-alive connection's life."""
