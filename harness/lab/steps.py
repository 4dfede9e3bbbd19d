"""Steps made otherwise than from today's spec file: with your own Spring Boot jar as the server (`invoke run
chapter3 --server app.jar`), and as a recorded step ran (from its step.json `config`, which the book reads: editing a
spec never changes how old data is read).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness import LabError
from harness.lab.services.base import SERVER
from harness.lab.services.graph import recorded, target_model
from harness.lab.load.options import path_problem
from harness.lab.services.kinds import KINDS
from harness.lab.spec import SAMPLE, Spec, Step


def with_own_server(spec: Spec, jar: str, path: str | None = None) -> Spec:
    """`spec` with your Spring Boot jar as the service `server` of every step that runs the sample server (kind
    spring-jar, listening where the step's [server] says), the load sent to `path` when given, and its results kept
    apart from the chapter's own (data/<chapter>@<jar name>/). Problems are listed at once, before anything starts."""
    problems: list[str] = [f"--path {problem}"] if path is not None and (problem := path_problem(path)) else []
    steps = []
    for step in spec.steps:
        if SERVER not in step.services:
            steps.append(step)
            continue
        values = {"path": jar, "port": step.port, "management_port": step.management_port, "address": step.address}
        knobs = KINDS["spring-jar"].resolve(SERVER, values, f"--server {jar}", problems)
        load = dict(step.load) | ({"path": path} if path and step.load else {})
        if path and step.load.get("requests"):
            problems.append(f"step {step.id}: --path cannot replace the paths of a scenario (load.requests)")
        services = step.services | {SERVER: {"kind": "spring-jar", **knobs}}
        steps.append(replace(step, chapter=f"{spec.chapter}@{Path(jar).stem}", services=services, load=load,
                             target_model=target_model(services, load)))
    if problems:
        raise LabError("your server cannot be run:\n" + "\n".join(f"  - {p}" for p in sorted(set(problems))))
    return Spec(f"{spec.chapter}@{Path(jar).stem}", f"{spec.title} — on {Path(jar).name}", spec.description, spec.path,
                steps)


def step_from_config(chapter: str, step_id: str, config: dict, limits: dict | None = None) -> Step:
    """The Step a recorded step ran as, from its step.json `config` (not from today's spec, which may have changed
    since): its sections, its service graph and what its target tells a model; `limits` the machine's it was
    checked against (the models' ceilings), when known."""
    services = recorded(config)
    load = config.get("load", {})
    return Step(chapter, step_id, "", (), config.get("server", {}), load, config.get("system", {}),
                kind=config.get("kind", "load"), starts=config.get("starts", 0), same_as=config.get("same_as", ""),
                container=config.get("container", {}), services=services, placement=config.get("placement", {}),
                limits=dict(limits or {}), target_model=target_model(services, load) if load else None)


def server_knob(meta: dict, name: str):
    """A sample-server knob as a recorded step ran with it: step.json's `knobs` (every knob, defaults included);
    for a step recorded before `knobs` existed, its [server] over today's defaults (the one place the book still
    fills a knob from today's defaults). Your jar in its place (spring-jar, `invoke run … --server`): what the step
    gave it, else what it reported running with (its Tomcat over Actuator), else None: nobody knows."""
    recorded = (meta.get("knobs") or {}).get(SERVER)
    if recorded is not None and "given" in recorded:
        reported = ((meta.get("server_info") or {}).get("tomcat") or {}).get(name)
        return recorded["given"].get(name, reported)
    if recorded is not None:
        return recorded.get(name)
    return (meta.get("config") or {}).get("server", {}).get(name, SAMPLE.defaults.get(name))
