"""Chapter 4's claims judged (seed 004): one statistic per claim of experiments/claims/chapter4.toml, computed once per
run of the steps it reads (harness.book.claims.Measured), and `judge()`, the chapter's judgements in the file's order.

Every statistic reads the run table of ch4.runs (one row per step, run and window): runs of a repeated step are
paired by their number (they ran in rounds, run k of one step beside run k of the other), and a statistic read over
the plateau is read again over the nearby windows the rule names. Where a claim rests on steps that ran once, σ is
borrowed from the run-to-run spread of the steps that ran several times, and says so. F004-e reads the article's own
table (ch4.article) and nothing measured: its arithmetic is exact.
"""
from __future__ import annotations

import math
import statistics

import pandas as pd

from harness.book.chapters.ch4.article import article_table, little_table
from harness.book.chapters.ch4.runs import CHAPTER, PLATEAU, run_table
from harness.book.claims import Judgement, Measured, judge as judge_rule, margin, rules, with_machine_fact
from harness.book.noise import most_stray
from harness.book.prose import percent
from harness.lab import store

ALONE = "sweep-2"  # 2 users: far below the knee
PLATEAU_STEPS = ("sweep-20", "sweep-50", "sweep-100", "sweep-200")  # past the knee, up to threads.max 200
DEFAULT_800, MORE_800 = "sweep-800", "threads-800-800"  # 800 users on threads.max 200 and 800, one core
HALF_400, HALF_800, ONE_400 = "quota-half", "quota-half-800", "quota-one"  # 300 users: half a core or one
COLD, WARM = "burst-spare-10", "burst-spare-400"  # a burst of 400 users on min-spare 10 and 400
CPU_STEPS = ("sweep-20", "sweep-50", "sweep-100", "sweep-200", "sweep-400", "sweep-800")  # the defaults past the knee
REPEATED = (DEFAULT_800, MORE_800, HALF_400, HALF_800)  # the sustained steps that ran several times


def column(runs: pd.DataFrame, step: str, name: str, window: str = PLATEAU) -> pd.Series:
    """One column of a step's runs over a window, indexed by run number."""
    rows = runs[(runs["step"] == step) & (runs["window"] == window)]
    return rows.set_index("run")[name].sort_index()


def windows_of(runs: pd.DataFrame) -> list[str]:
    """The nearby windows the run table holds (every window but the plateau)."""
    return [w for w in dict.fromkeys(runs["window"]) if w != PLATEAU]


def relative_spread(runs: pd.DataFrame, name: str = "tps") -> float | None:
    """The run-to-run σ of one run's value over its mean, pooled over the repeated sustained steps (the variances
    averaged): what a step that ran once borrows. None when no step ran twice."""
    variances = [statistics.variance(v / v.mean()) for step in REPEATED if len(v := column(runs, step, name)) >= 2]
    return math.sqrt(statistics.fmean(variances)) if variances else None


def absolute_spread(runs: pd.DataFrame, name: str) -> float | None:
    """The same, in the column's own unit."""
    variances = [statistics.variance(v) for step in REPEATED if len(v := column(runs, step, name)) >= 2]
    return math.sqrt(statistics.fmean(variances)) if variances else None


def borrowed(runs: pd.DataFrame) -> str:
    counts = ", ".join(f"{step} ×{len(column(runs, step, 'tps'))}" for step in REPEATED)
    spread = relative_spread(runs)
    return (f"borrowed: the run-to-run spread of one plateau's throughput ({counts}), "
            + (f"{percent(spread)} of it" if spread is not None else "unknown: no step ran twice"))


def scaled(value: float, spread: float | None, factor: float = 1.0) -> float | None:
    """A relative spread borrowed for a value (None stays unknown)."""
    return None if spread is None else value * spread * factor


def plateau_tps(runs: pd.DataFrame, window: str = PLATEAU) -> float:
    """The plateau: the mean throughput of the steps past the knee up to threads.max (first runs)."""
    return statistics.fmean(column(runs, step, "tps", window).iloc[0] for step in PLATEAU_STEPS)


def over_windows(runs: pd.DataFrame, statistic) -> tuple[float, ...]:
    """A statistic's mean over runs in each nearby window: `statistic(runs, window)` gives the per-run values."""
    return tuple(statistics.fmean(values) for w in windows_of(runs) if len(values := statistic(runs, w)))


def paired(runs: pd.DataFrame, base: str, other: str, window: str = PLATEAU) -> list[float]:
    """other / base − 1 per run number both ran."""
    a, b = column(runs, base, "tps", window), column(runs, other, "tps", window)
    both = a.index.intersection(b.index)
    return [b[k] / a[k] - 1 for k in both]


# ---- F004-a --------------------------------------------------------------------------------------------------

def alone_share(runs: pd.DataFrame, window: str = PLATEAU) -> list[float]:
    return [column(runs, ALONE, "tps", window).iloc[0] / plateau_tps(runs, window)]


def throughput_rises(runs: pd.DataFrame) -> Measured:
    """F004-a.1: 2 users' throughput over the plateau's (each ran once: σ borrowed, for both sides of the ratio)."""
    value = alone_share(runs)
    return Measured(tuple(value), borrowed(runs) + ", for each side of the ratio",
                    borrowed_sigma=scaled(value[0], relative_spread(runs), math.sqrt(2)),
                    nearby=over_windows(runs, alone_share), note=f"{ALONE} against {', '.join(PLATEAU_STEPS)}")


def more_threads_one_core(runs: pd.DataFrame) -> Measured:
    """F004-a.2a: threads.max 800 against 200 at 800 users, run by run."""
    return Measured(tuple(paired(runs, DEFAULT_800, MORE_800)),
                    nearby=over_windows(runs, lambda r, w: paired(r, DEFAULT_800, MORE_800, w)),
                    note=f"{MORE_800} over {DEFAULT_800}, run k against run k")


def held_share(runs: pd.DataFrame, window: str = PLATEAU) -> list[float]:
    return list(column(runs, DEFAULT_800, "tps", window) / plateau_tps(runs, window))


def throughput_held(runs: pd.DataFrame) -> Measured:
    """F004-a.2b: each run of 800 users over the plateau (which ran once: its spread is borrowed as a floor)."""
    values = held_share(runs)
    return Measured(tuple(values), f"the runs' spread, at least the {borrowed(runs)}",
                    borrowed_sigma=scaled(statistics.fmean(values), relative_spread(runs)),
                    nearby=over_windows(runs, held_share), note=f"{DEFAULT_800} against {', '.join(PLATEAU_STEPS)}")


def latency_growth(runs: pd.DataFrame, window: str = PLATEAU) -> list[float]:
    return list(column(runs, DEFAULT_800, "mean_ms", window) - column(runs, "sweep-20", "mean_ms", window).iloc[0])


def latency_grows(runs: pd.DataFrame) -> Measured:
    """F004-a.3: the mean latency at 800 users less that at 20, run by run."""
    return Measured(tuple(latency_growth(runs)), nearby=over_windows(runs, latency_growth),
                    note=f"{DEFAULT_800} less sweep-20")


# ---- F004-b --------------------------------------------------------------------------------------------------

def scale_ratio(runs: pd.DataFrame, window: str = PLATEAU) -> list[float]:
    return list(column(runs, ONE_400, "tps", window).iloc[0] / column(runs, HALF_400, "tps", window))


def scale_up(runs: pd.DataFrame) -> Measured:
    """F004-b.1: one core over each run of half a core (one core ran once: its spread is borrowed as a floor)."""
    values = scale_ratio(runs)
    return Measured(tuple(values), f"the runs' spread, at least the {borrowed(runs)}, for each side of the ratio",
                    borrowed_sigma=scaled(statistics.fmean(values), relative_spread(runs), math.sqrt(2)),
                    nearby=over_windows(runs, scale_ratio), note=f"{ONE_400} over {HALF_400}")


def more_threads_half_core(runs: pd.DataFrame) -> Measured:
    """F004-b.2: threads.max 800 against 400 on half a core, run by run."""
    return Measured(tuple(paired(runs, HALF_400, HALF_800)),
                    nearby=over_windows(runs, lambda r, w: paired(r, HALF_400, HALF_800, w)),
                    note=f"{HALF_800} over {HALF_400}, run k against run k")


# ---- F004-c --------------------------------------------------------------------------------------------------

def pool_distances(runs: pd.DataFrame) -> pd.DataFrame:
    """Every run of a sustained step with fewer users than threads.max: Tomcat's pool at its peak against
    max(min-spare, users), and how far outside [that, that + most_stray(requests)] it was (0 inside)."""
    rows = runs[(runs["window"] == PLATEAU) & (runs["kind"] == "sustained") & (runs["users"] < runs["threads_max"])].copy()
    rows["expected"] = rows[["min_spare", "users"]].max(axis=1)
    rows["allowed"] = [most_stray(int(n)) for n in rows["requests"]]
    over = rows["current_threads_peak"] - rows["expected"] - rows["allowed"]
    rows["distance"] = pd.concat([over, rows["expected"] - rows["current_threads_peak"]], axis=1).max(axis=1).clip(lower=0)
    return rows


def pool_follows_requests(runs: pd.DataFrame) -> Measured:
    """F004-c.1: the largest distance over every such run (a count Tomcat fixes: exact)."""
    rows = pool_distances(runs)
    if rows.empty:
        return Measured((), note="no step with fewer users than threads.max")
    worst = rows.loc[rows["distance"].idxmax()]
    where = ("every pool inside its band" if worst["distance"] == 0 else f"furthest: {worst['step']} run {worst['run']}, "
             f"{worst['current_threads_peak']:,.0f} threads for {worst['expected']:,.0f}")
    return Measured((float(worst["distance"]),), "none: a count of threads", exact=True,
                    note=f"{len(rows)} runs of {rows['step'].nunique()} steps; {where}")


def pool_full(runs: pd.DataFrame) -> Measured:
    """F004-c.2: threads.max less the pool's peak, beyond the stray allowance, each run of 800 users on 800."""
    rows = runs[(runs["step"] == MORE_800) & (runs["window"] == PLATEAU)]
    short = [max(0.0, r.threads_max - r.current_threads_peak - most_stray(int(r.requests))) for r in rows.itertuples()]
    return Measured(tuple(short), note=f"{MORE_800}: pool peaks " + ", ".join(f"{p:,.0f}" for p in rows["current_threads_peak"]))


# ---- F004-d --------------------------------------------------------------------------------------------------

def warm_pool_first_requests(runs: pd.DataFrame) -> Measured:
    """F004-d.1: each user's first request, its mean answer time on a cold pool less on a warm one, run by run."""
    cold, warm = column(runs, COLD, "first_request_ms"), column(runs, WARM, "first_request_ms")
    both = cold.index.intersection(warm.index)
    values = [cold[k] - warm[k] for k in both if not (math.isnan(cold[k]) or math.isnan(warm[k]))]
    return Measured(tuple(values), note=f"{COLD} less {WARM}, run k against run k" if values else
                    "the burst steps were recorded per second, not one row per request: no first request to read")


def sustained_gains(runs: pd.DataFrame, window: str = PLATEAU) -> dict[str, list[float]]:
    return {f"{MORE_800} over {DEFAULT_800}": paired(runs, DEFAULT_800, MORE_800, window),
            f"{HALF_800} over {HALF_400}": paired(runs, HALF_400, HALF_800, window)}


def larger_gain(gains: dict[str, list[float]]) -> tuple[str, list[float]]:
    return max(((pair, v) for pair, v in gains.items() if v), key=lambda item: statistics.fmean(item[1]))


def more_threads_sustained(runs: pd.DataFrame) -> Measured:
    """F004-d.2: the larger of the two pairs' gains from more threads, run by run."""
    pair, values = larger_gain(sustained_gains(runs))
    nearby = tuple(statistics.fmean(larger_gain(sustained_gains(runs, w))[1]) for w in windows_of(runs))
    return Measured(tuple(values), nearby=nearby, note=f"the larger pair: {pair}, run k against run k")


def cpu_share(runs: pd.DataFrame, window: str = PLATEAU) -> list[float]:
    """The least, over the defaults past the knee, of the server's CPU over its quota (a step's mean over its runs)."""
    shares = [statistics.fmean(column(runs, s, "server_cpu_cores", window) / column(runs, s, "cpu_quota", window))
              for s in CPU_STEPS]
    return [min(shares)]


def cpu_left_unused(runs: pd.DataFrame) -> Measured:
    """F004-d.3: the least CPU share (the steps ran once or more: σ borrowed from the repeated steps' CPU)."""
    spread = absolute_spread(runs.assign(share=runs["server_cpu_cores"] / runs["cpu_quota"]), "share")
    return Measured(tuple(cpu_share(runs)), "borrowed: the run-to-run spread of the server's CPU share over the "
                    "repeated steps' runs (" + (f"{spread:.3f} of the quota)" if spread is not None else "unknown: no "
                                                "step ran twice)"), borrowed_sigma=spread,
                    nearby=over_windows(runs, cpu_share), note=", ".join(CPU_STEPS))


def burst_failures(runs: pd.DataFrame) -> Measured:
    """F004-d.4: failed requests beyond the stray allowance on each run of the cold burst."""
    rows = runs[(runs["step"] == COLD) & (runs["window"] == PLATEAU)]
    return Measured(tuple(float(r.failed - most_stray(int(r.requests))) for r in rows.itertuples()),
                    note=f"{COLD}: failed " + ", ".join(f"{n:,}" for n in rows["failed"]) + " of "
                         + ", ".join(f"{n:,}" for n in rows["requests"]))


# ---- F004-e: the article's table -------------------------------------------------------------------------

def nearest_bound(article: pd.DataFrame, rule) -> Measured:
    """F004-e.1: of runs 1–10, the ratio reported / (VUs / TPS) nearest a bound of the band (the article's
    arithmetic: exact)."""
    table = little_table(article)
    plain = table[table["vus_setup"] == table["vus_claimed"]]
    worst = plain.loc[plain["ratio"].map(lambda x: margin(rule, x)).idxmin()]
    return Measured((float(worst["ratio"]),), "none: the article's own numbers", exact=True,
                    note=f"runs {plain['run'].min()}–{plain['run'].max()}: {plain['ratio'].min():.2f}–"
                         f"{plain['ratio'].max():.2f}; nearest a bound: run {worst['run']:.0f}")


def doubtful_run(article: pd.DataFrame, users_column: str) -> Measured:
    """F004-e.2: the run whose setup lists other users than it claims, its ratio under those users."""
    table = little_table(article)
    run = table[table["vus_setup"] != table["vus_claimed"]].iloc[0]
    ratio = run["reported_ms"] / (run[users_column] / run["tps"] * 1000)
    return Measured((float(ratio),), "none: the article's own numbers", exact=True,
                    note=f"run {run['run']:.0f}: {run[users_column]:,.0f} users, TPS {run['tps']:,.0f}, "
                         f"{run['reported_ms']:g} ms")


STATISTICS = {"F004-a.1": throughput_rises, "F004-a.2a": more_threads_one_core, "F004-a.2b": throughput_held,
              "F004-a.3": latency_grows, "F004-b.1": scale_up, "F004-b.2": more_threads_half_core,
              "F004-c.1": pool_follows_requests, "F004-c.2": pool_full, "F004-d.1": warm_pool_first_requests,
              "F004-d.2": more_threads_sustained, "F004-d.3": cpu_left_unused, "F004-d.4": burst_failures}
ARTICLE = {"F004-e.1": nearest_bound, "F004-e.2a": lambda a, rule: doubtful_run(a, "vus_claimed"),
           "F004-e.2b": lambda a, rule: doubtful_run(a, "vus_setup")}


def judgements(runs: pd.DataFrame, article: pd.DataFrame) -> list[Judgement]:
    """Every claim of the chapter, judged on the run table and the article's table, in the claims file's order."""
    found = []
    for claim, rule in rules(CHAPTER).items():
        measured = STATISTICS[claim](runs) if claim in STATISTICS else ARTICLE[claim](article, rule)
        found.append(judge_rule(rule, with_machine_fact(CHAPTER, rule, measured)))
    return found


def judge() -> list[Judgement]:
    """The chapter's claims judged on the data the store reads (data/, or another directory under store.reading)."""
    return judgements(run_table(store.load(CHAPTER)), article_table())
