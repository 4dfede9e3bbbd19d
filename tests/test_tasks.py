"""The command line's own edges: an option's value that cannot be used ends in one line naming it (exit 2), before
anything starts, never in a traceback."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness import ROOT, LabError
from harness.lab import bench
from harness.lab.backends.process import StepFailed


@pytest.mark.parametrize(("args", "said"), [
    (["startup", "--starts", "abc"], "--starts 'abc' is not a whole number"),
    (["startup", "--starts", "0"], "--starts 0: at least 1"),
    (["startup", "--starts", "99999999999999999999"], "--starts 99999999999999999999: at most 100"),  # as a spec's
    (["serve", "--port", "abc"], "--port 'abc' is not a whole number"),
    (["serve", "--port", "-3"], "--port -3: at least 0"),
    # an empty path is the working directory to pathlib: `--data ''` judged the book's data beside itself, and
    # `--out ''` wrote into the clone; an empty image was the default one, unsaid
    (["compare", "chapter3", "--data", ""], "--data is empty: give a path"),
    (["manifests", "chapter3", "a-300-cv", "--out", " "], "--out is empty: give a path"),
    (["manifests", "chapter3", "a-300-cv", "--image", ""], "--image is empty"),
    (["report", ""], "--server is empty: give a path"),
])
def test_an_unusable_value_is_named_in_one_line(args, said):
    done = subprocess.run([sys.executable, "-m", "invoke", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, "Traceback" in done.stderr) == (2, False), done.stderr
    assert f"error: {said}" in done.stderr


def test_a_start_that_fails_outside_a_run_is_one_line_naming_which(monkeypatch):
    """A run keeps a failed start as its step's reason; `invoke startup` has no step, so it says it (a port taken
    between the check and the start: another server answered)."""
    def second_start_fails(step, backend, workdir, rows, progress=None):
        rows.append({"startup_ms": 900})
        raise StepFailed("another server (pid 1) answers on http://127.0.0.1:8081, not the one started (pid 2)")

    monkeypatch.setattr(bench, "redeploys", second_start_fails)
    monkeypatch.setattr(bench, "check_services", lambda steps, backend: None)
    with pytest.raises(LabError, match=r"^start 2 of 3 failed: another server \(pid 1\) answers"):
        bench.redeploy_times(3)


def test_compare_judges_the_data_directory_run_reads_and_a_run_elsewhere_says_where_it_is(tmp_path, monkeypatch,
                                                                                         capsys):
    """README's flow, `LAB_DATA_DIR=/tmp/mine/data invoke run chapter1`, then the command the run suggests: it named
    no --data, and compare read no LAB_DATA_DIR, so a reader's run was never judged: the book's own data/ was, beside
    itself. The run names the folder now, and compare reads LAB_DATA_DIR as `run` and `list` do."""
    import invoke

    import tasks

    mine = tmp_path / "my data"
    monkeypatch.setenv("LAB_DATA_DIR", str(mine))
    tasks._say_how_to_compare("chapter1")
    command = f"invoke compare chapter1 --data '{mine}'"
    assert capsys.readouterr().out == (f"your outcomes beside the book's: {command}; a clean pass (every step at one "
                                       f"committed commit) is kept as one of the book's with: {command} --keep\n")
    with pytest.raises(invoke.exceptions.Exit) as refused:  # nothing of chapter 1 there yet: said, not data/ judged
        tasks.compare(invoke.Context(), "chapter1")
    assert refused.value.code == 2 and str(refused.value.message).startswith(f"error: no chapter1 in {mine}: ")
    tasks._say_how_to_compare("chapter3@shop", keep=False)  # your jar's run: judged beside the book, never kept
    assert capsys.readouterr().out == f"your outcomes beside the book's: invoke compare chapter3@shop --data '{mine}'\n"
    monkeypatch.delenv("LAB_DATA_DIR")
    tasks._say_how_to_compare("chapter1")
    assert capsys.readouterr().out.startswith("your outcomes beside the book's: invoke compare chapter1; ")


def test_startup_times_read_as_the_book_writes_numbers():
    assert bench.describe([2014.4, 1976, 2057]) == "median 2,014 ms, min 1,976, max 2,057 over 3 starts: 2,014, 1,976, 2,057"


def test_a_terminal_without_unicode_gets_the_list_with_its_marks_replaced():
    env = {"PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([sys.executable, "-m", "invoke", "list"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)
    assert (done.returncode, "Traceback" in done.stderr) == (0, False), done.stderr
    assert "?" in done.stdout and "chapter1" in done.stdout


MARKS_OF_EVERY_TEST = """
import sys, pytest
class Marks:
    def pytest_collection_finish(self, session):
        for item in session.items:
            print(item.nodeid, *sorted({mark.name for mark in item.iter_markers()}))
sys.exit(pytest.main(["--collect-only", "-q"], plugins=[Marks()]))
"""


class Marked(dict):
    """A test's markers as names a marker expression reads (`-m 'e2e and not quiet'`): a marker it lacks is False."""
    def __missing__(self, name):
        return False


def test_every_test_runs_in_exactly_one_phase_of_invoke_test():
    """`invoke test` picks each run's tests by markers (tasks.PHASES, and the jobs beside them): together they hold
    the whole suite, and no test twice (a test in none would never run; in two, beside itself)."""
    import tasks

    picks = [phase.markers for phase in (*tasks.PHASES, *tasks.PYTEST_JOBS.values())]
    out = subprocess.run([sys.executable, "-c", MARKS_OF_EVERY_TEST], cwd=ROOT, capture_output=True, text=True,
                         timeout=300).stdout
    tests = {nodeid: Marked.fromkeys(marks, True) for nodeid, *marks in (line.split() for line in out.splitlines()
                                                                         if "::" in line)}
    assert len(tests) > 1000 and any("e2e" in marks for marks in tests.values())
    picked = {nodeid: [m for m in picks if eval(m, {"__builtins__": {}}, marks)] for nodeid, marks in tests.items()}
    assert {nodeid: runs for nodeid, runs in picked.items() if len(runs) != 1} == {}


def test_the_jobs_run_beside_the_timed_tests_in_an_idle_cgroup_and_else_before_them():
    """The jobs (unit tests, the book, JUnit) take the CPU time the end-to-end phases leave, in a cgroup that gets only
    that, until the phase that reads the whole machine's CPU; where no such cgroup can be made they would take a full
    share beside the tests that time what they measure, so those wait for them. --fast has no job to wait for."""
    import tasks

    def waits_before(phases):
        return [phase.markers for phase in phases if phase.alone]

    timed = "e2e and not alongside and not sole"
    assert tasks.PHASES[1].markers == timed and not tasks.PHASES[1].workers
    assert waits_before(tasks.suite_phases(fast=False, idle=True)) == ["quiet"]
    assert tasks.suite_phases(fast=False, idle=True)[-1].markers == "quiet"
    assert waits_before(tasks.suite_phases(fast=False, idle=False)) == [timed, "quiet"]
    assert [p.markers for p in tasks.suite_phases(fast=False, idle=False)] == [p.markers for p in tasks.PHASES]
    assert set(tasks.PYTEST_JOBS) < set(tasks.JOBS)


class Collected:
    """A collected test as conftest's ordering reads it: its file, and whether it is marked e2e."""
    def __init__(self, path: str, e2e: bool = False):
        self.path, self.e2e = Path(path), e2e

    def get_closest_marker(self, name):
        return name == "e2e" and self.e2e or None


def test_xdist_gets_the_end_to_end_files_first_then_the_others_most_tests_first():
    """xdist hands out a whole file at a time in the order given (invoke test turns its own reordering off): the
    end-to-end files, long waits of few tests, go first and in the order collected; the files left for last are short."""
    import tasks
    from conftest import in_handout_order

    items = [Collected("a.py"), *[Collected("b.py")] * 3, Collected("e2e_x.py", True), Collected("c.py"),
             Collected("e2e_w.py", True), Collected("e2e_w.py", True), *[Collected("d.py")] * 2]
    assert [item.path.name for item in in_handout_order(items)] == \
        ["e2e_x.py", "e2e_w.py", "e2e_w.py", "b.py", "b.py", "b.py", "d.py", "d.py", "a.py", "c.py"]
    assert "--no-loadscope-reorder" in tasks.XDIST  # else xdist sorts the files by size itself


def test_the_junit_run_keeps_tomcats_folders_in_the_tests_own_folder(tmp_path):
    """Spring Boot's Tomcat makes a folder per test context in java.io.tmpdir and leaves it: the JUnit JVM's is a
    folder of `invoke test`'s own, which it removes."""
    import tasks

    command = tasks.junit_command(tmp_path)
    given = [arg.split("-Djava.io.tmpdir=", 1)[1] for arg in command if arg.startswith("-DargLine=")]
    assert given == [str(tmp_path / "junit-tmp")] and (tmp_path / "junit-tmp").is_dir()


def test_the_suites_python_keeps_its_bytecode_in_the_projects_cache_even_where_told_not_to_write_it(monkeypatch):
    """Without a bytecode cache every one of the suite's Python processes compiles the repository's modules again
    (PYTHONDONTWRITEBYTECODE is set on many machines): `invoke test` gives its processes one, outside the sources."""
    import tasks

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = tasks.suite_environment(LAB_RENDER_RESULT="/x/render.json")
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["LAB_RENDER_RESULT"] == "/x/render.json"
    assert env["PYTHONPYCACHEPREFIX"] == str(ROOT / ".cache" / "bytecode") and env["PATH"] == os.environ["PATH"]
    ignored = subprocess.run(["git", "check-ignore", "-q", env["PYTHONPYCACHEPREFIX"]], cwd=ROOT).returncode
    assert ignored == 0  # git ignores it: the sources' tree stays as it was


def test_invoke_test_removes_its_folder_when_it_passes_and_names_it_when_it_fails(tmp_path):
    """`invoke test` keeps its logs (the render's, Maven's, a phase's) in a folder of its own: gone once every phase
    passed, kept and named when one failed."""
    def invoke_test(folder, pytest_args):
        folder.mkdir()
        return subprocess.run([sys.executable, "-m", "invoke", "test", "--fast", "--pytest-args", pytest_args],
                              cwd=ROOT, env=dict(os.environ, TMPDIR=str(folder)), capture_output=True, text=True,
                              timeout=300)

    one_test = "tests/test_tasks.py -k test_startup_times_read_as_the_book_writes_numbers"  # one file: collected at once
    passed = invoke_test(tmp_path / "passed", one_test)
    assert passed.returncode == 0 and list((tmp_path / "passed").glob("lab-test-*")) == []
    failed = invoke_test(tmp_path / "failed", "--no-such-option")
    [kept] = (tmp_path / "failed").glob("lab-test-*")  # (beside pytest's own)
    assert failed.returncode == 1 and f"(the logs: {kept})" in failed.stderr


def test_ctrl_c_stops_invoke_test_at_the_phase_it_interrupts():
    """A Ctrl-C reaches the whole foreground process group: invoke hands it to the phase's pytest and would go on with
    the next phase; the suite stops there instead."""
    suite = subprocess.Popen([sys.executable, "-m", "invoke", "test", "--fast", "--pytest-args", "tests/test_kubernetes.py"],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        seen = ""
        while "test session starts" not in seen and suite.poll() is None:  # the first phase's pytest runs
            seen += suite.stdout.readline()
        os.killpg(suite.pid, signal.SIGINT)
        out, err = suite.communicate(timeout=120)
    finally:
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGKILL)
    assert suite.returncode == 130 and "phase 1 was interrupted" in err, err
    assert "== phase 1" in seen and "== phase 2" not in seen + out


def test_a_ctrl_c_while_the_suite_waits_for_its_jobs_stops_it_with_130_and_kills_them(monkeypatch, tmp_path):
    """Past the phases a Ctrl-C lands in the wait for the jobs: the suite says it stopped (it ended with exit 1 and no
    word) and kills them. The jobs here are `sleep`s, the phases none."""
    import invoke

    import tasks

    jobs = []

    def start(name, *_):
        jobs.append(subprocess.Popen(["sleep", "60"]))
        return jobs[-1]

    def waited(*_):
        raise KeyboardInterrupt

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tasks, "_start_job", start)
    monkeypatch.setattr(tasks, "suite_phases", lambda fast, idle: ())
    monkeypatch.setattr(tasks, "_finish_jobs", waited)
    monkeypatch.setattr("harness.book.quarto.remove_kept_notebooks", lambda: None)  # the book's job may have kept them
    with pytest.raises((invoke.exceptions.Exit, KeyboardInterrupt)) as stopped:  # the latter: so a failure is a report
        tasks.test(invoke.Context())
    assert stopped.type is invoke.exceptions.Exit and stopped.value.code == 130 and "interrupted" in stopped.value.message
    assert [job.wait(timeout=5) for job in jobs] == [-signal.SIGKILL] * len(tasks.JOBS)
