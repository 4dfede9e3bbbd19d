"""Chapter 2: the lab's own limits, computed from its data: how fast k6 starts users, what a user, a
connection and a thread cost in memory, how long a redeploy takes, what the samplers cost, how much a
repeated step varies.

Steps are grouped by id prefix (experiments/chapter2.toml): hold-N (N users on N threads), batch-N (the same spike
sent through http.batch), queue-N (N users on Spring Boot's default pool), cv-N (constant-vus for 1 s), redeploy-*,
noise-* and unsampled-* (chapter 3's headline step repeated, with and without samplers).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from harness.book.analysis import spike_start_ms
from harness.lab.spec import SERVER_DEFAULTS
from harness.lab.store import ChapterData, answered

SPIKE_S = 1.0  # the articles' constant-vus duration: a user k6 starts later sends nothing


MIB = 2**20


SERIES = {"hold-": "N threads", "batch-": "N threads, http.batch",
          "queue-": f"{SERVER_DEFAULTS['TOMCAT_MAX_THREADS']} threads", "cv-": "constant-vus 1 s"}
SPIKE_MODES = {"hold-": "one k6 VU per user", "batch-": "http.batch"}  # the two ways to start a spike's users


def steps_with(data: ChapterData, prefix: str) -> list[str]:
    """The steps of a series, fewest users first."""
    ids = [s for s in data.steps if s.startswith(prefix)]
    return sorted(ids, key=lambda s: (data.steps[s]["config"]["load"].get("vus", 0), s))


def series_knob(data: ChapterData, prefix: str, name: str):
    """A server knob as a series' steps ran it (Spring Boot's default where the spec leaves it); the most common value."""
    values = pd.Series([data.steps[s]["config"]["server"].get(name, SERVER_DEFAULTS.get(name)) for s in steps_with(data, prefix)])
    return values.mode().iloc[0] if len(values) else SERVER_DEFAULTS.get(name)


def _users(data: ChapterData, step: str) -> int:
    return data.steps[step]["config"]["load"]["vus"]


def is_batch(data: ChapterData, step: str) -> bool:
    return data.steps[step]["config"]["load"].get("spike_mode") == "batch"


def first_starts_s(data: ChapterData, step: str) -> pd.Series:
    """Seconds from the step's first request to each user's first request, sorted. In batch mode a k6 VU carries
    many users, each sending one request: every request is its user's first."""
    requests = data.requests[data.requests.step == step]
    first = requests["start_ms"] if is_batch(data, step) else requests.groupby("vu")["start_ms"].min()
    return ((first - spike_start_ms(data)[step]) / 1000).sort_values().reset_index(drop=True)


def start_table(data: ChapterData) -> pd.DataFrame:
    """Per step of the hold, queue and cv series: users asked, requests issued, and how the starts spread."""
    rows = []
    for prefix, series in SERIES.items():
        for step in steps_with(data, prefix):
            starts = first_starts_s(data, step)
            meta = data.steps[step]
            rows.append({
                "step": step, "series": series, "users": _users(data, step),
                "issued": meta["requests"]["issued"], "started_1s": int((starts <= SPIKE_S).sum()),
                "p50_s": starts.quantile(0.5), "p95_s": starts.quantile(0.95), "spread_s": starts.max(),
            })
    return pd.DataFrame(rows)


def start_curves(data: ChapterData, points: int = 100) -> pd.DataFrame:
    """Share of users started against seconds since the first, per step of each spike mode, from `points` quantiles."""
    shares = np.linspace(0, 1, points)
    frames = [pd.DataFrame({"step": step, "mode": mode, "users": _users(data, step), "share": shares,
                            "t_s": first_starts_s(data, step).quantile(shares).to_numpy()})
              for prefix, mode in SPIKE_MODES.items() for step in steps_with(data, prefix)]
    columns = ["step", "mode", "users", "share", "t_s"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def start_cpu(data: ChapterData, step: str) -> dict[str, float]:
    """Cores k6 and the server used while the step's users were starting (first to last start): the CPU time each
    process gained between the samples that bracket that window, or, for a process first sampled after the window
    opened (k6 starts just before its first request), between its samples inside it. NaN when no two samples do."""
    begin = spike_start_ms(data)[step]
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
    for step in steps_with(data, "batch-"):
        users, per_vu = _users(data, step), f"hold-{_users(data, step)}"
        if per_vu not in data.steps:
            continue
        cpu = start_cpu(data, step)
        rows.append({"users": users, "batch_spread_s": first_starts_s(data, step).max(),
                     "vus_spread_s": first_starts_s(data, per_vu).max(),
                     "batch_k6_vus": int(data.requests.loc[data.requests.step == step, "vu"].nunique()),
                     "k6_cores": cpu["k6"], "server_cores": cpu["server"]})
    return pd.DataFrame(rows, columns=["users", "batch_spread_s", "vus_spread_s", "batch_k6_vus", "k6_cores", "server_cores"])


def repeated_users(data: ChapterData) -> int | None:
    """The N whose constant-vus step ran again (again-cv-N-k), None when none did."""
    again = steps_with(data, "again-cv-")
    return _users(data, again[0]) if again else None


def issued_runs(data: ChapterData, users: int | None = None) -> pd.DataFrame:
    """Every constant-vus run at `users` (default: the N that ran again; cv-N and its repeats again-cv-N-k): requests
    issued and the last start."""
    users = users or repeated_users(data)
    steps = [s for s in (f"cv-{users}", *steps_with(data, f"again-cv-{users}-")) if s in data.steps]
    return pd.DataFrame([{"step": s, "users": users, "issued": data.steps[s]["requests"]["issued"],
                          "last_start_s": first_starts_s(data, s).max()} for s in steps],
                        columns=["step", "users", "issued", "last_start_s"])


def issued_sentence(data: ChapterData, users: int | None = None) -> str:
    """What the constant-vus repeats at `users` show, against the per-vu run's users started within 1 s."""
    users = users or repeated_users(data)
    runs = issued_runs(data, users)
    hold = start_table(data).set_index("step")
    if runs.empty or f"hold-{users}" not in hold.index:
        return "*No constant-vus repeats yet.*"
    started = int(hold.loc[f"hold-{users}", "started_1s"])
    low, high = int(runs["issued"].min()), int(runs["issued"].max())
    side = "all below" if high < started else "all above" if low > started else "around"
    within = "every one started within the first second" if runs["last_start_s"].max() <= SPIKE_S else "some started later"
    pace = ("At this size the two executors do not start users at the same pace, and the count differs from run to run: "
            if side != "around" else "At this size the two executors start users at about the same pace, but the count "
            "differs from run to run: ")
    why = ("We have not isolated why k6 starts constant-vus users more slowly; chapter 3 judges its findings on the per-vu "
           "runs for this reason." if side == "all below" else "")
    return (f"Over {len(runs)} runs `constant-vus` issued between {low:,} and {high:,} of {users:,} requests ({within}), "
            f"{side} the {started:,} users the per-vu run had started by then. {pace}"
            f"a chapter that quotes what `constant-vus` sent quotes one draw. {why}").rstrip()


def spike_limit(table: pd.DataFrame) -> int | None:
    """The largest N up to which every per-vu step started all its users within SPIKE_S (None: not even the first)."""
    limit = None
    for row in table[table.series == SERIES["hold-"]].sort_values("users").itertuples():
        if row.spread_s > SPIKE_S:
            break
        limit = row.users
    return limit


def overflow_table(data: ChapterData) -> pd.DataFrame:
    """Per hold, queue and cv step: how often the kernel's accept queue overflowed although max-connections had
    room, the SYNs clients sent again, and the requests that failed or were cut off."""
    rows = []
    for prefix, series in SERIES.items():
        for step in steps_with(data, prefix):
            ss = data.ss[data.ss.step == step]
            counts = data.steps[step]["requests"]
            rows.append({"step": step, "series": series, "users": _users(data, step),
                         "listen_overflows": int(ss["listen_overflows"].sum()),
                         "syn_retransmits": int(ss["syn_retrans"].sum()) if "syn_retrans" in ss else 0,
                         "accept_queue_peak": _peak(data.ss, step, "accept_queue"),
                         "failed": counts.get("failed", 0), "interrupted": counts.get("interrupted", 0)})
    return pd.DataFrame(rows)


def first_overflow(table: pd.DataFrame) -> int | None:
    """The fewest users of a hold step whose spike overflowed the accept queue (None: none did)."""
    over = table[(table.series == SERIES["hold-"]) & (table.listen_overflows > 0)]
    return int(over["users"].min()) if len(over) else None


def _peak(frame: pd.DataFrame, step: str, column: str, **where) -> float:
    rows = frame[frame.step == step]
    for key, value in where.items():
        rows = rows[rows[key] == value]
    return float(rows[column].max()) if len(rows) else float("nan")


def memory_table(data: ChapterData) -> pd.DataFrame:
    """Peak memory (RSS) of k6 and the server, with the connections and threads the server held at the time."""
    rows = []
    for prefix in ("hold-", "batch-", "queue-"):
        for step in steps_with(data, prefix):
            server = data.process[(data.process.step == step) & (data.process.process == "server")]
            rows.append({
                "step": step, "series": SERIES[prefix], "users": _users(data, step),
                "k6_mib": _peak(data.process, step, "rss_bytes", process="k6") / MIB,
                "server_mib": server["rss_bytes"].max() / MIB,
                "server_idle_mib": server.sort_values("ts_ms")["rss_bytes"].iloc[0] / MIB if len(server) else float("nan"),
                "connections": _peak(data.ss, step, "estab"),
                "threads": _peak(data.actuator, step, "value", metric="tomcat.threads.current"),
            })
    return pd.DataFrame(rows)


def _slope(x: pd.Series, y: pd.Series) -> tuple[float, float]:
    """Least-squares line y = slope × x + intercept."""
    slope, intercept = np.polyfit(x.astype(float), y.astype(float), 1)
    return float(slope), float(intercept)


def memory_costs(table: pd.DataFrame) -> dict[str, float]:
    """KiB per unit from straight lines through the peaks: k6 per user with one VU per user (hold and queue series)
    and in batch mode, the server per held connection (queue-N's fixed pool) and per connection with its own thread
    (N threads); a thread is the difference."""
    hold, queue = table[table.series == SERIES["hold-"]], table[table.series == SERIES["queue-"]]
    per_vu, batch = table[table.series != SERIES["batch-"]], table[table.series == SERIES["batch-"]]
    k6, _ = _slope(per_vu["users"], per_vu["k6_mib"])
    k6_batch = _slope(batch["users"], batch["k6_mib"])[0] if len(batch) > 1 else float("nan")
    both, _ = _slope(hold["connections"], hold["server_mib"])
    connection, _ = _slope(queue["connections"], queue["server_mib"])
    return {"k6_per_user_kib": k6 * 1024, "k6_per_batch_user_kib": k6_batch * 1024,
            "server_per_connection_kib": connection * 1024,
            "server_per_connection_and_thread_kib": both * 1024, "server_per_thread_kib": (both - connection) * 1024}


def redeploy_table(data: ChapterData) -> pd.DataFrame:
    """Start to healthy per redeploy step: how the JVM started, median and range, memory when healthy."""
    rows = []
    for step in steps_with(data, "redeploy-"):
        starts = data.startup[data.startup.step == step]
        rows.append({"step": step, "launch": data.steps[step].get("launch", "?"), "starts": len(starts),
                     "median_ms": starts["startup_ms"].median(), "min_ms": starts["startup_ms"].min(),
                     "max_ms": starts["startup_ms"].max(), "rss_mib": starts["rss_bytes"].median() / MIB})
    return pd.DataFrame(rows)


def sampler_cost_table(data: ChapterData) -> pd.DataFrame:
    """CPU the samplers used per step, as a share of one core over the load, against the connections held."""
    rows = []
    for step, meta in data.steps.items():
        samplers = meta.get("samplers") or {}
        if not samplers.get("enabled", True) or "load_ended_ms" not in meta:
            continue
        seconds = (meta["load_ended_ms"] - meta["load_started_ms"]) / 1000
        budget = samplers.get("ss", {}).get("cpu_budget")
        rows.append({"step": step, "connections": _peak(data.ss, step, "estab"), "load_s": seconds,
                     "socket_counts": f"within {budget:.0%} of a core" if budget else "every tick",
                     "core_share": samplers["cpu_seconds"] / seconds,
                     **{f"{name}_cpu_s": samplers[name]["cpu_seconds"] for name in ("ss", "actuator", "process")}})
    return pd.DataFrame(rows).sort_values(["connections", "step"], ignore_index=True)


def wave_times(ends_s, wave_size: int) -> list[float]:
    """The median of each full wave of `wave_size` completions (sorted seconds), in order."""
    ends_s = np.sort(np.asarray(ends_s, dtype=float))
    return [float(np.median(ends_s[k:k + wave_size])) for k in range(0, len(ends_s) - wave_size + 1, wave_size)]


def measured_wave_times_s(data: ChapterData, step: str, wave_size: int) -> list[float]:
    requests = data.requests[(data.requests.step == step) & answered(data.requests)]
    return wave_times((requests["end_ms"] - spike_start_ms(data)[step]) / 1000, wave_size)


def model_wave_times_s(model: dict) -> list[float]:
    """The same waves in the model's predicted completions."""
    ends = [t / 1000 for t, count in model["completions"] for _ in range(count)]
    return wave_times(ends, model["threads"])


def noise_table(data: ChapterData) -> pd.DataFrame:
    """One row per run and wave of the repeated step: when the wave finished (measured, model), and the run's counts."""
    rows = []
    for prefix, sampled in (("noise-", True), ("unsampled-", False)):
        for step in steps_with(data, prefix):
            meta = data.steps[step]
            model, counts = meta["model"], meta["requests"]
            predicted = model_wave_times_s(model)
            for wave, t in enumerate(measured_wave_times_s(data, step, model["threads"]), start=1):
                rows.append({"step": step, "sampled": sampled, "wave": wave, "t_s": t,
                             "model_s": predicted[wave - 1] if wave <= len(predicted) else float("nan"),
                             "ok": counts["succeeded"], "failed": counts["failed"], "model_failed": model["failed"]})
    return pd.DataFrame(rows, columns=["step", "sampled", "wave", "t_s", "model_s", "ok", "failed", "model_failed"])


def noise_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per wave: median and range of its time over the sampled runs, and where the unsampled runs fell."""
    sampled, unsampled = table[table.sampled], table[~table.sampled]
    out = sampled.groupby("wave")["t_s"].agg(median_s="median", min_s="min", max_s="max").reset_index()
    out["range_s"] = out["max_s"] - out["min_s"]
    off = unsampled.groupby("wave")["t_s"].agg(unsampled_min_s="min", unsampled_max_s="max").reset_index()
    return out.merge(off, on="wave", how="left")


def runs_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per run of the repeated step: sampled or not, answered and failed."""
    return table.drop_duplicates("step")[["step", "sampled", "ok", "failed", "model_failed"]].reset_index(drop=True)


def recorded_machine(data: ChapterData) -> dict:
    """The machine the chapter's data was measured on, as its first step recorded it."""
    return next(iter(data.steps.values()))["machine"]
