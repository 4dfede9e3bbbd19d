"""A connection pool in front of a database, as a second thread pool (chapter 5, seed 001).

A request that needs the database borrows one of the pool's P connections for H ms (the hold time: its queries plus
whatever the request does while it keeps the connection) and the database spends d ms of its CPU on it. Then

    busy connections = X × H                     (Little's law, X in requests per ms)
    X ≤ min(P / H, C_db / d)                     (the pool's bound, the database CPU's bound)

so a pool larger than C_db × H / d only adds connections that wait inside the database. HikariCP's own sizing rule,
connections ≈ (database cores × 2) + effective spindles, says the same for a database whose queries wait for disk
about as long as they compute; with the data in memory (no spindles) it is twice the cores.

The TPS goal is the article's: daily page views spread evenly over the day. Traffic is not even: the 80/20 rule of
capacity planning (80 % of a day's requests in 20 % of its hours) is the peak factor the article left out, an
assumption named here, not a measurement.
"""
from __future__ import annotations

SECONDS_PER_DAY = 86_400
PEAK_SHARE, PEAK_TIME_SHARE = 0.8, 0.2  # the 80/20 rule: 80 % of the requests in 20 % of the time


def tps_goal(daily_views: float) -> float:
    """The article's goal: every page view a request, spread evenly over the day."""
    return daily_views / SECONDS_PER_DAY


def peak_tps(daily_views: float, share: float = PEAK_SHARE, time_share: float = PEAK_TIME_SHARE) -> float:
    """The rate in the busy part of the day when `share` of the views come in `time_share` of it."""
    return tps_goal(daily_views) * share / time_share


def hikari_pool_size(db_cores: float, spindles: int = 0) -> float:
    """HikariCP's rule of thumb ("About Pool Sizing"): (core count × 2) + effective spindle count."""
    return db_cores * 2 + spindles


def busy_connections(tps: float, hold_ms: float) -> float:
    """Little's law for the pool: connections in use = throughput × time each is held."""
    return tps * hold_ms / 1000


def pool_bound_tps(pool: int, hold_ms: float) -> float:
    """The most requests per second P connections carry when each request holds one for `hold_ms`."""
    return pool * 1000 / hold_ms


def db_bound_tps(db_cores: float, db_cpu_ms: float) -> float:
    """The most requests per second a database with `db_cores` of CPU serves at `db_cpu_ms` of its CPU each."""
    return db_cores * 1000 / db_cpu_ms


def useful_pool(db_cores: float, hold_ms: float, db_cpu_ms: float) -> float:
    """The pool size at which the pool's bound meets the database CPU's: more connections only queue inside it."""
    return db_bound_tps(db_cores, db_cpu_ms) * hold_ms / 1000
