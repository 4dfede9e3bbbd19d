"""Chapter 6's model against its data: what set each sustained step's pace (the core that was full), and the
model's CPU bound for it (harness.models.proxy), predicted from other steps only: the CPU a request costs the service
and nginx when each answers alone, plus the cost of a connection measured by the one-user steps."""
from __future__ import annotations

import pandas as pd

from harness.book.chapters.ch6.charts import sustained
from harness.book.chapters.ch6.runs import pick
from harness.models import proxy

PROXY_CORES = 1.0  # nginx and the service share CPU 1 (experiments/chapter6.toml's placement)
MODEL_MISS = 0.25  # the model "misses" a step it overestimates by more than this share
SATURATED = 0.9  # a process (or CPU 1's two) using this much of a core set the pace
LOAD_TOOL, SERVERS, ROUND_TRIPS = "the load generator", "nginx and the service (CPU 1)", "neither core"


def limit_of(row: pd.Series) -> str:
    """What set a sustained step's pace: the core that was (nearly) full, CPU 0 the load generator's, CPU 1 the
    servers'; neither: the closed loop's round trips, or CPU the lab's processes did not get."""
    tool = row.wrk_cpu if row.tool == "wrk" else row.k6_cpu
    servers = _cores(row.service_cpu) + _cores(row.nginx_cpu)
    if tool >= SATURATED and tool >= servers:
        return f"{LOAD_TOOL} ({row.tool})"
    return SERVERS if servers >= SATURATED else ROUND_TRIPS


def _cores(value: float) -> float:
    return 0.0 if value != value else value


def limits(table: pd.DataFrame) -> pd.Series:
    """limit_of each sustained step, by step."""
    rows = sustained(table)
    return pd.Series([limit_of(r) for _, r in rows.iterrows()], index=rows["step"])


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
    return service + (nginx if row.route == "nginx → service" else 0.0) + opened_share(row) * per_connection_ms


def opened_share(row: pd.Series) -> float:
    """The share of a step's requests for which nginx opened a connection to the service (0 without nginx in front)."""
    return min(row.new_connections_per_s / row.tps, 1.0) if row.route == "nginx → service" else 0.0


def model_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Per sustained step: the predicted CPU per request, CPU 1's bound, the closed loop's bound from round trips,
    what was answered, and what was full."""
    per_connection = connection_cpu_ms(table)
    kept = pick(table, "reuse")
    rows = []
    for _, r in sustained(table).iterrows():
        cpu_ms = predicted_cpu_ms(table, r, per_connection)
        per_request = proxy.per_request_ms(0, kept.request_ms, 0, new_connection=r.new_connections_per_s > r.tps / 2)
        bound = proxy.predict(int(r.users), per_request, cpu_ms, PROXY_CORES)
        rows.append({"step": r.step, "network": r.network, "cpu_ms": cpu_ms, "cpu_bound": bound.cpu_bound_tps,
                     "loop_bound": bound.tps, "tps": r.tps, "limit": limit_of(r), "opened": opened_share(r)})
    return pd.DataFrame(rows)


def misses(frame: pd.DataFrame) -> pd.DataFrame:
    """Of model_frame's steps: those CPU 1 limited whose rate the model's CPU bound overestimates by more than
    MODEL_MISS."""
    return frame[(frame["limit"] == SERVERS) & (frame["tps"] < (1 - MODEL_MISS) * frame["cpu_bound"])]


def beaten(frame: pd.DataFrame) -> pd.DataFrame:
    """Of model_frame's steps: those that answered more than MODEL_MISS above the model's CPU bound, most beaten first:
    one core cannot give that many requests at the CPU per request the model predicts, so the prediction is too high."""
    frame = frame[frame["tps"] > (1 + MODEL_MISS) * frame["cpu_bound"]]
    return frame.assign(times=frame["tps"] / frame["cpu_bound"]).sort_values("times", ascending=False)
