"""Quarto's freeze, keyed on what each page read: a page runs again when, and only when, something it read changed.

Quarto keeps a page's computed output in _freeze/ (`execute: freeze: auto` in _quarto.yml) and reuses it while the
page's .qmd is unchanged; the data and code the page reads are not Quarto's concern. This module adds them:

- While Quarto runs a page, its first cell calls harness.book.render.setup(), which calls `record()`: from then on
  every file the page opens inside the repository is noted with its digest, and every directory it lists with its
  entries, when first used. A chapter's data directory counts whole (pyarrow reads step tables below Python's
  sight): the digests of all its files. After each cell the list is written to .cache/book-inputs/<page>.json, with the repository's Python
  modules the page has loaded, the page's source and includes, _quarto.yml, the Python and package versions, the
  lab's settings the book follows (LAB_DATA_DIR), and when the page started running and when the list was saved.
- Before every render (`project: pre-render` in _quarto.yml runs this file), a page's frozen output is
  kept only when its list exists, belongs to the same run (Quarto wrote the output between the page's start and shortly
  after its last cell: a marker in the output would not do, as a first cell with `include: false` drops it), and
  every digest on it still holds; otherwise the frozen
  output is deleted and Quarto runs the page again. A page that records nothing (it does not import harness.book)
  keeps no frozen output, and a single page rendered on its own (`quarto render chapters/x.qmd`) always runs.

So a page is never older than what it was computed from, while a render with nothing changed runs no page at all.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

if not __package__:  # run as a file by Quarto's pre-render, with the Python it runs Jupyter with: find `harness`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness import CACHE, DATA, ROOT  # noqa: E402

MANIFESTS = CACHE / "book-inputs"
FREEZER = ROOT / "_freeze"
FREEZE_WRITE_S = 120  # at most this long after a page's last cell, Quarto has written its frozen output
SKIPPED = {".cache", "_book", "_freeze", ".quarto", ".git", ".venv", "node_modules", "__pycache__", ".tools"}
WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


# ---- digests ------------------------------------------------------------------------------------------------

def file_digest(path: Path) -> str:
    sha = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return "missing"
    return sha.hexdigest()


def visible(names) -> list[str]:
    """Entries a reader sees: not hidden ones (a run in progress, a lock, moved-aside steps), nor what a render
    itself makes and removes (the book, the cache, a page's notebook and files while it runs, and the HTML of the
    pages already rendered, which Quarto leaves beside their .qmd until the end)."""
    names = list(names)
    pages = {name.removesuffix(".qmd") for name in names if name.endswith(".qmd")}
    return sorted(name for name in names if not (name.startswith(".") or name in SKIPPED or name.endswith("_files")
                                                  or ".quarto_ipynb" in name
                                                  or name.endswith(".html") and name.removesuffix(".html") in pages))


def listing_digest(path: Path) -> str:
    try:
        return hashlib.sha256("\n".join(visible(os.listdir(path))).encode()).hexdigest()
    except (FileNotFoundError, NotADirectoryError):
        return "missing"


def tree_digest(path: Path) -> str:
    """Every visible file below `path`, by relative path and content."""
    if not path.is_dir():
        return "missing"
    sha = hashlib.sha256()
    for folder, dirs, files in os.walk(path):
        dirs[:] = visible(dirs)
        for name in visible(files):
            file = Path(folder, name)
            sha.update(f"{file.relative_to(path)}\0{file_digest(file)}\n".encode())
    return sha.hexdigest()


DIGESTS = {"file": file_digest, "listing": listing_digest, "tree": tree_digest}


# The lab's settings the read side follows (the others, LAB_PG_CLUSTERS and the like, steer runs, not the book).
READ_SETTINGS = ("LAB_DATA_DIR",)


def environment() -> dict:
    """What shapes a page's output besides the files it reads: the Python, its packages, the lab's settings."""
    packages = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    return {"python": sys.version, "packages": hashlib.sha256("\n".join(packages).encode()).hexdigest(),
            "lab": {key: os.environ[key] for key in READ_SETTINGS if key in os.environ}}


def page_sources(document: Path) -> list[Path]:
    """The page, the files it includes (`{{< include … >}}`, at any depth) and the project's _quarto.yml."""
    from harness.book.sources import included_files  # here: the pre-render step must not import harness.book

    return [*included_files(document, ROOT), ROOT / "_quarto.yml"]


# ---- recording, inside the kernel Quarto runs a page in --------------------------------------------------------

class Recorder:
    """Notes what one page reads (see the module's docstring) and keeps its list in `manifest`."""

    def __init__(self, document: Path, data_roots, manifests: Path = MANIFESTS):
        self.document, self.data_roots = document, data_roots
        self.started = time.time()
        self.inputs: dict[str, list[str]] = {}  # path → [kind, digest]
        self.busy = False  # set while digesting: the recorder's own reads are not the page's
        self.manifest = manifests / document.relative_to(ROOT).with_suffix(".json")

    def note(self, event: str, args: tuple) -> None:
        """An audit hook (sys.addaudithook): must never raise, or the page's own open() would fail."""
        if self.busy or event not in ("open", "os.listdir", "os.scandir") or not args:
            return
        try:
            path = args[0]
            if isinstance(path, int) or (event == "open" and _writes(args)) or _importing():
                return
            where = self.classify(Path(os.fsdecode(path if path is not None else ".")), listed=event != "open")
            if where:
                self.add(*where)
        except Exception:  # noqa: BLE001 - a path the recorder cannot place is not an input it can key on
            return

    def classify(self, path: Path, listed: bool) -> tuple[str, Path] | None:
        path = Path(os.path.abspath(path))
        for root in self.data_roots():
            if path == root:
                return "listing", root
            if path.is_relative_to(root):
                return "tree", root / path.relative_to(root).parts[0]
        if not path.is_relative_to(ROOT) or SKIPPED & set(path.relative_to(ROOT).parts):
            return None
        return ("listing" if listed else "file"), path

    def add(self, kind: str, path: Path) -> None:
        key = str(path)
        if key in self.inputs:
            return
        self.busy = True
        try:
            self.inputs[key] = [kind, DIGESTS[kind](path)]
        finally:
            self.busy = False

    def save(self, *_) -> None:
        """After each cell: the list so far, with the modules loaded and the page's sources."""
        modules = [Path(m.__file__) for m in list(sys.modules.values()) if getattr(m, "__file__", None)]
        for path in [*modules, *page_sources(self.document)]:
            if path.is_relative_to(ROOT) and not SKIPPED & set(path.relative_to(ROOT).parts):
                self.add("file", path)
        self.busy = True  # the environment's package scan lists folders too
        try:
            record = {"document": str(self.document.relative_to(ROOT)), "started": self.started,
                      "saved": time.time(),
                      "environment": environment(), "inputs": self.inputs}
            self.manifest.parent.mkdir(parents=True, exist_ok=True)
            partial = self.manifest.with_suffix(".partial")
            partial.write_text(json.dumps(record, indent=1))
            partial.replace(self.manifest)
        finally:
            self.busy = False


def _importing() -> bool:
    """Python's import system lists the folders it imports from, opens compiled modules and looks up packages'
    metadata: not the page's reads (the modules it loaded are keyed by their sources, the packages by their
    versions)."""
    frame = sys._getframe(2)
    for _ in range(12):
        if frame is None:
            return False
        name = frame.f_code.co_filename
        if name.startswith("<frozen importlib") or f"importlib{os.sep}metadata" in name:
            return True
        frame = frame.f_back
    return False


def _writes(args: tuple) -> bool:
    mode, flags = (args + (None, 0))[1:3]
    return any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & WRITES)


def quarto_document() -> Path | None:
    """The page Quarto is running, from the environment it gives the kernel; None outside a render."""
    folder, name = os.environ.get("QUARTO_DOCUMENT_PATH"), os.environ.get("QUARTO_DOCUMENT_FILE")
    if not (folder and name):
        return None
    return Path(folder, name).resolve()


_recording = False


def record() -> None:
    """Start noting what the page being rendered reads (render.setup(), every page's first call, calls this); outside
    a Quarto render, or outside IPython, nothing happens."""
    document = quarto_document()
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if document is None or not document.is_relative_to(ROOT) or shell is None:
        return
    from harness.lab.store import data_root

    global _recording
    if _recording:  # once per kernel: a second audit hook would note every file twice
        return
    recorder = Recorder(document, lambda: {Path(os.path.abspath(data_root())), DATA})
    sys.addaudithook(recorder.note)
    shell.events.register("post_run_cell", recorder.save)
    _recording = True


# ---- before a render: drop frozen pages whose inputs changed ------------------------------------------------

def stale_reason(document: str, frozen: Path, now: dict, manifests: Path = MANIFESTS) -> str | None:
    """Why the frozen output of `document` (a path relative to the project) cannot be used, or None."""
    manifest = manifests / Path(document).with_suffix(".json")
    if not manifest.is_file():
        return "no record of what it read"
    try:
        recorded = json.loads(manifest.read_text())
    except (OSError, json.JSONDecodeError):
        return "its record of what it read is unreadable"
    # Quarto writes a page's frozen output as soon as its cells ran: within the run the record describes.
    written = frozen.stat().st_mtime
    if not recorded.get("started", math.inf) - 1 <= written <= recorded.get("saved", -math.inf) + FREEZE_WRITE_S:
        return "its output comes from another run than its record"
    changed = [key for key in ("python", "packages", "lab") if recorded["environment"].get(key) != now[key]]
    if changed:
        return f"the {' and '.join(changed)} changed"
    for path, (kind, digest) in recorded["inputs"].items():
        if DIGESTS[kind](Path(path)) != digest:
            return f"{_shown(Path(path))} changed"
    return None


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def prune(freezer: Path = FREEZER, manifests: Path = MANIFESTS) -> dict[str, str | None]:
    """Every frozen page: None when it is kept, else why it runs again (its frozen output is deleted)."""
    verdicts, now = {}, environment()
    for frozen in sorted(freezer.glob("**/execute-results/html.json")):
        page = frozen.parent.parent
        document = str(page.relative_to(freezer)) + ".qmd"
        verdicts[document] = reason = stale_reason(document, frozen, now, manifests)
        if reason:
            shutil.rmtree(page)
    return verdicts


def main(argv: list[str]) -> None:
    """The pre-render step: one line per page that runs again, and a count of those kept. Arguments (for tests): the
    freezer and the records' folder, instead of _freeze/ and .cache/book-inputs/."""
    verdicts = prune(*(Path(arg) for arg in argv[:2]))
    for document, reason in verdicts.items():
        if reason:
            print(f"render cache: {document} runs again: {reason}")
    kept = sum(reason is None for reason in verdicts.values())
    print(f"render cache: {kept} of {len(verdicts)} frozen page(s) kept (.cache/book-inputs, _freeze)")


if __name__ == "__main__":
    main(sys.argv[1:])
