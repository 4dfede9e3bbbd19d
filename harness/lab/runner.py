"""Run a chapter's steps: the step's services deployed → samplers → load → stop → write the step atomically.

One step failing (a service died, never ready, the load tool stuck) is recorded as `failed` with its reason and the
run goes on. Ctrl-C (or SIGTERM) stops the children, keeps what was measured as a failed step, and re-raises so
nothing after it runs. The lab needs no model: what a step is expected to do and how long it should take comes from
a `plan` the caller hands in (harness.plan), and goes into step.json beside the measurement.
"""
from __future__ import annotations

import errno
import os
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness import LabError, say
from harness.lab import backends, counters, fingerprint, interrupts, lock, netns, placement, preflight, protocol, store, system
from harness.lab.backends.process import StepFailed, spawn, terminate
from harness.lab.bench import redeploys
from harness.lab.load import load_tool
from harness.lab.load.tool import tool_environment
from harness.lab.load.k6 import DASHBOARD_REPORT, part_name, request_counts, summary_counts
from harness.lab.load.recording import write_recording
from harness.lab.samplers import Samplers, now_ms
from harness.lab.services.deploy import Deployment, check_services, kind_of
from harness.lab.services.graph import SERVER, target
from harness.lab.jdk import jvm_options
from harness.lab.limits import backlogs
from harness.lab.spec import Step, load_spec

LOAD_EXTRA_WAIT_S = 60  # beyond the load options' stop time before the load tool is declared stuck
TAIL_SAMPLES = 2  # sampler ticks kept running after k6 ends, to see connections drain


def no_plan(steps: list[Step]) -> dict[str, dict]:
    """What the lab knows of steps without a model: nothing predicted, no estimate of their duration."""
    return {s.id: {"model": None, "model_version": None, "expected_ms": None, "expected_requests": None} for s in steps}


@dataclass
class Outcome:
    step: Step
    status: str
    reason: str
    wall_s: float
    requests: dict


def run_chapter(chapter: str, step_ids: list[str] | None = None, force: bool = False, backend: str = "local",
                dashboard: bool = False, plan: Callable[[list[Step]], dict] = no_plan, spec=None) -> list[Outcome]:
    """Validate everything first, then run the steps that are not complete yet (all with `force`); complete steps
    measured with another configuration than the spec's (fingerprint.py) are refused unless forced. `plan(steps)`
    gives each step's prediction and expected duration (harness.plan); `spec` a spec already loaded (e.g. with
    your own server)."""
    preflight.check_data_root()
    spec = spec or load_spec(chapter)
    steps = spec.select(step_ids)
    backends.check(backend)
    preflight.check_spec_home(spec)
    todo = fingerprint.todo(spec.chapter, chapter, steps, backend, force, quiet=True)
    tools = _check_before_anything_starts(todo, backend)
    with lock.holding(f"invoke run {chapter}"):  # the data directory is this run's from here on
        preflight.clean_leftovers(spec.chapter)
        return _run(spec, chapter, steps, force, backend, dashboard, plan, tools)


def _check_before_anything_starts(todo: list[Step], backend: str) -> dict:
    """Everything the steps to run need, checked before anything starts (one clear error each): the environment
    (folders, disk space), CPU placement, hosts, the load tools (returned by name) and each service kind's tools,
    launches and ports."""
    if backend != "docker" and any(s.container for s in todo):
        say(f"note: the [container] limits (cpus, memory, nofile) apply to the docker backend only; "
            f"the {backend} server runs without them")
    preflight.check_environment(todo)  # the chapter's folder, the postgres clusters' folder, free disk space
    placement.preflight(todo, backend)  # names it starts, and root for a local quota
    _check_hosts(todo)
    tools = {name: load_tool(name) for name in sorted({s.load["tool"] for s in todo if s.kind == "load"})}
    check_services(todo, backend)  # each kind's tools and launches, and every port free
    return tools


def _run(spec, name: str, steps: list[Step], force: bool, backend: str, dashboard: bool, plan, tools) -> list[Outcome]:
    chapter = spec.chapter  # a spec given as a path is stored under its file name
    todo = fingerprint.todo(chapter, name, steps, backend, force)  # again: a cleaned-up leftover may be a step back
    skipped = len(steps) - len(todo)
    if skipped:
        say(f"{skipped} step(s) already complete in {store.data_root() / chapter} (use --force to redo them)")
    if not todo:
        return []
    plans = plan(todo)
    estimates = [(plans[s.id]["expected_ms"] or 0) / 1000 for s in todo]
    say(f"{spec.title}: {len(todo)} step(s), expected to take {_clock(sum(estimates))}" if all(estimates) else
        f"{spec.title}: {len(todo)} step(s)")
    outcomes: list[Outcome] = []
    began = time.monotonic()
    with interrupts.handled():
        for n, step in enumerate(todo):
            interrupts.check()  # one dropped while the last step was stopped and saved: no next step
            eta = f"; chapter done in ≈ {_clock(time.monotonic() - began + sum(estimates[n:]))}" if all(estimates) else ""
            expected = f"expected {estimates[n]:.0f} s" if estimates[n] else "no estimate"
            say(f"[{n + 1}/{len(todo)}] {step.id}: {step.why or step.load.get('executor', step.kind)} ({expected}{eta})")
            outcome = run_by_protocol(step, backend, tools.get(step.load.get("tool")), dashboard,
                                      preflight.spec_file(spec.path), plans[step.id])
            outcomes.append(outcome)
            say(f"    {outcome.status}: {_result_line(outcome)}, {outcome.wall_s:.1f} s"
                f"{(' — ' + outcome.reason) if outcome.reason else ''}")
    failed = [o for o in outcomes if o.status != "complete"]
    say(f"done in {_clock(time.monotonic() - began)}: {len(outcomes) - len(failed)} complete, {len(failed)} failed; "
        f"data in {store.data_root() / chapter}")
    return outcomes


FIXED_COUNT = ("per-vu-iterations", "shared-iterations", "constant-arrival-rate", "ramping-arrival-rate")  # ask N


def _result_line(outcome: Outcome) -> str:
    if outcome.step.kind == "redeploy":
        return f"{outcome.step.starts} starts"
    counts = outcome.requests
    dropped = counts.get("dropped_iterations", 0)  # an open model that dropped iterations sent less than it asked
    # A closed loop of users for a time asks no number of requests (its `asked` is the users: the articles' reading)
    asked = counts.get("asked", 0) if outcome.step.load.get("executor") in FIXED_COUNT else 0
    return (f"issued {counts.get('issued', 0):,}{f' of {asked:,} asked' if asked else ''}, ok {counts.get('succeeded', 0):,}, "
            f"failed {counts.get('failed', 0):,}"
            + (f", DROPPED {dropped} iterations: k6 could not start them (not the load the spec asked for)" if dropped else ""))


def run_by_protocol(step: Step, backend: str, tool, dashboard: bool, spec_file: str, plan: dict) -> Outcome:
    """One step under its chapter's protocol (harness.lab.protocol): a run voided by the protocol's rule is measured
    again at once, up to its `reruns`; each void attempt is kept aside (`.<id>.void-<n>/`) and listed in the step.json
    of the run that stands (`voided`). When the last attempt is void too, it is kept as the step, with status "void":
    a pass needs the step measured again on a quieter machine."""
    rule = protocol.protocol(step.chapter) if step.kind == "load" else None
    voided: list[dict] = []
    while True:
        last = rule is None or len(voided) >= rule.reruns
        outcome = run_step(step, backend, tool, dashboard, spec_file, plan, void=rule and rule.void, voided=voided,
                           aside=None if last else f"{step.id}.void-{len(voided) + 1}")
        if outcome.status != "void" or last:
            return outcome
        voided.append({"reason": outcome.reason, "wall_s": round(outcome.wall_s, 2)})
        say(f"    void: {outcome.reason}; measured again at once (attempt {len(voided) + 1} of {rule.reruns + 1})")


def run_step(step: Step, backend: str, tool, dashboard: bool = False, spec_file: str = "",
             plan: dict | None = None, void=None, voided: list[dict] | None = None, aside: str | None = None) -> Outcome:
    """Measure one step and store it. `void(meta)` says why a complete run is void ("" when it stands): then it is
    stored with status "void", under `.<aside>/` when `aside` is given."""
    writer = store.StepWriter(step.chapter, step.id)
    plan = plan or no_plan([step])[step.id]
    meta = _base_meta(step, backend, tool, plan) | ({"voided": list(voided)} if voided else {})
    fingerprint.stamp(meta, step, spec_file)
    began = time.monotonic()
    try:
        with ExitStack() as measured:  # from the load's end (_measure): a signal waits until the step is judged
            local = [n for n in step.placement if not (n == SERVER and backend == "docker")]
            with (_somaxconn_for(step, meta), placement.local_cgroups(step, local) as quotas,
                  _hosts_for(step, meta) as hosts):
                meta |= {"placement": placement.asked(step, quotas)} if step.placement else {}
                if step.kind == "redeploy":
                    _measure_redeploys(step, backend, writer, meta)
                else:
                    _measure(step, backend, tool, writer, meta, dashboard, hosts,
                             {n: Path(q["cgroup"]) for n, q in quotas.items()}, measured)
            meta["status"] = "complete"
            if void and (why := void(meta)):
                meta |= {"status": "void", "reason": why}
    except StepFailed as err:
        meta |= {"status": "failed", "reason": str(err)}
    except OSError as err:  # where no narrower handler saw it: a service's config, a cluster's load …
        if err.errno != errno.ENOSPC:
            raise
        meta |= {"status": "failed", "reason": f"the disk filled up during the step ({err}): free some space and run "
                                               f"it again"}
    except KeyboardInterrupt as err:
        interrupts.seen()
        judged = meta["status"] in ("complete", "void")  # the signal came after the load and waited for the judgement
        if not judged:
            meta |= {"status": "failed",
                     "reason": f"interrupted by {interrupts.interrupted_by(err)} in the middle of the step"}
        with interrupts.saving():
            where = _finish(writer, meta, began, aside if meta["status"] == "void" else None)
        say(f"    interrupted: the step is kept as {meta['status']} in {where}" if judged else
            f"    interrupted: what was measured is kept as a failed step in {where}")
        raise
    with interrupts.saving():
        where = _finish(writer, meta, began, aside if meta["status"] == "void" else None)
    if meta["status"] == "failed" and where.name != step.id:
        say(f"    the earlier complete step is kept; this failed attempt is in {where}")
    return Outcome(step, meta["status"], meta.get("reason", ""), time.monotonic() - began, meta.get("requests", {}))


def _finish(writer: store.StepWriter, meta: dict, began: float, aside: str | None = None):
    meta["ended_ms"] = now_ms()
    meta["wall_s"] = round(time.monotonic() - began, 2)
    return writer.finish(meta, aside)


def _measure(step: Step, backend: str, tool, writer: store.StepWriter, meta: dict, dashboard: bool,
             hosts: netns.Hosts | None, quotas: dict, measured: ExitStack) -> None:
    """The step's services in dependency order (a database, the server that connects to it, a proxy in front),
    then samplers and load; torn down in reverse. With `hosts`, each service and the load tool run on a host of
    their own. From the load's end, a signal waits on `measured` (the caller's: until the step is judged), so that a
    kill during the tail, the checks or the teardown does not fail a measurement already made."""
    services = Deployment(step, writer.path, hosts=hosts, backend=backend)
    samplers = None
    loads: list = []  # (name, process) of the load tool: one, or load.processes k6 processes
    try:
        try:
            services.start()
        finally:
            _record_services(meta, services)
        pids = services.pids()
        samplers = Samplers(step.system["sample_interval_ms"], services.port(target(step)), lambda: dict(pids),
                            services.cgroups(), enabled=step.system["sampling"],
                            services=services.samplers(step.system["sample_interval_ms"]), placed=step.placement)
        if hosts is not None:  # the target's sockets and TCP counters are its host's
            samplers.all["ss"].netns = hosts.path(target(step))
        with samplers:
            before = counters.snapshot(services.pids(), quotas)
            ticks = counters.user_cpu({os.getpid(), *services.pids().values()})
            meta["load_started_ms"] = now_ms()
            loads = _start_load(step, tool, services.url(target(step)), writer.path, dashboard, hosts)
            pids |= {name: proc.pid for name, proc in loads}
            _wait_load(loads, tool.name, step, samplers, services, meta["expected_requests"])
            measured.enter_context(interrupts.saving())
            meta["load_ended_ms"] = now_ms()
            meta["during_load"] = counters.during(before, counters.snapshot(services.pids(), quotas))
            meta["outside_cpu"] = counters.outside(ticks, counters.user_cpu({os.getpid(), *pids.values()}),
                                                   (meta["load_ended_ms"] - meta["load_started_ms"]) / 1000,
                                                   os.cpu_count() or 1)
            _note_outside(meta["outside_cpu"])
            time.sleep(TAIL_SAMPLES * step.system["sample_interval_ms"] / 1000)
        if wrong := placement.mismatches(step, samplers.placed()):
            raise StepFailed(f"CPU placement not as asked: {'; '.join(wrong)}")
        services.check_alive()
        for name, proc in loads:
            if proc.returncode not in (0, 99):  # k6's 99: thresholds crossed, still a valid measurement
                raise StepFailed(f"{name} exited with code {proc.returncode}: see {name}.log.gz"
                                 + preflight.disk_full_note(writer.path))
    finally:
        with interrupts.saving():  # a second Ctrl-C must not abandon the save
            for _, proc in loads:
                terminate(proc, grace_s=5)
            try:
                services.stop()
            finally:
                _record_services(meta, services)
                _write_tables(step, tool, writer, meta, samplers, dashboard)
                services.write(writer)
    if problem := tool.not_whole(writer.path, step, meta):
        raise StepFailed(problem)


def _note_outside(used: dict) -> None:
    """Other work on the machine during the load is said at once: a re-run that disagrees with the book may owe it."""
    if used["share"] > counters.BUSY_SHARE_NOTED:
        say(f"    note: other processes used {used['share']:.0%} of this machine's CPUs during the load "
            f"({used['user_seconds']:g} s of user time outside the lab): a quiet machine's numbers may differ")


def _record_services(meta: dict, services: Deployment) -> None:
    """What the services said of themselves: the sample server's facts at step.json's top level (its versions
    beside the load tool's), every other service under `services`."""
    facts = dict(services.server_meta)
    meta["versions"] |= facts.pop("versions", {})
    meta |= facts
    if services.meta:
        meta["services"] = services.meta


def _measure_redeploys(step: Step, backend: str, writer: store.StepWriter, meta: dict) -> None:
    """No load: `step.starts` fresh servers, each timed from start to ready, then stopped (bench.redeploys)."""
    rows: list[dict] = []
    try:
        facts = redeploys(step, backend, writer.path, rows, progress=say)
    finally:
        writer.table("startup", rows)
        writer.gzip(writer.path / "server.log", "server.log")
    meta["versions"] |= facts.pop("versions", {})
    meta |= facts | {"startup_ms": round(statistics.median(r["startup_ms"] for r in rows))}


def _start_load(step: Step, tool, url: str, workdir, dashboard: bool, hosts: netns.Hosts | None) -> list:
    """The load tool's processes as (name, process): one, or load.processes k6 processes each running its execution
    segment of the test (k6, k6-2, …), each on a client host of its own on network = "hosts"."""
    parts = step.load.get("processes", 1)
    clients = netns.client_hosts(parts)
    started = []
    for part in range(1, parts + 1):
        cmd, env = tool.command(step, url, workdir, dashboard, part)
        cmd = placement.command(step, tool.name, hosts.command(clients[part - 1], cmd) if hosts else cmd)
        name = part_name(tool.name, part)
        try:
            started.append((name, spawn(cmd, tool_environment(env), workdir / f"{name}.log")))
        except OSError as err:  # an argument list too long, a binary gone since the checks: the step fails, kept
            if err.errno == errno.ENOSPC:
                raise
            for _, proc in started:
                terminate(proc, grace_s=5)
            raise StepFailed(f"could not start {name}: {err}") from None
    return started


def _wait_load(loads: list, name: str, step: Step, samplers: Samplers, services: Deployment,
               expected_requests: int | None) -> None:
    """Wait for the load tool to end by itself (at most until the load options say it stops, plus a margin), printing
    a progress line every few seconds (the target's own count of requests answered against what the plan expects,
    its sockets, its own busy number); a service that dies ends the step at once, naming it."""
    limit = step.stop_ms / 1000 + LOAD_EXTRA_WAIT_S
    start = time.monotonic()
    every = 2 if sys.stdout.isatty() else 10
    next_report = every
    while any(proc.poll() is None for _, proc in loads):
        interrupts.check()
        elapsed = time.monotonic() - start
        if elapsed > limit:
            raise StepFailed(f"{name} still running after {limit:.0f} s (its stop time + {LOAD_EXTRA_WAIT_S} s)")
        services.check_alive()
        if elapsed >= next_report:
            say(f"    {elapsed:4.0f} s  {_live(samplers, services, target(step), expected_requests)}")
            next_report += every
        time.sleep(0.2)


def _live(samplers: Samplers, services: Deployment, target_name: str, expected: int | None) -> str:
    """The latest server-side view, for the progress line: requests the target answered (of those the plan expects),
    its sockets, and its own number (busy threads, open connections …)."""
    ss = (samplers.rows("ss") or [{}])[-1]
    served, own = services.served(target_name), services.live(target_name)
    count = "" if served is None else f"answered {served:,}" + (f"/≈{expected:,}  " if expected else "  ")
    return (count + f"ESTAB {ss.get('estab', '?')}  accept queue {ss.get('accept_queue', '?')}"
            + (f"  {own}" if own else ""))


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
        meta["requests"] = (request_counts(recorded, step.requests_asked)
                            | summary_counts(writer.path, step.load.get("processes", 1)))
    if samplers is not None:
        for name in ("ss", "process", "cpu"):
            writer.table(name, samplers.rows(name))
        meta["samplers"] = samplers.summary()
        if meta.get("placement"):
            placement.add_seen(meta["placement"], samplers.placed())
    if dashboard and not (writer.path / DASHBOARD_REPORT).exists():
        say(f"    note: {tool.name} wrote no dashboard report for this step (see {tool.name}.log.gz)")
    for part in range(1, step.load.get("processes", 1) + 1):
        writer.gzip(writer.path / f"{part_name(tool.name, part)}.log", f"{part_name(tool.name, part)}.log")


def _base_meta(step: Step, backend: str, tool, plan: dict) -> dict:
    return {
        "id": step.id,
        "chapter": step.chapter,
        "run": {"of": step.base, "run": step.run, "runs": step.runs},  # run k of n of one step (spec: runs = n)
        "why": step.why,
        "findings": list(step.findings),
        "status": "running",
        "started_ms": now_ms(),
        "config": step.config() | {"backend": backend},
        "knobs": step.knobs(),
        "requests": {"asked": step.requests_asked, "issued": 0},
        "model": plan["model"],
        "model_version": plan["model_version"],
        "expected_ms": plan["expected_ms"],
        "expected_requests": plan["expected_requests"],
        "jvm_options": recorded_jvm_options(step),
        "versions": ({tool.name: tool.version()} if tool else {}) | {"python": sys.version.split()[0]},
        "machine": system.machine(),
        "git_commit": system.git_commit(),
    }


def recorded_jvm_options(step: Step) -> list[str]:
    """The options the step's JVMs were given: what its kinds always give theirs (the sample server's heap rule), and
    the step's system.jvm options when it runs any JVM."""
    heap = [option for name in step.services for option in kind_of(step, name).jvm_options(step.services[name])]
    java = any(kind_of(step, name).runs_java for name in step.services)
    return heap + (list(jvm_options(step.system)) if java else [])


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
    hosts = netns.Hosts(netns.step_hosts(step.hosted, step.load.get("processes", 1)), step.system["link_delay_ms"])
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
    asked = max((backlog for _, backlog, _ in backlogs(step)), default=0)
    raised = step.system["raise_somaxconn"] and asked > before
    if raised:
        system.set_somaxconn(asked)
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
