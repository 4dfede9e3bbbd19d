"""What every chapter's face (harness.book.chapters.chN, what its .qmd imports) gives the rest of the book: its claims
judged on the data being read (`judge()`, read by `invoke compare`, and by the answer page where no pass is kept yet:
it states the book's verdicts, every kept pass pooled, as each chapter's verdict table does) and the limits its data
shows (`limits()`, read by the answer page, which orders them as users grow). The answer page reads each chapter only
through these, so one function computes each number and both pages print the same. harness.book.chapters.face finds
a chapter's face by name."""
from __future__ import annotations

from dataclasses import dataclass

# The answer page's unit, the title's: a limit on throughput is read as the requests it lets be in service at once.
IN_SERVICE = "requests in service at once"
CHAPTERS = ("chapter1", "chapter2", "chapter3", "chapter4", "chapter5", "chapter6", "chapter7")


def chapter_name(chapter: str) -> str:
    """"Chapter 3" (what a cross-reference to it reads)."""
    return f"Chapter {int(chapter.removeprefix('chapter'))}"


@dataclass(frozen=True)
class Limit:
    """A limit a server meets as users grow, as one chapter measured it."""

    order: int  # where it binds as users grow: 1 first (the thread pool) … (open files, memory per connection)
    name: str  # "the thread pool", "the connection ceiling", "the database pool" …
    value: float  # its number, from data: how many requests (or connections) it holds at once, where it can say
    unit: str  # "requests in service at once", "connections", "KiB per connection" …
    sentence: str  # one sentence saying what binds and how, the number in it (computed, never typed)
    chapter: str  # "chapter3"
    anchor: str  # the section that shows the evidence: "sec-the-ceiling"
    rate: float | None = None  # the requests a second it allows, where `value` counts requests at once (Little's law)
