"""Ctrl-C, SIGTERM and SIGHUP during a run: the first stops the step, none abandons saving what was measured.

The first SIGINT/SIGTERM/SIGHUP raises `Interrupted` (a KeyboardInterrupt that knows which signal it was) where the
run is (the children are stopped and the step is kept as failed, its reason naming the signal: Ctrl-C, a kill, a
closed terminal). Signals that arrive after it, while the harness stops the children and saves, are noted and ignored: the
save finishes. A signal during a save that no interrupt started (`saving()`) waits until the save is done, then
stops the run. SIGKILL still ends everything at once; the next run removes the half-written step it leaves.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager

from harness import say

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
WHAT = {signal.SIGINT: "the user (Ctrl-C)", signal.SIGTERM: "SIGTERM (a kill, or the system stopping)",
        signal.SIGHUP: "SIGHUP (the terminal closed)"}
_state = {"installed": False, "stopping": False, "saving": 0, "pending": 0, "unseen": 0}


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal; `by` says which, as a step's reason puts it."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(WHAT.get(signum, signal.Signals(signum).name))
        self.by = WHAT.get(signum, signal.Signals(signum).name)


def interrupted_by(err: KeyboardInterrupt) -> str:
    """What stopped the run: the signal an Interrupted names; a plain KeyboardInterrupt is Ctrl-C."""
    return getattr(err, "by", WHAT[signal.SIGINT])


def _handler(signum, frame):
    if _state["stopping"] or _state["saving"]:
        _state["pending"] = 0 if _state["stopping"] else signum
        say(f"    {signal.Signals(signum).name}: still stopping the children and saving what was measured; "
            f"wait for it (kill -9 abandons the step)")
        return
    _state.update(stopping=True, unseen=signum)
    raise Interrupted(signum)


def seen() -> None:
    """The run caught the interrupt `_handler` raised (it stops and saves the step)."""
    _state["unseen"] = 0


def check() -> None:
    """Raise again an interrupt that Python dropped. An exception raised by a signal handler is dropped, with only
    "Exception ignored in …" on stderr, when the signal lands in a callback whose errors Python ignores, such as the
    one logging runs in the parent after every fork (the samplers fork `ss` every tick). The loops that wait call
    this, so such a Ctrl-C still stops the run within a fraction of a second."""
    if _state["unseen"] and not _state["saving"]:
        raise Interrupted(_state["unseen"])


@contextmanager
def handled():
    """For a whole run (main thread): SIGINT and SIGTERM as described above."""
    previous = {sig: signal.signal(sig, _handler) for sig in SIGNALS}
    _state.update(installed=True, stopping=False, saving=0, pending=0, unseen=0)
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)
        _state.update(installed=False, stopping=False, saving=0, pending=0, unseen=0)


@contextmanager
def saving():
    """Around stopping the children and writing a step: an interrupt waits until it is done."""
    _state["saving"] += 1
    try:
        yield
    finally:
        _state["saving"] -= 1
    if _state["pending"] and not _state["saving"]:
        signum = _state["pending"]
        _state.update(pending=0, stopping=True)
        raise Interrupted(signum)
