"""Results that cannot silently rot (harness.lab.integrity, through harness.lab.store): a step records a digest of
each file, and a deleted, cut, edited or swapped file, or an unreadable step.json, makes it broken, named with the
file: `invoke list` says so, a chapter refuses to read it, and a run measures it again."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import FROZEN_DATA
from harness import ROOT
from harness.lab import fingerprint, integrity, store
from harness.lab.spec import load_spec


@pytest.fixture
def smoke(data_dir):
    """The frozen smoke run, its files' digests recorded as a run records them now."""
    shutil.copytree(FROZEN_DATA / "smoke", data_dir / "smoke")
    for step in ("waves", "keep-alive"):
        path = data_dir / "smoke" / step
        meta = json.loads((path / "step.json").read_text())
        meta["files"] = integrity.file_digests(path)
        integrity.write_step_json(path, json.dumps(meta))
    return data_dir / "smoke"


def test_an_intact_step_reads_as_complete(smoke):
    assert set(store.complete_steps("smoke")) == {"waves", "keep-alive"}
    assert store.load("smoke").requests["step"].nunique() == 2


@pytest.mark.parametrize("damage, named", [
    (lambda d: (d / "requests.parquet").unlink(), "requests.parquet is missing"),
    (lambda d: (d / "ss.parquet").write_bytes((d / "ss.parquet").read_bytes()[:-100]), "ss.parquet has"),
    (lambda d: shutil.copy(d.parent / "keep-alive" / "requests.parquet", d / "requests.parquet"), "requests.parquet"),
    (lambda d: (d / "k6-summary.json").write_text("{}"), "k6-summary.json"),
    (lambda d: (d / "step.json").write_text(""), "step.json is not valid JSON"),
    (lambda d: (d / "step.json").unlink(), "its folder has no step.json"),
    # step.json's own bytes: a number edited by hand, the JSON still valid
    (lambda d: (d / "step.json").write_text((d / "step.json").read_text().replace('"complete"', '"complete" ', 1)),
     "step.json differs from what the run wrote"),
    (lambda d: (d / "step.sha256").write_text("0" * 64 + "  step.json\n"), "step.json differs"),
])
def test_a_damaged_step_is_broken_naming_the_file(smoke, damage, named):
    damage(smoke / "waves")
    meta = store.read_meta("smoke", "waves")
    assert meta["status"] == store.BROKEN and named in meta["reason"]
    with pytest.raises(store.BrokenData, match=rf"(?s)smoke/waves: {named}.*invoke run smoke"):
        store.load("smoke")  # a chapter judges nothing from it
    with pytest.raises(store.BrokenData, match=rf"(?s)smoke/waves: {named}.*invoke run smoke"):
        store.load_run("smoke", "waves")  # nor a verdict, reading it as one run
    assert store.load_run("smoke", "keep-alive").requests["step"].unique().tolist() == ["keep-alive"]  # its own, intact
    step = next(s for s in load_spec("smoke").steps if s.id == "waves")
    state = fingerprint.state("smoke", step, None, lambda tool: None)
    assert state.status == "broken" and named in state.reason
    assert [s.id for s in fingerprint.todo("smoke", "smoke", [step], "local", force=False)] == ["waves"]  # measured again


def test_a_run_that_is_not_complete_is_not_read(smoke):
    with pytest.raises(KeyError):
        store.load_run("smoke", "no-such-step")


def test_a_file_edited_in_place_after_it_was_read_is_seen(smoke):
    """Digests are kept per process while a file is unchanged (a page reads the same steps many times); an edit of
    the same length, even with its modification time set back, still makes the step broken."""
    summary = smoke / "waves" / "k6-summary.json"
    assert store.read_meta("smoke", "waves")["status"] == "complete"  # its digests now kept
    before, text = summary.stat(), summary.read_text()
    summary.write_text(text.replace("{", "[", 1))
    os.utime(summary, ns=(before.st_atime_ns, before.st_mtime_ns))
    meta = store.read_meta("smoke", "waves")
    assert meta["status"] == store.BROKEN and "k6-summary.json differs" in meta["reason"]


def test_invoke_list_shows_a_broken_step_and_names_the_file(smoke):
    (smoke / "waves" / "requests.parquet").unlink()
    out = subprocess.run([sys.executable, "-m", "invoke", "list"], cwd=ROOT, capture_output=True, text=True,
                         env={**__import__("os").environ, "LAB_DATA_DIR": str(smoke.parent)})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    smoke_at = lines.index("smoke")
    line = next(i for i in range(smoke_at, len(lines)) if lines[i].split()[1:2] == ["waves"])
    assert lines[line].lstrip().startswith("✗") and "broken: requests.parquet is missing" in lines[line + 1]


def test_a_step_recorded_before_digests_is_checked_for_the_tables_it_needs(data_dir):
    shutil.copytree(FROZEN_DATA / "smoke", data_dir / "smoke")  # no `files` in these step.json
    assert store.read_meta("smoke", "waves")["status"] == "complete"
    (data_dir / "smoke" / "waves" / "ss.parquet").write_bytes(b"PAR1 cut")
    assert "ss.parquet is unreadable" in store.read_meta("smoke", "waves")["reason"]
    (data_dir / "smoke" / "keep-alive" / "requests.parquet").unlink()
    assert store.read_meta("smoke", "keep-alive")["reason"] == "requests.parquet is missing"


@pytest.mark.parametrize("shape", ["folder of a reader's", "folder without step.json", "file", "link"])
def test_a_run_is_refused_before_anything_starts_where_it_would_replace_what_is_no_step(smoke, shape):
    """A run replaces a step's folder (one with a step.json) and nothing else: a reader's folder, a file, a link, or
    a step whose step.json was deleted (its tables are still measured data) at a step's place is named, and kept."""
    from harness.lab import preflight

    place = smoke / "waves"
    if shape == "folder without step.json":
        (place / "step.json").unlink()
    else:
        shutil.rmtree(place)
        if shape == "folder of a reader's":
            place.mkdir()
            (place / "notes.txt").write_text("mine")
        elif shape == "file":
            place.write_text("mine")
        else:
            place.symlink_to(smoke / "keep-alive")
    before = sorted(str(p.relative_to(smoke)) for p in smoke.rglob("*"))
    steps = load_spec("smoke").steps
    said = {"folder of a reader's": "a folder without step.json", "folder without step.json": "a folder without "
            "step.json", "file": "a file", "link": f"a link to {smoke / 'keep-alive'}"}[shape]
    with pytest.raises(store.LabError, match=rf"{place} is in the way of step waves: {said}, not a step's folder"):
        preflight.check_environment(steps)
    assert sorted(str(p.relative_to(smoke)) for p in smoke.rglob("*")) == before
    assert store.read_meta("smoke", "waves")["status"] == store.BROKEN  # `invoke list` says so, not "never run"
    with pytest.raises(store.LabError, match=f"{place} is {said}, not a step's folder"):  # the last guard, for one that appears later
        store._replace(smoke / "keep-alive", place)
    assert (smoke / "keep-alive" / "step.json").is_file()


@pytest.mark.parametrize("damage", [lambda p: p.write_text('{"status":'), lambda p: p.mkdir()])
def test_a_torn_failed_attempt_beside_a_complete_step_is_named_not_a_traceback(smoke, damage):
    attempt = smoke / ".waves.failed"
    attempt.mkdir()
    damage(attempt / "step.json")
    step = next(s for s in load_spec("smoke").steps if s.id == "waves")
    state = fingerprint.state("smoke", step, None, lambda tool: None)
    assert state.status in ("complete", "stale") and state.failed_attempt.startswith(".waves.failed/step.json ")


def test_a_step_this_user_cannot_read_is_broken_naming_it_not_a_traceback(smoke):
    """A step folder or table this user may not read (mode 000 as another user than root; root here drops its
    capabilities to read anything): `invoke list` names it broken, and exits 0."""
    (smoke / "waves").chmod(0)
    (smoke / "keep-alive" / "ss.parquet").chmod(0)
    drop = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]
    try:
        done = subprocess.run([*(drop if os.geteuid() == 0 else []), sys.executable, "-m", "invoke", "list"], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    finally:
        (smoke / "waves").chmod(0o755)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert f"{smoke / 'waves' / 'step.json'} cannot be read (Permission denied)" in done.stdout, done.stdout
    assert f"{smoke / 'keep-alive' / 'ss.parquet'} cannot be read (Permission denied)" in done.stdout, done.stdout
