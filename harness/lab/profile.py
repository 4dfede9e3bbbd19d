"""The capacity profile of your own Spring Boot jar: `invoke report --server app.jar [--path /api/x]`.

Three stages, each sized by what the one before measured (experiments/report.toml says why each exists and holds
their loads; only the sizes are set here):
1. service: one user in a closed loop, so Little's law with one request in the system gives the endpoint's service
   time, S = 1 / the requests answered per second (`steady_rate`); the app's metrics give its limits (`settings`);
2. ramp: T/4, T/2, T and 2T users (T = threads.max), a step each: answered per second against Little's law's
   min(users, T) / S; the plateau and its knee;
3. ceiling: more users than max-connections + accept-count + 1, each keeping its connection open: the most
   connections held at once, and what a held connection costs the server in memory.
Each stage is a spec (`stage_spec`) run by the lab's runner as any chapter's steps are: validated before anything
starts, with the lock, progress and clean-up; the results go to data/report@<jar>/, and what the profile found to
profile.json there.
"""
from __future__ import annotations

import json
import math
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from harness import LabError, say
from harness.lab import store
from harness.lab.limits import machine_limits
from harness.lab.load.options import path_problem
from harness.lab.spec import ANY_MACHINE, Spec, load_spec, parse_spec, spec_path
from harness.lab.steps import with_own_server
from harness.lab.services.tomcat.knobs import SERVER_DEFAULTS  # Spring Boot's: where neither metrics nor profile say
from harness.lab.units import duration_ms

TEMPLATE = "report"  # experiments/report.toml
STAGES = ("service", "ramp", "ceiling")  # its steps, in the order they run
RAMP_SHARES = (0.25, 0.5, 1, 2)  # users as shares of threads.max
KNEE = 0.9  # the knee: the fewest users that reach this share of the plateau
BINDS = 0.9  # threads bind when the plateau is within this share of Little's law's T / S (either way)
THREADS, BEFORE, BEYOND = "threads", "before the threads", "beyond the threads"
EXTRA_USERS = (0.1, 20)  # users beyond the connection ceiling: a tenth more, at least 20
METRICS = {"threads": "tomcat.threads.config.max", "max_connections": "tomcat.connections.config.max",
           "pool": "hikaricp.connections.max"}
KNOBS = {"threads": "TOMCAT_MAX_THREADS", "max_connections": "TOMCAT_MAX_CONNECTIONS",
         "accept_count": "TOMCAT_ACCEPT_COUNT", "pool": "HIKARI_MAX_POOL_SIZE"}
FROM_METRICS, FROM_CONFIG = "the app's metrics", "the app's configuration (Actuator's configprops)"
FROM_PROFILE, FROM_DEFAULT = "the profile's settings", "Spring Boot's default"


@dataclass(frozen=True)
class Settings:
    """The app's limits the profile sizes its steps by, and where each came from (FROM_*)."""

    threads: int
    max_connections: int
    accept_count: int
    pool: int | None  # HikariCP's maximum pool size; None: the app reports no pool
    sources: dict[str, str]

    @property
    def ceiling(self) -> int:
        """The connections it can hold at once: max-connections + accept-count + 1 (chapter 3's "+1")."""
        return self.max_connections + self.accept_count + 1


@dataclass(frozen=True)
class RampPoint:
    users: int
    answered_per_s: float
    predicted_per_s: float  # Little's law: min(users, threads) / S
    step: str


@dataclass
class Profile:
    jar: str
    path: str
    service_ms: float  # S
    settings: Settings
    ramp: list[RampPoint] = field(default_factory=list)
    ceiling_users: int = 0
    ceiling_held: int | None = None  # the most ESTAB connections on the server's port, held (held_connections)
    memory_per_connection_kib: float | None = None
    pool_pending: float | None = None  # the most requests waiting for a pool connection, at the plateau
    pool_wait_ms: float | None = None  # the mean wait for a pool connection, at the plateau
    notes: list[str] = field(default_factory=list)  # what could not be measured, and why

    @property
    def plateau(self) -> RampPoint:
        return max(self.ramp, key=lambda p: p.answered_per_s)

    @property
    def knee(self) -> RampPoint:
        return next(p for p in self.ramp if p.answered_per_s >= KNEE * self.plateau.answered_per_s)

    @property
    def little(self) -> float:
        """Little's law's plateau for a thread-per-request server: threads.max requests in service, each taking S."""
        return self.settings.threads / (self.service_ms / 1000)

    @property
    def in_service(self) -> float:
        """Requests in service at once at the plateau, by Little's law with S: plateau × S."""
        return self.plateau.answered_per_s * self.service_ms / 1000

    @property
    def binding(self) -> str:
        """What the plateau says binds: THREADS when it is Little's law's (within BINDS), BEFORE when something binds
        below it (the CPU, a pool, a lock), BEYOND when more requests were in service than there are threads (an
        event loop, virtual threads: not thread-per-request)."""
        ratio = self.plateau.answered_per_s / self.little
        return BEFORE if ratio < BINDS else BEYOND if ratio > 1 / BINDS else THREADS


# ---- sizes: each stage from what the one before measured --------------------------------------------------------

def ramp_users(threads: int) -> list[int]:
    return sorted({max(1, round(threads * share)) for share in RAMP_SHARES})


def ceiling_users(settings: Settings) -> int:
    share, least = EXTRA_USERS
    return settings.ceiling + max(least, math.ceil(settings.ceiling * share))


def template_steps(template: str = TEMPLATE) -> tuple[dict, dict[str, dict]]:
    """The template spec as TOML (its steps taken out) and its steps by id, once it is a valid spec with exactly the
    stages: service and ramp closed loops of a set length (constant-vus), ceiling a scenario (load.requests)."""
    spec = load_spec(template, ANY_MACHINE)  # a spec's problems in its own words, before the profile's
    raw = tomllib.loads(spec.path.read_text())
    steps = {table["id"]: table for table in raw["step"]}
    if sorted(steps) != sorted(STAGES):  # each once: load_spec refuses an id used twice
        raise LabError(f"{spec.path.name}: a profile has the steps {', '.join(STAGES)}, each once (it has "
                       f"{', '.join(steps)})")
    by_id = {s.id: s for s in spec.steps}
    loops = [by_id[name] for name in ("service", "ramp")]
    if any(s.load["executor"] != "constant-vus" or s.system.get("record") != "seconds" for s in loops) \
            or not by_id["ceiling"].load.get("requests"):
        raise LabError(f"{spec.path.name}: a profile's service and ramp steps are constant-vus loads of a set duration "
                       "recorded per second (system.record = \"seconds\") and its ceiling step a scenario "
                       "(load.requests) whose think time holds each connection")
    return {k: v for k, v in raw.items() if k != "step"}, steps


def stage_tables(steps: dict[str, dict], stage: str, path: str, settings: Settings | None = None) -> list[dict]:
    """The [[step]] tables of a stage, sized (settings: what the service step found) and sent to `path`."""
    table = steps[stage]
    load = dict(table["load"])
    if stage == "service":
        return [table | {"load": load | {"path": path}}]
    if stage == "ramp":
        return [table | {"id": f"ramp-{users}", "load": load | {"vus": users, "path": path},
                         "why": f"{users} users, {users / settings.threads:g} × threads.max {settings.threads}: "
                                f"{table['why']}"}
                for users in ramp_users(settings.threads)]
    users = ceiling_users(settings)
    requests = [dict(r) | {"path": path} for r in load["requests"]]
    return [table | {"load": load | {"vus": users, "requests": requests},
                     "why": f"{users} users against a ceiling of {settings.ceiling}: {table['why']}"}]


def stage_spec(template: str, top: dict, tables: list[dict], jar: str) -> Spec:
    """The stage's steps as a spec of the template's name, validated as any spec is, on your jar."""
    spec = parse_spec(Path(spec_path(template)).stem, top | {"step": tables}, spec_path(template), machine_limits())
    return with_own_server(spec, jar)


# ---- what each stage measured ----------------------------------------------------------------------------------

def load_seconds(meta: dict) -> float:
    return duration_ms(meta["config"]["load"]["duration"]) / 1000


def steady_rate(outcomes: pd.DataFrame, duration_s: float) -> float:
    """Answered per second over a closed loop's steady seconds, from a quarter of its length to its end: neither its
    first seconds (users starting) nor the requests in flight when it ends (they finish after it, up to one each of
    2 × threads.max users) count. From the per-second tables (the template records in seconds)."""
    first = int(duration_s // 4)
    last = max(int(duration_s), first + 1)
    window = outcomes[outcomes["second"].between(first, last - 1)]
    return float(window.loc[store.answered(window), "requests"].sum()) / (last - first)


def app_configuration(meta: dict) -> dict:
    """The app's Tomcat settings as it ran, as the spring-jar kind read them into step.json (or {"unread": why})."""
    return meta.get("server_info", {}).get("tomcat", {})


def settings_of(meta: dict, actuator: pd.DataFrame) -> Settings:
    """The app's limits: from its metrics (their last reading), else its configuration as it ran (configprops: its
    own settings with the profile's on top, recorded in step.json's server_info), else the profile's [server]
    settings, else Spring Boot's defaults; the pool only from its metrics or the profile (an app without one has
    none)."""
    server = meta["config"].get("server", {})
    configured = app_configuration(meta)
    values, sources = {}, {}
    for name in ("threads", "max_connections", "accept_count", "pool"):
        readings = actuator.loc[actuator["metric"] == METRICS[name], "value"] if name in METRICS else pd.Series()
        if not readings.dropna().empty:
            values[name], sources[name] = int(readings.dropna().iloc[-1]), FROM_METRICS
        elif KNOBS[name] in configured:
            values[name], sources[name] = int(configured[KNOBS[name]]), FROM_CONFIG
        elif KNOBS[name] in server:
            values[name], sources[name] = int(server[KNOBS[name]]), FROM_PROFILE
        elif name != "pool":  # an app without a pool has none; the rest have Spring Boot's defaults
            values[name], sources[name] = SERVER_DEFAULTS[KNOBS[name]], FROM_DEFAULT
    return Settings(values["threads"], values["max_connections"], values["accept_count"], values.get("pool"), sources)


def service_ms(meta: dict, outcomes: pd.DataFrame) -> float:
    """S: with one user in a closed loop, Little's law (N = X × R, N = 1) gives R = 1 / X."""
    rate = steady_rate(outcomes, load_seconds(meta))
    if not rate:
        raise LabError(f"no request to {meta['config']['load'].get('path')} was answered (2xx or 3xx) in the service "
                       "step: give --path an endpoint your app answers")
    return 1000 / rate


def held_connections(ss: pd.DataFrame) -> int | None:
    """The most ESTAB connections on the server's port in two samples in a row: held, not passing. One sample alone
    can catch a connection in passing (a close and the next accept race by one socket on two CPUs)."""
    estab = ss["estab"].dropna()
    if estab.empty:
        return None
    return int(estab.rolling(2).min().max()) if len(estab) > 1 else int(estab.iloc[0])


def memory_per_connection_kib(idle: pd.DataFrame, holding: pd.DataFrame, held: int | None) -> float | None:
    """The server's memory growth from the service step (its median) to its peak while holding `held` connections,
    per connection."""
    before = idle.loc[idle["process"] == "server", "rss_bytes"].dropna()
    during = holding.loc[holding["process"] == "server", "rss_bytes"].dropna()
    if before.empty or during.empty or not held:
        return None
    return (during.max() - before.median()) / held / 1024


def assumed(settings: Settings, meta: dict) -> list[str]:
    """What the profile had to assume, a note each: a limit the app reported nowhere (and why its configuration
    could not be read), and no pool."""
    unread = app_configuration(meta).get("unread")
    why = f" ({unread})" if unread else ""
    notes = [f"{name.replace('_', '-')}: the app reports none{why}; {source} ({SERVER_DEFAULTS[KNOBS[name]]:,}) is "
             "assumed" for name, source in settings.sources.items() if source == FROM_DEFAULT]
    if settings.pool is None:
        notes.append("HikariCP: the app reports no pool (no hikaricp metrics), so no pool limit is measured")
    return notes


def pool_pending(actuator: pd.DataFrame) -> float | None:
    pending = actuator.loc[actuator["metric"] == "hikaricp.connections.pending", "value"].dropna()
    return None if pending.empty else float(pending.max())


def pool_wait_ms(actuator: pd.DataFrame) -> float | None:
    """HikariCP's mean wait for a connection over a step: the seconds its acquisitions waited, summed, over how many
    there were, both counted from the step's first sample to its last (one JVM: the counters only grow)."""
    def gained(metric: str) -> float:
        values = actuator.loc[actuator["metric"] == metric].sort_values("ts_ms")["value"].dropna()
        return float(values.iloc[-1] - values.iloc[0]) if len(values) > 1 else 0.0
    count = gained("hikaricp.connections.acquire.count")
    return gained("hikaricp.connections.acquire.total") * 1000 / count if count else None


# ---- the profile, stage by stage -------------------------------------------------------------------------------

def run_profile(jar: str, path: str, template: str = TEMPLATE) -> Profile:
    from harness.lab.runner import run_chapter
    from harness.plan import plan_steps

    if problem := path_problem(path):
        raise LabError(f"--path {problem}")
    top, steps = template_steps(template)

    def run(stage: str, settings: Settings | None = None) -> Spec:
        spec = stage_spec(template, top, stage_tables(steps, stage, path, settings), jar)
        say(f"report: stage {STAGES.index(stage) + 1} of {len(STAGES)}, {stage}: {len(spec.steps)} step(s)")
        outcomes = run_chapter(template, force=True, plan=plan_steps, spec=spec)  # your jar runs locally on every backend
        failed = [o.step.id for o in outcomes if o.status != "complete"]
        if failed:
            raise LabError(f"report: step {', '.join(failed)} failed (see the reasons above); the profile stops here")
        return spec

    chapter = run("service").chapter
    service = store.load_run(chapter, "service")
    meta = service.steps["service"]
    settings = settings_of(meta, service.actuator)
    profile = Profile(jar, path, service_ms(meta, service.outcomes), settings, notes=assumed(settings, meta))

    for step in run("ramp", settings).steps:
        ramp = store.load_run(chapter, step.id)
        users = step.load["vus"]
        profile.ramp.append(RampPoint(users, steady_rate(ramp.outcomes, load_seconds(ramp.steps[step.id])),
                                      min(users, settings.threads) / (profile.service_ms / 1000), step.id))
    if settings.pool is not None:
        plateau = store.load_run(chapter, profile.plateau.step).actuator
        profile.pool_pending, profile.pool_wait_ms = pool_pending(plateau), pool_wait_ms(plateau)

    run("ceiling", settings)
    ceiling = store.load_run(chapter, "ceiling")
    profile.ceiling_users = ceiling_users(settings)
    profile.ceiling_held = held_connections(ceiling.ss)
    profile.memory_per_connection_kib = memory_per_connection_kib(service.process, ceiling.process,
                                                                  profile.ceiling_held)
    write_profile(profile, store.data_root() / chapter)
    return profile


PROFILE_FILE = "profile.json"


def write_profile(profile: Profile, folder: Path) -> Path:
    path = folder / PROFILE_FILE
    path.write_text(json.dumps(asdict(profile), indent=2) + "\n")
    return path


def read_profile(folder: Path) -> Profile:
    raw = json.loads((folder / PROFILE_FILE).read_text())
    return Profile(**raw | {"settings": Settings(**raw["settings"]), "ramp": [RampPoint(**p) for p in raw["ramp"]]})


# ---- in words ---------------------------------------------------------------------------------------------------

def summary(profile: Profile) -> list[str]:
    """The limits in the order they bind, a line each, with the model's number beside the measured one."""
    s = profile.settings
    plateau, knee, in_service = profile.plateau, profile.knee, profile.in_service
    lines = [f"How many concurrent requests can {Path(profile.jar).name} handle? ({profile.path})",
             f"  service time at one user: {profile.service_ms:,.1f} ms",
             f"  throughput plateau: {plateau.answered_per_s:,.0f}/s, reached ({KNEE:.0%}) at {knee.users:,} users; "
             f"Little's law with threads.max {s.threads:,} ({s.sources['threads']}): {profile.little:,.0f}/s"]
    lines.append({
        THREADS: f"  1. worker threads bind first: {s.threads:,} requests in service at once",
        BEFORE: f"  1. something binds before the {s.threads:,} threads (the CPU, a pool, a lock): about "
                f"{in_service:,.0f} requests in service at once",
        BEYOND: f"  1. more requests were in service at once than there are threads (about {in_service:,.0f} against "
                f"{s.threads:,}): not one thread per request (an event loop or virtual threads); the ramp's top did "
                f"not find the limit",
    }[profile.binding])
    if s.pool is not None:
        pending = "" if profile.pool_pending is None else f", {profile.pool_pending:,.0f} waiting at the plateau"
        pending += "" if profile.pool_wait_ms is None else f", {profile.pool_wait_ms:,.1f} ms mean wait"
        lines.append(f"  2. the database pool: {s.pool:,} connections ({s.sources['pool']}){pending}")
    held = "not measured" if profile.ceiling_held is None else f"{profile.ceiling_held:,} held"
    # every user held: no ceiling was met (an app that is not Tomcat's, where the prediction is an assumption)
    unmet = profile.ceiling_held is not None and profile.ceiling_held >= profile.ceiling_users
    # one past it: the kernel checks a full accept queue without a lock; the book allows the same one
    # (book.verdict.QUEUE_RACE, which the lab, a layer below, does not import)
    raced = profile.ceiling_held == s.ceiling + 1
    why = (": every user held, so no ceiling was reached" if unmet else
           ": one more, as two handshakes that end at the same moment can both pass the kernel's check of a full accept "
           "queue" if raced else "")
    lines.append(f"  {3 if s.pool is not None else 2}. connections: max-connections {s.max_connections:,} + accept-count "
                 f"{s.accept_count:,} + 1 = {s.ceiling:,} predicted, {held} with {profile.ceiling_users:,} users{why}")
    if profile.memory_per_connection_kib is not None:
        lines.append(f"  memory per held connection: {profile.memory_per_connection_kib:,.0f} KiB")
    return lines + [f"  note: {n}" for n in profile.notes]
