import pytest

SAMPLES = __import__("pathlib").Path(__file__).parent / "samples"
LIMITS = {"nofile": 20000, "somaxconn": 4096, "can_raise_somaxconn": True, "cores": 2}


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """Steps go to a temporary data root, never into the committed data/."""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"
