"""Chapter 4's sentences, each worded from the numbers it rests on (the step table of ch4_steps, the step's recorded
configuration and model), so that a re-run can never leave the text stale.
"""
from __future__ import annotations

import pandas as pd

from harness.book.chapters.ch4_steps import BURST, OPEN, SETTLE_S, sustained
from harness.book.chapters.ch4_verdicts import PLATEAU_NOISE, f004_b, f004_d
from harness.book.prose import listed, percent, words
from harness.book.verdict import REPRODUCED
from harness.lab.store import ChapterData
from harness.lab.units import duration_ms
from harness.models.usl import fit_usl


def sweep(table: pd.DataFrame) -> pd.DataFrame:
    """The users sweep: sustained steps at the full quota on the most common pool, by users."""
    rows = sustained(table, full_cpu=True)
    pool = rows.groupby("threads_max")["users"].nunique().idxmax()
    return rows[rows.threads_max == pool].sort_values("users")


def reference_step(data: ChapterData) -> dict:
    """The first ramp the chapter ran on its full CPU (the users sweep's first step): the setup the text describes."""
    ramps = [m for m in data.steps.values() if m["config"]["load"]["executor"] == "ramping-vus"]
    cores = max(m["model"]["cores"] for m in ramps)
    return min((m for m in ramps if m["model"]["cores"] == cores), key=lambda m: m.get("started_ms", 0))


def endpoint_sentence(data: ChapterData) -> str:
    """The endpoint, the placement and what the model makes of them, from the reference step's recorded configuration."""
    meta = reference_step(data)
    model, placed = meta["model"], (meta.get("placement") or {}).get("asked", {})
    k6_cpus, server_cpus = placed.get("k6", {}).get("cpus"), placed.get("server", {}).get("cpus")
    cycle = model["cpu_ms"] + model["wait_ms"]
    return (f"Each request spends **{model['cpu_ms']:g} ms of CPU** (real work: SHA-256 rounds until its thread has "
            f"used that much CPU) and then **waits {model['wait_ms']:g} ms**, as a call to a database would, holding its "
            f"thread throughout. k6 runs on CPU {_cpus(k6_cpus)} and the server on CPU {_cpus(server_cpus)}, so each has a "
            f"core of its own. On {_cores(model['cores'])} the server can finish at most {model['cores']:g} / "
            f"{model['cpu_ms']:g} ms = **{model['cores'] * 1000 / model['cpu_ms']:,.0f} requests per second**; a user, "
            f"who waits for each answer before sending the next, can send at most 1000 / {cycle:g} = "
            f"{1000 / cycle:.1f} per second. The CPU saturates when {model['cores']:g} × (1 + {model['wait_ms']:g} / "
            f"{model['cpu_ms']:g}) = **{model['knee_threads']:g} requests** are in progress at once: the knee. A pool of "
            "200 threads, Spring Boot's default, is far past it.")


def ramp_sentence(data: ChapterData, table: pd.DataFrame, article: pd.DataFrame) -> str:
    """How the load runs and which seconds count, from the reference step's stages and the table."""
    ramp_s, hold_s = (duration_ms(stage["duration"]) // 1000 for stage in reference_step(data)["config"]["load"]["stages"])
    runs = article.set_index("run")
    quotas = sorted(table["cpu_quota"].unique())
    fewest = sustained(table)["tps"].min() * (hold_s - SETTLE_S - 1)
    return (f"The article's pods become a CPU quota: the server gets {' or '.join(_cores(q) for q in quotas)} (the "
            f"article's scale-up from {runs['pod_cores'].min():g} to {runs['pod_cores'].max():g} cores per pod is the "
            f"same ×{runs['pod_cores'].max() / runs['pod_cores'].min():g}). Users ramp up over {ramp_s} s, as nGrinder's "
            f"ramp-up does, and then hold for {hold_s} s with no think time: every user sends its next request the "
            f"moment the last is answered. Each step's numbers are those of the hold after {SETTLE_S} s of settling; "
            f"even the slowest sustained step answered {fewest:,.0f} requests in that time, enough for a steady mean "
            "and p99. Every latency here comes from the full distribution of every request, counted per second.")


def _cpus(cpus: list[int] | None) -> str:
    return ", ".join(map(str, cpus)) if cpus else "any"


def _cores(cores: float) -> str:
    return "one core" if cores == 1 else f"{cores:g} of a core" if cores < 1 else f"{words(cores)} cores"


def work_ms(data: ChapterData) -> float:
    """The CPU work each request asks for, as the model read it from the reference step."""
    return float(reference_step(data)["model"]["cpu_ms"])


def plateau_sentence(data: ChapterData, table: pd.DataFrame) -> str:
    """Where the sweep's throughput stops rising, against the model's bound; whether it falls beyond; what the server's
    CPU says of a request's real cost."""
    rows = sweep(table)
    best, top = rows.loc[rows.tps.idxmax()], rows.iloc[-1]
    falls = top["tps"] < (1 - PLATEAU_NOISE) * best["tps"]
    after = (f"then falls as users grow, to {top['tps']:,.0f} at {int(top['users']):,} users, while the CPU a request "
             f"costs grows from {best['cpu_ms_per_request']:.1f} to {top['cpu_ms_per_request']:.1f} ms" if falls else
             f"and stays there up to {int(top['users']):,} users")
    return (f"Throughput rises with users until the server's core is busy: at most **{best['tps']:,.0f} answered "
            f"requests per second** (at {int(best['users']):,} users), {after}. That is "
            f"{percent(best['tps'] / best['model_tps'])} of the model's {best['model_tps']:,.0f}, because a request cost "
            f"the server **{best['cpu_ms_per_request']:.1f} ms of CPU**, not the {work_ms(data):g} ms of the endpoint's "
            f"own work: the rest is Tomcat, Spring and the JVM around it (the server used {best['server_cpu_cores']:.2f} "
            f"of its core). At {int(top['users']):,} users the mean latency is {top['mean_ms']:,.0f} ms (model: "
            f"{top['model_mean_ms']:,.0f}) and p99 {top['p99_ms']:,.0f} ms: past the knee, more users only wait longer.")


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
    rows = sustained(table, full_cpu=True)
    best = rows.groupby("threads_max")["tps"].max().sort_index()
    parts = ", ".join(f"{tps:,.0f} with threads.max {threads:,}" for threads, tps in best.items())
    past_knee = best[best.index >= rows.threads_max.mode().iloc[0]]
    more_helped = (past_knee.iloc[1:] > (1 + PLATEAU_NOISE) * past_knee.iloc[0]).any()
    return (f"The best plateau per pool: {parts}. "
            + ("More threads raised it: the core had room the pool could not use." if more_helped else
               "Threads beyond the knee have nothing to add: the core was already busy, and more threads in line for "
               "it only cost more switching."))


def quota_sentence(table: pd.DataFrame, article: pd.DataFrame) -> str:
    """Half a core against one (the article's pod scale-up, its runs 5 and 6), and more threads on half a core; each
    setting's median over its runs."""
    rows = sustained(table)
    quota_steps = rows[rows.step.str.contains("quota")]
    if quota_steps.cpu_quota.nunique() < 2:
        return "*No quota steps yet.*"
    runs = article.set_index("run")
    medians = quota_steps.groupby(["threads_max", "cpu_quota"])["tps"].agg(["median", "count"])
    pool = quota_steps.threads_max.min()
    half, one = medians.loc[(pool, quota_steps.cpu_quota.min())], medians.loc[(pool, quota_steps.cpu_quota.max())]
    text = (f"On half a core the plateau is {half['median']:,.0f} requests per second{_runs(half)}; on a whole one, "
            f"{one['median']:,.0f}{_runs(one)}: ×{one['median'] / half['median']:.2f} for ×2 the CPU (the article: "
            f"×{runs.loc[6, 'tps'] / runs.loc[5, 'tps']:.2f} for ×{runs.loc[6, 'pod_cores'] / runs.loc[5, 'pod_cores']:g} "
            f"the cores, from {runs.loc[5, 'tps']:,} to {runs.loc[6, 'tps']:,} requests per second).")
    more = medians.drop(index=pool, level="threads_max")
    for (threads, quota), r in more.iterrows():
        text += (f" With threads.max {int(threads):,} instead of {int(pool):,} on {_cores(quota)}: {r['median']:,.0f}"
                 f"{_runs(r)}.")
        text += _spread(quota_steps[quota_steps.cpu_quota == quota], pool, threads)
    return text


def _spread(rows: pd.DataFrame, pool: int, threads: int) -> str:
    """When a pair ran more than once: how far apart the first runs were, against the spread between runs."""
    first = rows.drop_duplicates("threads_max").set_index("threads_max")["tps"]
    if rows.groupby("threads_max").size().min() < 2 or not {pool, threads} <= set(first.index):
        return ""
    spread = rows.groupby("threads_max")["tps"].agg(lambda v: v.max() - v.min()).max()
    medians = rows.groupby("threads_max")["tps"].median()
    apart = abs(medians[threads] / medians[pool] - 1)
    verdict = (f"it was noise: the medians are {percent(apart)} apart" if apart <= PLATEAU_NOISE else
               f"the medians are still {percent(apart)} apart")
    return (f" Run once each, the two pools were {percent(abs(first[threads] / first[pool] - 1))} apart; repeated, "
            f"one setting's runs spread over up to {spread:,.0f} requests per second, and {verdict}.")


def _runs(row) -> str:
    return f" (median of {words(int(row['count']))} runs)" if row["count"] > 1 else ""


def saturation_sentence(table: pd.DataFrame) -> str:
    """Who was busy: the server against its quota, k6 against its core, over the sustained steps past the knee."""
    rows = sustained(table)
    busy = rows[rows.server_cpu_cores >= 0.9 * rows.cpu_quota]
    k6 = table["k6_cpu_cores"].max()
    return (f"In {words(len(busy))} of the {words(len(rows))} sustained steps the server used at least 90 % of its CPU "
            f"quota; k6 never used more than {k6:.2f} of its own core. The server's CPU, not the load generator's, set "
            "every plateau here.")


def threads_growth_sentence(table: pd.DataFrame) -> str:
    """How far Tomcat grew its pool against threads.max and the users, at the largest pool."""
    rows = sustained(table)
    others = rows[rows.threads_max != sweep(table).threads_max.iloc[0]]
    pool = others.groupby("threads_max")["users"].nunique().idxmax() if len(others) else rows.threads_max.max()
    full_cpu = sustained(table, full_cpu=True)
    at_pool = full_cpu[full_cpu.threads_max == pool].drop_duplicates("users").sort_values("users")
    if at_pool.empty:
        return ""
    parts = ", ".join(f"{int(r.current_threads_peak):,} threads for {int(r.users):,} users" for r in at_pool.itertuples())
    live = at_pool.loc[at_pool["live_threads_peak"].idxmax()]
    return (f"With threads.max {int(pool):,} Tomcat created {parts}: it starts a thread when a request finds none idle, "
            f"so the pool follows the requests in its hands, never the setting.{_short_of_max(rows)} The JVM counts more: "
            f"{int(live['live_threads_peak']):,} live threads at {int(live['users']):,} users, since the management "
            "port runs a second Tomcat that keeps the same min-spare, beside the JVM's own threads. The article's "
            "thread counts are the JVM's.")


def _short_of_max(rows: pd.DataFrame) -> str:
    """Steps with at least threads.max users whose pool still stopped short of it (empty when none did)."""
    short = rows[(rows.users >= rows.threads_max) & (rows.current_threads_peak < rows.threads_max)]
    if short.empty:
        return ""
    worst = short.loc[(short.current_threads_peak / short.threads_max).idxmin()]
    return (f" With as many users as threads.max or more, the pool still stopped short in {words(len(short))} "
            f"step{'s' if len(short) > 1 else ''} (furthest: {worst['step']}, {int(worst['current_threads_peak']):,} "
            f"threads of {int(worst['threads_max']):,} for {int(worst['users']):,} users). We have not isolated why; the "
            "likeliest cause is that on a saturated core the connector reads new requests late, so fewer are in "
            "Tomcat's hands than users wait.")


def burst_sentence(table: pd.DataFrame) -> str:
    """The burst steps' first seconds, cold pool against warm."""
    bursts = table[table.kind == BURST].sort_values("min_spare")
    if len(bursts) < 2:
        return "*No burst steps yet.*"
    cold, warm = bursts.iloc[0], bursts.iloc[-1]
    return (f"In the first seconds of the burst, p99 latency was {cold['first_seconds_p99_ms']:,.0f} ms with min-spare "
            f"{int(cold['min_spare']):,} and {warm['first_seconds_p99_ms']:,.0f} ms with {int(warm['min_spare']):,}; "
            f"{int(cold['first_seconds_errors']):,} and {int(warm['first_seconds_errors']):,} requests failed. "
            + ("The warm pool helped: threads started before the burst took its first requests at once."
               if f004_d(table).verdict == REPRODUCED else
               "Starting a thread takes well under a millisecond, while each of these requests waits far longer for the "
               "one core: the queue for the CPU, not the missing threads, sets the first seconds' latency."))


def open_sentence(table: pd.DataFrame) -> str:
    """The open model against the closed loop's plateau: what arrived, what was answered, the p99, what k6 dropped."""
    rows = table[table.kind == OPEN].sort_values("rate")
    if rows.empty:
        return "*No open-model steps yet.*"
    plateau = sweep(table)["tps"].max()
    steps = "; ".join(f"{r.rate:,.0f} arriving per second: {r.tps:,.0f} answered, p99 {r.p99_ms:,.0f} ms"
                      + (f", {r.dropped:,} dropped" if r.dropped else "") for r in rows.itertuples())
    dropped = rows[rows.dropped > 0]
    return (f"{steps}. The closed loop's plateau was {plateau:,.0f} per second. In a closed loop a user waits for its "
            "answer before asking again, so the load backs off when the server slows; arrivals do not, and once they "
            "come faster than the server answers, the queue grows every second and latency with it, for as long as the "
            "step lasts."
            + (f" k6 dropped what it had no free VU for ({listed(dropped['rate'].astype(int))} per second): those steps "
               "did not send what they asked, which is the open model's way of saying the server fell behind."
               if len(dropped) else ""))


def few_threads_sentence(table: pd.DataFrame) -> str:
    """The pools below the knee: throughput capped by threads, against threads / (D + W)."""
    rows = table[table.step.str.startswith("few-threads-")].sort_values("threads_max")
    if rows.empty:
        return "*No few-threads steps yet.*"
    parts = ", ".join(f"{int(r.threads_max):,} threads: {r.tps:,.0f} per second (model {r.model_tps:,.0f}, server "
                      f"{r.server_cpu_cores:.2f} cores)" for r in rows.itertuples())
    return (f"Below the knee the pool is the limit, and the core idles while every thread waits: {parts}. Here, and "
            "only here, more threads mean more throughput.")


def meaning_list(data: ChapterData, table: pd.DataFrame) -> str:
    """What a backend engineer can take from the chapter, each point worded from its numbers."""
    model = reference_step(data)["model"]
    rows = sweep(table)
    best = rows.loc[rows.tps.idxmax()]
    lines = [
        f"- **Find the knee before tuning threads.** Cores × (1 + wait / CPU time) threads keep the CPU busy: here "
        f"{model['cores']:g} × (1 + {model['wait_ms']:g} / {model['cpu_ms']:g}) = {model['knee_threads']:g}. Your APM's "
        "CPU time per request and its time in database calls give both numbers.",
        f"- **Measure a request's CPU, not the handler's.** Ours asked for {model['cpu_ms']:g} ms and cost "
        f"{best['cpu_ms_per_request']:.1f} ms of the server's CPU (its CPU time over the requests it answered): the "
        "plateau is cores divided by that number.",
        "- **threads.max beyond the knee buys a longer queue, not throughput.** Requests past it wait in the JVM "
        "instead of in the accept queue; latency grows with users by Little's law either way.",
        quota_point(table),
    ]
    return "\n".join(lines)


def quota_point(table: pd.DataFrame) -> str:
    """The scale-up lesson, as F004-b's verdict on this data has it."""
    verdict = f004_b(table)
    if verdict.verdict == REPRODUCED:
        return "- **More CPU moves the plateau; more threads on the same CPU do not** (F004-b)."
    return ("- **More CPU moves the plateau.** Whether more threads on the same CPU moved it here is less clear: "
            f"F004-b's verdict below says what was measured ({verdict.verdict}).")


def run_time_sentence(data: ChapterData) -> str:
    """The full run's wall time against the model's minimum (the load phases alone)."""
    wall = sum(m.get("wall_s", 0) for m in data.steps.values())
    load = sum((m.get("model") or {}).get("min_duration_ms", 0) for m in data.steps.values()) / 1000
    return (f"The whole run took {wall / 60:.0f} minutes for {load / 60:.0f} minutes of load: the rest is a fresh "
            f"server for each of the {words(len(data.steps))} steps, k6's start and stop, and writing the data.")
