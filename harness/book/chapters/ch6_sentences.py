"""Chapter 6's sentences and its model table: every number comes from the step table (ch6_steps) or the article's
files, so a re-run rewrites them."""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch6_charts import label, sustained
from harness.book.chapters.ch6_steps import WARMUP_S, pick, port_bounds, ports_frame, ports_of
from harness.book.chapters.ch6_verdicts import article_numbers, article_series
from harness.book.prose import percent
from harness.book.tables import markdown_table
from harness.models import proxy

PROXY_CORES = 1.0  # nginx and the service share CPU 1 (experiments/chapter6.toml's placement)
MODEL_MISS = 0.25  # the model "misses" a step it overestimates by more than this share
SATURATED = 0.9  # a process (or CPU 1's two) using this much of a core set the pace


def setup_sentence(table: pd.DataFrame) -> str:
    rows = sustained(table)
    first = rows.iloc[0]
    return (f"Each sustained step runs {first.users:.0f} k6 virtual users (or, in the wrk-* steps, as many wrk "
            f"connections) for {first.duration_s:.0f} s; each holds one connection and sends its next request as "
            f"soon as the last is answered, like the article's client. k6's throughput is counted after the first "
            f"{WARMUP_S} s, while the service's JVM compiles its code (wrk's is its whole run). k6 and wrk run on "
            f"CPU 0, nginx and the Netty service share CPU 1: the article gave each its own 4-core machine. "
            f"{len(table)} steps in all, {int((table.network == 'hosts').sum())} of them on three hosts.")


def article_sentence() -> str:
    numbers, series = article_numbers(), article_series()
    top = series["requests_per_s"].max()
    return (f"The article's numbers: the service alone {numbers['service_alone']:,.0f}/s, NGINX alone "
            f"{numbers['nginx_alone']:,.0f}/s, proxied {numbers['proxied_without_keepalive']:,.0f}/s, and with "
            f"keepalive {numbers['upstream_keepalive']:.0f} a series of {len(series)} per-second lines that starts at "
            f"{series['requests_per_s'].iloc[0]:,}/s and reaches {top:,}/s.")


def stall_sentence(table: pd.DataFrame, prefix: str = "wrk-") -> str:
    alone, nginx, proxied = (pick(table, prefix + s) for s in ("alone", "nginx-alone", "proxied"))
    if alone is None or nginx is None or proxied is None:
        return ""
    return (f"With {alone.tool}, straight to the service, {alone.users:.0f} connections got {alone.tps:,.0f} answers "
            f"a second; nginx answering by itself {nginx.tps:,.0f}/s. Through nginx with its defaults, {proxied.tps:,.0f}/s: "
            f"{percent(proxied.tps / min(alone.tps, nginx.tps))} of the slower. Every proxied request opened a "
            f"connection to the service ({proxied.new_connections_per_s:,.0f} a second, against "
            f"{proxied.tps:,.0f} answers) and the service's CPU per request rose from {alone.service_cpu_ms:.3f} ms to "
            f"{proxied.service_cpu_ms:.3f} ms.")


def generator_sentence(table: pd.DataFrame) -> str:
    """k6's own ceiling against wrk's, from the steps where each was the busiest process."""
    rows = sustained(table)
    k6, wrk = rows[rows.tool == "k6"], pick(table, "wrk-alone")
    fastest = k6.loc[k6["tps"].idxmax()]
    if wrk is None:
        return ""
    return (f"k6 could not show this by itself: on its one core it sent at most {fastest.tps:,.0f} requests a second "
            f"({fastest.step}, {fastest.k6_cpu:.2f} cores), so the service alone, nginx alone and the fully kept-alive "
            f"path all looked alike to it. wrk, a load generator written in C, got {wrk.tps:,.0f}/s from the service "
            f"alone with {wrk.wrk_cpu:.2f} cores.")


def sweep_sentence(table: pd.DataFrame) -> str:
    proxied = pick(table, "proxied")
    kept = table[(table.network == "loopback") & (table.route == "nginx → service") & (table.workers == 1)
                 & (table.tool == "k6") & (table.keepalive > 0) & (table.users > 1)].sort_values("keepalive")
    parts = [f"{label(r).removeprefix('proxied, ')}: {r.tps:,.0f}/s, {r.new_connections_per_s:,.0f} new connections/s"
             for _, r in kept.iterrows()]
    return (f"Without keep-alive: {proxied.tps:,.0f}/s and {proxied.new_connections_per_s:,.0f} new connections/s. "
            + "; ".join(parts) + ".")


def header_sentence(table: pd.DataFrame) -> str:
    theirs, ours = pick(table, "keepalive-8"), pick(table, "keepalive-8-empty")
    if theirs is None or ours is None:
        return ""
    return (f"The Connection header makes no difference to reuse: the article's \"Keep-Alive\" gave {theirs.tps:,.0f}/s "
            f"with {theirs.new_connections_per_s:,.0f} new connections/s, nginx's documented \"\" {ours.tps:,.0f}/s with "
            f"{ours.new_connections_per_s:,.0f}/s. What matters is HTTP/1.1 and any value but \"close\".")


def workers_sentence(table: pd.DataFrame) -> str:
    one, two = pick(table, "proxied"), pick(table, "proxied-workers-2")
    kept_one, kept_two = pick(table, "keepalive-8"), pick(table, "keepalive-8-workers-2")
    if two is None or kept_two is None:
        return ""
    return (f"A second nginx worker on the same core: {one.tps:,.0f} → {two.tps:,.0f}/s without keep-alive, "
            f"{kept_one.tps:,.0f} → {kept_two.tps:,.0f}/s with keepalive 8, which then keeps 8 idle connections per "
            f"worker ({kept_one.new_connections_per_s:,.0f} → {kept_two.new_connections_per_s:,.0f} new connections/s).")


def hosts_sentence(table: pd.DataFrame) -> str:
    proxied, kept, full = (pick(table, s) for s in ("hosts-proxied", "hosts-keepalive-8", "hosts-keepalive-256"))
    if proxied is None or kept is None or full is None:
        return ""
    return (f"Across the switch, nginx with its defaults answered {proxied.tps:,.0f}/s (loopback: "
            f"{pick(table, 'proxied').tps:,.0f}/s) and held at most {proxied.upstream_time_wait_max:,.0f} sockets in "
            f"TIME_WAIT: with HTTP/1.0 the service closes most connections first, so most TIME_WAITs are on its side. "
            f"With keepalive 8 the service keeps its connections open and nginx closes those it has no room for, so "
            f"every TIME_WAIT is nginx's: {kept.upstream_time_wait_max:,.0f} after {kept.duration_s:.0f} s, of "
            f"{ports_of(kept.ports):,} ephemeral ports, and {kept.tps:,.0f}/s answered, fewer than without keep-alive. "
            f"With keepalive 256 nothing is closed: {full.tps:,.0f}/s, {full.new_connections_per_s:,.1f} new "
            f"connections/s.")


def wall_sentence(data, table: pd.DataFrame, step: str = "hosts-keepalive-8-long") -> str:
    """The long keepalive-8 step across the switch: when its throughput fell, how many ports were in TIME_WAIT
    then, when connects began to fail for want of a port, and what those requests got."""
    row = pick(table, step)
    if row is None:
        return ""
    frame = ports_frame(data, step)
    answered_ = frame[frame.what == "answered"].set_index("second")["value"]
    best = answered_.cummax()
    fell = int(answered_[(answered_ < best / 2) & (best > 0)].index.min())
    waiting = frame[frame.what == "nginx's TIME_WAIT sockets"].set_index("second")["value"]
    refused = frame[frame.what == "connect() failed (99) lines"].set_index("second")["value"]
    first_error = refused[refused > 0].index.min()
    failed = int(frame[frame.what == "failed (502)"]["value"].sum())
    ports = ports_of(row.ports)
    return (f"Kept running for {row.duration_s:.0f} s, keepalive 8 across the switch answered up to "
            f"{best.max():,.0f} requests a second until second {fell}, when nginx held {waiting.loc[:fell].max():,.0f} "
            f"sockets in TIME_WAIT ({percent(waiting.loc[:fell].max() / ports)} of its {ports:,} ports); from then on "
            f"it answered {answered_.loc[fell:].median():,.0f} a second (median) and used "
            f"{percent(row.nginx_cpu)} of a core, looking for a free port on every connect; the model's ceiling once "
            f"most ports wait out their 60 s is {proxy.new_connection_ceiling(port_bounds(row.ports)):,.0f} new "
            f"connections a second (ports / 60 s). At second "
            f"{first_error} every port was taken ({waiting.max():,.0f} in TIME_WAIT) and nginx logged "
            f"`connect() failed (99: Cannot assign requested address)` {row.eaddrnotavail:,.0f} times; "
            f"{failed:,} requests got a 502 instead of an answer.")


def bottleneck_sentence(table: pd.DataFrame) -> str:
    """Which CPU was full in each sustained step (limit_of), steps grouped by it."""
    rows = sustained(table)
    limits = rows.assign(limit=[limit_of(r) for _, r in rows.iterrows()]).groupby("limit", sort=False)["step"]
    return ("What set each step's pace, read from its processes' CPU (a core at least "
            f"{percent(SATURATED)} used): " + "; ".join(f"{limit} in {', '.join(steps)}" for limit, steps in limits)
            + ".")


def wrk_sentence(table: pd.DataFrame) -> str:
    pairs = [(pick(table, s), pick(table, f"wrk-{s}")) for s in ("alone", "nginx-alone", "proxied", "keepalive-8",
                                                                 "keepalive-256")]
    pairs = [(k, w) for k, w in pairs if k is not None and w is not None]
    if not pairs:
        return ""
    parts = [f"{label(k)}: k6 {k.tps:,.0f}/s, wrk {w.tps:,.0f}/s (wrk used {w.wrk_cpu:.2f} cores, k6 {k.k6_cpu:.2f})"
             for k, w in pairs]
    return "The same steps with wrk as the load generator: " + "; ".join(parts) + "."


def limit_of(row: pd.Series) -> str:
    """What set a sustained step's pace: the CPU that was (nearly) full, CPU 0 the load generator's, CPU 1 the
    servers'; neither: the round trips of the closed loop."""
    tool = row.wrk_cpu if row.tool == "wrk" else row.k6_cpu
    servers = _cores(row.service_cpu) + _cores(row.nginx_cpu)
    if tool >= SATURATED and tool >= servers:
        return f"the load generator ({row.tool})"
    return "nginx and the service (CPU 1)" if servers >= SATURATED else "the round trips"


def _cores(value: float) -> float:
    return 0.0 if value != value else value


def connection_cpu_ms(table: pd.DataFrame) -> float:
    """The service's CPU for one new connection: its CPU per request with a connection each (connect) minus on a
    kept one (reuse), one user on loopback."""
    new, kept = pick(table, "connect"), pick(table, "reuse")
    return new.service_cpu / new.tps * 1000 - kept.service_cpu / kept.tps * 1000


def predicted_cpu_ms(table: pd.DataFrame, row: pd.Series, per_connection_ms: float) -> float:
    """CPU 1's time for one request of `row`, from other steps only: the service's and nginx's per request when each
    answered alone (with the same load tool), plus a new connection's CPU for the share of requests that opened one."""
    prefix = "" if row.tool == "k6" else f"{row.tool}-"
    service, nginx = pick(table, f"{prefix}alone").service_cpu_ms, pick(table, f"{prefix}nginx-alone").nginx_cpu_ms
    if row.route == "nginx alone":
        return nginx
    opened = min(row.new_connections_per_s / row.tps, 1.0) if row.route == "nginx → service" else 0.0
    return service + (nginx if row.route == "nginx → service" else 0.0) + opened * per_connection_ms


def model_table(table: pd.DataFrame) -> Markdown:
    """Per sustained step: the model's CPU bound (CPU 1 over the CPU a request costs, predicted from the alone steps
    and the one-user steps' cost of a connection), the closed loop's bound from round trips, what was answered, and
    which CPU was full."""
    per_connection = connection_cpu_ms(table)
    kept = pick(table, "reuse")
    rows = []
    for _, r in sustained(table).iterrows():
        cpu_ms = predicted_cpu_ms(table, r, per_connection)
        per_request = proxy.per_request_ms(0, kept.request_ms, 0, new_connection=r.new_connections_per_s > r.tps / 2)
        bound = proxy.predict(int(r.users), per_request, cpu_ms, PROXY_CORES)
        rows.append({"step": r.step, "predicted CPU ms / request": f"{cpu_ms:.3f}",
                     "CPU 1's bound /s": f"{bound.cpu_bound_tps:,.0f}", "round trips' bound /s": f"{bound.tps:,.0f}",
                     "answered /s": f"{r.tps:,.0f}", "limit (measured)": limit_of(r)})
    return Markdown(markdown_table(pd.DataFrame(rows)))


def connection_sentence(table: pd.DataFrame) -> str:
    return (f"One new connection cost the service {connection_cpu_ms(table):.3f} ms of CPU (one user: its CPU per "
            f"request on a new connection each time minus on a kept one), against "
            f"{pick(table, 'wrk-alone').service_cpu_ms:.3f} ms for a whole request on a kept connection with 200 "
            f"connections (wrk-alone).")


def misses_sentence(table: pd.DataFrame) -> str:
    """The steps the model's CPU bound overestimates by more than MODEL_MISS, CPU 1 full: where a cost it leaves out
    showed."""
    per_connection = connection_cpu_ms(table)
    rows = sustained(table)
    missed = [r for _, r in rows.iterrows() if limit_of(r).startswith("nginx and the service")
              and r.tps < (1 - MODEL_MISS) * PROXY_CORES * 1000 / predicted_cpu_ms(table, r, per_connection)]
    if not missed:
        return f"Every step limited by CPU 1 answered within {percent(MODEL_MISS)} of the model's CPU bound or above it."
    return (f"The model's CPU bound is more than {percent(MODEL_MISS)} too high for "
            + ", ".join(f"{r.step} ({r.tps:,.0f}/s)" for r in missed)
            + ": proxying a request costs nginx more than answering it itself, and across the switch nginx spends "
              "CPU looking for a free port (the three-hosts section).")


def overflow_sentence(data, table: pd.DataFrame, step: str = "proxied") -> str:
    """Why the steps that open connections have a p99 near a second: SYNs dropped at the service's full accept queue
    (the kernel's listen overflows, counted machine-wide on loopback), each retried after TCP's initial 1 s timeout."""
    row, kept = pick(table, step), pick(table, "keepalive-256")
    ss = data.ss[data.ss.step == step]
    backlog = data.steps[step]["config"]["services"]["api"]["backlog"]
    return (f"The p99 of the steps that open connections is near a second ({step}: {row.p99_ms:,.0f} ms, against "
            f"{kept.p99_ms:,.0f} ms with keepalive 256). In {step} the kernel counted "
            f"{int(ss['listen_overflows'].sum()):,} listen-queue overflows: a SYN that finds the service's accept "
            f"queue full (its backlog is {backlog}) is dropped, and the client sends it again only after TCP's "
            f"initial retransmission timeout of one second. (On loopback these counters are the whole machine's; on "
            f"the three hosts they are the proxy's, which is why they read zero there.)")
