"""Where the answer page's words come from and where its links go: the five articles (data/articles.csv, copied from
the seeds' README), and each chapter's page, title and section ids, read from its .qmd so that a link never points at
a section that is not there."""
from __future__ import annotations

import functools
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness import DATA, ROOT, LabError
from harness.book.faces import chapter_name
from harness.book.verdict_tables import verdict_id

ARTICLES_CSV = DATA / "articles.csv"  # the articles' facts; not a measurement: always the committed file
CHAPTERS_DIR = ROOT / "chapters"
SECTION_ID = re.compile(r"\{[^}\n]*#(sec-[A-Za-z0-9_-]+)")
HEADING = re.compile(r"^# +(.+?)\s*(?:\{[^}]*\})?\s*$", re.M)


@dataclass(frozen=True)
class Article:
    seed: str  # the article's file number in the seeds (000 … 004): finding IDs start with it
    cite: str  # "Song 2023"
    title: str
    author: str
    date: str
    url: str
    where: str  # where on that address, when the address is not the page itself

    def link(self) -> str:
        return f"[{self.cite}]({self.url})"


@functools.cache
def articles(path: Path = ARTICLES_CSV) -> dict[str, Article]:
    """The articles by seed. The file's leading `#` lines name its source."""
    if not path.exists():
        raise LabError(f"{path} is missing: it lists the articles the book checks (copied from the seeds' README, seeds/README.md, which its header names)")
    rows = "".join(line for line in path.read_text().splitlines(keepends=True) if not line.startswith("#"))
    frame = pd.read_csv(io.StringIO(rows), dtype=str, keep_default_na=False)
    return {row.seed: Article(**row._asdict()) for row in frame.drop(columns=[], errors="ignore").itertuples(index=False)}


def chapter_page(chapter: str) -> Path:
    """chapters/NN-slug.qmd of `chapter3` …"""
    number = int(chapter.removeprefix("chapter"))
    pages = sorted(CHAPTERS_DIR.glob(f"{number:02d}-*.qmd"))
    if not pages:
        raise LabError(f"{chapter} has no page chapters/{number:02d}-*.qmd")
    return pages[0]


@functools.cache
def section_ids(chapter: str) -> tuple[str, ...]:
    """Every section id the chapter's page declares, its title's first."""
    return tuple(SECTION_ID.findall(chapter_page(chapter).read_text()))


def chapter_section(chapter: str) -> str:
    """The chapter's own id (its title's): `sec-from-300-to-15000`."""
    return section_ids(chapter)[0]


def chapter_title(chapter: str) -> str:
    match = HEADING.search(chapter_page(chapter).read_text())
    return match.group(1).strip() if match else chapter


def anchor(chapter: str, wanted: str) -> str:
    """`wanted` when the chapter's page has that section, else the chapter itself."""
    return wanted if wanted in section_ids(chapter) else chapter_section(chapter)


def verdict_link(chapter: str, finding: str) -> str:
    """A link to the finding's verdict on the chapter's page (harness.book.verdict_tables.verdict_id), from a page
    beside it in chapters/: "[Chapter 3](03-from-300-to-15000-users.qmd#verdict-f000-a)"."""
    return f"[{chapter_name(chapter)}]({chapter_page(chapter).name}#{verdict_id(finding)})"
