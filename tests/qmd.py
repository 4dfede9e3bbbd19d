"""A .qmd chapter as a Jupyter notebook: its ```{python} cells in order, as Quarto's Jupyter engine runs them
(the parsing is harness.book.sources')."""
from __future__ import annotations

from pathlib import Path

import nbformat

from harness import ROOT
from harness.book.sources import expand_includes, python_cells

__all__ = ["expand_includes", "namespace", "notebook", "python_cells"]


def notebook(path: Path, root: Path) -> nbformat.NotebookNode:
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source) for source in python_cells(expand_includes(path, root))]
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return book


def namespace(path: Path) -> dict:
    """The names a page's cells leave behind, run in order on the committed data: what its inline values read (the
    cells as `notebook` reads them, includes expanded)."""
    names: dict = {}
    for cell in python_cells(expand_includes(path, ROOT)):
        exec(cell, names)  # noqa: S102 - the book's own page
    return names
