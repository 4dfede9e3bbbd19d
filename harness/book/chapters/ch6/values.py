"""Chapter 6's numbers for its prose: small dataclasses the .qmd quotes inline, from the step table (each number the
mean of a step's runs: ch6.runs.mean_table), the long step's per-second record, and the article's files. No sentence
is written here.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness.book.chapters.ch6.article import article_numbers, article_series
from harness.book.chapters.ch6.charts import sustained
from harness.book.chapters.ch6.claims import WARMUP_S as CLAIM_WARMUP_S
from harness.book.chapters.ch6.model import (LOAD_TOOL, ROUND_TRIPS, SATURATED, SERVERS, beaten, connection_cpu_ms,
                                             limits, misses, model_frame)
from harness.book.chapters.ch6.runs import WARMUP_S, pick, port_bounds, ports_frame, ports_of
from harness.lab.store import ChapterData
from harness.models import proxy

LONG_STEP = "hosts-keepalive-8-long"
FAST_PATHS = ("alone", "nginx-alone", "keepalive-256")  # k6 on loopback, no new connection per request


@dataclass(frozen=True)
class Article:
    service: float
    nginx: float
    proxied: float
    kept: float  # with keepalive 8, "saturated at"
    keepalive: int
    workers: int
    clients: int
    lines: int  # its client's per-second lines with keepalive 8
    first: float
    top: float
    stall_share: float  # proxied / the slower alone
    latency_ms: float  # its example latency
    handshake_ms: float  # its "3 x 10ms"


def article() -> Article:
    n, series = article_numbers(), article_series()["requests_per_s"]
    return Article(n["service_alone"], n["nginx_alone"], n["proxied_without_keepalive"], n["proxied_with_keepalive"],
                   int(n["upstream_keepalive"]), int(n["worker_processes"]), int(n["client_connections"]), len(series),
                   float(series.iloc[0]), float(series.max()),
                   n["proxied_without_keepalive"] / min(n["service_alone"], n["nginx_alone"]), n["example_latency"],
                   proxy.article_handshake_ms(n["example_latency"]))


@dataclass(frozen=True)
class Setup:
    users: int
    duration_s: float
    warmup_s: float
    steps: int
    hosts_steps: int
    repeated: int  # steps run more than once …
    runs: tuple[int, int]  # … this many times: the fewest and the most runs of one


def setup(table: pd.DataFrame) -> Setup:
    rows = sustained(table)
    repeated = table[table["runs"] > 1]
    return Setup(int(rows["users"].iloc[0]), float(rows["duration_s"].median()), WARMUP_S, len(table),
                 int((table["network"] == "hosts").sum()), len(repeated), runs_range(repeated["runs"]))


def runs_range(runs: pd.Series) -> tuple[int, int]:
    """The fewest and the most times the repeated steps ran ((1, 1) when none repeated)."""
    return (int(runs.min()), int(runs.max())) if len(runs) else (1, 1)


@dataclass(frozen=True)
class Stall:
    alone: float  # wrk, mean of the runs
    nginx: float
    proxied: float
    share: float  # proxied / the slower alone
    proxied_new: float  # new upstream connections a second through the proxy
    service_cpu_alone_ms: float
    service_cpu_proxied_ms: float
    k6_top: float  # the fastest k6 step
    k6_top_step: str
    k6_top_cores: float  # k6's CPU there
    wrk_cores: float  # wrk's CPU straight to the service
    k6_fast_low: float  # k6 through the three fast paths (the service alone, nginx alone, keepalive 256): slowest …
    k6_fast_high: float  # … and fastest


def stall(table: pd.DataFrame) -> Stall:
    alone, nginx, proxied = (pick(table, f"wrk-{s}") for s in ("alone", "nginx-alone", "proxied"))
    k6 = sustained(table)[sustained(table)["tool"] == "k6"]
    top = k6.loc[k6["tps"].idxmax()]
    fast = [pick(table, s).tps for s in FAST_PATHS]
    return Stall(alone.tps, nginx.tps, proxied.tps, proxied.tps / min(alone.tps, nginx.tps),
                 proxied.new_connections_per_s, alone.service_cpu_ms, proxied.service_cpu_ms, top.tps, top.step,
                 top.k6_cpu, alone.wrk_cpu, min(fast), max(fast))


@dataclass(frozen=True)
class Climb:
    proxied: float  # wrk, mean of the runs
    kept8: float
    kept8_new_share: float  # of its requests, the share that opened an upstream connection
    kept32: float
    kept32_new_share: float
    kept256: float
    kept256_new_share: float
    k6_proxied_new: float  # k6: new connections a second without keep-alive …
    k6_kept8_new: float  # … with keepalive 8 …
    k6_kept256_new: float  # … and with keepalive 256


def climb(table: pd.DataFrame) -> Climb:
    proxied, k8, k32, k256 = (pick(table, f"wrk-{s}") for s in ("proxied", "keepalive-8", "keepalive-32",
                                                                  "keepalive-256"))

    def share(row: pd.Series) -> float:
        return row.new_connections_per_s / row.tps if row is not None else float("nan")

    kept32 = k32.tps if k32 is not None else float("nan")
    return Climb(proxied.tps, k8.tps, share(k8), kept32, share(k32), k256.tps, share(k256),
                 *(pick(table, s).new_connections_per_s for s in ("proxied", "keepalive-8", "keepalive-256")))


SETTINGS = ("network", "tool", "route", "keepalive", "connection_header", "users", "duration_s")  # all but workers


def one_worker(table: pd.DataFrame, step: str) -> pd.Series:
    """The one-worker step that ran as `step` did in every other setting (SETTINGS): the baseline a second worker is
    compared with (keepalive-8-workers-2 sends nginx's documented Connection "", so its baseline is keepalive-8-empty,
    not keepalive-8 with the article's Keep-Alive)."""
    row = pick(table, step)
    same = table[(table["workers"] == 1) & (table["step"] != step)]
    for column in SETTINGS:
        same = same[same[column].isna()] if pd.isna(row[column]) else same[same[column] == row[column]]
    if len(same) != 1:
        raise ValueError(f"{step}: {len(same)} one-worker steps share its other settings ({list(same['step'])})")
    return same.iloc[0]


@dataclass(frozen=True)
class Variants:
    """k6 on loopback: the article's Connection header against nginx's documented one, and a second worker against
    the one-worker step that differs from it in nothing else (one_worker)."""

    header_tps: float  # Connection: Keep-Alive (the article's)
    header_new: float
    empty_tps: float  # Connection: "" (nginx's documentation)
    empty_new: float
    proxied_one: float  # no keep-alive: one worker …
    proxied_two: float  # … and two
    kept_one: float  # keepalive 8: one worker (the step like kept_two in every other setting) …
    kept_two: float  # … and two
    kept_one_new: float  # new connections a second, the same two steps
    kept_two_new: float
    kept_one_step: str  # which one-worker step kept_one is


def variants(table: pd.DataFrame) -> Variants:
    r = {s: pick(table, s) for s in ("keepalive-8", "keepalive-8-empty", "proxied-workers-2", "keepalive-8-workers-2")}
    proxied_one, kept_one = one_worker(table, "proxied-workers-2"), one_worker(table, "keepalive-8-workers-2")
    return Variants(r["keepalive-8"].tps, r["keepalive-8"].new_connections_per_s, r["keepalive-8-empty"].tps,
                    r["keepalive-8-empty"].new_connections_per_s, proxied_one.tps, r["proxied-workers-2"].tps,
                    kept_one.tps, r["keepalive-8-workers-2"].tps, kept_one.new_connections_per_s,
                    r["keepalive-8-workers-2"].new_connections_per_s, kept_one.step)


@dataclass(frozen=True)
class Hosts:
    proxied: float  # k6 across the switch, nginx's defaults
    loopback_proxied: float
    proxied_time_wait: float  # nginx's TIME_WAIT sockets at most
    kept8: float
    kept8_time_wait: float
    kept8_s: float
    ports: int
    kept256: float
    kept256_new: float


def hosts(table: pd.DataFrame) -> Hosts:
    proxied, kept, full = (pick(table, s) for s in ("hosts-proxied", "hosts-keepalive-8", "hosts-keepalive-256"))
    return Hosts(proxied.tps, pick(table, "proxied").tps, proxied.upstream_time_wait_max, kept.tps,
                 kept.upstream_time_wait_max, kept.duration_s, ports_of(kept.ports), full.tps, full.new_connections_per_s)


@dataclass(frozen=True)
class Wall:
    """The long keepalive-8 step across the switch, second by second (its first run)."""

    duration_s: float
    best: float  # answers in its best second
    fell: int  # the first second under half the best so far
    waiting_then: float  # nginx's TIME_WAIT sockets by then
    ports: int
    after: float  # answers a second from then on (median)
    nginx_cores: float
    ceiling: float  # the model's new connections a second once every port waits out its 60 s
    first_error: int | None  # the first second nginx logged error 99 (None: it never did)
    waiting_most: float
    errors: float  # error-99 lines logged
    failed: int  # requests answered 502


def wall(data: ChapterData, table: pd.DataFrame, step: str = LONG_STEP) -> Wall:
    row, frame = pick(table, step), ports_frame(data, step)
    answered_ = frame[frame.what == "answered"].set_index("second")["value"]
    best = answered_.cummax()
    below = answered_[(answered_ < best / 2) & (best > 0)]
    fell = int(below.index.min()) if len(below) else int(answered_.index.max())  # never fell: its last second
    waiting = frame[frame.what == "nginx's TIME_WAIT sockets"].set_index("second")["value"]
    refused = frame[frame.what == "connect() failed (99) lines"].set_index("second")["value"]
    return Wall(row.duration_s, float(best.max()), fell, float(waiting.loc[:fell].max()), ports_of(row.ports),
                float(answered_.loc[fell:].median()), row.nginx_cpu, proxy.new_connection_ceiling(port_bounds(row.ports)),
                int(refused[refused > 0].index.min()) if (refused > 0).any() else None, float(waiting.max()),
                row.eaddrnotavail,
                int(frame[frame.what == "failed (502)"]["value"].sum()))


@dataclass(frozen=True)
class Bottleneck:
    steps: int  # sustained steps
    saturated: float  # a core this full set the pace
    load_tool: int  # steps the load generator's core limited …
    load_tool_k6: int  # … of them k6's
    servers: int  # steps CPU 1 limited
    round_trips: int  # steps neither core limited
    connection_cpu_ms: float  # the service's CPU for one new connection
    request_cpu_ms: float  # … and for a whole request on a kept connection (wrk-alone)
    missed: tuple[str, ...]  # the steps the model's CPU bound overestimates
    beaten: tuple[str, ...]  # the steps that answered more than the bound allows, most beaten first …
    beaten_times: float  # … the most beaten's rate over its bound
    beaten_tps: float  # … its rate
    beaten_cpu_ms: float  # … and its predicted CPU per request
    beaten_all_opened: bool  # every beaten step opened upstream connections


def bottleneck(table: pd.DataFrame) -> Bottleneck:
    limit = limits(table)
    tool = limit[limit.str.startswith(LOAD_TOOL)]
    frame = model_frame(table)
    missed, over = misses(frame), beaten(frame)
    most = over.iloc[0] if len(over) else None
    return Bottleneck(len(limit), SATURATED, len(tool), int(tool.str.endswith("(k6)").sum()),
                      int((limit == SERVERS).sum()), int((limit == ROUND_TRIPS).sum()), connection_cpu_ms(table),
                      pick(table, "wrk-alone").service_cpu_ms, tuple(missed["step"]), tuple(over["step"]),
                      *((most.times, most.tps, most.cpu_ms) if most is not None else (float("nan"),) * 3),
                      bool((over["opened"] > 0).all()))


@dataclass(frozen=True)
class Handshake:
    new_ms: float  # one user on loopback: a request on a new connection (median, mean of the runs) …
    kept_ms: float  # … and on a kept one
    connect_ms: float  # k6's connect time alone
    hosts_new_ms: float
    hosts_kept_ms: float
    runs: int
    model_adds_ms: float  # at the article's 10 ms: one round trip
    overflow_step: str  # a step that opened a connection per request
    overflow_p99_ms: float
    kept_p99_ms: float  # keepalive 256's
    overflows: int  # listen-queue overflows the kernel counted in it
    backlog: int  # the service's accept queue
    warmup_s: float  # F003-c.1 reads after the step's first warmup_s


def handshake(data: ChapterData, table: pd.DataFrame, step: str = "proxied") -> Handshake:
    new, kept = pick(table, "connect"), pick(table, "reuse")
    hosts_new, hosts_kept = pick(table, "hosts-connect"), pick(table, "hosts-reuse")
    latency = article_numbers()["example_latency"]
    row = pick(table, step)
    return Handshake(new.request_ms, kept.request_ms, new.connect_ms, hosts_new.request_ms, hosts_kept.request_ms,
                     int(new.runs), proxy.per_request_ms(0, latency, 0) - proxy.per_request_ms(0, latency, 0, new_connection=False),
                     step, row.p99_ms, pick(table, "keepalive-256").p99_ms,
                     int(data.ss.loc[data.ss.step == step, "listen_overflows"].sum()),
                     int(data.steps[step]["config"]["services"]["api"]["backlog"]), CLAIM_WARMUP_S)
