"""A .qmd chapter as a Jupyter notebook: its ```{python} cells in order, as Quarto's Jupyter engine runs them.

Only what the book uses: `{{< include path >}}` lines (path relative to the including file, or to the
project root when it starts with /) and executable python cells. Markdown is left out: it never runs.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

OPEN = re.compile(r"^(`{3,})\{python\b[^}]*\}\s*$")
INCLUDE = re.compile(r"^\{\{<\s*include\s+(\S+)\s*>\}\}$")


def expand_includes(path: Path, root: Path) -> str:
    lines = []
    for line in path.read_text().splitlines():
        match = INCLUDE.match(line.strip())
        if match:
            target = match.group(1)
            included = root / target.lstrip("/") if target.startswith("/") else path.parent / target
            lines.append(expand_includes(included, root))
        else:
            lines.append(line)
    return "\n".join(lines)


def python_cells(text: str) -> list[str]:
    """Sources of the ```{python} cells; a cell closes at a line of at least as many backticks."""
    cells, current, fence = [], None, ""
    for number, line in enumerate(text.splitlines(), start=1):
        if current is None:
            match = OPEN.match(line)
            if match:
                current, fence, start = [], match.group(1), number
        elif re.fullmatch(rf"`{{{len(fence)},}}\s*", line):
            cells.append("\n".join(current))
            current = None
        else:
            current.append(line)
    if current is not None:
        raise ValueError(f"the python cell opened on line {start} is never closed")
    return cells


def notebook(path: Path, root: Path) -> nbformat.NotebookNode:
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source) for source in python_cells(expand_includes(path, root))]
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return book
