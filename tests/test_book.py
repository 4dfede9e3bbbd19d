"""The book builds from the committed data: every chapter runs in a real Jupyter kernel (the one this session's
`quarto render` ran it in, or one of our own for a page the render did not run), every chart is valid Vega-Lite and
draws in headless Chromium with the network shut. The site Quarto renders is checked in test_site.py."""
from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import altair as alt
import jsonschema
import nbformat
import pytest
import yaml
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from harness import ROOT
from harness.lab import store
from harness.book.downloads import folder_link
from harness.book.provenance import reproduce_box
from harness.book.bench_render import PAGE
from harness.book.quarto import COLOUR
from harness.book.render import VEGA_SCRIPTS
from harness.book.verdict import verdict_table
from harness.book.provenance import COMMAND_WIDTH, commit_text, duration_text

# Helpers beside this file (pytest puts tests/ on sys.path).
import rendered  # noqa: E402,I001
import qmd  # noqa: E402,I001
from conftest import frozen_data  # noqa: E402
from book_pages import QUARTO_YML, book_chapters  # noqa: E402
from harness.book.verdict import DIFFERS, NOT_REPRODUCED, REPRODUCED, Verdict, verdict_of, within, within_abs

SPEC_SCRIPT = re.compile(r'<script type="application/json" id="(lab-chart-[0-9a-f]+)-spec">(.*?)</script>', re.S)
MAX_ROWS = 5000  # rows a chart may embed: builders aggregate first


CHAPTERS = book_chapters()


@dataclass
class Executed:
    chapter: str
    notebook: nbformat.NotebookNode | None = None
    error: str = ""
    charts: list[tuple[str, str]] = field(default_factory=list)  # (html, spec JSON) per chart, in order

    def require(self) -> None:
        if self.error:
            pytest.fail(f"{self.chapter} did not execute:\n{self.error}")


def execute(chapter: str) -> Executed:
    """Run a chapter's cells in order in a python3 kernel at the repository root, on the committed data."""
    run = Executed(chapter)
    notebook = qmd.notebook(ROOT / chapter, ROOT)
    saved = os.environ.pop("LAB_DATA_DIR", None)  # the book renders from data/, whatever the shell says
    try:
        NotebookClient(notebook, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(ROOT)}}).execute()
    except CellExecutionError as err:
        run.error = str(err)
    finally:
        if saved is not None:
            os.environ["LAB_DATA_DIR"] = saved
    return with_charts(run, notebook)


def with_charts(run: Executed, notebook: nbformat.NotebookNode) -> Executed:
    run.notebook = notebook
    run.charts = [(html, spec) for html in raw_html_outputs(notebook) for _, spec in SPEC_SCRIPT.findall(html)]
    return run


@pytest.fixture(scope="session")
def executed_chapter(rendered_notebooks):
    """A chapter's cells run in order on the committed data, once per session: as this session's `quarto render` ran
    them (the notebook it kept, tests/rendered.py), or in a kernel of our own where it ran none (no Quarto, a
    page it kept frozen). Quarto stops at a cell's error, so a chapter that fails never comes from the render."""
    done: dict[str, Executed] = {}

    def run(chapter: str) -> Executed:
        if chapter not in done:
            rendered = rendered_notebooks.get(chapter)
            done[chapter] = with_charts(Executed(chapter), rendered) if rendered else execute(chapter)
        return done[chapter]
    return run


def pages_quarto_ran(output: str) -> list[str]:
    """The pages whose cells a `quarto render` ran, from its progress lines (a frozen page shows no "Executing")."""
    ran, page = [], None
    for line in (COLOUR.sub("", raw) for raw in output.splitlines()):
        if match := PAGE.match(line):
            page = match.group(1)
        elif page and line.startswith("Executing ") and page not in ran:
            ran.append(page)
    return ran


def test_the_render_keeps_the_notebook_of_every_page_it_ran(rendered_notebooks):
    """Each page the session's render ran is checked from the notebook it kept, not executed a second time."""
    code, output, _, _ = rendered.needed()
    assert code == 0, output[-4000:]
    ran = pages_quarto_ran(output)
    assert set(ran) <= set(CHAPTERS), ran  # the progress lines were read as pages
    missing = sorted(set(ran) - set(rendered_notebooks))
    assert not missing, f"the render ran {missing} but kept no executed notebook for them"


def outputs(notebook: nbformat.NotebookNode):
    for cell in notebook.cells:
        yield from cell.get("outputs", [])


RAW_HTML = re.compile(r"^```\{=html\}\n(.*?)\n```$", re.S | re.M)


def raw_html_outputs(notebook: nbformat.NotebookNode) -> list[str]:
    """The raw HTML blocks in the cells' Markdown outputs (where the charts are)."""
    return [html for o in outputs(notebook) for html in RAW_HTML.findall(o.get("data", {}).get("text/markdown", ""))]


@pytest.fixture(scope="module", params=CHAPTERS)
def executed(request, executed_chapter) -> Executed:
    return executed_chapter(request.param)


def site_page(root: Path, name: str, body: str, offset: str | None = None) -> Path:
    """A page as a chapter sits in the book: chapters/<name>.html below a root that has node_modules."""
    page = root / "chapters" / f"{name}.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    meta = f'<meta name="quarto:offset" content="{offset}">' if offset is not None else ""
    page.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8">{meta}</head><body>{body}</body></html>')
    return page


def with_libraries(root: Path) -> Path:
    (root / "node_modules").symlink_to(ROOT / "node_modules")
    return root


# ---- (1) every chapter executes --------------------------------------------------------------------

def test_chapter_executes(executed):
    executed.require()
    assert executed.notebook.cells, f"{executed.chapter} has no python cell (not even the one that calls render.setup())"


def test_chapter_sets_up_the_renderer_in_its_first_cell(executed):
    """Importing the book sets nothing up: a page's first cell calls render.setup() (the chart theme and the offline
    renderer) before any chart is drawn."""
    first = executed.notebook.cells[0].source
    assert "from harness.book.render import setup" in first and "\nsetup()" in first, \
        f"{executed.chapter}: the first cell must call harness.book.render.setup()"


# ---- (2) every chart is valid Vega-Lite, small, and offline ---------------------------------------------

@functools.cache
def vega_lite_validator() -> jsonschema.protocols.Validator:
    schema = alt.vegalite.v6.schema.core.load_schema()
    return jsonschema.validators.validator_for(schema)(schema)


def test_charts_are_valid_vega_lite(executed):
    executed.require()
    for _, text in executed.charts:
        spec = json.loads(text)
        assert spec["$schema"] == alt.SCHEMA_URL
        errors = sorted(vega_lite_validator().iter_errors(spec), key=lambda e: list(e.path))
        assert not errors, f"{executed.chapter}: {errors[0].message} at {list(errors[0].path)}"
        rows = {name: len(values) for name, values in spec.get("datasets", {}).items()}
        assert all(n <= MAX_ROWS for n in rows.values()), f"{executed.chapter}: a chart embeds {rows} rows"


def axis_formats(node) -> list[str]:
    """The d3 formats of every axis in a Vega-Lite spec (its data left out)."""
    if isinstance(node, list):
        return [f for item in node for f in axis_formats(item)]
    if not isinstance(node, dict):
        return []
    found = [node["axis"]["format"]] if isinstance(node.get("axis"), dict) and "format" in node["axis"] else []
    return found + [f for key, value in node.items() if key not in ("data", "datasets") for f in axis_formats(value)]


def test_every_axis_format_names_its_type(executed):
    """An axis format without a type ("," or ",.2") lets Vega round each tick to significant digits: "4e+3"."""
    executed.require()
    for _, text in executed.charts:
        untyped = [f for f in axis_formats(json.loads(text)) if not re.search(r"[a-z%]$", f)]
        assert not untyped, f"{executed.chapter}: axis formats without a type {untyped}: use chart_style.THOUSANDS_AXIS"


def test_no_chart_bypasses_the_offline_renderer(executed):
    """A chart shown with another renderer would load its libraries from a CDN (or not draw in HTML at all)."""
    executed.require()
    for output in outputs(executed.notebook):
        data = output.get("data", {})
        assert not any("vegalite" in mime or "vega." in mime for mime in data), f"{executed.chapter}: {list(data)}"
        assert "cdn.jsdelivr.net" not in data.get("text/markdown", ""), f"{executed.chapter}: a chart loads from a CDN"


def test_no_cell_output_is_html(executed):
    """Quarto adds require.js and jQuery from a CDN to a page with any HTML or JavaScript cell output (a DataFrame, a
    Styler, Altair's own renderer): offline they fail to load. Tables and charts are Markdown instead."""
    executed.require()
    for cell in executed.notebook.cells:
        for output in cell.get("outputs", []):
            html = [m for m in output.get("data", {}) if m in ("text/html", "application/javascript")]
            assert not html, f"{executed.chapter}: the cell `{cell.source.strip()[:80]}` outputs {html}"


# ---- (3) every chart draws in headless Chromium, offline, without console errors ------------------------

def test_charts_draw_offline(executed, browser, tmp_path):
    executed.require()
    if not executed.charts:
        return  # nothing to draw (a chapter without charts passes by having none)
    page = site_page(with_libraries(tmp_path), Path(executed.chapter).stem, "".join(h for h, _ in executed.charts))
    report = browser.check(page.as_uri())
    assert report.ok, report.summary()
    assert len(report.charts) == len(executed.charts), report.summary()
    assert all(c["marks"] > 0 for c in report.charts), f"a chart drew no data mark:\n{report.summary()}"


@pytest.fixture
def smoke_chart_html(executed_chapter) -> str:
    return executed_chapter("chapters/a1-the-lab.qmd").charts[0][0]


def test_chart_finds_libraries_from_quartos_offset_tag(browser, tmp_path, smoke_chart_html):
    """In the rendered book the site root comes from <meta name="quarto:offset">; here the page sits at the root."""
    page = tmp_path / "index.html"
    site_page(with_libraries(tmp_path), "unused", "")
    page.write_text(f'<!DOCTYPE html><html><head><meta name="quarto:offset" content="./"></head>'
                    f"<body>{smoke_chart_html}</body></html>")
    report = browser.check(page.as_uri())
    assert report.ok, report.summary()


def test_check_fails_when_the_chart_libraries_are_missing(browser, tmp_path, smoke_chart_html):
    """The same chart on a site without node_modules: the check must see it fail."""
    report = browser.check(site_page(tmp_path, "no-libraries", smoke_chart_html).as_uri())
    assert not report.ok
    assert not report.charts[0]["drawn"]
    assert any("vega.min.js" in e for e in report.errors), report.summary()


def test_check_fails_for_altairs_cdn_chart(browser, tmp_path):
    """Altair's stock HTML loads vega from a CDN: with the network shut it must not pass."""
    chart = alt.Chart(alt.Data(values=[{"x": 1, "y": 2}])).mark_point().encode(x="x:Q", y="y:Q")
    page = tmp_path / "cdn.html"
    page.write_text(chart.to_html())
    report = browser.check(page.as_uri(), selector="#vis")
    assert not report.ok
    assert report.errors, report.summary()


# ---- the book's configuration ------------------------------------------------------------------------

def test_every_chapter_in_quarto_yml_exists():
    assert CHAPTERS[0] == "index.qmd", "Quarto needs the home page, index.qmd, first and at the root"
    missing = [c for c in CHAPTERS if not (ROOT / c).is_file()]
    assert not missing, f"_quarto.yml lists chapters that do not exist: {missing}"


def test_quarto_copies_the_chart_libraries_the_renderer_loads():
    resources = yaml.safe_load(QUARTO_YML.read_text())["project"]["resources"]
    assert sorted(r.lstrip("/") for r in resources) == sorted(VEGA_SCRIPTS)
    missing = [s for s in VEGA_SCRIPTS if not (ROOT / s).is_file()]
    assert not missing, f"{missing} missing: run `npm ci`"


def test_npm_pins_the_versions_altair_expects():
    """vega-lite exactly Altair's schema version; vega and vega-embed on the major versions Altair loads."""
    pinned = json.loads((ROOT / "package.json").read_text())["dependencies"]
    assert pinned["vega-lite"] == alt.VEGALITE_VERSION
    assert pinned["vega"].split(".")[0] == alt.VEGA_VERSION
    assert pinned["vega-embed"].split(".")[0] == alt.VEGAEMBED_VERSION
    locked = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    assert {name: locked[f"node_modules/{name}"]["version"] for name in pinned} == pinned


def test_preface_quotes_readmes_commands_in_lines_a_phone_shows_whole(executed_chapter):
    """The same commands as README's (a long line broken before its `&&`s, as the shell reads it), no line longer
    than a phone's column holds."""
    readme = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    shown = [o["data"].get("text/markdown", "") for o in outputs(executed_chapter("index.qmd").notebook) if "data" in o]
    blocks = [re.search(r"```bash\n(.*?)```", text, re.S).group(1) for text in shown if "```bash" in text]
    assert len(blocks) == 1, shown
    assert blocks[0].replace(" \\\n  && ", " && ") == readme
    long = [line for line in blocks[0].splitlines() if len(line) > COMMAND_WIDTH and " && " in line]
    assert not long, long


def test_the_lab_appendix_documents_every_column():
    text = (ROOT / "chapters" / "a1-the-lab.qmd").read_text()
    undocumented = [c for columns in store.COLUMNS.values() for c in columns if f"`{c}`" not in text]
    assert not undocumented, f"chapters/a1-the-lab.qmd does not describe columns {undocumented}"


# ---- book helpers ---------------------------------------------------------------------------------------

def test_qmd_cells_are_found_in_order_and_includes_expanded(tmp_path):
    (tmp_path / "part.qmd").write_text("text\n```{python}\n#| echo: false\nb = 2\n```\n")
    (tmp_path / "main.qmd").write_text("```{python}\na = 1\n```\n{{< include part.qmd >}}\n```bash\nnot run\n```\n")
    cells = [c.source for c in qmd.notebook(tmp_path / "main.qmd", tmp_path).cells]
    assert cells == ["a = 1", "#| echo: false\nb = 2"]


def test_an_unclosed_cell_is_an_error():
    with pytest.raises(ValueError, match="line 2"):
        qmd.python_cells("text\n```{python}\nx = 1\n")


def test_verdict_accepts_only_the_three_verdicts_and_finding_ids():
    Verdict("F000-a", "says", "measured", REPRODUCED)
    with pytest.raises(ValueError, match="verdict"):
        Verdict("F000-a", "says", "measured", "mostly")
    with pytest.raises(ValueError, match="finding"):
        Verdict("F0-a", "says", "measured", REPRODUCED)


def test_tolerance_helpers():
    assert within(105, 100, 0.05) and not within(106, 100, 0.05)
    assert within(0, 0, 0.1) and not within(1, 0, 0.1)
    assert within_abs(5.2, 5.0, 0.25) and not within_abs(5.3, 5.0, 0.25)
    assert (verdict_of(True), verdict_of(False), verdict_of(False, machine_bound=True)) == (REPRODUCED, NOT_REPRODUCED, DIFFERS)


def test_verdict_table_shows_the_reasons_first_clause_and_folds_the_evidence():
    verdict = Verdict("F000-a", "a | b", "2\nlines of evidence", REPRODUCED, "first clause; the rest of the reason")
    text = verdict_table([verdict]).data
    table, evidence = text.split("<details>")
    assert "| F000-a | a \\| b | **reproduced**: first clause |" in table
    assert "evidence" not in table and "the rest" not in table
    assert "2\nlines of evidence" in evidence and "first clause; the rest of the reason" in evidence
    assert evidence.rstrip().endswith("</details>")


def test_reproduce_box_without_data_still_gives_the_command(data_dir):
    box = reproduce_box("nothing-yet").data
    assert "invoke run nothing-yet" in box and "No complete steps" in box and box.endswith(":::")


def test_reproduce_box_reports_machine_software_run_and_data_in_five_lines():
    with frozen_data():
        box = reproduce_box("smoke").data
        steps = store.complete_steps("smoke")
    meta = steps["waves"]
    head, details = box.split("<details>")
    lines = [line for line in head.splitlines() if line.startswith("**")]
    assert [line.split(":")[0] for line in lines] == ["**Re-run it", "**Measured on", "**Software", "**This edition's run",
                                                      "**Data"]
    assert f"{meta['machine']['cores']} cores" in lines[1]
    assert meta["versions"]["java"] in lines[2] and meta["versions"]["k6"] in lines[2]
    assert duration_text(sum(m["wall_s"] for m in steps.values())) in lines[3] and "2 steps on " in lines[3]
    assert lines[4] == f"**Data:** {folder_link('smoke')}"  # linked once _quarto.yml names the repository
    assert "| waves | " in details and duration_text(meta["wall_s"]) in details
    commit = f"`{meta['git_commit'][:7]}`"  # code: a hash of digits only is not a number for the book's lint
    assert f"from commit {commit}" in lines[3] and f"| {commit} |" in details


def test_a_commit_reads_as_code_and_says_when_the_tree_was_dirty():
    assert commit_text("5446001234abcdef") == "`5446001`"
    assert commit_text("c72e12708fca+dirty") == "`c72e127` (with uncommitted changes)"
