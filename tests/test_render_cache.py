"""The render cache (harness.book.render_cache): a page's frozen output is kept while everything it read is unchanged,
and dropped, so the page runs again, as soon as anything it read changed or its record is missing or from another run.
The recording runs in a child Python, as in a page's kernel: an audit hook cannot be removed once added."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import ROOT
from harness.book import render_cache
from harness.book.render_cache import FREEZE_WRITE_S, Recorder, _writes, prune, tree_digest

PAGE = ROOT / "chapters" / "index.qmd"  # a real page: its record is named after it, its sources are digested


def step_folder(root: Path) -> Path:
    step = root / "chapter9" / "step-1"
    step.mkdir(parents=True)
    (step / "step.json").write_text('{"status": "complete"}')
    (step / "requests.parquet").write_bytes(b"rows")
    return step


def test_a_data_folder_is_digested_whole_but_not_its_hidden_entries(tmp_path):
    step = step_folder(tmp_path)
    before = tree_digest(tmp_path / "chapter9")
    (tmp_path / "chapter9" / ".run-in-progress").mkdir()
    (tmp_path / "chapter9" / ".lock").write_text("1234")
    assert tree_digest(tmp_path / "chapter9") == before
    (step / "requests.parquet").write_bytes(b"other rows")
    assert tree_digest(tmp_path / "chapter9") != before


def test_reads_are_placed_by_where_they_are(tmp_path):
    recorder = Recorder(PAGE, lambda: {tmp_path}, tmp_path / "records")
    assert recorder.classify(tmp_path / "chapter9" / "step-1" / "step.json", listed=False) == ("tree", tmp_path / "chapter9")
    assert recorder.classify(tmp_path, listed=True) == ("listing", tmp_path)
    assert recorder.classify(ROOT / "README.md", listed=False) == ("file", ROOT / "README.md")
    assert recorder.classify(ROOT / "experiments", listed=True) == ("listing", ROOT / "experiments")
    assert recorder.classify(ROOT / "_book" / "index.html", listed=False) is None  # what the render itself writes
    assert recorder.classify(Path(sys.prefix) / "lib", listed=True) is None  # packages: keyed by their versions


RECORD = """
import os, sys
from pathlib import Path
from harness.book.render_cache import Recorder
data, records = Path(sys.argv[1]), Path(sys.argv[2])
recorder = Recorder(Path(sys.argv[3]), lambda: {data}, records)
sys.addaudithook(recorder.note)
os.listdir(data)
(data / "chapter9" / "step-1" / "step.json").read_text()
(Path(sys.argv[4]) / "README.md").read_text()
recorder.save()

"""


@pytest.fixture
def frozen(tmp_path):
    """A page that ran in a child Python reading a data folder, the README and a data root listing, and its frozen
    output as Quarto keeps it, written just after the page ran. Gives (data folder, records, freezer)."""
    data, records, freezer = tmp_path / "data", tmp_path / "records", tmp_path / "_freeze"
    step_folder(data)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", RECORD, str(data), str(records), str(PAGE), str(ROOT)], env=env,
                   capture_output=True, text=True, check=True)
    output = freezer / "chapters" / "index" / "execute-results" / "html.json"
    output.parent.mkdir(parents=True)
    output.write_text(json.dumps({"result": {"markdown": "| a |"}}))
    return data, records, freezer


def test_the_record_holds_what_the_page_read(frozen):
    data, records, _ = frozen
    inputs = json.loads((records / "chapters" / "index.json").read_text())["inputs"]
    kinds = {path: kind for path, (kind, _) in inputs.items()}
    assert kinds[str(data / "chapter9")] == "tree" and kinds[str(data)] == "listing"
    assert kinds[str(ROOT / "README.md")] == "file"
    assert kinds[str(PAGE)] == kinds[str(ROOT / "_quarto.yml")] == "file"  # the page's own sources
    assert kinds[str(Path(render_cache.__file__))] == "file"  # the repository's modules it loaded


def test_files_a_page_writes_are_not_its_inputs():
    assert [_writes(("a.csv", mode, 0)) for mode in ("w", "wb", "a", "x", "r+", "r", "rb")] == [True] * 5 + [False] * 2
    assert _writes(("a.csv", None, os.O_WRONLY | os.O_CREAT)) and not _writes(("a.csv", None, os.O_RDONLY))


def test_a_page_is_kept_while_nothing_it_read_changed(frozen):
    _, records, freezer = frozen
    assert prune(freezer, records) == {"chapters/index.qmd": None}
    assert (freezer / "chapters" / "index").is_dir()


def test_a_page_runs_again_when_its_data_changed(frozen):
    data, records, freezer = frozen
    (data / "chapter9" / "step-1" / "requests.parquet").write_bytes(b"a re-run's rows")
    assert prune(freezer, records) == {"chapters/index.qmd": f"{data / 'chapter9'} changed"}
    assert not (freezer / "chapters" / "index").exists()


def test_a_page_runs_again_when_a_data_folder_appears(frozen):
    data, records, freezer = frozen
    (data / "chapter10").mkdir()
    assert prune(freezer, records) == {"chapters/index.qmd": f"{data} changed"}


def test_a_page_runs_again_when_the_lab_settings_change(frozen, monkeypatch):
    _, records, freezer = frozen
    monkeypatch.setenv("LAB_DATA_DIR", "/somewhere/else")
    assert prune(freezer, records) == {"chapters/index.qmd": "the lab changed"}


def test_a_page_without_a_record_or_from_another_run_runs_again(frozen):
    _, records, freezer = frozen
    record = records / "chapters" / "index.json"
    kept = record.read_text()
    output = freezer / "chapters" / "index" / "execute-results" / "html.json"
    written = output.stat().st_mtime
    # a run that started after the output was written (it failed before Quarto froze it), and one long before
    for started, saved in ((written + 5, written + 10), (written - 3 * FREEZE_WRITE_S, written - 2 * FREEZE_WRITE_S)):
        record.write_text(json.dumps({**json.loads(kept), "started": started, "saved": saved}))
        assert prune(freezer, records) == {"chapters/index.qmd": "its output comes from another run than its record"}
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text("{}")
        os.utime(output, (written, written))
    record.unlink()
    assert prune(freezer, records) == {"chapters/index.qmd": "no record of what it read"}


def test_the_pre_render_step_runs_as_quarto_runs_it(frozen, tmp_path):
    """Quarto runs `pre-render: harness/book/render_cache.py` as a file, with its Python, from the project folder:
    it must find `harness` without help, and say what runs again."""
    data, records, freezer = frozen
    (data / "chapter9" / "step-1" / "step.json").write_text('{"status": "failed"}')
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "harness/book/render_cache.py", str(freezer), str(records)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"render cache: chapters/index.qmd runs again: {data / 'chapter9'} changed",
                                        "render cache: 0 of 1 frozen page(s) kept (.cache/book-inputs, _freeze)"]


def test_a_listing_leaves_out_what_the_render_itself_leaves_beside_the_pages():
    """While Quarto renders, the pages already done lie beside their .qmd as .html until the end, with their notebooks
    (numbered when one was left) and _files: a page that lists chapters/ (the references, your server) read another
    listing each render and so ran every time. An .html with no page of its name (an include) is the reader's."""
    during = ["a.qmd", "a.html", "a.quarto_ipynb", "a.quarto_ipynb_1", "a_files", "b.qmd", "include.html", ".x"]
    assert render_cache.visible(during) == ["a.qmd", "b.qmd", "include.html"]
    assert render_cache.visible(during) == render_cache.visible(["b.qmd", "include.html", "a.qmd"])


def test_every_page_starts_the_render_caches_record_in_its_first_call(monkeypatch):
    """render.setup() is every page's first call; it starts the record of what the page reads. When importing the book
    stopped setting things up (0825f138), the call went with it, no page was recorded, and every render ran every
    page: this test fails if setup() stops calling it again."""
    from harness.book import render

    calls = []
    monkeypatch.setattr(render_cache, "record", lambda: calls.append("record"))
    render.setup()
    assert calls == ["record"]
    pages = [p for p in (ROOT / "chapters").glob("*.qmd") if "```{python}" in p.read_text()]
    assert len(pages) >= 12
    for page in pages:  # the preface (index.qmd) includes chapters/index.qmd
        first = page.read_text().split("```{python}", 1)[1].split("```", 1)[0]
        assert "setup()" in first, page.name
