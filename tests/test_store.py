"""The step store: atomic write, resume, failed steps that never overwrite a complete one."""
import json

import pandas as pd

from harness.lab import store


def write(chapter, step_id, status, rows=1):
    writer = store.StepWriter(chapter, step_id)
    assert not store.step_dir(chapter, step_id).exists() or store.is_complete(chapter, step_id) or status
    writer.table("requests", pd.DataFrame({"vu": range(rows), "start_ms": 1.0, "end_ms": 2.0}))
    writer.table("ss", [])
    return writer, writer.finish({"id": step_id, "status": status, "reason": "" if status == "complete" else "boom"})


def test_a_step_appears_only_when_finished(data_dir):
    writer = store.StepWriter("ch", "a")
    writer.table("ss", [{"ts_ms": 1, "estab": 3}])
    assert not store.step_dir("ch", "a").exists()  # only the hidden partial directory so far
    assert store.read_meta("ch", "a") is None
    writer.finish({"id": "a", "status": "complete"})
    assert store.is_complete("ch", "a")
    assert [p.name for p in (data_dir / "ch").iterdir()] == ["a"]


def test_documented_columns_exist_even_when_empty(data_dir):
    write("ch", "a", "complete")
    for name, columns in store.COLUMNS.items():
        if (store.step_dir("ch", "a") / f"{name}.parquet").exists():
            assert set(columns) <= set(store.read_table("ch", "a", name).columns)


def test_failed_step_is_kept_with_its_reason(data_dir):
    _, where = write("ch", "a", "failed")
    assert where == store.step_dir("ch", "a")
    meta = json.loads((where / "step.json").read_text())
    assert meta["status"] == "failed" and meta["reason"] == "boom"
    assert not store.is_complete("ch", "a")


def test_failed_rerun_keeps_the_complete_step(data_dir):
    write("ch", "a", "complete", rows=3)
    _, where = write("ch", "a", "failed", rows=1)
    assert where.name == ".a.failed"
    assert store.is_complete("ch", "a")
    assert len(store.read_table("ch", "a", "requests")) == 3


def test_complete_rerun_replaces(data_dir):
    write("ch", "a", "complete", rows=3)
    write("ch", "a", "complete", rows=5)
    assert len(store.read_table("ch", "a", "requests")) == 5
    assert sorted(p.name for p in (data_dir / "ch").iterdir()) == ["a"]


def test_a_table_is_decoded_once_while_unchanged_and_each_reader_gets_its_own_copy(data_dir, monkeypatch):
    write("ch", "a", "complete", rows=3)
    decoded, decode = [], store.read_parquet
    monkeypatch.setattr(store, "read_parquet", lambda path, name: decoded.append(name) or decode(path, name))
    first = store.read_table("ch", "a", "requests")
    first.loc[0, "vu"] = 99  # one reader's change is its own
    assert list(store.read_table("ch", "a", "requests").vu) == [0, 1, 2] and decoded == ["requests"]
    write("ch", "a", "complete", rows=5)  # a new run replaced the step: its table is read anew
    assert len(store.read_table("ch", "a", "requests")) == 5 and decoded == ["requests", "requests"]


def test_load_reads_complete_steps_only(data_dir):
    write("ch", "a", "complete", rows=2)
    write("ch", "b", "failed", rows=4)
    data = store.load("ch")
    assert list(data.steps) == ["a"]
    assert data.requests["step"].unique().tolist() == ["a"] and len(data.requests) == 2
