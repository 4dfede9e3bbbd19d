"""The lab's Python package: specs, server backends, k6, samplers, step store, model, verdicts."""
import errno
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "experiments"
DATA = ROOT / "data"
TOOLS = ROOT / ".tools"
CACHE = ROOT / ".cache"  # what the book and the suite compute again when it is gone (git ignores it)
SERVER_DIR = ROOT / "sample-server"


class LabError(Exception):
    """A problem the user can fix; its message is shown as is, without a traceback."""


class OutputLost(LabError):
    """Standard output could not be written (a full disk, a device error): what it was to show is lost."""


def say(message: str) -> None:
    """A progress line, shown at once even when output goes to a pipe or a CI log. When the reader has gone
    (`invoke run smoke | head -1`) or the disk under a redirected stdout is full, the work goes on without them: a
    step is never aborted for its progress lines."""
    if sys.stdout is None:  # started with stdout closed
        return
    try:
        print(message, flush=True)
    except BrokenPipeError:
        silence_stdout()
    except (OSError, OutputLost) as lost:  # said once, on stderr, unless that is lost too (`> run.log 2>&1`)
        silence_stdout()
        why = lost if isinstance(lost, OutputLost) else lost_output(lost)  # a stdout that is not GuardedOutput
        try:
            print(f"note: {why}; going on without the progress lines", file=sys.stderr, flush=True)
        except OSError:
            silence_stdout(sys.stderr)  # nor may Python's flush at exit fail on it (exit 120, whatever the run did)


def silence_stdout(stream=None) -> None:
    """Send the rest of stdout (or `stream`) to /dev/null once its reader has gone, so no later line (nor Python's
    flush at exit) fails on the broken pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, (stream or sys.stdout).fileno())
    finally:
        os.close(devnull)


def lost_output(err: OSError) -> OutputLost:
    return OutputLost(f"standard output could not be written ({err.strerror or err})")


class ClosedOutput(io.TextIOBase):
    """sys.stdout for a process started with its standard output closed (`>&-`), where Python has none: its first
    write fails as one to a closed descriptor does, so a command whose output is its result ends in one line (exit 2)
    and a run goes on without its progress lines (the later ones dropped, as once a full disk's is silenced).
    Descriptor 1 gets /dev/null: a file the run opens later must not take it (a child would write into that file)."""

    def __init__(self):
        super().__init__()
        self.failed = False
        devnull = os.open(os.devnull, os.O_WRONLY)
        if devnull != 1:
            os.dup2(devnull, 1)
            os.close(devnull)

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not self.failed:
            self.failed = True
            raise OSError(errno.EBADF, "it was closed when the command started")
        return len(text)

    def fileno(self) -> int:
        return 1


class GuardedOutput:
    """sys.stdout whose failed write names the stream that failed: an OSError from print() is otherwise
    indistinguishable from one of a data file. A reader that has gone (a broken pipe) stays a BrokenPipeError; any
    other failure sends the rest of the output to /dev/null and is an OutputLost, one line for the user. Output held
    in the buffer until Python's flush at exit would fail where no handler sees it: invoke's tasks flush before they
    end (tasks.py), and the stream is line-buffered."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._guarded(self._stream.write, text)

    def writelines(self, lines) -> None:
        return self._guarded(self._stream.writelines, lines)

    def flush(self) -> None:
        return self._guarded(self._stream.flush)

    def _guarded(self, operation, *args):
        try:
            return operation(*args)
        except BrokenPipeError:
            raise
        except OSError as err:
            silence_stdout()
            raise lost_output(err) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)
