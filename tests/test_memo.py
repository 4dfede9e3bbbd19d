"""A chapter module's own cache (harness.book.memo): computed once per change of the code it runs, not again."""
from __future__ import annotations

import importlib
import sys

import pytest

from harness.book import memo as memo_module
from harness.book.memo import memo


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """A small repository: `grid` in module b uses a helper imported from module a; module c is unrelated."""
    monkeypatch.setattr(memo_module, "ROOT", tmp_path)
    (tmp_path / "lab_memo_a.py").write_text("def helper():\n    return 1\n")
    (tmp_path / "lab_memo_b.py").write_text("from lab_memo_a import helper\nCALLS = []\n\n"
                                            "def grid(n):\n    CALLS.append(n)\n    return {'total': helper() + n}\n")
    (tmp_path / "lab_memo_c.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("lab_memo_b")
    for name in ("lab_memo_a", "lab_memo_b", "lab_memo_c"):
        sys.modules.pop(name, None)


def test_a_result_is_computed_once_per_arguments(modules, tmp_path):
    grid = memo(results=tmp_path / "results")(modules.grid)
    assert grid(1) == grid(1) == {"total": 2} and grid(2) == {"total": 3}
    assert modules.CALLS == [1, 2]


def test_it_is_computed_again_when_code_it_imports_changes_and_not_for_other_code(modules, tmp_path):
    grid = memo(results=tmp_path / "results")(modules.grid)
    grid(1)
    (tmp_path / "lab_memo_c.py").write_text("X = 2\n")  # not imported by lab_memo_b
    grid(1)
    assert modules.CALLS == [1]
    (tmp_path / "lab_memo_a.py").write_text("def helper():\n    return 10\n")  # the source changed: a new key
    grid(1)
    assert modules.CALLS == [1, 1]
    assert len(list((tmp_path / "results").glob("*.pkl"))) == 1  # the entry of the old code is gone


def test_arguments_without_a_stable_repr_are_refused(modules, tmp_path):
    with pytest.raises(TypeError, match="stable repr"):
        memo(results=tmp_path / "results")(modules.grid)(object())
