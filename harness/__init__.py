"""The lab's Python package: specs, server backends, k6, samplers, step store, model, verdicts."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "experiments"
DATA = ROOT / "data"
TOOLS = ROOT / ".tools"
SERVER_DIR = ROOT / "sample-server"


class LabError(Exception):
    """A problem the user can fix; its message is shown as is, without a traceback."""


def say(message: str) -> None:
    """A progress line, shown at once even when output goes to a pipe or a CI log."""
    print(message, flush=True)
