"""Ctrl-C and SIGTERM during a run: the first stops the step, none abandons saving what was measured.

The first SIGINT/SIGTERM raises KeyboardInterrupt where the run is (the children are stopped and the step is kept as
failed). Signals that arrive after it, while the harness stops the children and saves, are noted and ignored: the
save finishes. A signal during a save that no interrupt started (`saving()`) waits until the save is done, then
stops the run. SIGKILL still ends everything at once; the next run removes the half-written step it leaves.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager

from harness import say

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_state = {"installed": False, "stopping": False, "saving": 0, "pending": False}


def _handler(signum, frame):
    if _state["stopping"] or _state["saving"]:
        _state["pending"] = not _state["stopping"]
        say(f"    {signal.Signals(signum).name}: still stopping the children and saving what was measured; "
            f"wait for it (kill -9 abandons the step)")
        return
    _state["stopping"] = True
    raise KeyboardInterrupt


@contextmanager
def handled():
    """For a whole run (main thread): SIGINT and SIGTERM as described above."""
    previous = {sig: signal.signal(sig, _handler) for sig in SIGNALS}
    _state.update(installed=True, stopping=False, saving=0, pending=False)
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)
        _state.update(installed=False, stopping=False, saving=0, pending=False)


@contextmanager
def saving():
    """Around stopping the children and writing a step: an interrupt waits until it is done."""
    _state["saving"] += 1
    try:
        yield
    finally:
        _state["saving"] -= 1
    if _state["pending"] and not _state["saving"]:
        _state.update(pending=False, stopping=True)
        raise KeyboardInterrupt
