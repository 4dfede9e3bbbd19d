"""Chapter 5, the pool behind the pool (seed 001): the verdicts F001-a … F001-g.

Each reads chapter 5's step table (harness.book.chapters.ch5_steps) and, for what the article itself reports, its data
files (data/chapter5/article-*.csv, their source in article.md). Every rule's threshold is a named constant below;
every number in a verdict's text comes from the data or the article's files.
"""
from __future__ import annotations

import pandas as pd

from harness import DATA
from harness.book.chapters.ch5_steps import API, SCENARIO, TOMCAT
from harness.book.prose import percent
from harness.book.verdict import NOT_REPRODUCED, REPRODUCED, Verdict, verdict_of
from harness.models import pool

ARTICLE = DATA / "chapter5"
DAILY_VIEWS = 19_080_000  # the article's page views a day (article.md)

# F001-a: the article's goal is its own division; it "agrees" when it is within this of ours (a rounding slip).
GOAL_ROUNDING = 0.005

# F001-b: the database "is the bottleneck" of a step when it used at least this share of its CPU quota over the load.
DB_SATURATED = 0.9

# Two settings "differ" in throughput only by more than this share: a step's run-to-run spread on this machine is a
# few %, and the article's own "no significant difference" spans 29.10-30.72 TPS (5.6 %).
TPS_NOISE = 0.10

# F001-g: "on target" means the goal's rate with (nearly) every request answered, as the article's final run.
FINAL_SUCCESS = 0.99

# F001-e: a GC pause difference is an effect only when it exceeds the spread of the same setting's repeats this often.
SPREAD_FACTOR = 1.0


def article_runs() -> pd.DataFrame:
    return pd.read_csv(ARTICLE / "article-runs.csv")


def article_apis() -> pd.DataFrame:
    return pd.read_csv(ARTICLE / "article-single-apis.csv")


def f001_verdicts(table: pd.DataFrame) -> list[Verdict]:
    """F001-a … F001-g from chapter 5's step table (ch5_steps.steps_table)."""
    runs = article_runs()
    return [goal_verdict(table), apis_verdict(table, article_apis()), pool_verdict(table, runs),
            flat_verdict(table, "F001-d", "threads_max", runs), gc_verdict(table, runs),
            flat_verdict(table, "F001-f", "accept_count", runs), final_verdict(table, runs)]


def goal_verdict(table: pd.DataFrame) -> Verdict:
    goal, peak, said = pool.tps_goal(DAILY_VIEWS), pool.peak_tps(DAILY_VIEWS), 220.69
    best = table["peak_tps"].max()
    return Verdict(
        "F001-a", f"TPS goal = {DAILY_VIEWS:,} page views / 86,400 s = {said} TPS",
        f"{DAILY_VIEWS:,} / 86,400 = {goal:.2f}; with 80 % of the views in 20 % of the day the peak is {peak:.0f}/s; "
        f"the best ten seconds measured here: {best:.0f}/s",
        verdict_of(abs(said - goal) / goal <= GOAL_ROUNDING),
        "The goal is an average; the busy hours ask several times more, which the article's goal leaves out.")


def apis_verdict(table: pd.DataFrame, article: pd.DataFrame) -> Verdict:
    apis = table[table["kind"] == API]
    saturated = apis[apis["db_cpu_cores"] >= DB_SATURATED * apis["db_quota"]]
    waited = apis[apis["pending_max"] > 0]
    agrees = len(saturated) > len(apis) / 2 and len(waited) > len(apis) / 2
    return Verdict(
        "F001-b", f"single APIs {article['tps'].min()}–{article['tps'].max()} TPS, HikariCP pending up to "
        f"{article['hikari_pending_max'].max():.0f}; the database the bottleneck from ~150 users",
        f"{apis['tps'].min():.0f}–{apis['tps'].max():.0f}/s; the database at ≥ {percent(DB_SATURATED)} of its CPU in "
        f"{len(saturated)} of {len(apis)} APIs; requests waited for a connection in {len(waited)}",
        verdict_of(agrees),
        "" if agrees else "The small database kept up: its CPU was not used up and no request waited for a connection.")


def pool_verdict(table: pd.DataFrame, runs: pd.DataFrame) -> Verdict:
    small = table[(table["kind"] == SCENARIO) & (table["db_quota"] == table["db_quota"].min())
                  & table["open_in_view"] & table["indexes"]].set_index("pool")
    tps = small["tps"]
    best = tps.idxmax()
    ten_best = 10 in tps and all(tps[10] > tps[p] * (1 + TPS_NOISE) for p in (5, 20) if p in tps)
    said = runs[runs["experiment"] == "pool"].dropna(subset=["tps"]).set_index("value")["tps"]
    return Verdict(
        "F001-c", f"pool 10 best ({said.get('10')} TPS) against 20 ({said.get('20')}) and 5 (like 20)",
        "; ".join(f"pool {p}: {v:.1f}/s" for p, v in tps.sort_index().items()) + f" (best: {best})",
        verdict_of(ten_best), "" if ten_best else _pool_why(table))


def _pool_why(table: pd.DataFrame) -> str:
    """Why the pool sweep does not peak at 10: each stream holds a connection; with open-in-view off, what the pool does."""
    off = table[(table["kind"] == SCENARIO) & ~table["open_in_view"] & table["indexes"]
                & (table["db_quota"] == table["db_quota"].min())].set_index("pool")["tps"].sort_index()
    without = ("; with open-in-view off, " + ", ".join(f"pool {p}: {v:.0f}/s" for p, v in off.items())) if len(off) else ""
    return ("With open-in-view on, each user's event stream holds a connection for its whole life, so throughput "
            f"follows the pool's size{without}.")


def flat_verdict(table: pd.DataFrame, finding: str, knob: str, runs: pd.DataFrame) -> Verdict:
    """F001-d (threads.max) and F001-f (accept-count): the article saw no significant change in TPS."""
    steps = table[(table["kind"] == TOMCAT) & table["findings"].str.contains(finding)]
    tps = steps.groupby(knob)["tps"].median()
    spread = (tps.max() - tps.min()) / tps.mean() if len(tps) else float("nan")
    return Verdict(
        finding, f"{knob.replace('_', '-')} {', '.join(map(str, tps.index))}: no significant change in TPS",
        "; ".join(f"{k}: {v:.0f}/s" for k, v in tps.items()) + f" (spread {percent(spread)})",
        verdict_of(spread <= TPS_NOISE))


def gc_verdict(table: pd.DataFrame, runs: pd.DataFrame) -> Verdict:
    steps = table[table["findings"].str.contains("F001-e")]
    by = steps.groupby("max_connections")["gc_pause_max_ms"]
    median, spread = by.median(), (by.max() - by.min()).max()
    rises = len(median) >= 2 and median.iloc[-1] - median.iloc[0] > SPREAD_FACTOR * spread
    said = runs[runs["experiment"] == "max_connections"].set_index("value")["gc_stop_the_world_ms"]
    return Verdict(
        "F001-e", "max-connections 4000/6000/8000: GC stop-the-world " + " / ".join(f"{v:g}" for v in said) + " ms",
        "; ".join(f"{k}: {v:.1f} ms" for k, v in median.items()) + f" (longest pause, median of runs; runs differ by up "
        f"to {spread:.1f} ms)", verdict_of(rises),
        "" if rises else f"max-connections is a cap on connections, not memory set aside for them: with "
        f"{steps['users'].max():,.0f} users no setting here came near it.")


def final_verdict(table: pd.DataFrame, runs: pd.DataFrame) -> Verdict:
    if "final" not in set(table["step"]):
        return Verdict("F001-g", "final settings reach 220.47 TPS on the production-size database", "not run",
                       NOT_REPRODUCED)
    final = table.set_index("step").loc["final"]
    goal = pool.tps_goal(DAILY_VIEWS)
    said = runs[runs["experiment"] == "final"]["tps"].iloc[0]
    reached = final["peak_tps"] >= goal and final["success"] >= FINAL_SUCCESS
    fixed = table.set_index("step").loc["final-no-osiv"] if "final-no-osiv" in set(table["step"]) else None
    why = "" if reached or fixed is None else (
        f"Open-in-view lets the event streams hold the pool; with it off the same settings reached "
        f"{fixed['peak_tps']:.0f}/s with {percent(fixed['success'])} answered.")
    return Verdict(
        "F001-g", f"pool 10, threads 150, accept-count 100, max-connections 6000: {said} TPS, on target",
        f"best ten seconds {final['peak_tps']:.0f}/s against the goal's {goal:.0f}/s; {percent(final['success'])} answered",
        REPRODUCED if reached else NOT_REPRODUCED, why)
