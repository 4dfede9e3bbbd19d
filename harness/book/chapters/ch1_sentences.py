"""Chapter 1's sentences: the setup, the model and what the data shows, each worded from the numbers it rests on
(the steps' recorded config and model, and their measurements), so that a re-run rewrites them.
"""
from __future__ import annotations

import pandas as pd

from harness.book.analysis import latency_percentiles, steps_frame, throughput_table
from harness.book.chapters.ch1_pool import (
    ARTICLE_002_SETUP,
    POOL_FULL,
    QUEUEING,
    RATE_HOLDS,
    chosen,
    f002_b,
    f002_d,
    pool_of,
    rps_change_beyond_pool,
)
from harness.book.prose import listed, ordinal, percent, span, times, words
from harness.book.verdict import MODEL_NOISE, REPRODUCED, within
from harness.lab.spec import SERVER_DEFAULTS
from harness.lab.store import ChapterData, answered
from harness.models.closed_loop import closed_loop_rps

PACE_CYCLES = 5  # the C = 1 pace is counted per this many sleep cycles (one sleeping request and its fast neighbours)


PACE_TOLERANCE = 0.10  # the pace "holds" while every window's rate stays within this share of the model's


LITTLE_TOLERANCE = 0.10  # Little's law "holds" while RPS × mean latency is within this share of C


SAME_LATENCY = 0.10  # two tools "share" a latency statistic within this share of each other


def setup_sentence(data: ChapterData) -> str:
    """The pool's knob, the value the steps ran with, and the endpoint's sleep pattern."""
    pool, article = pool_of(data), ARTICLE_002_SETUP["threads"]
    choice = f"the article's {article}" if pool.threads == article else f"{pool.threads:,} (the article's pool is {article})"
    return (f"The pool's size is the knob **`server.tomcat.threads.max`** (`TOMCAT_MAX_THREADS` here, Spring Boot's "
            f"default {SERVER_DEFAULTS['TOMCAT_MAX_THREADS']}); we set it to {choice}. The endpoint `{pool.path}` counts "
            f"requests across the whole server and sleeps {pool.sleep_ms / 1000:g} s on every {ordinal(pool.every)}; "
            f"the other {words(pool.every - 1)} return at once.")


def load_sentence(data: ChapterData) -> str:
    """The closed loop as the steps ran it: requests per step, the levels of C, and the shorter runs at small C."""
    table = steps_frame(data)
    usual = int(table["asked"].mode().iloc[0])
    executor = table["executor"].mode().iloc[0]
    text = (f"The load is a *closed loop*: each of C clients sends a request, waits for its response, and sends the next, "
            f"until {usual:,} requests are done (`ab -n {usual} -c C`; in k6 the `{executor}` executor with C virtual "
            f"users), at C = {listed(table['concurrency'].unique())}.")
    article = ARTICLE_002_SETUP["requests"]
    for c, rows in table[table["asked"] < usual].groupby("concurrency"):
        model = data.steps[rows["step"].iloc[0]]["model"]
        text += (f" At C = {c:,} the article's {article:,} requests take {article / model['rps']:,.0f} s; we send "
                 f"{int(rows['asked'].iloc[0]):,}, which take {model['duration_ms'] / 1000:,.0f} s, and a chart below "
                 "checks that the rate holds.")
    return text


def model_sentence(data: ChapterData) -> str:
    """The model's arithmetic from the pool and the sleep, ending in its formula."""
    pool = pool_of(data)
    return (f"A request costs a thread {pool.sleep_ms / 1000:g} s one time in {words(pool.every)} and nearly nothing "
            f"otherwise: {pool.mean_service_ms / 1000:g} s on average, so a busy thread finishes "
            f"{pool.rate_per_thread:g} requests per second. With C clients, min(C, {pool.threads}) threads are busy, which "
            f"gives the article's model (F002-b):\n\n"
            f"$$\\text{{RPS}} = \\min(C, {pool.threads}) \\times {pool.rate_per_thread:g}$$")


def little_model_sentence(data: ChapterData) -> str:
    """Little's law on the model's numbers at the largest C: how long a request spends in the server."""
    pool = pool_of(data)
    model = max((m["model"] for m in data.steps.values()), key=lambda m: m["concurrency"])
    latency_s = model["mean_latency_ms"] / 1000
    return ("Clients beyond the pool do not add throughput; they wait. Little's law (requests in the system = throughput × "
            f"time in the system) then says how long: with {model['concurrency']:,} clients in flight at "
            f"{model['rps']:,.0f} requests per second, a request spends {latency_s:g} s in the server on average, "
            f"{times(model['mean_latency_ms'] / pool.mean_service_ms)} its {pool.mean_service_ms / 1000:g} s of work.")


def rps_sentence(data: ChapterData) -> str:
    """Whether both tools land on the model, and how far the whole-run RPS falls short where the pool is full."""
    table, pool = throughput_table(data), pool_of(data)
    tools = "Both tools land" if table["tool"].nunique() == 2 else "Every step lands"
    lead = (f"{tools} on the model: {pool.rate_per_thread:g} requests per second per client until the pool is full, then "
            "flat." if f002_b(table).verdict == REPRODUCED else
            "Not every step lands inside the model's range (F002-b below says which).")
    below, full = table[table.concurrency < pool.threads], table[table.concurrency >= pool.threads]
    if full.empty:
        return lead
    short = -full["rps_error"]
    allowed = 1 - (full["rps_low"] / full["rps_model"]).min()
    run_s = max(data.steps[s]["model"]["duration_ms"] for s in full["step"]) / 1000
    text = (f"{lead} RPS here is the article's measure, requests answered over the whole run"
            + (f": within {span([below['rps_error'].abs().max()])} of the model below the pool, and" if len(below) else ",")
            + f" {span(short)} short of it at C = {listed(full['concurrency'].unique())}.")
    if short.max() <= allowed + MODEL_NOISE:
        return text + (" That is the end of the run, not the server: the last slow requests are still sleeping when the "
                       f"clients have nothing left to send, so a {run_s:g}-second run carries up to {pool.sleep_ms / 1000:g} s "
                       f"of tail, which costs up to {percent(allowed)}.")
    return text + (f" That is more than the end of the run explains: a {run_s:g}-second run's {pool.sleep_ms / 1000:g} s of "
                   f"tail costs at most {percent(allowed)}.")


def pace(data: ChapterData, step: str, window_s: float) -> pd.Series:
    """Answers per second in each full window of `window_s` since the step's first request."""
    requests = data.requests[(data.requests.step == step) & answered(data.requests)]
    since_s = (requests["end_ms"] - requests["start_ms"].min()) / 1000
    windows = int(since_s.max() // window_s)
    counts = (since_s // window_s).value_counts().reindex(range(windows), fill_value=0)
    return counts / window_s


def start_resolution_s(requests: pd.DataFrame) -> float:
    """How finely a step's start times were stamped: whole seconds (ab -g), else k6's milliseconds or finer."""
    starts = requests["start_ms"].dropna()
    return 1.0 if len(starts) and bool((starts % 1000 == 0).all()) else 0.001


def pace_sentence(data: ChapterData) -> str:
    """At C = 1, whether the rate holds over the whole run: answers per second in windows of a few sleep cycles."""
    steps, pool = chosen(data, (RATE_HOLDS,)), pool_of(data)
    if not steps:
        return "*No C = 1 steps yet.*"
    window_s = PACE_CYCLES * pool.every * pool.mean_service_ms / 1000
    rates = pd.concat([pace(data, s, window_s) for s in steps])
    model = data.steps[steps[0]]["model"]
    requests = data.requests[data.requests.step.isin(steps)]
    run_s = (requests.groupby("step")["end_ms"].max() - requests.groupby("step")["start_ms"].min()).max() / 1000
    c = model["concurrency"]
    measured = (f"every {window_s:g} s of it answers {span(rates, lambda r: f'{r:.1f}')} requests per second "
                f"({' and '.join(data.steps[s]['config']['load'].get('tool', 'k6') for s in steps)}), against the model's "
                f"{model['rps']:g}")
    # A window can gain or lose the answers of one timestamp step at each edge: ab's starts are whole seconds.
    coarse = max(start_resolution_s(requests[requests.step == s]) for s in steps)
    allowed = PACE_TOLERANCE * model["rps"] + 2 * coarse * model["rps"] / window_s
    if (rates.max() - rates.min()) <= allowed:
        spread_explained = (rates.max() - rates.min()) > PACE_TOLERANCE * model["rps"]  # only by the coarse stamps
        caveat = (f" (a tool that stamps starts in whole seconds can move a second's answers across a window's edge, "
                  f"up to {2 * coarse * model['rps'] / window_s:.1f} per second)" if spread_explained else "")
        return (f"At C = {c} the whole {run_s:.0f} s run keeps the same pace: {measured}{caveat}; no warm-up or drift "
                f"hides in the average:")
    return f"At C = {c} the pace does not hold over the {run_s:.0f} s run: {measured}; the average hides a drift:"


def little_sentence(data: ChapterData) -> str:
    """Little's law on the data: how close throughput × mean latency comes to C, up to the pool and beyond it."""
    table, pool = throughput_table(data), pool_of(data)
    off = table["littles_concurrency"] / table["concurrency"] - 1
    upto, beyond = table.concurrency <= pool.threads, table.concurrency > pool.threads
    holds = off[upto].abs().max() <= LITTLE_TOLERANCE
    text = (f"It does, to within {percent(off[upto].abs().max())}, up to C = {pool.threads}." if holds else
            f"Up to C = {pool.threads} it does not: the product is off by up to {percent(off[upto].abs().max())}.")
    for c, rows in table[beyond].groupby("concurrency"):
        shortfall = -off[rows.index]
        products = span(rows["littles_concurrency"], lambda v: f"{v:,.0f}")
        if shortfall.max() <= LITTLE_TOLERANCE:
            text += f" At C = {c:,} it holds too: the product comes out at {products}."
        else:
            text += (f" At C = {c:,} the product comes out at {products}, {span(shortfall)} short: a run with "
                     f"{int(rows['asked'].iloc[0]):,} requests and {c:,} clients spends its last seconds draining, with "
                     "fewer and fewer requests in flight, and the law counts the average.")
    return text


def latency_sentences(data: ChapterData) -> str:
    """The latency of a full pool (one sleep, no wait) and of a queue (waits of several service times)."""
    pool = pool_of(data)
    ok = data.requests[answered(data.requests)]
    parts = []
    full = chosen(data, (POOL_FULL,))
    if full:
        durations = [ok.loc[ok.step == s, "duration_ms"] for s in full]
        c = data.steps[full[0]]["config"]["load"]["vus"]
        parts.append(
            f"At C = {c:,}, with a thread for every client, {span([(d < pool.mean_service_ms).mean() for d in durations])} of "
            f"requests are answered within {pool.mean_service_ms:.0f} ms, the mean thread time, and "
            f"{span([(d >= pool.sleep_ms).mean() for d in durations])} after one {pool.sleep_ms / 1000:g} s sleep "
            f"(the slowest after {span([d.max() for d in durations], lambda v: f'{v:,.0f}')} ms).")
    queued = chosen(data, findings=(QUEUEING,))
    if queued:
        parts.append(queue_sentence(data, queued))
    return " ".join(parts) or "*No full-pool or queueing steps yet.*"


def queue_sentence(data: ChapterData, steps: list[str]) -> str:
    pool = pool_of(data)
    model = data.steps[steps[0]]["model"]
    throughput = throughput_table(data).set_index("step").loc[steps]
    percentiles = latency_percentiles(data, steps).set_index("step").loc[steps]
    slowest = percentiles["max_ms"]
    sleeps = int(slowest.min() // pool.sleep_ms)
    text = (f"At C = {model['concurrency']:,}, {model['concurrency'] - model['threads']:,} of the {model['concurrency']:,} "
            f"requests in flight wait for a thread at any moment. The mean latency rises to "
            f"{span(throughput['mean_latency_ms'] / 1000, lambda v: f'{v:.2f}')} s, against Little's "
            f"{model['mean_latency_ms'] / 1000:g} s, and the slowest requests wait "
            f"{span(slowest / 1000, lambda v: f'{v:.1f}')} s"
            + (f", more than {words(sleeps)} full sleep{'s' if sleeps > 1 else ''}." if sleeps else "."))
    tools = [data.steps[s]["config"]["load"].get("tool", "k6") for s in steps]
    if len(steps) != 2 or len(set(tools)) != 2:
        return text
    stats = {"mean": throughput["mean_latency_ms"], "median": percentiles["p50_ms"], "99th percentile": percentiles["p99_ms"]}
    same = [f"the {name} ({a:,.0f} and {b:,.0f} ms)" for name, (a, b) in stats.items() if within(a, b, SAME_LATENCY)]
    differ = [f"the {name} ({tools[0]} {a:,.0f} ms, {tools[1]} {b:,.0f} ms)" for name, (a, b) in stats.items()
              if not within(a, b, SAME_LATENCY)]
    if not differ:
        return text + f" The two tools share {' and '.join(same)}: the queue releases requests alike for both."
    return (text + (f" The two tools share {' and '.join(same)} but not {' and '.join(differ)}." if same else
                    f" The two tools differ in {' and '.join(differ)}.")
            + " Both are queueing; the order in which the queue releases requests may differ between k6's kept-alive "
              "connections and ab's one-connection-per-request.")


def busy_sentence(data: ChapterData) -> str:
    """Busy threads' peaks per C, below the pool and beyond it, and the pool moving in step."""
    pool = pool_of(data)
    busy = data.actuator[data.actuator.metric == "tomcat.threads.busy"]
    vus = busy["step"].map(lambda s: data.steps[s]["config"]["load"]["vus"])
    peaks = busy.groupby(vus)["value"].max()
    parts = [f"at C = {c:,} {'' if peak == c else 'at most '}{words(peak)} threads are busy"
             for c, peak in peaks.items() if 1 < c < pool.threads]
    full = peaks[peaks.index >= pool.threads]
    if len(full):
        parts.append(f"from C = {full.index.min():,} on, all {pool.threads} are, and the extra clients only lengthen the queue"
                     if (full == pool.threads).all() else
                     f"from C = {full.index.min():,} on, busy threads peak at {span(full, lambda v: f'{v:.0f}')} of "
                     f"{pool.threads}")
    text = "; ".join(parts)
    return ((text[:1].upper() + text[1:] + ". ") if text else "") + (
        "The completions show something the averages hide: a saturated pool moves in step. Every thread picks up a "
        f"sleeping request within the first moments, all of them wake together {pool.sleep_ms / 1000:g} s later, and a "
        "burst of fast requests follows before the next round of sleeps:")


def premise_sentence(data: ChapterData) -> str:
    """The premise of the ways out (F002-d), as far as the data bears it out."""
    table, pool = throughput_table(data), pool_of(data)
    changes = ", ".join(f"{tool} {percent(value, '+')}" for tool, value in rps_change_beyond_pool(table).items())
    most = table["concurrency"].max()
    if f002_d(data, table).verdict == REPRODUCED:
        return (f"All three start from the premise our data confirms: with every thread busy and RPS flat from "
                f"C = {pool.threads} to {most:,} ({changes}), the pool is the only limit.")
    return (f"All three start from the premise that the pool is the only limit, which our data does not bear out here "
            f"({f002_d(data, table).measured}).")


def default_pool_sentence(hold_ms: float = 50) -> str:
    """The chapter's lesson on Spring Boot's default pool, for requests that hold a thread `hold_ms` each."""
    threads = SERVER_DEFAULTS["TOMCAT_MAX_THREADS"]
    return (f"For a thread-per-request server, throughput is threads ÷ the time a request holds a thread. A pool of "
            f"{threads} threads (Spring Boot's default) on requests that hold a thread for {hold_ms:g} ms serves at most "
            f"{closed_loop_rps(threads, threads, hold_ms):,.0f} requests per second, however many clients arrive.")
