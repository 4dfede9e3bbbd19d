"""The end-to-end modules marked `alongside` run in a pytest session of their own, started with this one, so that
they use the machine the unit tests and the render leave idle (measured: the end-to-end phase keeps about one of the
two cores busy, waiting on servers and loads). Their checks are about files, counts, errors and clean-up, scoped to
their own runs, which hold on a shared machine; the modules that measure time or CPU are not marked and run after the
lane has ended, alone.

Each test of the lane still reports here as itself, in its place among the end-to-end tests: the lane's session
writes every report with pytest's own serialisation hooks (as pytest-xdist does) and this session replays them. A
test the lane gave no report for (a collection error, a crash, the job's time-out) fails here with the lane's output.
A lane starts only when this session also has tests of other modules to overlap it with: `pytest
tests/test_e2e_kill.py` runs the module in-process, as any other.

The two sessions share the marked modules, so that neither waits idle for the other (measured: this session ended its
unit tests 24-30 s before the lane ended). The lane takes them in order, this session from the last one back once its
own tests are done; each module goes to the session that claims it first (a file created with O_EXCL). A module
marked `alongside(first=True)` is the lane's alone, run before any module is shared: its checks see what every run on
the machine leaves, or sweeps (PostgreSQL's shared memory), so no other run may overlap it.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest
from _pytest.reports import TestReport
from _pytest.runner import CallInfo

import background

REPORTS_ENV = "LAB_TEST_LANE_REPORTS"  # set in the lane's own session: where its reports go (it starts no lane)
CLAIMS_ENV = "LAB_TEST_LANE_CLAIMS"  # set in the lane's own session: the folder where both sessions claim modules
SHARED = ".shared"  # written in the claims folder by the lane once its `first` modules are done
MARKER = "alongside"
LANE_TIMEOUT_S = 3600  # its tests' own time-outs end a stuck one well before: 400 s is what the lane takes here


def module(item) -> str:
    return item.nodeid.split("::")[0]


def lane_first(item) -> bool:
    marker = item.get_closest_marker(MARKER)
    return bool(marker and marker.kwargs.get("first"))


def by_module(items: list) -> list[list]:
    """The items in runs of one module each, in the order the modules first appear."""
    runs: dict[str, list] = {}
    for item in items:
        runs.setdefault(module(item), []).append(item)
    return list(runs.values())


class Claims:
    """Which session runs a module: the first to create its file in a folder both can see."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.decided: dict[str, bool] = {}  # module → this session runs it

    def take(self, name: str) -> bool:
        if name not in self.decided:
            try:
                os.close(os.open(self.folder / name.replace("/", "__"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                self.decided[name] = True
            except FileExistsError:
                self.decided[name] = False
        return self.decided[name]

    def open_for_sharing(self) -> None:
        (self.folder / SHARED).touch()

    def shared(self) -> bool:
        return (self.folder / SHARED).exists()


class Lane:
    def __init__(self, config, items):
        self.config = config
        # The session's order, each module's tests together, the `first` modules first
        self.runs = sorted(by_module(items), key=lambda run: not lane_first(run[0]))
        order = [item.nodeid for run in self.runs for item in run]
        self.nodeids = set(order)
        handle, name = tempfile.mkstemp(prefix="lab-lane-", suffix=".jsonl")
        os.close(handle)
        self.reports_file = Path(name)
        self.claims = Claims(Path(tempfile.mkdtemp(prefix="lab-lane-claims-")))
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *order]
        self.job = background.Job("lane", command, config.rootpath,
                                  os.environ | {REPORTS_ENV: name, CLAIMS_ENV: str(self.claims.folder)}, (),
                                  timeout_s=LANE_TIMEOUT_S)
        self.replayed: dict[str, list[TestReport]] | None = None
        self.ran_here = 0

    def runs_here(self, item) -> bool:
        """Whether this session runs the lane's test `item` itself: its module is not a `first` one, the lane has
        opened the sharing (waiting for that) and this session claimed the module before the lane did."""
        name = module(item)
        if name not in self.claims.decided:
            if lane_first(item):
                self.claims.decided[name] = False
            else:
                while not self.claims.shared() and self.job.process.poll() is None:
                    time.sleep(0.1)
                self.claims.decided[name] = self.claims.shared() and self.claims.take(name)
        return self.claims.decided[name]

    def reports(self, nodeid: str) -> list[TestReport]:
        """The lane's reports of the test `nodeid` (waiting for the lane to end)."""
        if self.replayed is None:
            self.job.wait()
            self.replayed = defaultdict(list)
            for line in self.reports_file.read_text().splitlines():
                try:
                    data = json.loads(line)
                except json.JSONDecodeError:  # the last line of a lane killed while writing it
                    continue
                report = self.config.hook.pytest_report_from_serializable(config=self.config, data=data)
                self.replayed[report.nodeid].append(report)
            self.reports_file.unlink(missing_ok=True)
            shutil.rmtree(self.claims.folder, ignore_errors=True)
        return self.replayed.get(nodeid, [])

    def replay(self, item) -> list[TestReport]:
        """The test's reports, ending in a failure where the lane left it unfinished (no teardown: the lane died, was
        stopped or never collected it)."""
        reports = self.reports(item.nodeid)
        if reports and (reports[-1].when == "teardown" or reports[-1].failed):  # finished, or already failed
            return reports
        code, output, seconds = self.job.wait()
        reason = (f"the alongside lane (its own pytest session, exit code {code} after {seconds:.0f} s) did not "
                  f"finish this test; its output:\n{output[-20000:]}")
        when = {0: "setup", 1: "call"}.get(len(reports), "teardown")  # the phase it stopped in
        keywords = {k: 1 for k in item.keywords}
        return [*reports, TestReport(item.nodeid, item.location, keywords, "failed", reason, when)]


LANE: Lane | None = None
# In the lane's own session: the folder where it and the session that started it claim modules
LANE_CLAIMS = Claims(Path(os.environ[CLAIMS_ENV])) if os.environ.get(CLAIMS_ENV) else None


# ---- the plugin's hooks (conftest.py: pytest_plugins); in either session -----------------------------------------

@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: after -m, -k, --lf, --ff and conftest's sort by phase
def pytest_collection_modifyitems(session, config, items):
    """Run the collected `alongside` end-to-end tests in a lane of their own when this session has other tests to
    overlap them with; they move to the front of the end-to-end tests, from the lane's last module back: this session
    runs those it claims first and replays the reports of the others."""
    global LANE
    yield
    marked = [item for item in items if item.get_closest_marker(MARKER) and item.get_closest_marker("e2e")]
    modules = {item.module for item in marked}
    others = [item for item in items if not item.get_closest_marker("e2e") and item.module not in modules]
    nothing_runs = config.option.collectonly or config.option.setuponly or config.option.setupplan or (
        session.testsfailed and not config.option.continue_on_collection_errors)  # a collection error stops the run
    if not marked or not others or os.environ.get(REPORTS_ENV) or nothing_runs:
        return
    LANE = Lane(config, marked)
    LANE.job.start()
    background.RUNNING[LANE.job.name] = LANE.job  # waited for by every other end-to-end test, stopped at the end
    rest = [item for item in items if item not in marked]
    first_e2e = next((n for n, item in enumerate(rest) if item.get_closest_marker("e2e")), len(rest))
    items[:] = rest[:first_e2e] + [item for run in reversed(LANE.runs) for item in run] + rest[first_e2e:]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A test of the lane reports here what its lane measured, or runs here when this session took its module; any
    other test runs here. In the lane's own session, a module the other session took is left to it."""
    if LANE_CLAIMS is not None:
        if lane_first(item):
            return None
        ours = LANE_CLAIMS.take(module(item))  # before sharing opens: the lane's first shared module is its own
        LANE_CLAIMS.open_for_sharing()
        return None if ours else True  # True: the session that started the lane runs it, and reports it
    if LANE is None or item.nodeid not in LANE.nodeids:
        return None
    if LANE.runs_here(item):
        LANE.ran_here += 1
        return None
    hook = item.ihook
    hook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in LANE.replay(item):
        hook.pytest_runtest_logreport(report=report)
    # What the tests before it set up and the next one does not need goes now, as a test's teardown does it (a test
    # of the same module as unit tests, tests/test_e2e_springjar.py, would leave their module set up otherwise).
    call = CallInfo.from_call(lambda: item.session._setupstate.teardown_exact(nextitem), "teardown")
    if call.excinfo is not None:
        hook.pytest_runtest_logreport(report=TestReport.from_item_and_call(item, call))
    hook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """In a lane's own session: every report also goes to the session that started the lane (pytest's own form)."""
    report = yield
    path = os.environ.get(REPORTS_ENV)
    if path:
        data = item.config.hook.pytest_report_to_serializable(config=item.config, report=report)
        with open(path, "a") as out:
            out.write(json.dumps(data) + "\n")
    return report


def pytest_terminal_summary(terminalreporter):
    if LANE is not None and LANE.job.finished:
        code, _, seconds = LANE.job.wait()
        terminalreporter.write_line(f"alongside lane: {len(LANE.nodeids) - LANE.ran_here} end-to-end tests in a "
                                    f"session of their own, {seconds:.0f} s beside the unit tests (exit code {code}); "
                                    f"{LANE.ran_here} in this session after its own tests")

