"""Chapter 4, more threads, more throughput? (seed 004): the verdicts F004-a … F004-e.

F004-a … F004-d read `steps`, one row per measured step (STEP_COLUMNS; burst steps also BURST_COLUMNS): the plateau's
throughput and latency, the server's CPU quota and pool, the JVM's threads and the bounds model's throughput
(harness.models.bounds). F004-e reads the article's own table (data/chapter4/article-table.csv) and nothing else.
Every rule's threshold is a named constant below; every number in a verdict's text comes from the data.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from harness import DATA
from harness.book.chapters.ch4_steps import BURST, sustained
from harness.book.prose import and_list, percent, span
from harness.book.verdict import NOT_REPRODUCED, Verdict, verdict_of

ARTICLE_TABLE = DATA / "chapter4" / "article-table.csv"  # the article's eleven runs; its source: article-table.md

# F004-c counts Tomcat's own pool (Actuator's tomcat.threads.current, the main connector): the JVM's live threads
# also count the management port's Tomcat, which takes the same min-spare, and the JVM's own threads.
POOL = "current_threads_peak"
STEP_COLUMNS = ("step", "kind", "users", "threads_max", "min_spare", "cpu_quota", "tps", "mean_ms", "p50_ms", "p99_ms",
                "errors", "server_cpu_cores", "k6_cpu_cores", "live_threads_peak", POOL, "busy_threads_peak", "model_tps")
BURST_COLUMNS = ("first_seconds_p99_ms", "first_seconds_errors")

# A plateau is "raised" only by more than this: the article's own "no gain" from more threads is 3358 → 3132 (−7 %).
# Steps within it of the best are on the plateau. F004-b's pairs also allow for the spread its repeated steps measure.
PLATEAU_NOISE = 0.05

# Past saturation Little's law makes the mean latency grow in proportion to users (R = N / X with X flat); the rule
# asks for half of that, which still fails a server whose latency stays put while users queue elsewhere.
LATENCY_GROWTH_SHARE = 0.5

# "Scaling up raised TPS": the plateau must gain at least this share of what the quota gained. The article's own
# scale-up (2 → 4 cores per pod, ×2) gained a third (2506 → 3356, ×1.34); a CPU-bound server gains all of it.
SCALE_SHARE = 0.25

# Tomcat grows the pool as requests outnumber its threads; in a closed loop without think time nearly every user has
# a request in the server, so the JVM's threads must rise by at least half of the users added beyond min-spare.
GROWTH_SHARE = 0.5

# A warm pool "helps a burst" when the first seconds' p99 falls by at least a fifth (the burst's own scatter is some
# 10 %; starting the missing threads costs well under a millisecond each), or the errors at least halve.
BURST_P99_MARGIN = 0.20
BURST_ERROR_MARGIN = 0.5

# F004-e. A run fits Little's law when its reported mean latency is 80–105 % of VUs / TPS. One-sided: while nGrinder
# ramps up (the article does not say for how long) fewer users than its VUs have a request in flight, never more; a
# linear ramp over 40 % of the run leaves 20 % fewer on average. The 5 % above allows for TPS and the mean test time
# coming from slightly different windows (the tests over TPS take 174-189 s of the 3-minute runs).
LITTLE_SHORTFALL = 0.20
LITTLE_EXCESS = 0.05


def f004_verdicts(steps: pd.DataFrame, article: pd.DataFrame | None = None) -> list[Verdict]:
    """F004-a … F004-e: the first four from chapter 4's steps, the last from the article's table."""
    return [f004_a(steps), f004_b(steps), f004_c(steps), f004_d(steps),
            f004_e(article if article is not None else article_table())]


def untested(finding: str, article: str, missing: str) -> Verdict:
    return Verdict(finding, article, f"no {missing} in the data", NOT_REPRODUCED, "nothing measured to judge on")


def past_knee_pools(rows: pd.DataFrame) -> list[int]:
    """The threads.max values (at one quota) for which the model's best throughput is the quota's plateau: pools big
    enough for the CPU to be the limit. The others are below the knee: there the pool caps throughput."""
    best = rows.groupby("threads_max")["model_tps"].max()
    return sorted(int(t) for t in best.index[np.isclose(best, best.max(), rtol=1e-6)]) if best.notna().any() else []


def tps(value: float) -> str:
    return f"{value:,.0f}/s"


def users(value: float) -> str:
    return f"{value:,.0f} users"


def cores(quota: float) -> str:
    return f"{quota:g} core" + ("" if quota == 1 else "s")


def failures(*checks: tuple[bool, str]) -> str:
    """What failed, in words: the texts of the checks (passed, text) that did not pass."""
    return "; ".join(text for passed, text in checks if not passed)


def f004_a(steps: pd.DataFrame) -> Verdict:
    article = ("TPS rises with users to a plateau (1831 → ~3358), and threads.max 800 does not raise it (3132, 3190, "
               "2968, 2678) while mean latency grows 48 → 338 ms")
    rows = sustained(steps, full_cpu=True)
    pools = past_knee_pools(rows)
    if len(pools) < 2:
        return untested("F004-a", article, "two pools past the knee at one CPU quota")
    best = rows.groupby("threads_max")["tps"].max()
    gains = best[pools] / best[pools[0]] - 1
    no_gain = bool((gains <= PLATEAU_NOISE).all())
    sweep = sweep_of(rows, pools)
    rises, grows, saturation = rises_then_queues(sweep)
    below = best[best.index < pools[0]]
    measured = (f"at {cores(rows['cpu_quota'].max())} the best throughput per threads.max is "
                + and_list(f"{t:,}: {tps(best[t])} ({percent(gains[t], '+')})" for t in pools[1:])
                + f" against {tps(best[pools[0]])} at {pools[0]:,}; {saturation}"
                + (f"; below the knee threads.max {and_list(f'{t:,}: {tps(v)}' for t, v in below.items())}" if len(below) else ""))
    agrees = no_gain and rises and grows
    return Verdict("F004-a", article, measured, verdict_of(agrees),
                   "the CPU, not the pool, is the limit past the knee: more threads only queue for the same cores, and "
                   "by Little's law the users beyond it wait in line" if agrees else
                   failures((no_gain, f"more threads raised the plateau by more than {percent(PLATEAU_NOISE)}"),
                            (rises, "throughput was already on its plateau at the fewest users"),
                            (grows, "latency did not grow with users past saturation")))


def sweep_of(rows: pd.DataFrame, pools: list[int]) -> pd.DataFrame:
    """The steps of the past-knee pool with the most user levels (the smallest on a tie), by users."""
    levels = rows[rows["threads_max"].isin(pools)].groupby("threads_max")["users"].nunique()
    return rows[rows["threads_max"] == levels.idxmax()].sort_values("users")


def rises_then_queues(sweep: pd.DataFrame) -> tuple[bool, bool, str]:
    """Does throughput rise to a plateau, and does latency grow with users past it? And the sweep in words."""
    plateau = sweep["tps"].max()
    on_plateau = sweep[sweep["tps"] >= (1 - PLATEAU_NOISE) * plateau]
    first, last = on_plateau.iloc[0], sweep.iloc[-1]
    rises = sweep["tps"].iloc[0] < (1 - PLATEAU_NOISE) * plateau
    after = sweep[sweep["users"] >= first["users"]]
    growth, expected = last["mean_ms"] / first["mean_ms"], last["users"] / first["users"]
    grows = len(after) >= 2 and growth >= LATENCY_GROWTH_SHARE * expected
    text = (f"threads.max {int(sweep['threads_max'].iloc[0]):,}: {tps(sweep['tps'].iloc[0])} at "
            f"{users(sweep['users'].iloc[0])}, on the plateau from {users(first['users'])} ({tps(first['tps'])}, "
            f"best {tps(plateau)}), {tps(last['tps'])} at {users(last['users'])}; mean latency "
            f"{first['mean_ms']:,.0f} → {last['mean_ms']:,.0f} ms (×{growth:.1f} for ×{expected:.1f} the users)")
    return bool(rises), bool(grows), text


def pair_ratios(rows: pd.DataFrame, fixed: list[str], varied: str) -> pd.DataFrame:
    """Steps alike in `fixed` that differ in `varied`: the smallest and largest `varied`, their throughput and the
    ratios (largest / smallest) of `varied`, of the throughput and of the model's throughput."""
    found = []
    rows = rows.groupby([*fixed, varied], as_index=False)[["tps", "model_tps"]].median()  # repeats: their median
    for key, group in rows.groupby(fixed):
        if group[varied].nunique() < 2:
            continue
        low, high = group.loc[group[varied].idxmin()], group.loc[group[varied].idxmax()]
        found.append({**dict(zip(fixed, key, strict=True)), "low": low[varied], "high": high[varied],
                      "tps_low": low["tps"], "tps_high": high["tps"], "ratio": high[varied] / low[varied],
                      "tps_ratio": high["tps"] / low["tps"], "model_ratio": high["model_tps"] / low["model_tps"]})
    return pd.DataFrame(found)


def past_knee_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Steps whose pool is past the knee at their own quota."""
    return pd.concat([group[group["threads_max"].isin(past_knee_pools(group))]
                      for _, group in rows.groupby("cpu_quota")]) if len(rows) else rows


def f004_b(steps: pd.DataFrame) -> Verdict:
    article = "scaling pods up (2 → 4 cores) raised TPS 2506 → 3356; more threads (400 → 800) did not"
    rows = sustained(steps)
    scale = pair_ratios(rows, ["threads_max", "users"], "cpu_quota")
    threads = pair_ratios(past_knee_rows(rows), ["cpu_quota", "users"], "threads_max")
    if scale.empty or threads.empty:
        return untested("F004-b", article, "pair of steps differing only in CPU quota" if scale.empty else
                        "pair of steps differing only in threads.max past the knee")
    scales = bool(((scale["tps_ratio"] - 1) >= SCALE_SHARE * (scale["ratio"] - 1)).all())
    noise = run_to_run_spread(rows)
    flat = bool((threads["tps_ratio"] <= 1 + max(PLATEAU_NOISE, noise)).all())
    measured = "; ".join(
        [f"quota {r.low:g} → {cores(r.high)} (threads.max {r.threads_max:,.0f}, {users(r.users)}): "
         f"{tps(r.tps_low)} → {tps(r.tps_high)}, ×{r.tps_ratio:.2f} (model ×{r.model_ratio:.2f})" for r in scale.itertuples()]
        + [f"threads.max {r.low:,.0f} → {r.high:,.0f} ({cores(r.cpu_quota)}, {users(r.users)}): "
           f"{tps(r.tps_low)} → {tps(r.tps_high)} ({percent(r.tps_ratio - 1, '+')})" for r in threads.itertuples()]
        + ([f"one setting's runs spread over up to {percent(noise)} of their median"] if noise else []))
    agrees = scales and flat
    return Verdict("F004-b", article, measured, verdict_of(agrees),
                   "the plateau is the CPU's: each request needs its CPU time, so only more cores serve more of them" if agrees
                   else failures((scales, f"more CPU gained less than {percent(SCALE_SHARE)} of the quota's gain"),
                                 (flat, f"more threads raised throughput by more than "
                                        f"{percent(max(PLATEAU_NOISE, noise))}, more than one setting's runs vary")))


def run_to_run_spread(rows: pd.DataFrame) -> float:
    """The widest spread of one setting's repeated runs, (max − min) / median (0 when nothing ran twice): a gain
    smaller than what one setting varies between runs is not an effect of the setting."""
    runs = rows.groupby(["cpu_quota", "users", "threads_max", "min_spare"])["tps"]
    spread = runs.agg(lambda v: (v.max() - v.min()) / v.median() if len(v) > 1 else 0.0)
    return float(spread.max()) if len(spread) else 0.0


def f004_c(steps: pd.DataFrame) -> Verdict:
    article = "the JVM never created all 800 threads at 500 users (561 live); at 800+ users it reached ~860"
    rows = sustained(steps).sort_values("users")
    below, full = rows[rows["users"] < rows["threads_max"]], rows[rows["users"] >= rows["threads_max"]]
    if below.empty:
        return untested("F004-c", article, "step with fewer users than threads.max")
    stays_below = bool((below[POOL] < below["threads_max"]).all())
    growth = pool_growth(below)
    grows = bool((growth["grown"] >= GROWTH_SHARE * growth["demanded"]).all())
    measured = "; ".join(
        [f"with fewer users than threads.max Tomcat's pool stayed below it in "
         f"{threads_text(below, below[POOL] < below['threads_max'], True)}"]
        + [f"threads.max {r.threads_max:,.0f}, min-spare {r.min_spare:,.0f}: {r.grown:+,.0f} threads from "
           f"{users(r.users_low)} to {r.users_high:,.0f}" for r in growth.itertuples()]
        + ([f"with as many users or more they reached it in "
            f"{threads_text(full, full[POOL] >= full['threads_max'], False)}"] if len(full) else []))
    agrees = stays_below and grows  # whether it filled up with as many users is reported, not required: a busy core delays dispatch too
    return Verdict("F004-c", article, measured, verdict_of(agrees),
                   "Tomcat adds a thread only when the requests in hand outnumber its threads (and keeps min-spare from "
                   "the start), so its pool follows concurrency up to threads.max" if agrees else
                   failures((stays_below, "Tomcat's pool reached threads.max with fewer users than that"),
                            (grows, f"the pool grew by less than {percent(GROWTH_SHARE)} of the users added")))


def threads_text(rows: pd.DataFrame, passed: pd.Series, high_fails: bool) -> str:
    """"6 of 6 steps (closest: sweep-100, 101 threads of 200 at 100 users)": how many passed, and the step nearest to
    failing, or the one that failed furthest; `high_fails`: many threads for their threads.max is the failure."""
    share = rows[POOL] / rows["threads_max"]
    share = share if passed.all() else share[~passed]
    r = rows.loc[share.idxmax() if high_fails else share.idxmin()]
    return (f"{passed.sum()} of {len(rows)} steps ({'closest' if passed.all() else 'furthest'}: {r['step']}, "
            f"{r[POOL]:,.0f} threads of {r['threads_max']:,.0f} at {users(r['users'])})")


def pool_growth(below: pd.DataFrame) -> pd.DataFrame:
    """Per pool (threads.max, min-spare, quota) with two or more steps below it: threads gained from its fewest
    users to its most, and the users added beyond min-spare (the threads Tomcat would have to add)."""
    found = []
    for (threads_max, spare, _), group in below.groupby(["threads_max", "min_spare", "cpu_quota"]):
        if group["users"].nunique() < 2:  # repeats at one number of users say nothing of growth
            continue
        low, high = group.iloc[0], group.iloc[-1]
        found.append({"threads_max": threads_max, "min_spare": spare, "users_low": low["users"], "users_high": high["users"],
                      "grown": high[POOL] - low[POOL],
                      "demanded": max(high["users"], spare) - max(low["users"], spare)})
    return pd.DataFrame(found, columns=["threads_max", "min_spare", "users_low", "users_high", "grown", "demanded"])


def f004_d(steps: pd.DataFrame) -> Verdict:
    article = "raise min-spare for bursts: the defaults cause latency and 5xx under spikes"
    bursts = steps[steps["kind"] == BURST]
    if bursts["min_spare"].nunique() < 2:
        return untested("F004-d", article, "burst steps at two min-spare settings")
    by_spare = bursts.groupby("min_spare")[list(BURST_COLUMNS)].median()  # repeats of a setting: their median
    cold, warm = by_spare.iloc[0], by_spare.iloc[-1]
    p99_gain = 1 - warm["first_seconds_p99_ms"] / cold["first_seconds_p99_ms"]
    errors_cold, errors_warm = cold["first_seconds_errors"], warm["first_seconds_errors"]
    fewer_errors = errors_cold > 0 and errors_warm <= (1 - BURST_ERROR_MARGIN) * errors_cold
    better, no_worse = bool(p99_gain >= BURST_P99_MARGIN or fewer_errors), bool(errors_warm <= errors_cold)
    measured = (f"first seconds of a burst of {users(bursts['users'].max())}: p99 {cold['first_seconds_p99_ms']:,.0f} ms "
                f"with min-spare {int(by_spare.index[0]):,} against {warm['first_seconds_p99_ms']:,.0f} ms with "
                f"{int(by_spare.index[-1]):,} ({percent(-p99_gain, '+')}); errors {errors_cold:,.0f} against {errors_warm:,.0f}")
    return Verdict("F004-d", article, measured, verdict_of(better and no_worse),
                   "threads started before the burst take its first requests at once, where a cold pool starts them "
                   "one by one as requests outnumber it" if better and no_worse else
                   failures((better, f"a warm pool cut the first seconds' p99 by less than {percent(BURST_P99_MARGIN)} "
                                     f"and the errors by less than {percent(BURST_ERROR_MARGIN)}: starting the missing "
                                     "threads on demand did not slow the first requests measurably"),
                            (no_worse, "the warm pool had more errors")))


def article_table(path: Path = ARTICLE_TABLE) -> pd.DataFrame:
    """The article's eleven runs as it reports them (columns: article-table.md)."""
    return pd.read_csv(path)


def little_table(article: pd.DataFrame) -> pd.DataFrame:
    """Per run: the VUs (claimed, and as its setup lists them), TPS, the reported mean latency, Little's law's
    latency VUs / TPS for each, the ratio reported / Little's, the users in flight TPS × latency implies, and the
    seconds its count of tests took at its TPS (a check of the table itself: runs of one length should agree)."""
    table = article[["run", "vus_claimed", "vus_setup", "tps", "mean_latency_ms"]].rename(
        columns={"mean_latency_ms": "reported_ms"})
    table["little_ms"] = table["vus_claimed"] / table["tps"] * 1000
    table["ratio"] = table["reported_ms"] / table["little_ms"]
    table["little_setup_ms"] = (table["vus_setup"] / table["tps"] * 1000).where(table["vus_setup"] != table["vus_claimed"])
    table["ratio_setup"] = table["reported_ms"] / table["little_setup_ms"]
    table["users_in_flight"] = table["tps"] * table["reported_ms"] / 1000
    table["tests_over_tps_s"] = article["tests"] / article["tps"]
    return table


def fits_little(ratio: float) -> bool:
    return 1 - LITTLE_SHORTFALL <= ratio <= 1 + LITTLE_EXCESS


def f004_e(article: pd.DataFrame) -> Verdict:
    claim = ("mean latency ≈ VUs / TPS (100/1831 = 55 ms vs 48 ms; 300/2730 = 110 ms vs 109 ms); run 11 claims 2800 "
             "VUs but its setup lists 1200, and its latency fits 1200")
    table = little_table(article)
    plain, doubtful = table[table["little_setup_ms"].isna()], table[table["little_setup_ms"].notna()]
    if plain.empty:
        return untested("F004-e", claim, "run whose setup lists the VUs it claims")
    misfits = plain[~plain["ratio"].map(fits_little)]
    # A run whose setup lists other VUs fits those when they are nearer to its latency than the claimed ones are.
    setup_fits = [not fits_little(r.ratio) and abs(math.log(r.ratio_setup)) < abs(math.log(r.ratio)) for r in doubtful.itertuples()]
    measured = "; ".join(
        [f"{len(plain) - len(misfits)} of {len(plain)} runs whose setup lists the VUs they claim report "
         f"{span(plain['ratio'])} of VUs / TPS (median {percent(plain['ratio'].median())})"
         + (f"; outside {percent(1 - LITTLE_SHORTFALL)}–{percent(1 + LITTLE_EXCESS)}: "
            + and_list(f"run {r.run} ({percent(r.ratio)})" for r in misfits.itertuples()) if len(misfits) else "")]
        + [f"run {r.run}: VUs / TPS is {r.little_ms:,.0f} ms for the {r.vus_claimed:,} VUs it claims and "
           f"{r.little_setup_ms:,.0f} ms for the {r.vus_setup:,} its setup lists; it reports {r.reported_ms:,.2f} ms, "
           f"{percent(r.ratio)} and {percent(r.ratio_setup)} of them (TPS × latency: {r.users_in_flight:,.0f} users in flight)"
           for r in doubtful.itertuples()])
    agrees = misfits.empty and all(setup_fits)
    nearer = and_list(f"run {r}" for r in doubtful["run"])
    return Verdict("F004-e", claim, measured, verdict_of(agrees),
                   "in a closed loop without think time every VU has one request in flight, so users = TPS × latency "
                   "(a ramp-up only lowers the users in flight)"
                   + (f"; {nearer}'s latency is nearer the VUs its setup lists than those it claims" if nearer else "")
                   if agrees else
                   failures((misfits.empty, "some runs' latency is not VUs / TPS"),
                            (all(setup_fits), "a run's latency does not fit its setup's VUs better than the claimed ones")))
