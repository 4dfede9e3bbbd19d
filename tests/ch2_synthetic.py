"""Synthetic chapter-2 data whose answers are known, for the tests of harness.book.chapters.ch2: spikes with a chosen
start spread, memory growing by a chosen cost per user, thread and connection, repeated steps with chosen counts."""
from __future__ import annotations

import numpy as np
import pandas as pd

from harness.lab.store import COLUMNS, ChapterData

MIB, KIB = 2**20, 1024
MACHINE = {"cores": 2, "memory_bytes": 24 * 2**30, "nofile_limit": 20000, "local_port_range": ["32768", "60999"]}
K6_BASE, K6_PER_USER = 40 * MIB, 150 * KIB
SERVER_BASE, PER_CONNECTION, PER_THREAD = 180 * MIB, 40 * KIB, 100 * KIB
BATCH_USER_KIB, BATCH_VUS = 30, 10


def meta(step, vus, issued=None, executor="per-vu-iterations", threads=None, **extra):
    server = {} if threads is None else {"TOMCAT_MAX_THREADS": threads}
    return {"id": step, "started_ms": 0, "machine": MACHINE, "load_started_ms": 0, "load_ended_ms": 10_000,
            "config": {"load": {"vus": vus, "executor": executor}, "server": server, "system": {"sample_interval_ms": 500}},
            "requests": {"asked": vus, "issued": vus if issued is None else issued}, **extra}


def spike(step, users, spread_s, t0=1_000_000):
    """One request per user, first requests spread evenly over `spread_s`."""
    starts = t0 + np.linspace(0, spread_s * 1000, users)
    return pd.DataFrame({"step": step, "vu": range(1, users + 1), "iteration": 0, "start_ms": starts,
                         "end_ms": starts + 25_000, "status": 200, "error_code": 0})


def memory_rows(step, users, threads, k6_per_user=K6_PER_USER):
    k6 = K6_BASE + k6_per_user * users
    server = SERVER_BASE + PER_CONNECTION * users + PER_THREAD * threads
    process = pd.DataFrame({"step": step, "ts_ms": [1, 2, 1, 2], "process": ["k6", "k6", "server", "server"],
                            "rss_bytes": [K6_BASE, k6, SERVER_BASE, server], "cpu_seconds": 0.0})
    ss = pd.DataFrame({"step": step, "ts_ms": [1, 2], "estab": [0, users], "listen_overflows": 0, "accept_queue": 0})
    actuator = pd.DataFrame({"step": step, "ts_ms": [2], "metric": ["tomcat.threads.current"], "value": [threads]})
    return process, ss, actuator


def samplers(cpu_s: float) -> dict:
    return {"enabled": True, "cpu_seconds": cpu_s, "ss": {"cpu_seconds": cpu_s / 2}, "actuator": {"cpu_seconds": 0},
            "process": {"cpu_seconds": cpu_s / 2}}


def chapter(spreads: dict[int, float], cv_issued: dict[int, int], sampler_cpu_s: float = 0.1) -> ChapterData:
    """hold-N and queue-N at each N (first requests over spreads[N] s), cv-N issuing cv_issued[N] requests."""
    metas, requests, process, ss, actuator = {}, [], [], [], []
    for users, spread in spreads.items():
        for prefix, threads in (("hold-", users), ("queue-", 200)):
            step = f"{prefix}{users}"
            metas[step] = meta(step, users, threads=threads, samplers=samplers(sampler_cpu_s))
            requests.append(spike(step, users, spread))
            for frames, frame in zip((process, ss, actuator), memory_rows(step, users, threads), strict=True):
                frames.append(frame)
    for users, issued in cv_issued.items():
        metas[f"cv-{users}"] = meta(f"cv-{users}", users, issued=issued, executor="constant-vus", threads=users)
        requests.append(spike(f"cv-{users}", issued, 0.9))
    return ChapterData("chapter2", metas, _concat(requests, "requests"), _concat(ss, "ss"), _concat(actuator, "actuator"),
                       _concat(process, "process"), pd.DataFrame(columns=COLUMNS["startup"] + ["step"]))


def _concat(frames: list[pd.DataFrame], table: str) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS[table] + ["step"])


def replace(data: ChapterData, **changes) -> ChapterData:
    fields = {"steps": data.steps, "requests": data.requests, "ss": data.ss, "actuator": data.actuator,
              "process": data.process, "startup": data.startup, "runs": data.runs} | changes
    return ChapterData(data.chapter, **fields)


def on_machine(data: ChapterData, **machine) -> ChapterData:
    return replace(data, steps={s: m | {"machine": MACHINE | machine} for s, m in data.steps.items()})


def with_batch(data: ChapterData, spreads: dict[int, float], cores: dict[str, float] | None = None) -> ChapterData:
    """`data` plus batch-N steps: N one-request users on BATCH_VUS VUs, starts spread over `spreads[N]`; k6's memory
    grows by BATCH_USER_KIB a user; k6 and the server use `cores` while the users start."""
    cores = cores or {"k6": 0.5, "server": 0.5}
    metas, requests, process = dict(data.steps), [data.requests], [data.process]
    for users, spread in spreads.items():
        step = f"batch-{users}"
        metas[step] = meta(step, users, threads=users) | {"config": {"load": {"vus": users, "spike_mode": "batch"},
                                                                     "server": {"TOMCAT_MAX_THREADS": users}}}
        rows = spike(step, users, spread)
        requests.append(rows.assign(vu=rows["vu"] % BATCH_VUS + 1))
        t0, t1 = rows["start_ms"].min() - 100, rows["start_ms"].max() + 100
        for name, base, used in (("k6", K6_BASE, cores["k6"]), ("server", SERVER_BASE, cores["server"])):
            rss = base + (BATCH_USER_KIB * KIB * users if name == "k6" else PER_CONNECTION * users + PER_THREAD * users)
            process.append(pd.DataFrame({"step": step, "process": name, "ts_ms": [t0, t1], "rss_bytes": [base, rss],
                                         "cpu_seconds": [10.0, 10.0 + used * (t1 - t0) / 1000]}))
    return replace(data, steps=metas, requests=pd.concat(requests, ignore_index=True),
                   process=pd.concat(process, ignore_index=True))


def with_overflows(data: ChapterData, overflows: dict[str, int]) -> ChapterData:
    ss = data.ss.copy()
    for step, count in overflows.items():
        ss.loc[(ss.step == step) & (ss.ts_ms == 2), "listen_overflows"] = count
    return replace(data, ss=ss)


MODEL = {"threads": 2, "failed": 1, "service_ms": 5000, "completions": [[5000, 2], [10000, 2]]}


def repeated(runs: dict[str, list[tuple[int, float]]], base: ChapterData | None = None, sampler_cpu_s: float = 0.2
             ) -> ChapterData:
    """`base` plus every run of the repeated steps: {step: [(failed, shift of its waves in s), …]}; each run answers
    four users in two waves of two (5 s and 10 s after the first start, plus the shift), its last user starting
    0.5 s + the shift after the first."""
    base = base or chapter({}, {})
    metas, runs_by_step, frames = dict(base.steps), dict(base.runs), [base.requests]
    for step, draws in runs.items():
        for k, (failed, shift) in enumerate(draws, start=1):
            run_id = step if k == 1 else f"{step}.{k}"
            sampled = step != "unsampled"
            m = meta(run_id, 4) | {"model": MODEL, "run": {"of": step, "run": k, "runs": len(draws)},
                                   "requests": {"asked": 100, "issued": 100, "succeeded": 100 - failed, "failed": failed},
                                   # 2 % apart from run to run: a spread of 0 would be no spread at all
                                   "samplers": samplers(sampler_cpu_s * (1 + 0.02 * (k % 3 - 1))) if sampled
                                   else {"enabled": False, "cpu_seconds": 0}}
            metas[run_id] = m
            runs_by_step.setdefault(step, []).append(m)
            ends = np.array([5.0, 5.0, 10.0, 10.0]) + shift
            starts = np.array([0.0, 0.1, 0.2, 0.5 + shift])  # the last user starts later the later the run's waves
            frames.append(pd.DataFrame({"step": run_id, "vu": range(1, 5), "start_ms": starts * 1000,
                                        "end_ms": ends * 1000, "status": 200, "error_code": 0}))
    return replace(base, steps=metas, runs=runs_by_step, requests=pd.concat(frames, ignore_index=True))


def again(data: ChapterData, users: int, issued: list[int]) -> ChapterData:
    """`data` plus again-cv-N's runs, each issuing issued[k] requests."""
    metas, runs, frames = dict(data.steps), dict(data.runs), [data.requests]
    for k, count in enumerate(issued, start=1):
        run_id = f"again-cv-{users}" if k == 1 else f"again-cv-{users}.{k}"
        m = meta(run_id, users, issued=count, executor="constant-vus", threads=users) | {
            "run": {"of": f"again-cv-{users}", "run": k, "runs": len(issued)}}
        metas[run_id] = m
        runs.setdefault(f"again-cv-{users}", []).append(m)
        frames.append(spike(run_id, count, 0.8))
    return replace(data, steps=metas, runs=runs, requests=pd.concat(frames, ignore_index=True))
