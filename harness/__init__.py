"""The lab's Python package: specs, server backends, k6, samplers, step store, model, verdicts."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "experiments"
DATA = ROOT / "data"
TOOLS = ROOT / ".tools"
SERVER_DIR = ROOT / "sample-server"


class LabError(Exception):
    """A problem the user can fix; its message is shown as is, without a traceback."""


def say(message: str) -> None:
    """A progress line, shown at once even when output goes to a pipe or a CI log. When the reader has gone
    (`invoke run smoke | head -1`), the run goes on silently: a step is never aborted for its progress lines."""
    if sys.stdout is None:  # started with stdout closed
        return
    try:
        print(message, flush=True)
    except BrokenPipeError:
        silence_stdout()


def silence_stdout() -> None:
    """Send the rest of stdout to /dev/null once its reader has gone, so no later line (nor Python's flush at exit)
    fails on the broken pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
