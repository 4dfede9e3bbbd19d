"""The lab's commands. Logic lives in the harness package; these are thin entry points.

    invoke setup            install what is missing (system packages as root), build k6 and the servers
    invoke run smoke        run an experiment (chapter)
    invoke list             experiments and their steps
    invoke report           how many concurrent requests your own Spring Boot jar can handle (--server app.jar)
    invoke image            the server's container image (for --backend docker)
    invoke dockerd          a private Docker daemon (--stop stops it)
    invoke test             all tests
    invoke render           build the book with Quarto
    invoke serve            read the rendered book at http://127.0.0.1:4242/
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import NamedTuple

from invoke import Exit, task

from harness import CACHE, DATA, ROOT, TOOLS, ClosedOutput, GuardedOutput, LabError, OutputLost, silence_stdout

# A terminal whose encoding has no ✓ or × (PYTHONIOENCODING=ascii, LANG=C on an old Python) shows "?" for them: a
# status mark is not worth a UnicodeEncodeError.
# Line-buffered: a write that fails does so in the print that made it, where a handler sees it (below).
for _stream in (sys.stdout, sys.stderr):
    if hasattr(_stream, "reconfigure"):
        _stream.reconfigure(errors="replace", line_buffering=True)
# stdout redirected into a full disk (`invoke list > out.txt`) is one line, not a traceback: an error (exit 2) in a
# task's _clear_errors, a failure (exit 1) elsewhere (invoke's help of a task, a print outside it).
if not isinstance(sys.stdout, GuardedOutput):
    sys.stdout = GuardedOutput(sys.stdout if sys.stdout is not None else ClosedOutput())
_python_excepthook = sys.excepthook


def _one_line_for_lost_output(kind, value, trace):
    if isinstance(value, OutputLost):
        print(f"error: {value}", file=sys.stderr)
    else:
        _python_excepthook(kind, value, trace)


sys.excepthook = _one_line_for_lost_output


@contextmanager
def _clear_errors():
    """A LabError is the user's to fix: show its message, no traceback, exit 2. Output piped into a reader that
    stopped early (`| head -1`) ends the command quietly: the reader had what it wanted."""
    try:
        yield
        if sys.stdout is not None:
            sys.stdout.flush()  # what is still held fails here, not in Python's flush at exit, where no handler is
    except LabError as err:
        raise Exit(f"error: {err}", code=2) from None
    except KeyboardInterrupt:
        raise Exit("interrupted: children stopped, what was measured kept (the step's status is above)", code=130) from None
    except BrokenPipeError:
        silence_stdout()
        raise Exit(code=0) from None


OPTION = re.compile(r"--?[A-Za-z]")


def _positionals(task_name: str, **values: str) -> None:
    """invoke takes an option typed where a task still waits for a positional argument as that argument's value
    (`invoke run --help` runs a chapter named "--help": pyinvoke/invoke#982). --help shows the task's help, as asked;
    any other option there is refused by name, before anything starts."""
    for name, value in values.items():
        if not OPTION.match(value):
            continue
        if value in ("--help", "-h"):  # invoke's own help, printed here: a reader that stops early ends it quietly
            print(subprocess.run([sys.executable, "-m", "invoke", "--help", task_name], cwd=ROOT, text=True,
                                 capture_output=True).stdout, end="", flush=True)
            raise Exit(code=0)
        raise LabError(f"{value!r} came where `invoke {task_name}` expects its {name}: give the {name} first, "
                       f"options after it (`invoke --help {task_name}` lists them)")


def _path(option: str, text: str):
    """An option's file or folder as an absolute path ("~/x" expanded), or a LabError naming what no path can hold."""
    from pathlib import Path

    if not text.strip():  # Path("") is the working directory: a value lost in quoting, not a choice
        raise LabError(f"{option} is empty: give a path")
    try:
        path = Path(text).expanduser().resolve()
        path.exists()  # raises for a name too long
        return path
    except (ValueError, OSError, RuntimeError) as err:  # a NUL byte, a name too long, a loop of links
        raise LabError(f"{option} {text[:80]!r} is not a usable path ({err})") from None


def _whole(option: str, text, least: int, most: int | None = None) -> int:
    """An option's whole number, or a LabError naming it. (An option's default is a string: invoke would otherwise
    convert the value itself and end a typo such as `--starts abc` in its own traceback.)"""
    try:
        value = int(text)
    except ValueError:
        raise LabError(f"{option} {text!r} is not a whole number") from None
    if value < least:
        raise LabError(f"{option} {value}: at least {least}")
    if most is not None and value > most:
        raise LabError(f"{option} {value}: at most {most}")
    return value


@task(help={"docker": "also install the docker backend's packages (docker.io, debootstrap)"})
def setup(c, docker=False):
    """Install the missing system packages (as root, with apt-get; else list them), build k6, the servers and the
    chart libraries."""
    from harness.lab import toolchain

    with _clear_errors():
        toolchain.setup(docker=docker)


@task(
    iterable=["step"],
    help={
        "chapter": "experiment to run: a name from experiments/ (e.g. smoke, chapter3)",
        "step": "run only this step id (repeatable)",
        "force": "re-run steps that are already complete",
        "backend": "where the services run: local (default) or docker (a fresh container per step; `invoke image` first)",
        "dashboard": "also save k6's web-dashboard HTML report in each step",
        "server": "your own Spring Boot jar in the sample server's place (results in data/<chapter>@<jar name>/)",
        "path": "with --server: the path the load asks your app for (default: the chapter's)",
    },
)
def run(c, chapter, step=None, force=False, backend="local", dashboard=False, server=None, path=None):
    """Run an experiment: each step on freshly started services, results in data/<chapter>/."""
    from harness.lab.runner import run_chapter
    from harness.plan import plan_steps

    with _clear_errors():
        _positionals("run", chapter=chapter)
        spec = _spec_with_server(chapter, server, path)
        outcomes = run_chapter(chapter, step or None, force=force, backend=backend, dashboard=dashboard,
                               plan=plan_steps, spec=spec)
    if any(o.status != "complete" for o in outcomes):
        raise Exit("some steps failed: see the reasons above (kept with status failed)", code=1)
    if outcomes and spec is not None:  # your jar's run (a step of it too): judged beside the book, never kept
        _say_how_to_compare(spec.chapter, keep=False)
    elif outcomes and not step:
        _say_how_to_compare(chapter)


def _say_how_to_compare(chapter, keep=True):
    """After a run: how its outcomes compare with the book's, and (a whole chapter of the sample server's) how a
    clean pass is kept. A run into another data directory names it: `LAB_DATA_DIR=… invoke run` is often typed for
    that one command."""
    from harness.lab.protocol import protocol
    from harness.lab.store import data_root

    if protocol(chapter.partition("@")[0]) is None:
        return
    root = data_root()
    command = f"invoke compare {chapter}" + ("" if root.resolve() == DATA.resolve() else f" --data {shlex.quote(str(root))}")
    kept = f"; a clean pass (every step at one committed commit) is kept as one of the book's with: {command} --keep"
    print(f"your outcomes beside the book's: {command}{kept if keep else ''}")


def _spec_with_server(chapter, server, path):
    """The chapter's spec, with your jar as its server when --server names one (--path only goes with it)."""
    from harness.lab.spec import load_spec
    from harness.lab.steps import with_own_server

    if path is not None and server is None:
        raise LabError("--path goes with --server (the path your app answers); the chapter's own steps keep theirs")
    if server is None:
        return None
    return with_own_server(load_spec(chapter), str(_path("--server", server)), path)


@task(help={"server": "your Spring Boot jar (an executable jar with a Start-Class)",
            "path": "the path the load asks your app for (default /)",
            "profile": "the profile's spec (default experiments/report.toml; the tests give a scaled one)"})
def report(c, server, path="/", profile="report"):
    """A capacity profile of your own jar: its service time, the throughput plateau against Little's law, the
    connections it holds at once; each step sized by what the steps before it measured (data/report@<jar>/)."""
    from harness.lab.profile import run_profile, summary

    with _clear_errors():
        _positionals("report", server=server)
        found = run_profile(str(_path("--server", server)), path, profile)
        print("\n".join(summary(found)))


@task(help={"starts": "how many fresh starts (default 5)", "backend": "local (default) or docker"})
def startup(c, starts="5", backend="local"):
    """Measure redeploy time: fresh server start to healthy Actuator, over several starts."""
    from harness.lab.bench import describe, redeploy_times
    from harness.lab.spec import MAX_STARTS

    with _clear_errors():
        times = redeploy_times(_whole("--starts", starts, 1, MAX_STARTS), backend=backend)  # as a redeploy step's
        print(f"start-to-healthy: {describe(times)}")


@task(help={"base": "base image with a JRE 17+: a name (default eclipse-temurin:17-jre), or `debootstrap` to build "
                    "Debian + JRE from this machine's apt mirror (no registry needed; reused once built)"})
def image(c, base=None):
    """Build the container images of the kinds that run in docker (the sample server's from its jar, postgres's from
its binaries), for `invoke run … --backend docker`."""
    from harness.lab.backends.docker.image import base_image
    from harness.lab.services.kinds import KINDS

    with _clear_errors():
        on = base_image(base)
        for kind in KINDS.values():
            kind.build_image(on)


@task(help={"step": "the step to describe", "out": "directory for the YAML files (default: print them)",
            "image": "the server image the cluster pulls (default concurrency-lab/sample-server:latest)"})
def manifests(c, chapter, step, out=None, image=None):
    """Kubernetes manifests of one step for k6-operator: the script's ConfigMap, the server's Deployment and
    Service, and the TestRun (parallelism = load.processes)."""
    from harness.lab.load.kubernetes import write_manifests

    with _clear_errors():
        _positionals("manifests", chapter=chapter, step=step)
        if image is not None and not image.strip():
            raise LabError("--image is empty: give the server image's name (or leave it out for the default)")
        print(write_manifests(chapter, step, None if out is None else str(_path("--out", out)), image))


@task(help={"stop": "stop the private daemon this command started and clean up after it"})
def dockerd(c, stop=False):
    """Start a private Docker daemon (no bridge network; none is started when one already answers)."""
    from harness.lab.backends.docker.daemon import start_daemon, stop_daemon

    with _clear_errors():
        if stop:
            stop_daemon()
        else:
            print(f"export DOCKER_HOST={start_daemon()}")


@task(name="list")
def list_(c):
    """List experiments and their steps: what each asks for, and whether its data is complete, stale (measured with
    another configuration than the spec's now), failed, or not there yet."""
    from harness.lab import fingerprint, store
    from harness.lab.load.options import peak_vus
    from harness.lab.preflight import readable_data_root
    from harness.lab.spec import list_chapters

    marks = ", ".join(f"{mark} {status}" for status, mark in fingerprint.MARKS.items() if mark.strip())
    with _clear_errors():
        readable_data_root()
        print(f"({marks}; blank: never run)")
        versions = fingerprint.tool_versions()
        for chapter, steps, broken in list_chapters():
            print(chapter)
            if broken:
                print(f"  ✗ its spec is broken, so none of its steps can run: {broken}")
            for s in steps:
                state = fingerprint.state(chapter, s, None, versions)
                what = f"{s.load['executor']:<18} {peak_vus(s.load):>6} VUs" if s.kind == "load" else f"{s.kind:<18} {s.starts:>6} starts"
                print(f"  {fingerprint.MARKS[state.status]} {s.id:<28} {what}  {s.why}")
                notes = ([f"{state.status}: {state.reason}"] if state.status in ("failed", "broken") else []) + state.changes + (
                    [f"its last attempt failed (kept in .{s.id}.failed/): {state.failed_attempt}"] if state.failed_attempt else [])
                for note in notes:
                    print(f"      {note}")
            for path, pid in store.leftovers(chapter):
                print(f"  half-written {path.name} (pid {pid}): the next `invoke run {chapter}` removes it if that run is gone")


@task(help={"chapter": "a chapter: chapter1 … chapter7, or chapterN@app: as run on your own server (--server app.jar)",
            "data": "another data directory to judge beside the committed one (e.g. where you ran the chapter; "
                    "default: LAB_DATA_DIR when set)",
            "keep": "keep the run as one of the book's passes (a clean pass only): appended to data/<chapter>/passes.csv"})
def compare(c, chapter, data=None, keep=False):
    """Judge a chapter's claims on another run's data beside the book's (every kept pass pooled); exit 1 when an
    outcome moved between reproduced and not reproduced."""
    from harness.book.compare import compare as compare_runs
    from harness.lab.spec import known_chapter

    with _clear_errors():
        _positionals("compare", chapter=chapter)
        base, at, server = chapter.partition("@")  # chapter3@app: chapter 3 run on your own server (--server app.jar)
        other = _path("--data", data) if data is not None else _data_dir_if_named()
        report, moved = compare_runs(known_chapter(base) + at + server, other, keep)
        print(report)  # inside: `invoke compare … | head -1` ends quietly, as `list` and `run` do
    if moved:
        raise Exit(f"{len(moved)} outcome(s) moved between reproduced and not reproduced", code=1)


def _data_dir_if_named() -> Path | None:
    """LAB_DATA_DIR when set, as `run` and `list` read it (the run to compare); None for the book's data/ alone."""
    from harness.lab.preflight import readable_data_root

    return readable_data_root() if "LAB_DATA_DIR" in os.environ else None


@task(help={"chapter": "a chapter: chapter1 … chapter7", "label": "the kept pass, as passes.csv names it",
            "why": "why it is withdrawn (kept beside it, shown on the chapter's page)"})
def withdraw(c, chapter, label, why):
    """Withdraw one of a chapter's kept passes: a row saying why is appended to data/<chapter>/withdrawn.csv; the
    pass's own rows stay, and its verdicts no longer pool it."""
    from harness.book.passes import withdraw as withdraw_pass
    from harness.book.passes import withdrawn
    from harness.lab.spec import known_chapter

    with _clear_errors():
        _positionals("withdraw", chapter=chapter, label=label, why=why)
        chapter = known_chapter(chapter)
        for row in withdrawn(chapter):
            if row["pass"] == label:  # a second row would say nothing new, and read as two withdrawals
                raise LabError(f"the pass {label!r} of {chapter} was withdrawn already ({row['recorded']}: {row['why']})")
        print(f"withdrawn: recorded in {withdraw_pass(chapter, label, why)}")


# The suite's pytest runs, chosen by markers; `--dist loadfile` keeps a module's tests, and the servers its fixtures
# start, in one worker. The phases, one after another at full priority, hold the end-to-end tests: 1, those whose checks
# hold on a shared machine, two at a time; 2, alone, those that measure time or CPU; 3, those that must be the only lab
# run (they count what every run leaves); 4, alone, those that read the whole machine's CPU or sweep what killed runs
# left. The jobs, which start no lab run, begin with the first phase, in an idle cgroup (placement.idle_cgroup: they
# take only the CPU time the phases leave, ~2/3 of the timed phase's), and are waited for before the quiet phase:
# the unit tests, the book (its render, then the tests that read it), the server's JUnit tests (Maven). Where no idle
# cgroup can be made they take a full share: they are waited for before the timed phase instead.
# --fast: the unit tests, then the quiet ones among them; no job, no render, server or k6.
class Phase(NamedTuple):
    markers: str
    workers: int = 0  # pytest-xdist's, 0: none (one test at a time)
    alone: bool = False  # the jobs still running are waited for before it starts


UNITS, BOOK, JUNIT = "the unit tests", "the book (its render, then the tests that read it)", "JUnit (./mvnw -B -q test)"
JOBS = {UNITS: "units.log", BOOK: "book.log", JUNIT: "junit.log"}  # each job's log, in the suite's folder
PYTEST_JOBS = {UNITS: Phase("not e2e and not alongside and not quiet and not rendered", workers=2),
               BOOK: Phase("rendered", workers=2)}  # the jobs that are pytest runs: their tests (JUnit is Maven's)
PHASES = (Phase("alongside", workers=2),
          Phase("e2e and not alongside and not sole"),
          Phase("sole"),
          Phase("quiet", alone=True))
FAST_PHASES = (Phase("not e2e and not quiet and not rendered", workers=2), Phase("quiet and not e2e"))
PYTEST_PASSED = (0, 5)  # 5: the run selected no test (pytest_args chose others)
# pytest-xdist's way for a run with workers: a file's tests in one of them, the files handed out in the order
# tests/conftest.py gives them (xdist's own order, most tests first, left the long end-to-end files for last).
XDIST = "--dist loadfile --no-loadscope-reorder"


def suite_phases(fast: bool, idle: bool) -> tuple[Phase, ...]:
    """The phases `invoke test` runs. Where no idle cgroup can be made (not root, no cgroup v1 cpu controller) the
    jobs would take their full share beside the tests that time what they measure: those wait for the jobs."""
    if fast:
        return FAST_PHASES
    if idle:
        return PHASES
    first, timed, *rest = PHASES
    return (first, timed._replace(alone=True), *rest)


def pytest_command(phase: Phase, pytest_args: str) -> list[str]:
    workers = ["-n", str(phase.workers), *XDIST.split()] if phase.workers else []
    return [sys.executable, "-m", "pytest", *workers, "-m", phase.markers, *shlex.split(pytest_args)]


@task(help={"fast": "the unit tests only: no render, no browser, no real server, no k6, no Maven (about 2 minutes)",
            "pytest_args": "extra arguments for every pytest run (e.g. a test file, -x, -k name)"})
def test(c, fast=False, pytest_args=""):
    """Run the suite: the end-to-end tests in phases (those that hold on a shared machine, those that need it alone,
    those that must be the only lab run, those that read the whole machine's CPU), and beside them, in an idle
    cgroup, the unit tests, the book's render and the tests that read it, and the server's JUnit tests (Maven);
    --fast: the unit tests only. Every phase and job runs; the task fails if any did."""
    import tempfile
    import time

    from harness.book.quarto import remove_kept_notebooks
    from harness.lab.placement import idle_cgroup

    work = Path(tempfile.mkdtemp(prefix="lab-test-"))
    env = suite_environment(LAB_RENDER_RESULT=str(work / "render.json"))
    began = time.monotonic()
    failed, running = [], {}
    try:
        with nullcontext() if fast else idle_cgroup("suite") as idle:  # --fast starts no job
            if not fast:
                running = {name: _start_job(name, work, env, idle, pytest_args) for name in JOBS}
                print("== beside the phases" + (", in an idle cgroup" if idle else "") + ": " + "; ".join(
                    name + (f": {_described(PYTEST_JOBS[name], pytest_args)}" if name in PYTEST_JOBS else "")
                    for name in running), flush=True)
            for n, phase in enumerate(suite_phases(fast, idle is not None), start=1):
                if phase.alone and running:
                    print(f"== waiting for {', '.join(running)}", flush=True)
                    failed += _finish_jobs(running, work)
                    running = {}
                print(f"== phase {n}: {_described(phase, pytest_args)}", flush=True)
                code = _run_phase(pytest_command(phase, pytest_args), env, n)
                if code not in PYTEST_PASSED:
                    failed.append(f"phase {n} (exit {code})")
            failed += _finish_jobs(running, work)
    except KeyboardInterrupt:  # while it waited for the jobs (a phase's own Ctrl-C is _run_phase's)
        raise Exit("interrupted: the suite stops, its jobs killed", code=130) from None
    finally:
        for job in running.values():
            if job.poll() is None:
                job.kill()
        if not fast:  # this run's render kept them (--fast renders nothing: the notebooks may be another run's)
            remove_kept_notebooks()
        if not failed:  # the logs of a failed run are kept (named below); those of a passed or interrupted one go
            shutil.rmtree(work, ignore_errors=True)
    print(f"invoke test: {time.monotonic() - began:.0f} s")
    if failed:
        raise Exit(f"failed: {', '.join(failed)} (the logs: {work})", code=1)


def _run_phase(command: list[str], env: dict, n: int) -> int:
    """A phase's pytest run, its output on ours; its exit code. A Ctrl-C reaches it too (one process group): it tears
    its fixtures down and ends, and the suite stops there (invoke's own `run` would have gone on to the next phase)."""
    with subprocess.Popen(command, cwd=ROOT, env=env) as phase:
        try:
            return phase.wait()
        except KeyboardInterrupt:
            phase.wait()
            raise Exit(f"phase {n} was interrupted: the suite stops, its jobs killed", code=130) from None


def _described(phase: Phase, pytest_args: str) -> str:
    return "pytest " + shlex.join(pytest_command(phase, pytest_args)[3:])


def _start_job(name: str, work: Path, env: dict, idle, pytest_args: str) -> subprocess.Popen:
    """One of the jobs beside the phases, its output in its log in `work`, in the idle cgroup where there is one
    (`idle`: placement.idle_cgroup's). The book's job renders, then runs the tests that read the render, whether it
    failed or not (they report its failure, with its output: tests/rendered.py)."""
    if name == JUNIT:
        command = junit_command(work)
    else:
        command = pytest_command(PYTEST_JOBS[name], pytest_args)
    if name == BOOK:
        render = [sys.executable, "tests/rendered.py", env["LAB_RENDER_RESULT"]]
        command = ["sh", "-c", f"{shlex.join(render)}; exec {shlex.join(command)}"]
    with open(work / JOBS[name], "w") as log:
        return subprocess.Popen(idle(command) if idle else command, cwd=ROOT / "sample-server" if name == JUNIT else ROOT,
                                env=env, stdout=log, stderr=subprocess.STDOUT)


def _finish_jobs(running: dict[str, subprocess.Popen], work: Path) -> list[str]:
    """Wait for the jobs; show a pytest run's output, and a failed job's; return the failed ones."""
    failed = []
    for name, job in running.items():
        code = job.wait()
        pytest_run = name in PYTEST_JOBS
        passed = code in (PYTEST_PASSED if pytest_run else (0,))
        output = (work / JOBS[name]).read_text(errors="replace")
        if pytest_run or not passed:  # Maven's output only when it failed, its end
            print(f"== {name} (exit {code}):\n{output if pytest_run else output[-6000:]}", flush=True)
        if not passed:
            failed.append(name)
    return failed


BYTECODE = CACHE / "bytecode"


def suite_environment(**settings: str) -> dict[str, str]:
    """The suite's processes' environment: this one, with `settings`, and Python's bytecode kept in BYTECODE even
    where PYTHONDONTWRITEBYTECODE is set. The suite starts hundreds of Python processes (pytest's workers, the lab's
    commands, the render's kernels); without a cache each compiles the repository's modules, and each pytest run
    rewrites the asserts of every test module, from source: 6 of a worker's 8 s of collection. Nothing is written
    beside the sources."""
    env = dict(os.environ, **settings, PYTHONPYCACHEPREFIX=str(BYTECODE))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def junit_command(work: Path) -> list[str]:
    """The sample server's JUnit tests (Maven). Their JVM's temporary folder is in `work`: Spring Boot's Tomcat leaves
    one folder per test context where it makes it (java.io.tmpdir, /tmp unless told)."""
    temp = work / "junit-tmp"
    temp.mkdir(exist_ok=True)
    return ["./mvnw", "-B", "-q", "test", f"-DargLine=-Djava.io.tmpdir={temp}"]


@task
def render(c):
    """Render the book with Quarto into _book/."""
    from harness.book.quarto import render as quarto_render

    if not (ROOT / "node_modules" / "vega" / "build" / "vega.min.js").exists():
        raise Exit("the chart libraries are missing (charts would be blank): run `npm ci` or `invoke setup`", code=2)
    with _clear_errors():
        rendered = quarto_render()
    if rendered.code:
        raise Exit(f"error: quarto render failed (exit {rendered.code}): its output is above", code=rendered.code)
    print("rendered into _book/: `invoke serve` to read it (Quarto's page scripts do not run from file://)")


@task(help={"port": "TCP port on 127.0.0.1 (default 4242; 0 picks a free one)"})
def serve(c, port="4242"):
    """Serve the rendered book over http on this machine and print its address (Ctrl-C stops)."""
    from harness.book.site import address, site_server

    with _clear_errors():
        server = site_server(_whole("--port", port, 0))
    print(f"the book: {address(server)}  (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped")
    finally:
        server.server_close()


@task(help={"data": "also delete data/ results (the committed reference data comes back with git checkout)",
            "clusters": "only the cached PostgreSQL clusters (.tools/postgres/clusters/) that no run is using"})
def clean(c, data=False, clusters=False):
    """Remove build output and tools (and, with --data, results); --clusters removes only unused database clusters."""
    from harness.lab.lock import holding
    from harness.lab.preflight import check_data_root, cluster_problems

    # Under no run's feet, whatever its data dir; unused clusters only: beside runs, each cluster's own lock decides.
    with _clear_errors():
        check_data_root()  # where the lock is held: a folder, or one can be made there
        if clusters and (problems := cluster_problems()):
            raise LabError(problems[0])
        with holding("invoke clean", tools="shared" if clusters else "exclusive"):
            _clean(data, clusters)


def _clean(data, clusters):
    if clusters:
        from harness.lab.services.pgcluster import clusters_root, remove_unused

        removed, kept = remove_unused()
        print(f"removed {len(removed)} cluster(s) from {clusters_root()}"
              + "".join(f"\nkept {k.name}: a run is using it" for k in kept))
        return
    from harness.lab.services.kinds import KINDS

    artifacts = [path for kind in KINDS.values() for path in kind.artifacts]
    for path in (*artifacts, ROOT / "_book", TOOLS, *(ROOT.glob(".pytest_cache"))):
        shutil.rmtree(path, ignore_errors=True)
    if data:
        shutil.rmtree(DATA, ignore_errors=True)
    print("clean")
