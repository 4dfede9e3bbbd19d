"""The book's pages as _quarto.yml lists them, for the chapter tests (test_book) and the site tests (test_site)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness import ROOT

import qmd  # noqa: E402,I001  (beside this file: pytest puts tests/ on sys.path)

QUARTO_YML = ROOT / "_quarto.yml"
HEADING = re.compile(r"^# +(.+?)\s*(?:\{([^}]*)\})?\s*$", re.M)


def _flatten(items):
    for item in items or []:
        yield from _flatten(item["chapters"]) if isinstance(item, dict) else [item]


def book_chapters() -> list[str]:
    """Chapter sources in book order, from _quarto.yml (parts included), appendices last."""
    book = yaml.safe_load(QUARTO_YML.read_text())["book"]
    return [*_flatten(book["chapters"]), *_flatten(book.get("appendices"))]


def html_path(chapter: str) -> str:
    """Where Quarto renders a chapter, relative to the site root."""
    return Path(chapter).with_suffix(".html").as_posix()


@dataclass(frozen=True)
class Entry:
    chapter: str
    number: str | None  # "1", "2" … for chapters, "A", "B" … for appendices, None when unnumbered
    title: str


def first_heading(chapter: str) -> tuple[str, str]:
    """The first `# ` heading of a chapter (includes expanded): its text without {…}, and the {…} attributes."""
    match = HEADING.search(qmd.expand_includes(ROOT / chapter, ROOT))
    if not match:
        raise ValueError(f"{chapter} has no `# ` heading")
    return match.group(1).strip(), match.group(2) or ""


def table_of_contents() -> list[Entry]:
    """What the sidebar must show: the preface (index.qmd) and any {.unnumbered} chapter without a number,
    the other chapters numbered 1, 2, 3 … across parts, appendices lettered A, B …"""
    book = yaml.safe_load(QUARTO_YML.read_text())["book"]
    entries = []
    for chapters, label in ((_flatten(book["chapters"]), str), (_flatten(book.get("appendices")), _letter)):
        count = 0
        for chapter in chapters:
            title, attributes = first_heading(chapter)
            classes = attributes.split()
            if chapter == "index.qmd" or ".unnumbered" in classes or "-" in classes:
                entries.append(Entry(chapter, None, title))
            else:
                count += 1
                entries.append(Entry(chapter, label(count), title))
    return entries


def _letter(n: int) -> str:
    return chr(ord("A") + n - 1)
