"""Verdicts by a protocol the data cannot steer (harness.lab.protocol, harness.book.passes): the protocol is checked,
its rules' digest covers the statistic's code and the runs per step, passes are only appended, withdrawn with a
reason, pooled on two levels, and an exact claim is exact in every pass or judged on their spread."""
from __future__ import annotations

import ast
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FROZEN_DATA
from harness import DATA, ROOT, LabError
from harness.book import passes
from harness.book.claims import INCONCLUSIVE, REPRODUCED, Measured, Rule, judge
from harness.lab.protocol import Protocol, checked, protocol

JUDGED = ("chapter1", "chapter3", "chapter4", "chapter5", "chapter6", "chapter7")


def rule(threshold=10.0, claim="F000-a.1"):
    return Rule(claim, claim.split(".")[0], "000", "q", "m", "above", threshold, "s")


# ---- the protocol -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("chapter", JUDGED)
def test_every_chapter_that_judges_claims_declares_a_protocol_of_at_least_three_passes(chapter):
    declared = protocol(chapter)
    assert declared.passes >= 3 and 0 < declared.void_outside_cpu < 1 and declared.statistic


@pytest.mark.parametrize("chapter", JUDGED)
def test_the_books_passes_are_judged_under_todays_rules(chapter):
    """A change to a claims file, a step's runs or a statistic's code (passes.py included) sets every pass kept
    before it aside, under earlier rules: the chapter then needs its whole campaign again, and this says so."""
    kept = passes.kept(chapter)
    assert len(kept) >= protocol(chapter).passes, (
        f"{chapter}: {len(kept)} pass(es) kept under today's rules ({passes.rules_digest(chapter)}); under earlier "
        f"rules: {passes.earlier(chapter)}. Was a rule or its code ({', '.join(protocol(chapter).code)}) changed?")


@pytest.mark.parametrize("table, named", [
    ({"passes": 2}, "passes must be a whole number of at least 3"),
    ({"void_outside_cpu": 1.5}, "void_outside_cpu must be a share"),
    ({"reruns": -1}, "reruns must be"),
    ({"statistic": ["harness/nothing.py"]}, "not a file of the repository"),
    ({"runs": 5}, "unknown key 'runs'"),
])
def test_a_protocol_with_a_problem_is_refused_naming_it(table, named):
    with pytest.raises(LabError, match=named):
        checked("chapter9", table, "chapter9.toml")


def test_a_run_is_void_when_other_processes_took_more_than_the_protocols_share():
    rule_ = Protocol("chapter9", void_outside_cpu=0.25)
    assert "31%" in rule_.void({"outside_cpu": {"share": 0.31, "user_seconds": 12}})
    assert rule_.void({"outside_cpu": {"share": 0.05}}) == "" and rule_.void({}) == ""


def _imports(path: Path) -> set[str]:
    """The files of harness.book.chapters a module imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)] if isinstance(node, ast.ImportFrom) \
            and node.module else [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            file = ROOT / (name.replace(".", "/") + ".py")
            if name.startswith("harness.book.chapters") and file.is_file():
                found.add(str(file.relative_to(ROOT)))
    return found


@pytest.mark.parametrize("chapter", JUDGED)
def test_the_statistic_files_cover_everything_the_claims_module_imports_of_its_chapter(chapter):
    declared = set(protocol(chapter).statistic)
    todo, seen = [protocol(chapter).statistic[0]], set()
    while todo:
        seen.add(path := todo.pop())
        todo += [p for p in _imports(ROOT / path) if p not in seen]
    assert seen <= declared, f"{chapter}'s statistic also runs {sorted(seen - declared)}: name them in its [protocol]"


def test_the_rules_digest_covers_the_statistics_code(tmp_path, monkeypatch):
    before = passes.rules_digest("chapter1")
    for name in protocol("chapter1").code:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    monkeypatch.setattr(passes, "ROOT", tmp_path)
    assert passes.rules_digest("chapter1") == before
    statistic = tmp_path / protocol("chapter1").statistic[0]
    statistic.write_text(statistic.read_text() + "\n# a change to the statistic is a change to the rules\n")
    assert passes.rules_digest("chapter1") != before


def test_the_rules_digest_covers_the_runs_per_step(monkeypatch):
    before = passes.rules_digest("chapter1")
    real = passes.load_spec

    def more_runs(chapter, limits=None):
        spec = real(chapter, limits)
        spec.steps[0] = __import__("dataclasses").replace(spec.steps[0], runs=spec.steps[0].runs + 1)
        return spec

    monkeypatch.setattr(passes, "load_spec", more_runs)
    assert passes.rules_digest("chapter1") != before


# ---- kept passes --------------------------------------------------------------------------------------------------

@pytest.fixture
def chapter9(tmp_path, monkeypatch):
    """An empty chapter folder with one rule (rules digest "r1") in a data directory of its own."""
    (tmp_path / "chapter9").mkdir()
    monkeypatch.setattr(passes, "rules_digest", lambda chapter: "r1")
    monkeypatch.setattr(passes, "rules", lambda chapter: {"F000-a.1": rule()})
    return tmp_path


def one(label: str) -> passes.Pass:
    return passes.Pass(label, label.split()[0], "2026-01-01T00:00", "s")


def test_a_pass_is_appended_never_rewritten_and_kept_once(chapter9):
    passes.keep("chapter9", [judge(rule(), Measured((20, 21, 19)))], one("abc 1"), [], chapter9)
    path = chapter9 / "chapter9" / passes.PASSES
    before = path.read_bytes()
    passes.keep("chapter9", [judge(rule(), Measured((0, 1, -1)))], one("def 2"), [], chapter9)
    assert path.read_bytes().startswith(before)
    with pytest.raises(LabError, match="kept already"):
        passes.keep("chapter9", [judge(rule(), Measured((20, 21, 19)))], one("abc 1"), [], chapter9)
    with pytest.raises(LabError, match="(?s)not a clean pass.*2 commits"):
        passes.keep("chapter9", [], one("ghi 3"), ["its steps come from 2 commits"], chapter9)
    rows = passes.read(path)
    assert [r["pass"] for r in rows] == ["abc 1", "def 2"] and rows[0]["values"] == "20.0 21.0 19.0"


def test_every_kept_pass_is_pooled_and_a_withdrawn_one_is_not(chapter9):
    for label, values in (("a 1", (20, 21, 19)), ("b 2", (22, 23, 21)), ("c 3", (0, 1, -1))):
        passes.keep("chapter9", [judge(rule(), Measured(values))], one(label), [], chapter9)
    pooled = passes.pooled("chapter9", chapter9)[0]
    assert pooled.measured.passes == 3 and pooled.measured.runs == 9 and pooled.measured.value == pytest.approx(14)
    assert pooled.outcome == INCONCLUSIVE  # a pass far from the others widens σ: between passes dominates
    with pytest.raises(LabError, match="only with the reason"):
        passes.withdraw("chapter9", "c 3", " ", chapter9)
    passes.withdraw("chapter9", "c 3", "a CPU hog ran beside it", chapter9)
    pooled = passes.pooled("chapter9", chapter9)[0]
    assert pooled.measured.passes == 2 and pooled.outcome == REPRODUCED
    assert passes.held("chapter9", pooled, chapter9) == (2, 2)
    assert len(passes.read(chapter9 / "chapter9" / passes.PASSES)) == 3  # its rows stay
    assert passes.withdrawn("chapter9", chapter9)[0]["why"] == "a CPU hog ran beside it"


def test_numpy_numbers_are_kept_as_plain_floats_that_read_back(chapter9):
    """A statistic's np.float64 would be kept as its repr, "np.float64(0.5)", which no reader reads back: compare
    makes every number a float before it keeps a pass."""
    import numpy as np
    from harness.book.compare import plain_numbers

    judged = [judge(rule(), Measured((20.0, 21.0, 19.0), borrowed_sigma=np.float64(0.5), busy=np.float64(0.1)))]
    passes.keep("chapter9", plain_numbers(judged), one("np 1"), [], chapter9)
    row = passes.read(chapter9 / "chapter9" / passes.PASSES)[0]
    assert (row["borrowed_sigma"], row["busy"]) == ("0.5", "0.1")
    assert passes.pooled("chapter9", chapter9)[0].measured.borrowed_sigma == 0.5
    assert plain_numbers(judged)[0].outcome == judged[0].outcome


def test_passes_kept_under_earlier_rules_are_listed_not_pooled(chapter9, monkeypatch):
    passes.keep("chapter9", [judge(rule(), Measured((20, 21, 19)))], one("old 1"), [], chapter9)
    monkeypatch.setattr(passes, "rules_digest", lambda chapter: "r2")
    assert passes.pooled("chapter9", chapter9) == [] and passes.earlier("chapter9", chapter9) == ["old 1"]


def test_two_levels_the_larger_judges():
    tight = [Measured((10.0, 10.1, 9.9)), Measured((14.0, 14.1, 13.9))]  # runs agree, passes do not
    pooled = passes.pool(tight)
    assert pooled.sigma == pytest.approx(2.0)  # between: sd(10, 14) / √2 = 2; within: 0.04
    noisy = [Measured((5.0, 15.0)), Measured((6.0, 16.0))]  # passes agree, runs do not
    assert passes.pool(noisy).sigma == pytest.approx((5 ** 2 + 5 ** 2) ** 0.5 / 2)


def test_an_exact_claim_that_differs_between_passes_is_judged_on_their_spread():
    same = passes.pool([Measured((3.0,), exact=True), Measured((3.0,), exact=True)])
    assert same.sigma == 0 and same.is_exact
    differ = passes.pool([Measured((6835.0,), exact=True), Measured((2205.0,), exact=True)])
    assert not differ.is_exact and differ.sigma == pytest.approx(2315)
    assert judge(rule(threshold=3000), differ).outcome == INCONCLUSIVE


def test_a_claim_a_pass_measured_no_value_of_pools_to_none_and_stays_inconclusive():
    """Chapter 6's second pass: F003-c.2 had no value in either pass, and pooling them raised (statistics.stdev of NaN
    means fails in Python 3.11) before any verdict of the chapter was shown."""
    for each in ([Measured(()), Measured(())], [Measured((1.0, 2.0)), Measured(())]):
        pooled = passes.pool(each)
        assert pooled.values == () and pooled.passes == 2 and pooled.value != pooled.value  # NaN: no value
        assert judge(rule(threshold=3000), pooled).outcome == INCONCLUSIVE


def test_a_torn_history_file_is_refused_naming_it(tmp_path):
    path = tmp_path / passes.PASSES
    path.write_text(",".join(passes.COLUMNS) + "\nabc 1,abc,2026")
    with pytest.raises(LabError, match="cut short"):
        passes.read(path)


def test_only_a_whole_run_at_one_committed_commit_is_a_clean_pass(data_dir):
    shutil.copytree(FROZEN_DATA / "smoke", data_dir / "smoke")
    assert passes.pass_problems("smoke", data_dir) == []
    waves = data_dir / "smoke" / "waves" / "step.json"
    meta = json.loads(waves.read_text())
    waves.write_text(json.dumps(meta | {"git_commit": "0123456789ab+dirty"}))
    problems = passes.pass_problems("smoke", data_dir)
    assert any("2 commits" in p for p in problems) and any("+dirty" in p for p in problems)
    shutil.rmtree(data_dir / "smoke" / "keep-alive")
    assert "keep-alive is not complete (never run)" in passes.pass_problems("smoke", data_dir)


def test_a_void_run_is_measured_again_at_once_up_to_the_protocols_reruns(monkeypatch):
    """The runner applies the void rule by code: each void attempt is put aside (its folder kept), the next attempt's
    step.json lists the earlier ones, and after `reruns` the last attempt stands as void (the pass is not clean)."""
    from harness.lab import runner

    calls = []

    def attempt(step, backend, tool, dashboard, spec_file, plan, void=None, voided=None, aside=None):
        calls.append((aside, list(voided)))
        status = "void" if void({"outside_cpu": {"share": 0.6 if len(calls) < 3 else 0.1}}) else "complete"
        return runner.Outcome(step, status, "busy" if status == "void" else "", 1.0, {})

    monkeypatch.setattr(runner, "run_step", attempt)
    monkeypatch.setattr(runner.protocol, "protocol", lambda chapter: Protocol(chapter, reruns=2))
    step = type("Step", (), {"id": "s", "chapter": "chapter9", "kind": "load"})()
    assert runner.run_by_protocol(step, "local", None, False, "", {}).status == "complete"
    assert [a for a, _ in calls] == ["s.void-1", "s.void-2", None]
    assert [len(v) for _, v in calls] == [0, 1, 2]

    calls.clear()
    monkeypatch.setattr(runner.protocol, "protocol", lambda chapter: Protocol(chapter, reruns=0))
    monkeypatch.setattr(runner, "run_step", lambda *a, **k: attempt(*a, **{**k, "void": lambda meta: "busy"}))
    assert runner.run_by_protocol(step, "local", None, False, "", {}).status == "void" and len(calls) == 1


def test_a_page_whose_data_is_not_a_kept_pass_says_so_and_shows_it_beside_the_books(tmp_path, monkeypatch):
    """Chapter 1's committed data judged beside a kept pass (here: the same judgements kept under another label): the
    page's note says its data is not among the kept passes, and each verdict row shows this data's outcome beside the
    book's pooled one. Kept under its own label, the note says the data is one of them."""
    from harness.book import verdict_tables
    from harness.book.chapters import ch1

    monkeypatch.setattr(passes, "DATA", tmp_path)
    (tmp_path / "chapter1").mkdir()
    judged = ch1.judge()
    assert "none of the 3 clean passes" in verdict_tables.protocol_note("chapter1").data
    assert "This data" not in verdict_tables.verdict_table(judged, "chapter1").data
    passes.keep("chapter1", judged, passes.Pass("another 2026-11-28 10:00", "another", "x", "s"), [], tmp_path)
    note = verdict_tables.protocol_note("chapter1").data
    assert "1 of the 3 clean passes" in note and "is not among them" in note
    table = verdict_tables.verdict_table(judged, "chapter1").data
    assert "| This data |" in table and "1 of 1" in table
    assert "[**F002-a: " in table and "]{#verdict-f002-a}" in table  # where the answer page's links land
    passes.keep("chapter1", judged, passes.this_pass("chapter1"), [], tmp_path)
    assert "The data on this page is one of them" in verdict_tables.protocol_note("chapter1").data
    assert "This data" not in verdict_tables.verdict_table(judged, "chapter1").data
    for label in ("third 2026-11-29 10:00", "fourth 2026-11-30 10:00"):  # a campaign of the whole book adds one more
        passes.keep("chapter1", judged, passes.Pass(label, label.split()[0], "x", "s"), [], tmp_path)
    note = verdict_tables.protocol_note("chapter1").data
    assert "This chapter has 4 clean passes; its protocol keeps at least 3." in note and "of the 3" not in note
    assert "`harness/book/noise.py`" in note  # the rules cover the code every chapter's verdicts run through too


def test_a_withdrawn_pass_is_named_with_its_reason_as_typed():
    """The reason is free text: an option in it ("--keep") must not turn into Pandoc's dash on the page (chapter 4's
    withdrawn pass names `invoke compare --keep`)."""
    from harness.book import verdict_tables

    assert verdict_tables.as_typed("invoke compare --keep") == "invoke compare -\\-keep"
    note = verdict_tables.protocol_note("chapter4").data
    assert "Withdrawn: 9c889e4e7223 2026-11-28 07:40, " in note and "compare -\\-keep" in note


def test_invoke_compare_puts_a_run_beside_the_books_pooled_passes_and_keeps_only_a_clean_one(tmp_path, monkeypatch):
    from harness.book.chapters import ch1
    from harness.book.compare import compare

    monkeypatch.setattr(passes, "DATA", tmp_path)
    (tmp_path / "chapter1").mkdir()
    report, moved = compare("chapter1")
    assert "the book (data/, no kept pass yet)" in report.splitlines()[0] and "this run" not in report and moved == []
    with monkeypatch.context() as m:  # whatever the committed data is, a pass with a problem is refused
        m.setattr(passes, "pass_problems", lambda chapter, root: ["its steps ran at 2 commits"])
        with pytest.raises(LabError, match="(?s)not a clean pass of chapter1.*2 commits"):
            compare("chapter1", keep=True)
    assert not (tmp_path / "chapter1" / passes.PASSES).exists()
    passes.keep("chapter1", ch1.judge(), passes.Pass("elsewhere 2026-11-28 10:00", "elsewhere", "x", "s"), [], tmp_path)
    report, moved = compare("chapter1")
    assert "the book (1 pass pooled)" in report and "this run" in report.splitlines()[0] and moved == []
    assert len(report.splitlines()) == 2 + len(ch1.judge())
    assert report.splitlines()[-1].startswith("stray failures: the book's (data/), over its steps of chapter2")  # data/ has chapters 2, 3 and 7


def test_a_readers_run_without_a_noise_of_its_own_is_judged_with_the_books_saying_so(tmp_path):
    from harness.book.compare import compare

    shutil.copytree(DATA / "chapter1", tmp_path / "chapter1", ignore=shutil.ignore_patterns("*.csv"))
    report, _ = compare("chapter1", tmp_path)
    assert ("stray failures: the book's (data/): this run's folder has no step of chapter2, chapter3, chapter7 whose "
            "model predicts every answer") in report


def test_a_readers_run_missing_a_run_of_its_spec_is_judged_saying_which(tmp_path):
    """A run deleted, or a file in its place: the verdicts pool the runs there are, and say which are not."""
    from harness.book.compare import compare

    shutil.copytree(DATA / "chapter1", tmp_path / "chapter1", ignore=shutil.ignore_patterns("*.csv"))
    whole, _ = compare("chapter1", tmp_path)
    shutil.rmtree(tmp_path / "chapter1" / "k6-c100.3")
    (tmp_path / "chapter1" / "k6-c100.3").write_text("not a run")
    report, _ = compare("chapter1", tmp_path)
    assert "k6-c100.3 is not complete (never run)" in report.splitlines()[-1] and "not a whole pass" not in whole


def test_a_chapter_run_on_a_readers_own_server_is_compared_by_its_folders_name_and_never_kept(tmp_path):
    """`invoke run chapter1 --server app.jar` writes chapter1@app/; `invoke compare chapter1@app` judges it with
    chapter 1's rules beside the book (issue 43): here a copy of the book's own chapter 1 under that name."""
    from harness.book.chapters import ch1
    from harness.book.compare import compare

    shutil.copytree(DATA / "chapter1", tmp_path / "chapter1@app", ignore=shutil.ignore_patterns("*.csv"))
    report, moved = compare("chapter1@app", tmp_path)
    lines = report.splitlines()
    claims = {j.rule.claim for j in ch1.judge()}
    assert "chapter1@app" in lines[0] and len(lines) == 2 + len(claims) + bool(moved)
    assert lines[1 + len(claims)].startswith("stray failures: the book's (data/)")  # it has no chapter 2 of its own
    assert {line.split()[0] for line in lines[1:1 + len(claims)]} == claims
    with pytest.raises(LabError, match="never kept"):
        compare("chapter1@app", tmp_path, keep=True)
    with pytest.raises(LabError, match="no chapter1@other in"):
        compare("chapter1@other", tmp_path)
    assert not list(tmp_path.glob("lab-compare-*"))  # nothing left in the folder


def test_a_threshold_is_printed_as_its_rule_declares_it_and_a_measurement_to_three_digits():
    """A band of 106.5 – 107.5 ms rounded like a measurement read "106 ms – 108 ms", twice as wide as the rule."""
    from harness.book.verdict_tables import number, threshold_text

    band = Rule("F9-a.1", "F9-a", "002", "q", "m", "band", (106.5, 107.5), "s", unit="ms")
    assert threshold_text(band) == "106.5\u00a0ms – 107.5\u00a0ms"
    assert threshold_text(replace(band, shape="above", threshold=0.7975, unit="")) == "> 0.7975"
    assert threshold_text(replace(band, shape="below", threshold=1025.0, unit="files")) == "< 1,025\u00a0files"
    assert threshold_text(replace(band, shape="within", threshold=0.032, unit="%")) == "|·| < 0.032%"
    assert number(106.54, "ms") == "107\u00a0ms"  # a measured value: three significant digits
    from harness.book.verdict_tables import declared_share

    assert (declared_share(0.032), declared_share(0.34), declared_share(0.345)) == ("3.2%", "34%", "34.5%")
    assert number(1.0, "connections") == "1\u00a0connection" and number(-1.0, "requests") == "\u22121\u00a0request"
    assert number(2.0, "connections") == "2\u00a0connections" and number(1.0, "requests/s") == "1\u00a0requests/s"


def test_a_changed_rules_note_writes_out_the_fields_it_names():
    """The claims files' notes say "above busy_above" and "its steps are named here": the rules table shows 90% and
    the steps."""
    from harness.book.verdict_tables import changed_note

    rule = Rule("F9-a.1", "F9-a", "002", "q", "m", "below", 1.0, "s",
                changed="now needs the busiest CPU above busy_above; its steps are named here.",
                busy_above=0.9, machine_steps=("k6-c500", "ab-c500"))
    assert changed_note(rule) == ("now needs the busiest CPU above 90%; its steps are named here. The steps whose "
                                  "CPUs would show it: k6-c500 and ab-c500.")
    assert changed_note(replace(rule, machine_steps=())).endswith("above 90%; its steps are named here.")


def test_a_chapter_folder_this_user_cannot_read_is_named_not_judged_as_never_run(tmp_path):
    """Mode 000 for another user than root (root here drops its capabilities to read anything): its steps would read
    as never run, and the claims be judged on nothing."""
    import os
    import subprocess
    import sys

    (tmp_path / "chapter1").mkdir()
    (tmp_path / "chapter1").chmod(0)
    drop = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]
    try:
        done = subprocess.run([*(drop if os.geteuid() == 0 else []), sys.executable, "-m", "invoke", "compare",
                               "chapter1", "--data", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        (tmp_path / "chapter1").chmod(0o755)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {tmp_path / 'chapter1'} cannot be read by this user")


def test_a_finding_judged_in_two_chapters_says_so_beside_each_pages_outcome():
    """Chapter 1's F002-d heading read "partly reproduced" where the answer page, composing chapters 1 and 7, read
    "inconclusive": each page's outcome is its own claims', and now says so."""
    from harness.book.verdict_tables import elsewhere_note

    assert elsewhere_note("F002-d", "chapter1") == (". This chapter's claims only: chapter 7 judges the rest, and the "
                                                   "answer page composes the whole finding.")
    assert "chapter 1 judges the rest" in elsewhere_note("F002-d", "chapter7")
    assert elsewhere_note("F002-b", "chapter1") == ""
