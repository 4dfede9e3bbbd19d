"""A step's results belong to the configuration that measured them: its fingerprint, and what changed since.

step.json's `fingerprint` = {"sha256": …, "parts": {…}} over everything that shapes a step's results:
- `config`: the sha256 of the step's resolved configuration (the whole `Step.config()` plus the backend, exactly what
  step.json's `config` holds, whatever sections it has: server, load, system, container, services, placement …);
- `load_tool`: the load generator and its version ("k6 v1.8.1");
- `scripts`: the sha256 of each file under experiments/k6/ (k6 steps: the code that builds the load);
- `record`: the recording format the step asks for (one row per request, or per-second series);
- `inputs`: per service of the step's graph, what of it shapes results besides its knobs (ServiceKind.inputs: the
  sample server's and the other Java services' sources, your jar, a database's SQL files and binaries, nginx's
  version), as digests.

Whether a complete step still belongs to today's spec is decided by `changes()`: the stored `config` is compared with
today's key by key (so a step recorded before a key existed stays up to date while that key keeps today's default),
and the other parts are compared when the step stored them (steps recorded before fingerprints existed have only
`config` and `versions`).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache, cache
from pathlib import Path
from collections.abc import Callable

from harness import EXPERIMENTS, LabError, say
from harness.lab import store
from harness.lab.load.recording import record_mode

SCRIPTS_DIR = EXPERIMENTS / "k6"
_MISSING = object()


def normal(value):
    """A value as step.json stores it (tuples become lists, anything odd its str)."""
    return json.loads(json.dumps(value, default=str))


def sha256(value) -> str:
    return hashlib.sha256(json.dumps(normal(value), sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def scripts() -> dict[str, str]:
    """experiments/k6/<file> → sha256 of its bytes."""
    return {p.relative_to(SCRIPTS_DIR.parent.parent).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(SCRIPTS_DIR.rglob("*")) if p.is_file()}


def record_format(step) -> str | None:
    """What the step's recording will be: `requests` (one row each), `seconds` (per-second series) or, for wrk,
    `summary` (its end-of-run totals only)."""
    if step.kind != "load":
        return None
    if step.load.get("tool") == "wrk":
        return "summary"
    return record_mode(step.system.get("record", "requests"), step.requests_asked)  # before lab v2: one row each


def step_config(step, backend: str) -> dict:
    """The configuration step.json stores under `config` (the runner writes the same)."""
    return step.config() | {"backend": backend}


def of(step, config: dict, tool_name: str | None, tool_version: str | None) -> dict:
    """The fingerprint stored in step.json."""
    load_step = step.kind == "load" and tool_name
    parts = {
        "config": sha256(config),
        "load_tool": f"{tool_name} {tool_version}" if load_step else None,
        "scripts": scripts() if load_step and tool_name == "k6" else None,
        "record": record_format(step),
        "inputs": inputs(step),
    }
    return {"sha256": sha256(parts), "parts": parts}


def inputs(step) -> dict[str, dict[str, str]]:
    """Each service's inputs (its kind's digests of code, data files, binaries)."""
    from harness.lab.services.kinds import KINDS  # the kinds import the spec, which imports this module's callers

    return {name: KINDS[knobs["kind"]].inputs(knobs) for name, knobs in step.services.items()}


def input_changes(stored: dict | None, current: dict) -> list[str]:
    """"inputs: <service>.<what> changed since the step ran" for each input that differs; a step recorded before
    inputs were recorded cannot vouch for them."""
    if stored is None:
        return ["inputs: not recorded (measured before the lab recorded its services' code and data files): "
                "re-run it to vouch for them"]
    old, new = flatten(stored), flatten(current)
    return [f"inputs: {key} {'changed' if key in old and key in new else 'added' if key in new else 'removed'} "
            f"since the step ran" for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]


# ---- comparing ------------------------------------------------------------------------------------

def flatten(value, prefix: str = "") -> dict:
    """{"server": {"SLEEP_MS": 1}} → {"server.SLEEP_MS": 1}; lists and scalars are leaves, an empty table has none."""
    if not isinstance(value, dict):
        return {prefix: value}
    out = {}
    for key, inner in value.items():
        out |= flatten(inner, f"{prefix}.{key}" if prefix else str(key))
    return out


@lru_cache(maxsize=1)
def defaults() -> dict:
    """Today's default of every config key a spec may leave out: each section's defaults, and the resolved config of
    minimal steps (so the sections other modules add — services, placement, new load keys — bring their own)."""
    from harness.lab import spec

    found: dict = {}
    for section, values in (("server", spec.SAMPLE.defaults), ("load", spec.LOAD_DEFAULTS),
                            ("system", spec.SYSTEM_DEFAULTS)):
        found |= {f"{section}.{k}": v for k, v in values.items()}
    limits = spec.ANY_MACHINE
    minimal = [{"id": "per-vu", "load": {"vus": 1}},
               {"id": "constant", "load": {"vus": 1, "executor": "constant-vus", "duration": "1s"}},
               {"id": "redeploy", "kind": "redeploy"}]
    for table in minimal:
        try:
            parsed = spec.parse_spec("defaults", {"step": [table]}, Path("defaults.toml"), limits).steps[0]
        except (LabError, KeyError, TypeError, ValueError):
            continue
        for key, value in flatten(normal(parsed.config())).items():
            found.setdefault(key, value)
    return normal(found)


def config_changes(stored: dict, current: dict) -> list[str]:
    """"section.key: old → new" for every key that differs; a key only one side has counts when its value is not
    today's default (a step recorded before the key existed ran with what is now its default)."""
    old, new, base = flatten(normal(stored)), flatten(normal(current)), defaults()
    changes = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, _MISSING), new.get(key, _MISSING)
        if before == after:
            continue
        if before is _MISSING and base.get(key, _MISSING) == after:
            continue
        if after is _MISSING and base.get(key, _MISSING) == before:
            continue
        changes.append(f"{key}: {_shown(before)} → {_shown(after)}")
    return changes


def _shown(value) -> str:
    return "(unset)" if value is _MISSING else json.dumps(value, ensure_ascii=False)


def changes(step, meta: dict, backend: str | None, tool_version: Callable[[str], str | None]) -> list[str]:
    """What differs between a recorded step (its step.json) and the step today's spec asks for; [] when it still
    belongs to it. `backend` None keeps the recorded one; `tool_version(name)` gives today's version, None if unknown."""
    stored = meta.get("config", {})
    current = step_config(step, backend or stored.get("backend", "local"))
    found = config_changes(stored, current)
    tool = step.load.get("tool") if step.kind == "load" else None
    parts = (meta.get("fingerprint") or {}).get("parts", {})
    if tool:
        version = tool_version(tool)
        recorded = parts.get("load_tool") or (f"{tool} {meta['versions'][tool]}" if meta.get("versions", {}).get(tool) else None)
        if version and recorded and recorded != f"{tool} {version}":
            found.append(f"load tool: {recorded} → {tool} {version}")
    if parts.get("scripts") is not None and tool == "k6":
        now = scripts()
        for name in sorted(set(parts["scripts"]) | set(now)):
            if parts["scripts"].get(name) != now.get(name):
                what = "added" if name not in parts["scripts"] else "removed" if name not in now else "edited"
                found.append(f"{name}: {what} since the step ran")
    if "record" in parts and parts["record"] != record_format(step):
        found.append(f"record format: {parts['record']} → {record_format(step)}")
    return found + input_changes(parts.get("inputs"), inputs(step))


# ---- a step's state --------------------------------------------------------------------------------

@dataclass
class State:
    step_id: str
    status: str  # complete | stale | failed | never run
    changes: list[str] = field(default_factory=list)  # stale: what changed
    reason: str = ""  # failed: why
    failed_attempt: str = ""  # complete or stale, but the last attempt failed (kept in .<id>.failed/): its reason


MARKS = {"complete": "✓", "stale": "!", "failed": "✗", "broken": "✗", "never run": " "}


def state(chapter: str, step, backend: str | None, tool_version: Callable[[str], str | None]) -> State:
    meta = store.read_meta(chapter, step.id)
    if meta is None:
        return State(step.id, "never run")
    if meta.get("status") == store.BROKEN:
        return State(step.id, "broken", reason=meta["reason"])
    if meta.get("status") != "complete":
        return State(step.id, "failed", reason=meta.get("reason", meta.get("status", "")))
    found = changes(step, meta, backend, tool_version)
    attempt = store.failed_attempt(chapter, step.id)
    return State(step.id, "stale" if found else "complete", found,
                 failed_attempt=(attempt or {}).get("reason", "failed") if attempt else "")


def tool_versions() -> Callable[[str], str | None]:
    """Today's version of each load tool, asked once each; None when the tool is not installed."""
    from harness.lab.load import load_tool

    @cache
    def version(name: str) -> str | None:
        try:
            return load_tool(name).version() or None
        except (LabError, KeyError, OSError):
            return None

    return version


def refuse_stale(states: list[State], chapter: str, spec_name: str) -> None:
    """Complete steps that no longer match the spec are never kept silently: one error listing what changed."""
    stale = [s for s in states if s.status == "stale"]
    if not stale:
        return
    lines = []
    for s in stale:
        lines.append(f"  {s.step_id}:")
        lines += [f"    {change}" for change in s.changes]
    redo = " ".join(f"--step {s.step_id}" for s in stale)
    raise LabError(
        f"{len(stale)} complete step(s) in {store.data_root() / chapter} were measured with another configuration "
        f"than {spec_name} asks for now, and would be shown as its results:\n" + "\n".join(lines) +
        f"\nre-run them with `invoke run {spec_name} --force {redo}` (or all steps with --force), "
        f"or undo the change")


def stamp(meta: dict, step, spec_file: str) -> None:
    """What step.json records about where a step's results come from: its spec file and its fingerprint."""
    tool = step.load.get("tool") if step.kind == "load" else None
    meta["spec"] = spec_file
    meta["fingerprint"] = of(step, meta["config"], tool, meta.get("versions", {}).get(tool))


def todo(chapter: str, name: str, steps: list, backend: str, force: bool, quiet: bool = False) -> list:
    """The steps a run measures: all with `force`; else those not complete. Stale ones are refused (LabError);
    broken ones are measured again (and said so unless `quiet`)."""
    if force:
        return list(steps)
    versions = tool_versions()
    states = [state(chapter, s, backend, versions) for s in steps]
    refuse_stale(states, chapter, name)
    for st in [] if quiet else states:
        if st.status == "broken":
            say(f"step {st.step_id} is broken ({st.reason}): measuring it again")
    return [s for s, st in zip(steps, states, strict=False) if st.status != "complete"]
