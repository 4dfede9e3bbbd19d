import os
from unittest import mock

import pytest

from chromium import Chromium, find_binary

SAMPLES = __import__("pathlib").Path(__file__).parent / "samples"
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
def browser():
    """One headless Chromium for every test that opens a page (the network shut, see tests/chromium.py)."""
    binary = find_binary()
    if not binary:
        pytest.fail("no Chromium on PATH: install Debian's `chromium` package (apt-get install -y chromium)")
    chromium = Chromium(binary)
    yield chromium
    chromium.close()
