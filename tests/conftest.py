import os
import tempfile
from pathlib import Path
from unittest import mock

import pytest

import background
from chromium import Chromium, find_binary

pytest_plugins = ("lane",)  # the end-to-end tests marked `alongside` run beside the unit tests (tests/lane.py)
# The tests' PostgreSQL clusters live outside the work tree: Quarto lists every folder of the project before it renders,
# and a database a test drops under .tools/ meanwhile failed the suite's render three times in a row (CI, 2026-11-27).
os.environ.setdefault("LAB_PG_CLUSTERS", os.path.join(tempfile.gettempdir(), "concurrency-lab-pg-clusters"))
SAMPLES = Path(__file__).parent / "samples"
LIMITS = {"nofile": 20000, "somaxconn": 4096, "can_raise_somaxconn": True, "cores": 2}
# A copy of a smoke run, frozen for the tests that read real step data: `invoke run smoke` rewrites data/smoke,
# and a test must not change its answer because a user ran the README's commands.
FROZEN_DATA = SAMPLES / "data"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """Steps go to a temporary data root, never into the committed data/."""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def frozen_data():
    """Read steps from the frozen copy (tests/samples/data) instead of data/, inside a `with` block."""
    return mock.patch.dict(os.environ, {"LAB_DATA_DIR": str(FROZEN_DATA)})


def load_frozen(chapter: str):
    from harness.lab.store import load

    with frozen_data():
        return load(chapter)


@pytest.fixture(scope="session")
def smoke_measured(tmp_path_factory):
    """One real run of the smoke experiment per session (test_e2e.py's checks, and the local shape the docker
    backend's data must have in test_e2e_docker.py): its data root and output."""
    from test_e2e import finish, invoke, lab_ready_or_fail  # the end-to-end helpers, only when such a test asks

    lab_ready_or_fail()
    data_dir = tmp_path_factory.mktemp("smoke") / "data"
    code, out = finish(invoke(data_dir, "run", "smoke"))
    assert code == 0, out
    return data_dir, out


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every test that opens a page (the network shut, see tests/chromium.py)."""
    binary = find_binary()
    if not binary:
        pytest.fail("no Chromium on PATH: install Debian's `chromium` package (apt-get install -y chromium)")
    chromium = Chromium(binary)
    yield chromium
    chromium.close()


# ---- the session's order: unit tests, then what waits for a background job, then the end-to-end tests ----------

def alone(item) -> bool:
    """An end-to-end test not marked `alongside`, or one marked quiet (it reads the machine's CPU, or sweeps what
    killed runs left): it needs the machine to itself."""
    return bool((item.get_closest_marker("e2e") and not item.get_closest_marker("alongside"))
                or item.get_closest_marker("quiet"))


def phase(item) -> int:
    """0: unit tests; 1: those that wait for a background job; 2: the `alongside` end-to-end tests (tests/lane.py);
    3: the tests that need the machine to themselves."""
    if alone(item):
        return 3
    if item.get_closest_marker("e2e"):
        return 2
    return 1 if any(name in item.fixturenames for name in background.WAITERS) else 0


@pytest.hookimpl(trylast=True)  # after `-m` and `-k` have deselected: only what runs starts a job
def pytest_collection_modifyitems(config, items):
    items.sort(key=phase)  # stable: each phase keeps the files' order
    if not config.option.collectonly:
        background.start_needed(items)


def pytest_runtest_setup(item):
    """No test that needs the machine to itself starts while a background job still runs (even one whose test failed
    before waiting)."""
    if alone(item):
        for job in background.RUNNING.values():
            job.wait()


def pytest_sessionfinish(session, exitstatus):
    background.stop_all()


@pytest.fixture(scope="session")
def rendered_notebooks():
    """The notebooks of the pages this session's render executed (by `chapters/x.qmd`), {} without a render: what
    test_book.py checks instead of executing those pages again."""
    return background.executed_notebooks()


@pytest.fixture(scope="session")
def junit():
    """The sample server's JUnit tests (`./mvnw -B -q test`, started with the session): exit code, output, seconds."""
    return background.result("junit")
