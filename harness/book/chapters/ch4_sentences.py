"""Chapter 4's sentences, each worded from the numbers it rests on (the step table of ch4_steps, the step's recorded
configuration and model), so that a re-run can never leave the text stale.
"""
from __future__ import annotations

import pandas as pd

from harness.book.prose import percent, words
from harness.lab.store import ChapterData
from harness.models.usl import fit_usl


def _sustained(table: pd.DataFrame) -> pd.DataFrame:
    return table[table.kind == "sustained"]


def sweep(table: pd.DataFrame) -> pd.DataFrame:
    """The users sweep: sustained steps at the full quota on the most common pool, by users."""
    rows = _sustained(table)
    rows = rows[rows.cpu_quota == rows.cpu_quota.max()]
    pool = rows.groupby("threads_max")["users"].nunique().idxmax()
    return rows[rows.threads_max == pool].sort_values("users")


def endpoint_sentence(data: ChapterData) -> str:
    """The endpoint, the placement and what the model makes of them, from a sweep step's recorded configuration."""
    meta = next(m for m in data.steps.values() if m["config"]["load"]["executor"] == "ramping-vus")
    model, placed = meta["model"], (meta.get("placement") or {}).get("asked", {})
    k6_cpus, server_cpus = placed.get("k6", {}).get("cpus"), placed.get("server", {}).get("cpus")
    cycle = model["cpu_ms"] + model["wait_ms"]
    return (f"Each request spends **{model['cpu_ms']:g} ms of CPU** (real work: SHA-256 rounds, calibrated when the "
            f"server starts) and then **waits {model['wait_ms']:g} ms**, as a call to a database would, holding its "
            f"thread throughout. k6 runs on CPU {_cpus(k6_cpus)} and the server on CPU {_cpus(server_cpus)}, so each has a "
            f"core of its own. On {_cores(model['cores'])} the server can finish at most {model['cores']:g} / "
            f"{model['cpu_ms']:g} ms = **{model['cores'] * 1000 / model['cpu_ms']:,.0f} requests per second**; a user, "
            f"who waits for each answer before sending the next, can send at most 1000 / {cycle:g} = "
            f"{1000 / cycle:.1f} per second. The CPU saturates when {model['cores']:g} × (1 + {model['wait_ms']:g} / "
            f"{model['cpu_ms']:g}) = **{model['knee_threads']:g} requests** are in progress at once: the knee. A pool of "
            "200 threads, Spring Boot's default, is far past it.")


def _cpus(cpus: list[int] | None) -> str:
    return ", ".join(map(str, cpus)) if cpus else "any"


def _cores(cores: float) -> str:
    return "one core" if cores == 1 else f"{cores:g} of a core" if cores < 1 else f"{words(cores)} cores"


def work_ms(data: ChapterData) -> float:
    """The CPU work each request asks for, as the model read it from the steps."""
    return float(next(m["model"]["cpu_ms"] for m in data.steps.values() if "cpu_ms" in (m.get("model") or {})))


def plateau_sentence(data: ChapterData, table: pd.DataFrame) -> str:
    """Where the sweep's throughput stops rising, against the model's bound, and what the server's CPU says."""
    rows = sweep(table)
    best = rows.loc[rows.tps.idxmax()]
    top = rows.iloc[-1]
    overhead = best["cpu_ms_per_request"]
    return (f"Throughput rises with users until the server's core is busy, then stays: at most **{best['tps']:,.0f} "
            f"answered requests per second** (at {int(best['users']):,} users), {percent(best['tps'] / best['model_tps'])} "
            f"of the model's {best['model_tps']:,.0f}. The server used {best['server_cpu_cores']:.2f} cores for it: "
            f"**{overhead:.1f} ms of CPU per request**, of which the endpoint's own work is "
            f"{work_ms(data):g} ms and the rest is Tomcat, Spring and the JVM around it. At {int(top['users']):,} users "
            f"the mean latency is {top['mean_ms']:,.0f} ms (model: {top['model_mean_ms']:,.0f}) and p99 "
            f"{top['p99_ms']:,.0f} ms: past the knee, more users only wait longer.")


def usl_sentence(table: pd.DataFrame) -> str:
    """The Universal Scalability Law fitted to the sweep: what its two costs came out as."""
    rows = sweep(table)
    fit = fit_usl(rows["users"], rows["tps"])
    peak = (f"throughput would peak at {fit.peak_users:,.0f} users and fall beyond" if fit.peak_users
            else "nothing makes throughput fall as users grow")
    return (f"Fitted to the sweep, the Universal Scalability Law gives λ = {fit.lambda_:.1f} requests per second per "
            f"user, α = {fit.alpha:.3f} and β = {fit.beta:.2g} (R² {fit.r_squared:.3f}). α is contention: the share of "
            "the work that waits in line for one shared thing, here the core. β is coherence: a cost every user adds "
            f"to every other user, such as context switches or cache misses. With these values {peak}.")


def threads_sentence(table: pd.DataFrame) -> str:
    """The best plateau per threads.max at the full quota."""
    rows = _sustained(table)
    rows = rows[rows.cpu_quota == rows.cpu_quota.max()]
    best = rows.groupby("threads_max")["tps"].max().sort_index()
    parts = ", ".join(f"{tps:,.0f} with threads.max {threads:,}" for threads, tps in best.items())
    return (f"The best plateau per pool: {parts}. Threads beyond the knee have nothing to add: the core was already "
            "busy.")


def quota_sentence(table: pd.DataFrame, article: pd.DataFrame) -> str:
    """Half a core against one: the article's pod scale-up (its runs 5 and 6), and more threads on half a core."""
    rows, runs = table.set_index("step"), article.set_index("run")
    if not {"quota-half", "quota-one"} <= set(rows.index):
        return "*No quota steps yet.*"
    half, one = rows.loc["quota-half"], rows.loc["quota-one"]
    text = (f"On half a core the plateau is {half['tps']:,.0f} requests per second; on a whole one, "
            f"{one['tps']:,.0f}: ×{one['tps'] / half['tps']:.2f} for ×{one['cpu_quota'] / half['cpu_quota']:g} the CPU "
            f"(the article: ×{runs.loc[6, 'tps'] / runs.loc[5, 'tps']:.2f} for ×"
            f"{runs.loc[6, 'pod_cores'] / runs.loc[5, 'pod_cores']:g} the cores, from {runs.loc[5, 'tps']:,} to "
            f"{runs.loc[6, 'tps']:,} requests per second).")
    if "quota-half-800" in rows.index:
        more = rows.loc["quota-half-800"]
        text += (f" With threads.max {int(more['threads_max']):,} instead of {int(half['threads_max']):,} on the same half "
                 f"core: {more['tps']:,.0f}.")
    return text
