import os
import tempfile
from collections import Counter
from pathlib import Path
from unittest import mock

import pytest

import rendered
from harness import ROOT
from harness.book.quarto import remove_kept_notebooks
from browser import Chromium, find_binary

# The tests' PostgreSQL clusters live outside the work tree: Quarto lists every folder of the project before it renders,
# and a database a test drops under .tools/ meanwhile failed the suite's render three times in a row (CI, 2026-11-27).
os.environ.setdefault("LAB_PG_CLUSTERS", os.path.join(tempfile.gettempdir(), "concurrency-lab-pg-clusters"))
SAMPLES = Path(__file__).parent / "samples"
LIMITS = {"nofile": 20000, "somaxconn": 4096, "can_raise_somaxconn": True, "cores": 2}
# A copy of a smoke run, frozen for the tests that read real step data: `invoke run smoke` rewrites data/smoke,
# and a test must not change its answer because a user ran the README's commands.
FROZEN_DATA = SAMPLES / "data"
CHAPTER4_SCALED = ROOT / "tests" / "profiles" / "chapter4-scaled.toml"


@pytest.fixture
def fixed_noise(monkeypatch):
    """The book's stray-failure rate pinned at 1 in 400,001 requests, for tests that judge made-up runs: the real
    rate comes from the committed data of chapters 2, 3 and 7 (harness.book.noise), and moves with every pass."""
    from harness.book import noise

    monkeypatch.setattr(noise, "stray_failures", lambda: (0, 400_000))


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
def chapter4_measured(tmp_path_factory) -> Path:
    """One run of chapter 4 scaled per session, its data root: read by its plateau's checks (test_e2e_chapter4.py) and
    by those of CPU placement (test_e2e_placement.py), as its steps pin k6 and the server to a CPU each and give the
    server a quota. One run, not two: about 25 s less of the suite's timed phase, where no other test runs."""
    from test_e2e import run_profile

    return run_profile(tmp_path_factory, CHAPTER4_SCALED)


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every test that opens a page (the network shut, see tests/browser.py)."""
    binary = find_binary()
    if not binary:
        pytest.fail("no Chromium on PATH: install Debian's `chromium` package (apt-get install -y chromium)")
    chromium = Chromium(binary)
    yield chromium
    chromium.close()


@pytest.fixture(scope="session")
def book() -> Path:
    """The _book folder of this run's render (`quarto render`, once for the run: tests/rendered.py)."""
    code, output, seconds, _ = rendered.needed()
    print(f"quarto render: {seconds:.0f} s")
    if code:
        pytest.fail(f"quarto render failed ({code}):\n{output[-4000:]}")
    return ROOT / "_book"


@pytest.fixture(scope="session")
def rendered_notebooks():
    """The notebooks of the pages this run's render executed (by `chapters/x.qmd`), {} when it failed: what
    test_book.py checks instead of executing those pages again (tests/rendered.py)."""
    return rendered.executed_notebooks()


# ---- which tests run when: `invoke test` runs the suite in phases, selected by marker --------------------------------

RENDER_FIXTURES = ("book", "rendered_notebooks")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    """A test that reads the render is marked `rendered`, before -m deselects (`-m rendered` must see the marks):
    `invoke test` runs those once the render is done. Once the tests are selected, their files are put in the order
    pytest-xdist hands them out (invoke test's --no-loadscope-reorder)."""
    for item in items:
        if set(RENDER_FIXTURES) & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.rendered)
    yield
    items[:] = in_handout_order(items)


def in_handout_order(items: list) -> list:
    """The end-to-end test files first, in the order collected, then the others, most tests first. xdist hands out a
    whole file at a time, first come first served; in its own order (most tests first) the end-to-end files came last,
    a few tests and a minute or more of waiting each, and one worker sat idle while the other finished them."""
    tests_in = Counter(item.path for item in items)
    e2e = {item.path for item in items if item.get_closest_marker("e2e")}
    return sorted(items, key=lambda item: (0, 0) if item.path in e2e else (1, -tests_in[item.path]))  # stable: files stay whole


def pytest_sessionfinish(session, exitstatus):
    """A render this run made itself (no `invoke test` around it) leaves no notebooks in the work tree."""
    if not hasattr(session.config, "workerinput") and not os.environ.get(rendered.RESULT_ENV):
        remove_kept_notebooks()
