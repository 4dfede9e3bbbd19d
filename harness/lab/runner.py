"""Run a chapter's steps: fresh server → samplers → k6 → stop → write the step atomically.

One step failing (server died, never healthy, k6 stuck) is recorded as `failed` with its reason
and the run goes on. Ctrl-C (or SIGTERM) stops the children, keeps what was measured as a failed
step, and re-raises so nothing after it runs.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass

from harness import LabError, say
from harness.lab import fingerprint, interrupts, netns, placement, preflight, store, system
from harness.lab.backends import backend as make_backend
from harness.lab.backends.base import JVM_OPTIONS, StepFailed, check_port_free, spawn, terminate
from harness.lab.backends.local import check_launches, launch_of
from harness.lab.bench import redeploys
from harness.lab.load import load_tool
from harness.lab.load.k6 import DASHBOARD_REPORT, part_name, request_counts, summary_counts
from harness.lab.load.recording import write_recording
from harness.lab.samplers import Samplers, now_ms
from harness.lab.services.deploy import AFTER, BEFORE, Deployment, check_services, target
from harness.lab.spec import Step, load_spec
from harness.models import MODEL_VERSION, STARTUP_ALLOWANCE_MS, expected_step_ms, predict

LOAD_EXTRA_WAIT_S = 60  # beyond the model's stop time before the load tool is declared stuck
TAIL_SAMPLES = 2  # sampler ticks kept running after k6 ends, to see connections drain


@dataclass
class Outcome:
    step: Step
    status: str
    reason: str
    wall_s: float
    requests: dict



def run_chapter(chapter: str, step_ids: list[str] | None = None, force: bool = False,
                backend: str = "local", dashboard: bool = False) -> list[Outcome]:
    """Validate everything first, then run the steps that are not complete yet (all with `force`); complete steps
    measured with another configuration than the spec's (fingerprint.py) are refused unless forced."""
    preflight.check_data_root()
    spec = load_spec(chapter)
    name, chapter = chapter, spec.chapter  # a spec given as a path is stored under its file name
    steps = spec.select(step_ids)
    server_backend = make_backend(backend)
    server_backend.check()
    if server_backend.name != "docker" and any(s.container for s in steps):
        say(f"note: the [container] limits (cpus, memory, nofile) apply to the docker backend only; "
            f"the {server_backend.name} server runs without them")
    if server_backend.name == "docker" and any(s.server.get("VIRTUAL_THREADS") for s in steps):
        raise LabError("VIRTUAL_THREADS needs Java 21+, and the server image holds the lab's JDK 17 (Spring would run "
                       "platform threads without a word): run these steps on the local backend")
    preflight.check_spec_home(spec)
    preflight.clean_leftovers(chapter)
    todo = fingerprint.todo(chapter, name, steps, server_backend.name, force)
    if server_backend.name == "local":
        check_launches(todo)
    placement.preflight(todo, server_backend.name)  # names it starts, and root for a local quota
    _check_hosts(todo)
    skipped = len(steps) - len(todo)
    if skipped:
        say(f"{skipped} step(s) already complete in {store.data_root() / chapter} (use --force to redo them)")
    if not todo:
        return []
    tools = {name: load_tool(name) for name in sorted({s.load["tool"] for s in todo if s.kind == "load"})}  # refuse a missing tool now
    for step in todo:
        check_port_free(step.address, step.port, "server")
        check_port_free(step.address, step.management_port, "management")
    check_services(todo, server_backend.name)  # tools (e.g. nginx installed) and ports of [services.*]
    estimates = [expected_step_ms(s) / 1000 for s in todo]
    say(f"{spec.title}: {len(todo)} step(s), predicted ≥ {_clock(sum(estimates))} "
        f"(model minimum + ~{STARTUP_ALLOWANCE_MS // 1000} s start-up each)")
    outcomes: list[Outcome] = []
    began = time.monotonic()
    with interrupts.handled():
        for n, step in enumerate(todo):
            eta = _clock(time.monotonic() - began + sum(estimates[n:]))
            say(f"[{n + 1}/{len(todo)}] {step.id}: {step.why or step.load.get('executor', step.kind)} "
                f"(predicted {estimates[n]:.0f} s; chapter done in ≈ {eta})")
            outcome = run_step(step, server_backend, tools.get(step.load.get("tool")), dashboard,
                               preflight.spec_file(spec.path))
            outcomes.append(outcome)
            say(f"    {outcome.status}: {_result_line(outcome)}, {outcome.wall_s:.1f} s"
                f"{(' — ' + outcome.reason) if outcome.reason else ''}")
    failed = [o for o in outcomes if o.status != "complete"]
    say(f"done in {_clock(time.monotonic() - began)}: {len(outcomes) - len(failed)} complete, {len(failed)} failed; "
        f"data in {store.data_root() / chapter}")
    return outcomes


def _result_line(outcome: Outcome) -> str:
    if outcome.step.kind == "redeploy":
        return f"{outcome.step.starts} starts"
    counts = outcome.requests
    dropped = counts.get("dropped_iterations", 0)  # an open model that dropped iterations sent less than it asked
    asked = counts.get("asked", 0)  # 0: a ramp whose request count is not fixed in advance
    return (f"issued {counts.get('issued', 0)}{f'/{asked}' if asked else ''}, ok {counts.get('succeeded', 0)}, "
            f"failed {counts.get('failed', 0)}"
            + (f", DROPPED {dropped} iterations: k6 could not start them (not the load the spec asked for)" if dropped else ""))


def run_step(step: Step, server_backend, tool, dashboard: bool = False, spec_file: str = "") -> Outcome:
    writer = store.StepWriter(step.chapter, step.id)
    meta = _base_meta(step, server_backend.name, tool)
    fingerprint.stamp(meta, step, spec_file)
    began = time.monotonic()
    try:
        local = [n for n in step.placement if not (n == "server" and server_backend.name == "docker")]
        with _somaxconn_for(step, meta), placement.local_cgroups(step, local) as quotas, _hosts_for(step, meta) as hosts:
            meta |= {"placement": placement.asked(step, quotas)} if step.placement else {}
            if step.kind == "redeploy":
                _measure_redeploys(step, server_backend, writer, meta)
            else:
                _measure(step, server_backend, tool, writer, meta, dashboard, hosts)
        meta["status"] = "complete"
    except StepFailed as err:
        meta |= {"status": "failed", "reason": str(err)}
    except KeyboardInterrupt:
        meta |= {"status": "failed", "reason": "interrupted by the user (Ctrl-C) in the middle of the step"}
        with interrupts.saving():
            where = _finish(writer, meta, began)
        say(f"    interrupted: what was measured is kept as a failed step in {where}")
        raise
    with interrupts.saving():
        where = _finish(writer, meta, began)
    if meta["status"] != "complete" and where.name != step.id:
        say(f"    the earlier complete step is kept; this failed attempt is in {where}")
    return Outcome(step, meta["status"], meta.get("reason", ""), time.monotonic() - began, meta.get("requests", {}))


def _finish(writer: store.StepWriter, meta: dict, began: float):
    meta["ended_ms"] = now_ms()
    meta["wall_s"] = round(time.monotonic() - began, 2)
    return writer.finish(meta)


def _measure(step: Step, server_backend, tool, writer: store.StepWriter, meta: dict, dashboard: bool,
             hosts: netns.Hosts | None = None) -> None:
    """Services the server connects to (a database) → the server, with what they tell it → the other services (a
    proxy in front of it) → samplers and load; torn down in reverse: the proxy, the server, the database. With
    `hosts`, each service and the load tool run on a host of their own (the sample server stays on loopback)."""
    log = writer.path / "server.log"
    _ports_still_free(step)
    services = Deployment(step, writer.path, hosts=hosts, backend=server_backend.name)
    if step.services:
        meta["services"] = services.meta
    server = samplers = None
    loads: list = []  # (name, process) of the load tool: one, or load.processes k6 processes
    try:
        services.start(BEFORE)
        extra_env = services.server_env()
        if extra_env:
            meta["server_env"] = extra_env  # beside config.server: given by the step's services, not the spec
        server = services.server = server_backend.start(step, log, extra_env)
        meta["startup_ms"] = round(server.wait_healthy())
        _record_server(meta, server.info())
        meta |= server.step_meta()
        meta["launch"] = _launch_used(step, server_backend)
        services.start(AFTER)
        pids = {"server": server.pid} | services.pids()
        samplers = Samplers(step.system["sample_interval_ms"], services.port(target(step)), server.management_url,
                            lambda: dict(pids), server.cgroups(), enabled=step.system["sampling"],
                            extra=services.samplers(step.system["sample_interval_ms"]), server_port=step.port,
                            placed=step.placement)
        if hosts is not None:  # the target's sockets and TCP counters are its host's
            samplers.all["ss"].netns = hosts.path(target(step))
        with samplers:
            meta["load_started_ms"] = now_ms()
            loads = _start_load(step, tool, services.url(target(step)), writer.path, dashboard, hosts)
            pids |= {name: proc.pid for name, proc in loads}
            _wait_load(loads, tool.name, step, samplers, meta["model"]["min_duration_ms"])
            meta["load_ended_ms"] = now_ms()
            time.sleep(TAIL_SAMPLES * step.system["sample_interval_ms"] / 1000)
        if wrong := placement.mismatches(step, samplers.placed()):
            raise StepFailed(f"CPU placement not as asked: {'; '.join(wrong)}")
        if not server.alive():
            raise StepFailed(f"the server exited during the step ({server.exit_reason()})")
        services.check_alive()
        for name, proc in loads:
            if proc.returncode not in (0, 99):  # k6's 99: thresholds crossed, still a valid measurement
                raise StepFailed(f"{name} exited with code {proc.returncode}: see {name}.log.gz")
    finally:
        with interrupts.saving():  # a second Ctrl-C must not abandon the save
            for _, proc in loads:
                terminate(proc, grace_s=5)
            _tear_down(services, server, meta, lambda: (_write_tables(step, tool, writer, meta, samplers, dashboard),
                                                        services.write(writer)))


def _tear_down(services: Deployment, server, meta: dict, write) -> None:
    """The services in front of the server, the server, the services it used; each even if one before failed; then
    what was measured is written."""
    try:
        services.stop(AFTER)
    finally:
        try:
            if server is not None:
                meta["server_exit"] = server.stop()
        finally:
            try:
                services.stop(BEFORE)
            finally:
                write()


def _measure_redeploys(step: Step, server_backend, writer: store.StepWriter, meta: dict) -> None:
    """No load: `step.starts` fresh servers, each timed from start to healthy, then stopped."""
    log = writer.path / "server.log"
    _ports_still_free(step)
    rows: list[dict] = []
    info: dict = {}
    meta["launch"] = _launch_used(step, server_backend)
    try:
        redeploys(step, server_backend, step.starts, log, rows, info, progress=say)
    finally:
        writer.table("startup", rows)
        writer.gzip(log, "server.log")
        _record_server(meta, info)
    meta["startup_ms"] = round(statistics.median(r["startup_ms"] for r in rows))


def _launch_used(step: Step, server_backend) -> str:
    """How the JVM started (`auto` resolved), so the book can say which start-up a step's numbers come from."""
    return launch_of(step) if server_backend.name == "local" else server_backend.name


def _ports_still_free(step: Step) -> None:
    """Checked for every step up front too; checked again since something may have started since."""
    try:
        check_port_free(step.address, step.port, "server")
        check_port_free(step.address, step.management_port, "management")
    except LabError as err:
        raise StepFailed(str(err)) from None


def _record_server(meta: dict, info: dict) -> None:
    """The server's own report: effective Tomcat settings and the versions results depend on."""
    if info:
        meta["server_info"] = info
        meta["versions"] |= {"java": info.get("java", {}).get("version"), "spring_boot": info.get("springBootVersion")}


def _start_load(step: Step, tool, url: str, workdir, dashboard: bool, hosts: netns.Hosts | None) -> list:
    """The load tool's processes as (name, process): one, or load.processes k6 processes each running its execution
    segment of the test (k6, k6-2, …), each on a client host of its own on network = "hosts"."""
    parts = step.load.get("processes", 1)
    clients = netns.client_hosts(parts)
    started = []
    for part in range(1, parts + 1):
        cmd, env = tool.command(step, url, workdir, dashboard, part) if parts > 1 else tool.command(step, url, workdir,
                                                                                                    dashboard)
        cmd = placement.command(step, tool.name, cmd)
        name = part_name(tool.name, part)
        started.append((name, spawn(hosts.command(clients[part - 1], cmd) if hosts else cmd, _k6_env(env),
                                    workdir / f"{name}.log")))
    return started


def _wait_load(loads: list, name: str, step: Step, samplers: Samplers, expected_ms: int) -> None:
    """Wait for the load tool to end by itself (at most until the load options say it stops, plus a margin), printing
    a progress line every few seconds against the model's expected duration (step.json's prediction)."""
    limit = step.stop_ms / 1000 + LOAD_EXTRA_WAIT_S
    start = time.monotonic()
    every = 2 if sys.stdout.isatty() else 10
    next_report = every
    while any(proc.poll() is None for _, proc in loads):
        elapsed = time.monotonic() - start
        if elapsed > limit:
            raise StepFailed(f"{name} still running after {limit:.0f} s (its stop time + {LOAD_EXTRA_WAIT_S} s)")
        if elapsed >= next_report:
            say(f"    {elapsed:4.0f} s / ≈{expected_ms / 1000:.0f} s  {_live(samplers)}")
            next_report += every
        time.sleep(0.2)


def _live(samplers: Samplers) -> str:
    """The latest server-side view, for the progress line."""
    ss = (samplers.rows("ss") or [{}])[-1]
    busy = next((r["value"] for r in reversed(samplers.rows("actuator")) if r["metric"] == "tomcat.threads.busy"), None)
    return (f"ESTAB {ss.get('estab', '?')}  accept queue {ss.get('accept_queue', '?')}  "
            f"busy threads {'?' if busy is None else int(busy)}")


def _write_tables(step: Step, tool, writer: store.StepWriter, meta: dict, samplers: Samplers | None,
                  dashboard: bool = False) -> None:
    """Whatever was measured goes into the step directory, also when the step failed."""
    try:
        recorded = tool.collect(writer.path, step)
    except Exception as err:  # the tool's raw output stays in the step directory then
        meta.setdefault("reason", f"{tool.name} output unreadable: {err}")
        recorded = None
    if recorded is not None:
        meta["recording"] = write_recording(writer, recorded)
        meta["requests"] = request_counts(recorded, step.requests_asked) | summary_counts(writer.path / "k6-summary.json")
    if samplers is not None:
        for name in ("ss", "actuator", "process", "cpu"):
            writer.table(name, samplers.rows(name))
        meta["samplers"] = samplers.summary()
        if meta.get("placement"):
            placement.add_seen(meta["placement"], samplers.placed())
    if dashboard and not (writer.path / DASHBOARD_REPORT).exists():
        say(f"    note: {tool.name} wrote no dashboard report for this step (see {tool.name}.log.gz)")
    writer.gzip(writer.path / "server.log", "server.log")
    for part in range(1, step.load.get("processes", 1) + 1):
        writer.gzip(writer.path / f"{part_name(tool.name, part)}.log", f"{part_name(tool.name, part)}.log")


def _k6_env(extra: dict) -> dict:
    """The user's environment minus any K6_* settings that would change the measurement."""
    return {k: v for k, v in os.environ.items() if not k.startswith("K6_")} | extra


def _base_meta(step: Step, backend_name: str, tool) -> dict:
    return {
        "id": step.id,
        "chapter": step.chapter,
        "why": step.why,
        "findings": list(step.findings),
        "status": "running",
        "started_ms": now_ms(),
        "config": step.config() | {"backend": backend_name},
        "requests": {"asked": step.requests_asked, "issued": 0},
        "model": predict(step).as_dict() if step.kind == "load" else None,
        "model_version": MODEL_VERSION if step.kind == "load" else None,
        "jvm_options": list(JVM_OPTIONS),
        "versions": ({tool.name: tool.version()} if tool else {}) | {"python": sys.version.split()[0]},
        "machine": system.machine(),
        "git_commit": system.git_commit(),
    }


def _check_hosts(steps: list[Step]) -> None:
    """Steps on network = "hosts": root and `ip`, and netem where a step asks for link delay (a clear error first)."""
    on_hosts = [s for s in steps if s.system["network"] == "hosts"]
    if on_hosts:
        netns.check_can_make_hosts()
        for delay in sorted({s.system["link_delay_ms"] for s in on_hosts}):
            netns.check_delay_possible(delay)


@contextmanager
def _hosts_for(step: Step, meta: dict):
    """The step's hosts (network = "hosts"), made before its services and removed after them; None on loopback."""
    if step.system["network"] != "hosts" or step.kind != "load":
        yield None
        return
    hosts = netns.Hosts(netns.step_hosts(step.services, step.load.get("processes", 1)), step.system["link_delay_ms"])
    try:
        hosts.__enter__()
    except LabError as err:
        raise StepFailed(f"could not make the step's hosts: {err}") from None
    try:
        meta["hosts"] = hosts.describe()
        yield hosts
    finally:
        hosts.__exit__(None, None, None)


@contextmanager
def _somaxconn_for(step: Step, meta: dict):
    """Raise net.core.somaxconn for a step that asks (validated in spec) and restore it after."""
    before = system.somaxconn()
    accept = step.knob("TOMCAT_ACCEPT_COUNT")
    raised = step.system["raise_somaxconn"] and accept > before
    if raised:
        system.set_somaxconn(accept)
    meta["machine"]["somaxconn"] = system.somaxconn()
    if raised:
        meta["machine"]["somaxconn_before"] = before
    try:
        yield
    finally:
        if raised:
            system.set_somaxconn(before)


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else f"{seconds // 60}:{seconds % 60:02d}"


def list_chapters() -> list[tuple[str, list[Step]]]:
    from harness.lab.spec import chapters

    out = []
    for chapter in chapters():
        try:
            out.append((chapter, load_spec(chapter).steps))
        except LabError as err:
            say(f"{chapter}: {err}")
    return out
