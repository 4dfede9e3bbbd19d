"""Load experiments/<chapter>.toml and validate it into Step objects, before anything starts.

A spec has `[defaults]` (server env, load, system) and `[[step]]` tables that override them.
Every problem found (unknown keys, wrong types, impossible numbers, limits of this machine) is
collected and reported in one LabError, so a user fixes them all in one go.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness import EXPERIMENTS, LabError
from harness.lab.load.options import EXECUTORS, LOAD_DEFAULTS, LOAD_KEYS, peak_vus, requests_asked, resolve_load, stop_ms  # noqa: F401
from harness.lab.limits import FD_RESERVE, check_limits, machine_limits  # noqa: F401 — FD_RESERVE: the models'
from harness.lab.placement import merge_placement
from harness.lab.services.base import SERVER
from harness.lab.services.graph import resolve_services, target_model
from harness.lab.services.kinds import KINDS, SAMPLE_SERVER
from harness.lab.store import home_expanded
from harness.lab.typed import table_list, table_value, text_value, typed_values

SYSTEM_KEYS: dict[str, tuple] = {  # (type, minimum[, maximum]): harness.lab.typed
    "raise_somaxconn": (bool, None),  # raise net.core.somaxconn to the accept-count when lower
    "allow_fd_exhaustion": (bool, None),  # the step deliberately probes the open-files limit
    "sample_interval_ms": (int, 50, 60_000),  # a sampler seeing a step less than once a minute sees nothing of it
    "sampling": (bool, None),  # false: no ss/Actuator/process samplers (chapter 2: do they change results?)
    "launch": (str, None),  # how the local JVM starts: auto (CDS when `invoke setup` made it), cds, jar
    "record": (str, None),  # per-request rows or per-second series (harness.lab.load.recording); auto: by size
    "network": (str, None),  # loopback, or hosts: the load tool and each service on a host of its own (lab.netns)
    "link_delay_ms": (int, 0, 10_000),  # hosts: every host link's delay (tc netem, where the kernel has it); ≤ 10 s
    "jvm": (str, None),  # the step's JVMs' compilers and GC: standard (the JDK's own), or quick (JVMS below)
}
SYSTEM_DEFAULTS = {"raise_somaxconn": False, "allow_fd_exhaustion": False, "sample_interval_ms": 500,
                   "sampling": True, "launch": "auto", "record": "auto", "network": "loopback", "link_delay_ms": 0,
                   "jvm": "standard"}
LAUNCHES = ("auto", "cds", "jar")
NETWORKS = ("loopback", "hosts")
# `quick` starts a JVM in about half the CPU (C1 only, the serial GC) and runs its code slower: for the end-to-end
# tests that check behaviour, never a rate or a CPU time. The book's chapters leave it `standard`.
JVMS = ("standard", "quick")
LOAD_TOOL = "load"  # [placement]'s name for the step's load tool, whichever it is
RECORDS = ("auto", "requests", "seconds")
# Resource limits of the server's container (the docker backend only; the local backend ignores them).
CONTAINER_KEYS: dict[str, tuple[type, int | None]] = {
    "cpus": (float, None),  # docker run --cpus: a CPU quota, e.g. 2 for the article's t4g.small
    "memory": (str, None),  # docker run --memory (and the same --memory-swap: no swap), e.g. "2g"
    "nofile": (int, 1),  # the open-files limit inside the container (default: this machine's hard limit)
}
# [server]: the sample server's knobs, the short form of [services.server] with its kind (harness.lab.services.tomcat).
SAMPLE = KINDS[SAMPLE_SERVER]
SECTIONS = {SAMPLE.section: SAMPLE.knobs, "load": LOAD_KEYS, "system": SYSTEM_KEYS, "container": CONTAINER_KEYS}
# A step is a load test, or (kind = "redeploy") `starts` fresh servers timed to healthy, with no load.
STEP_KINDS = ("load", "redeploy")
# same_as = "<chapter>:<step>" starts from another chapter's resolved step; runs = n measures it n times (its spread).
STEP_KEYS = {"id", "why", "findings", "kind", "starts", "same_as", "runs", "services", "placement", *SECTIONS}
MAX_RUNS = 100
RUN_MARK = "."  # run k > 1 of step <id> is the step <id>.<k>: a dot is in no step id, so no spec id can take it
TOP_KEYS = {"title", "description", "defaults", "step"}
SPEC_NAME = re.compile(r"^[A-Za-z0-9][^/]{0,99}$")  # not `.`, `..` or hidden: the data folder is named after it
STEP_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")  # a folder name: 100 characters at most
FINDING_ID = re.compile(r"^F\d{3}-[a-z]$")
MAX_STARTS = 100  # a redeploy step's fresh servers: seconds each; chapter 2 times 10
_LOADING: list[Path] = []  # the specs being read now (same_as reads another spec inside one)


@dataclass(frozen=True)
class Step:
    chapter: str
    id: str
    why: str
    findings: tuple[str, ...]
    server: dict  # the sample server's settings (only what the spec sets): its env, or your jar's properties
    load: dict  # resolved: every LOAD_KEYS entry the executor uses
    system: dict
    index: int = 0  # position in the run order, from 1
    total: int = 0
    kind: str = "load"
    starts: int = 0  # redeploy steps: how many fresh servers
    same_as: str = ""  # "<chapter>:<step>" this step copies
    container: dict = field(default_factory=dict)  # resource limits for the docker backend
    # The step's service graph (harness.lab.services.graph): {name: {"kind": …, knob: value}}, the sample server as
    # `server` when the step runs it.
    services: dict = field(default_factory=dict)
    placement: dict = field(default_factory=dict)  # {process name: {"cpus": [..], "quota": CPUs}} (placement.py)
    # The machine's limits the step was checked against (nofile, somaxconn …): the models' ceilings, not its config.
    limits: dict = field(default_factory=dict, compare=False)
    # What a model needs to know of the load's target, from its kind (ServiceKind.model_server); None: no model.
    target_model: dict | None = field(default=None, compare=False)
    run: int = 1  # which run of its step this is (runs = n measures a step n times: <id>, <id>.2 … <id>.n)
    runs: int = 1

    def knob(self, name: str):
        """A server knob as the server will see it: the spec's value or Spring's default."""
        return self.server.get(name, SAMPLE.defaults.get(name))

    def knobs(self) -> dict:
        """Every knob of every service the step runs, defaults included (step.json's `knobs`), so that its data is
        read later without today's defaults: each service's table over its kind's defaults (the sample server's
        [server] over Spring's), and for a reader's jar as `server` what the step's [server] gives it."""
        return {name: {"kind": table["kind"]} | KINDS[table["kind"]].defaults | dict(table)
                | ({"given": dict(self.server)} if name == SERVER and table["kind"] != SAMPLE_SERVER else {})
                for name, table in self.services.items()}

    @property
    def base(self) -> str:
        """The id of the step this is a run of (its own id for the first run)."""
        return self.id.split(RUN_MARK)[0]

    @property
    def stop_ms(self) -> int:
        """When the load tool stops waiting, from the load options alone: the executor's duration, stages or
        maxDuration, plus gracefulStop (the runner's limit for a step; the models use it too)."""
        return stop_ms(self.load)

    @property
    def port(self) -> int:
        return self.knob("SERVER_PORT")

    @property
    def management_port(self) -> int:
        return self.knob("MANAGEMENT_PORT")

    @property
    def address(self) -> str:
        return self.knob("SERVER_ADDRESS")

    @property
    def target(self) -> str:
        """The service the load goes to: load.target, the sample server by default."""
        return self.load.get("target", SERVER)

    @property
    def hosted(self) -> list[str]:
        """The services that run on a host of their own on network = "hosts" (all but the sample server)."""
        return [name for name in self.services if name != SERVER]

    @property
    def requests_asked(self) -> int:
        """Requests the step asks for (harness.lab.load.options.requests_asked; constant-vus: one per VU, the
        articles' reading; ramping-vus: 0, not fixed in advance)."""
        return requests_asked(self.load) if self.kind == "load" else 0

    def config(self) -> dict:
        """What step.json records as the step's configuration: [server] only when the step runs the sample server,
        and every other service (your own jar as `server` too; the sample server's knobs are [server])."""
        extra = {"kind": self.kind, "starts": self.starts} if self.kind != "load" else {}
        extra |= {"same_as": self.same_as} if self.same_as else {}
        services = {name: dict(knobs) for name, knobs in self.services.items()
                    if not (name == SERVER and knobs["kind"] == SAMPLE_SERVER)}
        extra |= {"services": services} if services else {}
        extra |= {"placement": dict(self.placement)} if self.placement else {}  # steps without keep their old config
        server = {"server": dict(self.server)} if SERVER in self.services else {}
        return server | {"load": dict(self.load), "system": dict(self.system), "container": dict(self.container)} | extra


@dataclass
class Spec:
    chapter: str
    title: str
    description: str
    path: Path
    steps: list[Step] = field(default_factory=list)

    def select(self, step_ids: list[str] | None) -> list[Step]:
        """The steps named (a step's id names all its runs; <id>.<k> one of them), in run order; all without names."""
        if not step_ids:
            return self.steps
        known = {s.id for s in self.steps} | {s.base for s in self.steps}
        unknown = [s for s in step_ids if s not in known]
        if unknown:
            bases = sorted({s.base for s in self.steps})
            raise LabError(f"{self.path.name}: no step {', '.join(unknown)}; steps are: {', '.join(bases)}")
        return [s for s in self.steps if s.id in step_ids or s.base in step_ids]


def chapters() -> list[str]:
    return sorted(p.stem for p in EXPERIMENTS.glob("*.toml") if p.is_file())  # (a folder named x.toml is none)


def known_chapter(name: str) -> str:
    """`name` when it names one of experiments/' chapters (what `compare` and `withdraw` read the book's folders by),
    else a LabError listing them."""
    if name not in chapters():
        raise LabError(f"no experiment {name!r}: known ones are {', '.join(chapters()) or 'none'}")
    return name


def spec_path(chapter: str) -> Path:
    """experiments/<chapter>.toml; a path to a .toml elsewhere also works (the tests' scaled profiles)."""
    path = home_expanded(Path(chapter)) if chapter.endswith(".toml") else EXPERIMENTS / f"{chapter}.toml"
    try:
        found = path.is_file()
    except (OSError, ValueError):  # a name too long, a NUL byte: no file either
        found = False
    if found and not SPEC_NAME.fullmatch(path.stem):
        raise LabError(f"{path.name}: a spec's file name names its data folder: rename it to start with a letter or "
                       f"digit, in at most 100 characters ('{path.stem[:40]}' would put steps outside the data folder "
                       "or beside another's)")
    if found:
        return path
    if chapter.endswith(".toml"):
        raise LabError(f"no spec file {chapter}")
    raise LabError(f"no experiment '{chapter}': known ones are {', '.join(chapters()) or 'none'}")


# Limits no step exceeds: for reading which steps a spec has (and their runs) whatever this machine allows.
ANY_MACHINE = {"nofile": 1 << 30, "somaxconn": 1 << 30, "can_raise_somaxconn": True, "cores": 1 << 10}


def load_spec(chapter: str, limits: dict | None = None) -> Spec:
    """Parse and validate a chapter's spec. `limits` (nofile, somaxconn, can_raise, cores) default to this machine's."""
    path = spec_path(chapter)
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as err:
        raise LabError(f"{path.name}: not valid TOML: {err}") from None
    except RecursionError:  # tomllib reads nested arrays and inline tables recursively
        raise LabError(f"{path.name}: its arrays or inline tables nest too deep to read (a spec needs a few levels)") from None
    except (OSError, UnicodeDecodeError) as err:
        raise LabError(f"{path}: cannot be read: {err}") from None
    if path.resolve() in _LOADING:  # same_as from spec to spec back to one still being read
        raise LabError(f"{path.name} is reached again through same_as: specs' same_as must not go round in a circle")
    _LOADING.append(path.resolve())
    try:
        return parse_spec(path.stem, raw, path, limits or machine_limits())
    finally:
        _LOADING.pop()


def parse_spec(chapter: str, raw: dict, path: Path, limits: dict) -> Spec:
    problems: list[str] = []
    _unknown(raw, TOP_KEYS, "top level", problems)
    title, description = (text_value(raw, key, chapter if key == "title" else "", "top level", problems)
                          for key in ("title", "description"))
    before = len(problems)
    defaults = table_value(raw.get("defaults", {}), "[defaults]", problems)
    _unknown(defaults, set(SECTIONS) | {"findings", "services", "placement"}, "[defaults]", problems)
    base = {section: _typed(section, defaults.get(section, {}), "[defaults]", problems) for section in SECTIONS}
    base["findings"] = _findings(defaults.get("findings", []), "[defaults]", problems)
    base["services"], long = _long_form(defaults.get("services", {}), "[defaults]", problems)
    base["server"] = _one_form(base["server"], long, defaults, "[defaults]", problems)
    base["placement"] = merge_placement({}, defaults.get("placement", {}), "[defaults]", problems)
    complete = len(problems) == before  # steps on defaults with a problem lack what it set: their limits wait
    spec = Spec(chapter, title, description, path)
    if raw.get("step", []) == []:
        problems.append("no [[step]] table: a spec needs at least one step")
    tables = table_list(raw.get("step", []), "step", "[[step]]", problems)
    seen: set[str] = set()
    for n, table in enumerate(tables, start=1):
        step_id = table.get("id")
        where = f"step {step_id[:100] if isinstance(step_id, str) and step_id else f'#{n}'}"
        _unknown(table, STEP_KEYS, where, problems)
        if step_id is None:
            problems.append(f"{where}: id is missing: every step needs one (lower-case letters, digits and '-')")
        elif not isinstance(step_id, str) or not STEP_ID.fullmatch(step_id):
            problems.append(f"{where}: id must be lower-case letters, digits and '-', at most 100 (got {str(step_id)[:120]!r})")
        elif step_id in seen:
            problems.append(f"{where}: id is used twice")
        seen.add(str(step_id))
        step_base = _same_as_base(table.get("same_as"), base, path, limits, where, problems)
        step = _resolve(chapter, table, step_base, n, len(tables), where, problems)
        runs = _runs(table, where, problems)
        if step and complete:
            check_limits(step, limits, where, problems)
            spec.steps.append(replace(step, limits=dict(limits), runs=runs))
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise LabError(f"{path.name} has {len(problems)} problem(s):\n{lines}")
    spec.steps = in_rounds(spec.steps)
    return spec


def _runs(table: dict, where: str, problems: list[str]) -> int:
    runs = table.get("runs", 1)
    if not isinstance(runs, int) or isinstance(runs, bool) or not 1 <= runs <= MAX_RUNS:
        problems.append(f"{where}: runs must be a whole number from 1 to {MAX_RUNS}, got {runs!r}")
        return 1
    return runs


def in_rounds(steps: list[Step]) -> list[Step]:
    """Every step's runs, in rounds: all first runs in spec order, then every second run, and so on, so that a step's
    runs are apart in time (their spread then includes what drifts over a chapter, not only back-to-back noise)."""
    runs = [replace(s, id=s.id if k == 1 else f"{s.id}{RUN_MARK}{k}", run=k)
            for k in range(1, max((s.runs for s in steps), default=1) + 1) for s in steps if s.runs >= k]
    return [replace(s, index=n, total=len(runs)) for n, s in enumerate(runs, start=1)]


def _same_as_base(reference, base: dict, path: Path, limits: dict, where: str, problems: list[str]) -> dict:
    """The settings a step starts from: this chapter's defaults, or another chapter's step (`same_as`)."""
    if reference is None:
        return base
    chapter, _, step_id = reference.rpartition(":") if isinstance(reference, str) else ("", "", "")
    if not chapter or not step_id:
        problems.append(f"{where}: same_as must be '<chapter>:<step id>', e.g. 'chapter3:f-10k-pv', got {reference!r}")
        return base
    if chapter.endswith(".toml") and not Path(chapter).is_absolute():
        chapter = str(path.parent / chapter)  # a profile next to this spec
    try:
        if spec_path(chapter).resolve() == path.resolve():
            problems.append(f"{where}: same_as must name another chapter's step, not this chapter's")
            return base
        source = load_spec(chapter, limits).select([step_id])[0]
    except LabError as err:
        problems.append(f"{where}: same_as {reference!r}: {err}")
        return base
    return {"server": dict(source.server), "load": dict(source.load), "system": dict(source.system),
            "container": dict(source.container), "findings": [], "services": _long_form(source.services, where, [])[0],
            "placement": dict(source.placement)}


def _unknown(table: dict, allowed: set[str], where: str, problems: list[str]) -> None:
    for key in sorted(set(table) - allowed):
        problems.append(f"{where}: unknown key '{key}' (allowed: {', '.join(sorted(allowed))})")


def _findings(findings, where: str, problems: list[str]) -> list[str]:
    if not isinstance(findings, list) or not all(isinstance(f, str) and FINDING_ID.fullmatch(f) for f in findings):
        problems.append(f"{where}: findings must be a list of IDs like 'F000-a', got {findings!r}")
        return []
    return findings


def _typed(section: str, values: dict, where: str, problems: list[str]) -> dict:
    keys = SECTIONS[section]
    values = table_value(values, f"{where}: {section}", problems)
    _unknown(values, set(keys), f"{where} [{section}]", problems)
    return typed_values(keys, {k: v for k, v in values.items() if k in keys}, f"{where}: {section}", problems)


def _long_form(services, where: str, problems: list[str]) -> tuple[dict, dict | None]:
    """`[services.server]` of the sample server's kind is its [server] written long: (the other services, its knobs
    typed as [server]'s; None when the table has no such entry), so both forms give one step."""
    own = services.get(SERVER) if isinstance(services, dict) else None
    if not isinstance(own, dict) or own.get("kind") != SAMPLE_SERVER:
        return services, None
    knobs = _typed(SAMPLE.section, {k: v for k, v in own.items() if k != "kind"}, f"{where}: services.{SERVER}", problems)
    return {name: table for name, table in services.items() if name != SERVER}, knobs


def _one_form(server: dict, long: dict | None, table: dict, where: str, problems: list[str]) -> dict:
    """The sample server's knobs from [server] or from [services.server]: a table that sets both says which."""
    if long is not None and SAMPLE.section in table:
        problems.append(f"{where}: the sample server's knobs are set by [{SAMPLE.section}] or by [services.{SERVER}] "
                        f"kind = \"{SAMPLE_SERVER}\", not both")
    return {**server, **(long or {})}


def _resolve(chapter, table, base, n, total, where, problems) -> Step | None:
    before = len(problems)
    asked = table.get("services", {})
    services, long = _long_form(asked, where, problems)
    if long is not None:  # the step's own sample server replaces a default's (your jar's) `server`
        base = {**base, "services": {name: t for name, t in base["services"].items() if name != SERVER}}
        table = {**table, "services": services} if services else {k: v for k, v in table.items() if k != "services"}
    merged = {s: {**base[s], **_typed(s, table.get(s, {}), where, problems)} for s in SECTIONS}
    merged[SAMPLE.section] = _one_form(merged[SAMPLE.section], long, table, where, problems)
    system_ = {**SYSTEM_DEFAULTS, **merged["system"]}
    findings = _findings(table.get("findings", base["findings"]), where, problems)
    why = text_value(table, "why", "", where, problems)
    kind, starts = _check_kind(table, where, problems)
    placement = merge_placement(base["placement"], table.get("placement", {}), where, problems)
    load = resolve_load(merged["load"], where, problems) if kind == "load" else {}
    if LOAD_TOOL in placement:  # `load`: whichever tool the step runs (k6, ab, wrk), under its own name from here on
        placement[load.get("tool", "k6")] = placement.pop(LOAD_TOOL)
    SAMPLE.check(SERVER, merged["server"], where, problems)
    services = resolve_services(base["services"], table, merged["server"], load, where, problems, system_["network"])
    for key, allowed in (("launch", LAUNCHES), ("record", RECORDS), ("network", NETWORKS), ("jvm", JVMS)):
        if system_[key] not in allowed:
            problems.append(f"{where}: system.{key} must be one of {', '.join(allowed)}, got {system_[key]!r}")
    if system_["link_delay_ms"] and system_["network"] != "hosts":
        problems.append(f"{where}: system.link_delay_ms needs system.network = \"hosts\" (loopback has no link to delay)")
    if len(problems) > before:
        return None
    return Step(chapter, table.get("id", ""), why, tuple(findings), merged["server"], load, system_, n, total,
                kind, starts, table.get("same_as", ""), merged["container"], services, placement,
                target_model=target_model(services, load) if kind == "load" else None)


def _check_kind(table: dict, where: str, problems: list[str]) -> tuple[str, int]:
    kind = table.get("kind", "load")
    if kind not in STEP_KINDS:
        problems.append(f"{where}: kind must be one of {', '.join(STEP_KINDS)}, got {kind!r}")
        return "load", 0
    starts = table.get("starts", 5 if kind == "redeploy" else 0)
    if kind == "load" and "starts" in table:
        problems.append(f"{where}: starts applies to kind = \"redeploy\" steps only")
    elif kind == "redeploy" and (not isinstance(starts, int) or isinstance(starts, bool) or not 1 <= starts <= MAX_STARTS):
        problems.append(f"{where}: starts must be a whole number from 1 to {MAX_STARTS}, got {starts!r}")
    if kind == "redeploy" and "load" in table:
        problems.append(f"{where}: a redeploy step sends no load; remove its [load] table")
    return kind, starts if isinstance(starts, int) else 0


def list_chapters() -> list[tuple[str, list[Step], str]]:
    """Every experiment in experiments/: (name, its steps, "") or, when its spec cannot be read, (name, [], why)."""
    out = []
    for chapter in chapters():
        try:
            out.append((chapter, load_spec(chapter).steps, ""))
        except LabError as err:
            out.append((chapter, [], str(err)))
    return out
