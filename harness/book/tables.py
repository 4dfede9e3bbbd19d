"""Tables for people: a DataFrame as a Markdown pipe table.

Why Markdown and not pandas' HTML: a cell whose output is HTML makes Quarto add require.js and jQuery from
a CDN to the page (they break offline and turn the chart libraries into AMD modules), and pandas' HTML
shows an index column, cuts long cells with "…" and lets wide tables run off the page. A pipe table is
styled by the book's theme and wraps its cells to the page's width.

Cells: yes/no for booleans, the book's number format (harness.book.prose: thousands separators, one number of
decimals per column, a true minus sign and never "−0.0"), "–" where a value is missing. Numbers align right, also
when a column's cells arrive as text ("8,293", "86%", "120 ms"). A named index becomes the first column; an
unnamed one (row numbers) is dropped.

A table with `caption` (and a `label`) is numbered by Quarto ("Table 3.2") and can be referred to from any
chapter as @tbl-<label>: `people_table(frame, caption="What each step asked", label="ch3-steps")`, or
`captioned(markdown, caption, label)` for a table made otherwise.
"""
from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable

import numpy as np
import pandas as pd
from IPython.display import Markdown

from harness.book.prose import MINUS, number

MISSING = "–"
MAX_DECIMALS = 2  # a column's decimals when its format is not given: as few as its values need, at most this
WIDEST = 80  # characters: a column's share of the page grows with its typical cell up to this


# A cell that reads as a number: "8,293", "−3.5", "+12%", "120 ms", "1.2 GiB", "3×", "–" aside (MISSING).
NUMBER_CELL = re.compile(r"^[-−+]?\d[\d,]*(\.\d+)?(%|×|[ \u00a0][A-Za-z/]{1,5})?$"
                         r"|^\d+[ \u00a0](h|min)[ \u00a0]\d+[ \u00a0](min|s)$")  # or a duration: "3 min 7 s"
LABEL = re.compile(r"^(tbl-)?[a-z0-9][a-z0-9_-]*$")


def people_table(frame: pd.DataFrame, formats: dict[str, str | Callable] | None = None, caption: str | None = None,
                 label: str | None = None) -> Markdown:
    """`frame` as a Markdown table; `formats` maps a column to a format string ("{:+.1%}") or a function. With a
    caption it is numbered, and with a label too it can be referred to as @tbl-<label>."""
    table = markdown_table(frame, formats)
    return captioned(table, caption, label) if caption else Markdown(table)


def captioned(table: str | Markdown, caption: str, label: str | None = None) -> Markdown:
    """A Markdown table with Quarto's caption line after it: numbered ("Table 3.2"), and with a label ("ch3-steps" or
    "tbl-ch3-steps") a target for @tbl-ch3-steps from any chapter."""
    text = table.data if isinstance(table, Markdown) else table
    if label is not None and not LABEL.match(label):
        raise ValueError(f"table label {label!r}: lower-case letters, digits, '-' and '_' only (e.g. 'ch3-steps')")
    anchor = f" {{#tbl-{label.removeprefix('tbl-')}}}" if label else ""
    return Markdown(f"{text.rstrip()}\n\n: {' '.join(caption.split())}{anchor}\n")


def markdown_table(frame: pd.DataFrame, formats: dict[str, str | Callable] | None = None) -> str:
    frame = _with_index_as_columns(frame)
    formats = formats or {}
    unknown = set(formats) - set(frame.columns)
    if unknown:
        raise ValueError(f"formats for columns the table does not have: {sorted(unknown)}")
    columns = {str(name): _format_column(frame[name], formats.get(name)) for name in frame.columns}
    numeric = {name: _is_numeric(frame[original]) or _reads_as_numbers(columns[name])
               for name, original in zip(columns, frame.columns, strict=True)}
    header = "| " + " | ".join(_escape(name) for name in columns) + " |"
    rule = "|" + "|".join(_rule(name, cells, numeric[name]) for name, cells in columns.items()) + "|"
    rows = ["| " + " | ".join(cells) + " |" for cells in zip(*columns.values(), strict=True)]
    return "\n".join([header, rule, *rows])


def _with_index_as_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """A named index is data (e.g. "step"); an unnamed one is pandas' row numbering, left out."""
    return frame.reset_index(drop=all(name is None for name in frame.index.names))


def _format_column(values: pd.Series, fmt: str | Callable | None) -> list[str]:
    if fmt is None:
        decimals = _decimals(values)
        return [_escape(format_value(v, decimals)) for v in values]
    apply = fmt if callable(fmt) else fmt.format
    return [MISSING if _missing(v) else _escape(_with_minus(str(apply(v)))) for v in values]


def _with_minus(text: str) -> str:
    """A number formatted elsewhere ("{:+.1%}" gives "-5.0%", "-0.0%") in the book's way: "−5.0%", "0.0%"."""
    if not NUMBER_CELL.match(text) or text[0] not in "-−+":
        return text
    if not any(c in "123456789" for c in text.split("\u00a0")[0].split(" ")[0]):
        return text[1:]  # a zero has no sign
    return MINUS + text[1:] if text[0] == "-" else text


def _reads_as_numbers(cells: list[str]) -> bool:
    present = [c for c in cells if c != MISSING]
    return bool(present) and all(NUMBER_CELL.match(c) for c in present)


def format_value(value, decimals: int = MAX_DECIMALS) -> str:
    """One cell: yes/no, 12,345, 1,234.5 (with `decimals`), or the text as it is."""
    if _missing(value):
        return MISSING
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return number(int(value))
    if isinstance(value, numbers.Real):
        return number(float(value), decimals)
    return str(value)


def _decimals(values: pd.Series) -> int:
    """As few decimals as the column's floats need (at most MAX_DECIMALS), the same for every row."""
    floats = [float(v) for v in values if isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral | bool | np.bool_)
              and not _missing(v)]
    for decimals in range(MAX_DECIMALS + 1):
        if all(math.isclose(round(v, decimals), v, abs_tol=1e-9) for v in floats):
            return decimals
    return MAX_DECIMALS


def _missing(value) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def _is_numeric(values: pd.Series) -> bool:
    present = [v for v in values if not _missing(v)]
    return bool(present) and all(isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) for v in present)


def _rule(name: str, cells: list[str], numeric: bool) -> str:
    """Dashes in proportion to the column's content: Pandoc sizes a wrapped table's columns by them. A column gets
    room for its mean cell, its header on two lines, and at least its longest word (which cannot wrap)."""
    words = [len(word) for text in (name, *cells) for word in text.split()] or [0]
    mean = sum(len(c) for c in cells) / len(cells) if cells else 0
    width = min(max(max(words), round(mean), len(name) // 2), WIDEST)
    dashes = "-" * max(width, 3)
    return dashes[:-1] + ":" if numeric else dashes


def _escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def folded(summary: str, markdown: str) -> str:
    """Markdown shown only when the reader opens it."""
    return f"<details><summary>{summary}</summary>\n\n{markdown}\n\n</details>"
