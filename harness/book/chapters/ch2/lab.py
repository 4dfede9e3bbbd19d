"""Chapter 2's measurements of its own lab, computed from the data as it ran (each step.json's config): how fast k6
starts users, what a user, a connection and a thread cost in memory, how long a redeploy takes, what the samplers cost,
how much a repeated step varies. Tables of numbers, no prose.

Steps are told apart by their ids in the data (experiments/chapter2.toml): hold-N (N users on N threads), batch-N (the
same spike sent through http.batch), queue-N (N users on Spring Boot's default pool), cv-N (constant-vus for 1 s),
redeploy-*, and three steps measured several times (runs = n: `<id>`, `<id>.2` … `<id>.n`): `noise` and `unsampled`
(chapter 3's headline step, with and without samplers) and `again-cv-N` (cv-N again).
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd

from harness.book.analysis import step_start_ms
from harness.lab import store
from harness.lab.services.tomcat.knobs import SERVER_DEFAULTS
from harness.lab.spec import RUN_MARK
from harness.lab.steps import server_knob
from harness.lab.store import ChapterData, answered

CHAPTER = "chapter2"
SPIKE_S = 1.0  # the articles' constant-vus duration: a user k6 starts later sends nothing
MIB, KIB = 2**20, 1024
NOISE, UNSAMPLED, AGAIN = "noise", "unsampled", "again-cv-"  # the repeated steps (AGAIN: a prefix, again-cv-<N>)
DEFAULT_THREADS = SERVER_DEFAULTS["TOMCAT_MAX_THREADS"]

# The series, by id prefix, with the names charts and tables give them.
HOLD, BATCH, QUEUE, CV = "hold-", "batch-", "queue-", "cv-"
SERIES = {HOLD: "one VU per user, N threads", BATCH: "http.batch, N threads",
          QUEUE: f"one VU per user, {DEFAULT_THREADS} threads", CV: "constant-vus for 1 s, N threads"}
SPIKE_MODES = {HOLD: "one k6 VU per user", BATCH: "http.batch"}  # the two ways to start a spike's users


def steps_with(data: ChapterData, prefix: str) -> list[str]:
    """The steps of a series (their first runs), fewest users first."""
    ids = [s for s in data.steps if s.startswith(prefix)]
    return sorted(ids, key=lambda s: (users_of(data, s), s))


def users_of(data: ChapterData, step: str) -> int:
    return data.steps[step]["config"]["load"].get("vus", 0)


def series_knob(data: ChapterData, prefix: str, name: str):
    """A server knob as a series' steps ran it (Spring Boot's default where the spec leaves it); the most common value."""
    values = pd.Series([server_knob(data.steps[s], name) for s in steps_with(data, prefix)])
    return values.mode().iloc[0] if len(values) else SERVER_DEFAULTS.get(name)


def is_batch(data: ChapterData, step: str) -> bool:
    return data.steps[step]["config"]["load"].get("spike_mode") == "batch"


def recorded_machine(data: ChapterData) -> dict:
    """The machine the chapter's data was measured on, as its first step recorded it."""
    return next(iter(data.steps.values()))["machine"]


# ---- every run of a step ---------------------------------------------------------------------------------------

def run_ids(data: ChapterData, step: str) -> list[str]:
    """The step directories of every run of `step`, first run first (`<id>`, `<id>.<k>`), from each run's step.json."""
    if step not in data.steps:
        return []
    metas = data.runs.get(step, [data.steps[step]])
    numbers = [(m.get("run") or {}).get("run", position) for position, m in enumerate(metas, start=1)]
    return [step if k == 1 else f"{step}{RUN_MARK}{k}" for k in numbers]


def run_metas(data: ChapterData, step: str) -> list[dict]:
    return list(data.runs.get(step, [data.steps[step]])) if step in data.steps else []


def one_run(data: ChapterData, run_id: str) -> ChapterData:
    """One run with its tables: from `data` when it holds it (the first run, or synthetic data), else from the store."""
    if run_id in data.steps:
        return data.only([run_id])
    return _stored_run(store.data_root(), data.chapter, run_id)


@functools.lru_cache(maxsize=32)
def _stored_run(root: Path, chapter: str, run_id: str) -> ChapterData:
    with store.reading(root):
        return store.load_run(chapter, run_id)


def every_run(data: ChapterData, step: str) -> list[tuple[str, ChapterData]]:
    return [(run_id, one_run(data, run_id)) for run_id in run_ids(data, step)]


# ---- how fast k6 starts users -----------------------------------------------------------------------------------

def first_starts_s(data: ChapterData, step: str) -> pd.Series:
    """Seconds from the step's first request to each user's first request, sorted. In batch mode a k6 VU carries
    many users, each sending one request: every request is its user's first."""
    requests = data.requests[data.requests.step == step]
    first = requests["start_ms"] if is_batch(data, step) else requests.groupby("vu")["start_ms"].min()
    return ((first - spike_ms(data, step, requests)) / 1000).sort_values().reset_index(drop=True)


def spike_ms(data: ChapterData, step: str, requests: pd.DataFrame | None = None) -> float:
    """Time zero of a step: its first request (harness.book.analysis.spike_start_ms, for one step); `requests`: the
    step's, when the caller has them (selecting them again from the chapter's is most of this function's time)."""
    if requests is None:
        requests = data.requests[data.requests.step == step]
    return step_start_ms(data.steps[step], requests["start_ms"].min() if len(requests) else None)


def start_table(data: ChapterData) -> pd.DataFrame:
    """Per step of the hold, batch, queue and cv series: users asked, requests issued, and how the starts spread."""
    rows = []
    for prefix, series in SERIES.items():
        for step in steps_with(data, prefix):
            starts = first_starts_s(data, step)
            rows.append({"step": step, "series": series, "users": users_of(data, step),
                         "issued": data.steps[step]["requests"]["issued"], "started_1s": int((starts <= SPIKE_S).sum()),
                         "p50_s": starts.quantile(0.5), "p95_s": starts.quantile(0.95), "spread_s": starts.max()})
    return pd.DataFrame(rows, columns=["step", "series", "users", "issued", "started_1s", "p50_s", "p95_s", "spread_s"])


def start_curves(data: ChapterData, points: int = 60) -> pd.DataFrame:
    """Share of users started against seconds since the first, per step of each spike mode, from `points` quantiles."""
    shares = np.linspace(0, 1, points)
    frames = [pd.DataFrame({"mode": mode, "users": users_of(data, step), "share": shares,
                            "t_s": first_starts_s(data, step).quantile(shares).round(3).to_numpy()})
              for prefix, mode in SPIKE_MODES.items() for step in steps_with(data, prefix)]
    columns = ["mode", "users", "share", "t_s"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def spike_limit(table: pd.DataFrame, prefix: str = HOLD) -> int | None:
    """The largest N up to which every step of a series started all its users within SPIKE_S (None: not even the
    first)."""
    limit = None
    for row in table[table.series == SERIES[prefix]].sort_values("users").itertuples():
        if row.spread_s > SPIKE_S:
            break
        limit = row.users
    return limit


def start_cpu(data: ChapterData, step: str) -> dict[str, float]:
    """Cores k6 and the server used while the step's users were starting (first to last start): the CPU time each
    process gained between the samples that bracket that window, or, for a process first sampled after the window
    opened (k6 starts just before its first request), between its samples inside it. NaN when no two samples do."""
    begin = spike_ms(data, step)
    end = begin + first_starts_s(data, step).max() * 1000
    used = {}
    for process in ("k6", "server"):
        rows = data.process[(data.process.step == step) & (data.process.process == process)].sort_values("ts_ms")
        before = rows[rows.ts_ms <= begin].tail(1)
        before = before if len(before) else rows[rows.ts_ms > begin].head(1)
        after = rows[rows.ts_ms >= end].head(1)
        after = after if len(after) else rows[rows.ts_ms < end].tail(1)
        seconds = (after["ts_ms"].sum() - before["ts_ms"].sum()) / 1000 if len(before) and len(after) else 0
        used[process] = (float((after["cpu_seconds"].iloc[0] - before["cpu_seconds"].iloc[0]) / seconds)
                         if seconds > 0 else float("nan"))
    return used


def batch_table(data: ChapterData) -> pd.DataFrame:
    """Per N run in both spike modes: seconds until the last user started, k6 VUs used, and the cores k6 and the
    server used while batch mode's users were starting."""
    rows = []
    for step in steps_with(data, BATCH):
        per_vu = f"{HOLD}{users_of(data, step)}"
        if per_vu not in data.steps:
            continue
        cpu = start_cpu(data, step)
        rows.append({"users": users_of(data, step), "batch_spread_s": first_starts_s(data, step).max(),
                     "vus_spread_s": first_starts_s(data, per_vu).max(),
                     "batch_k6_vus": int(data.requests.loc[data.requests.step == step, "vu"].nunique()),
                     "k6_cores": cpu["k6"], "server_cores": cpu["server"]})
    return pd.DataFrame(rows, columns=["users", "batch_spread_s", "vus_spread_s", "batch_k6_vus", "k6_cores", "server_cores"])


def repeated_users(data: ChapterData) -> int | None:
    """The N whose constant-vus step ran again (again-cv-N), None when none did."""
    again = steps_with(data, AGAIN)
    return users_of(data, again[0]) if again else None


def issued_runs(data: ChapterData, users: int | None = None) -> pd.DataFrame:
    """Every constant-vus run at `users` (default: the N that ran again): cv-N and every run of again-cv-N, with the
    requests each issued and its last start."""
    users = users or repeated_users(data)
    rows = [{"run": run_id, "users": users, "issued": run.steps[run_id]["requests"]["issued"],
             "last_start_s": first_starts_s(run, run_id).max()}
            for step in (f"{CV}{users}", f"{AGAIN}{users}") for run_id, run in every_run(data, step)]
    return pd.DataFrame(rows, columns=["run", "users", "issued", "last_start_s"])


# ---- the accept queue -------------------------------------------------------------------------------------------

def _peak(frame: pd.DataFrame, step: str, column: str, **where) -> float:
    rows = frame[frame.step == step]
    for key, value in where.items():
        rows = rows[rows[key] == value]
    return float(rows[column].max()) if len(rows) else float("nan")


def overflow_table(data: ChapterData) -> pd.DataFrame:
    """Per hold, batch, queue and cv step: how often the kernel's accept queue overflowed although max-connections had
    room, the SYNs clients sent again, and the requests that failed or were cut off."""
    rows = []
    for prefix, series in SERIES.items():
        for step in steps_with(data, prefix):
            ss = data.ss[data.ss.step == step]
            counts = data.steps[step]["requests"]
            rows.append({"step": step, "series": series, "users": users_of(data, step),
                         "listen_overflows": int(ss["listen_overflows"].sum()) if "listen_overflows" in ss else 0,
                         "syn_retransmits": int(ss["syn_retrans"].sum()) if "syn_retrans" in ss else 0,
                         "accept_queue_peak": _peak(data.ss, step, "accept_queue"),
                         "failed": counts.get("failed", 0), "interrupted": counts.get("interrupted", 0)})
    return pd.DataFrame(rows, columns=["step", "series", "users", "listen_overflows", "syn_retransmits",
                                       "accept_queue_peak", "failed", "interrupted"])


def first_overflow(table: pd.DataFrame, prefix: str = HOLD) -> int | None:
    """The fewest users of a series whose spike overflowed the accept queue (None: none did)."""
    over = table[(table.series == SERIES[prefix]) & (table.listen_overflows > 0)]
    return int(over["users"].min()) if len(over) else None


# ---- memory -----------------------------------------------------------------------------------------------------

def memory_table(data: ChapterData) -> pd.DataFrame:
    """Peak memory (RSS) of k6 and the server, with the connections and threads the server held at the time."""
    rows = []
    for prefix in (HOLD, BATCH, QUEUE):
        for step in steps_with(data, prefix):
            server = data.process[(data.process.step == step) & (data.process.process == "server")]
            rows.append({
                "step": step, "series": SERIES[prefix], "users": users_of(data, step),
                "k6_mib": _peak(data.process, step, "rss_bytes", process="k6") / MIB,
                "server_mib": server["rss_bytes"].max() / MIB,
                "server_idle_mib": server.sort_values("ts_ms")["rss_bytes"].iloc[0] / MIB if len(server) else float("nan"),
                "connections": _peak(data.ss, step, "estab"),
                "threads": _peak(data.actuator, step, "value", metric="tomcat.threads.current"),
            })
    return pd.DataFrame(rows, columns=["step", "series", "users", "k6_mib", "server_mib", "server_idle_mib",
                                       "connections", "threads"])


def slope(x: pd.Series, y: pd.Series) -> tuple[float, float]:
    """The least-squares slope of y over x and its standard error (from the fit's residuals); NaN below 3 points."""
    if len(x) < 3:
        return float("nan"), float("nan")
    (value, _), cov = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1, cov=True)
    return float(value), float(np.sqrt(cov[0, 0]))


def memory_costs(table: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """(KiB, standard error) per unit from straight lines through the peaks against the users held: k6 per user with
    one VU per user (hold and queue series) and in batch mode; the server per held connection (queue-N: its 200
    threads stay the same) and per connection with its own thread (hold-N); a thread is the difference."""
    by = {prefix: table[table.series == SERIES[prefix]] for prefix in (HOLD, BATCH, QUEUE)}
    per_vu = pd.concat([by[HOLD], by[QUEUE]])
    k6 = slope(per_vu["users"], per_vu["k6_mib"])
    k6_batch = slope(by[BATCH]["users"], by[BATCH]["k6_mib"])
    both = slope(by[HOLD]["users"], by[HOLD]["server_mib"])
    connection = slope(by[QUEUE]["users"], by[QUEUE]["server_mib"])
    thread = (both[0] - connection[0], float(np.hypot(both[1], connection[1])))
    return {name: (value * KIB, error * KIB) for name, (value, error) in {
        "k6_per_user": k6, "k6_per_batch_user": k6_batch, "server_per_connection": connection,
        "server_per_connection_and_thread": both, "server_per_thread": thread}.items()}


def memory_bound_users(data: ChapterData) -> tuple[float, float]:
    """How many users memory alone would allow, and its standard error: the machine's memory over k6's cost of one
    and the server's cost of a connection with its thread."""
    costs = memory_costs(memory_table(data))
    (k6, k6_error), (server, server_error) = costs["k6_per_user"], costs["server_per_connection_and_thread"]
    users = recorded_machine(data)["memory_bytes"] / KIB / (k6 + server)
    return users, users * float(np.hypot(k6_error, server_error)) / (k6 + server)


# ---- redeploys and samplers -------------------------------------------------------------------------------------

def redeploy_table(data: ChapterData) -> pd.DataFrame:
    """Start to healthy per redeploy step: how the JVM started, mean, median and range, memory when healthy."""
    rows = []
    for step in steps_with(data, "redeploy-"):
        starts = data.startup[data.startup.step == step]["startup_ms"]
        rows.append({"step": step, "launch": data.steps[step].get("launch", "?"), "starts": len(starts),
                     "mean_ms": starts.mean(), "sd_ms": starts.std(), "median_ms": starts.median(),
                     "min_ms": starts.min(), "max_ms": starts.max(),
                     "rss_mib": data.startup[data.startup.step == step]["rss_bytes"].median() / MIB})
    return pd.DataFrame(rows, columns=["step", "launch", "starts", "mean_ms", "sd_ms", "median_ms", "min_ms", "max_ms",
                                       "rss_mib"])


def sampler_share(meta: dict) -> float | None:
    """The samplers' CPU over the load, as a share of one core (None: the step ran without samplers)."""
    samplers = meta.get("samplers") or {}
    if not samplers.get("enabled", True) or "cpu_seconds" not in samplers or "load_ended_ms" not in meta:
        return None
    return samplers["cpu_seconds"] / ((meta["load_ended_ms"] - meta["load_started_ms"]) / 1000)


def sampler_cost_table(data: ChapterData) -> pd.DataFrame:
    """CPU the samplers used per step (first runs), as a share of one core over the load, against the connections."""
    rows = []
    for step, meta in data.steps.items():
        if (share := sampler_share(meta)) is None:
            continue
        samplers = meta["samplers"]
        budget = samplers.get("ss", {}).get("cpu_budget")
        rows.append({"step": step, "connections": _peak(data.ss, step, "estab"),
                     "load_s": (meta["load_ended_ms"] - meta["load_started_ms"]) / 1000,
                     "socket_counts": f"within {budget:.0%} of a core" if budget else "every tick", "core_share": share,
                     **{f"{name}_cpu_s": samplers[name]["cpu_seconds"] for name in ("ss", "actuator", "process")}})
    columns = ["step", "connections", "load_s", "socket_counts", "core_share", "ss_cpu_s", "actuator_cpu_s", "process_cpu_s"]
    return pd.DataFrame(rows, columns=columns).sort_values(["connections", "step"], ignore_index=True)


# ---- the repeated step: waves, answers, failures ---------------------------------------------------------------

def wave_times(ends_s, wave_size: int) -> list[float]:
    """The median of each full wave of `wave_size` completions (sorted seconds), in order."""
    ends_s = np.sort(np.asarray(ends_s, dtype=float))
    return [float(np.median(ends_s[k:k + wave_size])) for k in range(0, len(ends_s) - wave_size + 1, wave_size)]


def measured_wave_times_s(data: ChapterData, step: str, wave_size: int) -> list[float]:
    requests = data.requests[(data.requests.step == step) & answered(data.requests)]
    return wave_times((requests["end_ms"] - spike_ms(data, step)) / 1000, wave_size)


def model_wave_times_s(model: dict) -> list[float]:
    """The same waves in the model's predicted completions."""
    ends = [t / 1000 for t, count in model["completions"] for _ in range(count)]
    return wave_times(ends, model["threads"])


def noise_table(data: ChapterData) -> pd.DataFrame:
    """One row per run and wave of the repeated step (every run of `noise` and `unsampled`): when the wave finished
    (measured, model), and the run's counts and last start."""
    rows = []
    for step, sampled in ((NOISE, True), (UNSAMPLED, False)):
        for run_id, run in every_run(data, step):
            meta = run.steps[run_id]
            model, counts = meta["model"], meta["requests"]
            predicted = model_wave_times_s(model)
            last_start = first_starts_s(run, run_id).max()
            for wave, t in enumerate(measured_wave_times_s(run, run_id, model["threads"]), start=1):
                rows.append({"run": run_id, "sampled": sampled, "wave": wave, "t_s": t,
                             "model_s": predicted[wave - 1] if wave <= len(predicted) else float("nan"),
                             "ok": counts["succeeded"], "failed": counts["failed"], "model_failed": model["failed"],
                             "last_start_s": last_start})
    return pd.DataFrame(rows, columns=["run", "sampled", "wave", "t_s", "model_s", "ok", "failed", "model_failed",
                                       "last_start_s"])


def runs_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per run of the repeated step: sampled or not, answered, failed, its waves' median lag behind the
    model, and its last start."""
    columns = ["run", "sampled", "ok", "failed", "model_failed", "last_start_s", "lag_s"]
    if table.empty:
        return pd.DataFrame({"run": [], "sampled": pd.Series(dtype=bool), **{c: [] for c in columns[2:]}})
    lag = (table["t_s"] - table["model_s"]).groupby(table["run"]).median().rename("lag_s")
    runs = table.drop_duplicates("run").set_index("run")[columns[1:-1]]
    return runs.join(lag).reset_index()[columns]


def noise_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per wave: median and range of its time over the sampled runs, and where the unsampled runs fell."""
    flags = table.sampled.astype(bool)
    sampled, unsampled = table[flags], table[~flags]
    out = sampled.groupby("wave")["t_s"].agg(median_s="median", min_s="min", max_s="max").reset_index()
    out["range_s"] = out["max_s"] - out["min_s"]
    off = unsampled.groupby("wave")["t_s"].agg(unsampled_min_s="min", unsampled_max_s="max").reset_index()
    return out.merge(off, on="wave", how="left")
