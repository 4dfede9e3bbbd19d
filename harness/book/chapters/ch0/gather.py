"""Every chapter read through its face (harness.book.faces): the limits its data shows and its claims judged. A chapter
with no face yet, no data, or data its face cannot read is kept with the reason, so the answer page says what it
could not show and still renders."""
from __future__ import annotations

from dataclasses import dataclass

from harness import LabError
from harness.book import chapters
from harness.book.claims import Judgement
from harness.book.faces import CHAPTERS, Limit
from harness.book.verdict_tables import book_verdicts
from harness.lab import store


@dataclass(frozen=True)
class Read:
    """What the answer page got from one chapter."""

    chapter: str
    limits: tuple[Limit, ...] = ()
    judgements: tuple[Judgement, ...] = ()  # the book's verdicts: every kept pass pooled, else the data's own
    missing: str = ""  # why nothing came ("" when the face answered)


@dataclass(frozen=True)
class Answer:
    reads: tuple[Read, ...]

    @property
    def limits(self) -> list[Limit]:
        """Every chapter's limits in the order they bind as users grow (ties: in chapter order)."""
        every = [limit for read in self.reads for limit in read.limits]
        return sorted(every, key=lambda limit: (limit.order, CHAPTERS.index(limit.chapter)))

    @property
    def judgements(self) -> dict[str, Judgement]:
        """Every judged claim of the book by its id."""
        return {j.rule.claim: j for read in self.reads for j in read.judgements}

    @property
    def missing(self) -> dict[str, str]:
        """Chapter → why it gave nothing."""
        return {read.chapter: read.missing for read in self.reads if read.missing}


def has_data(chapter: str) -> bool:
    """Any step written for the chapter (whether its face can read them is the face's to say)."""
    return any((store.data_root() / chapter).glob(f"*/{store.STEP_FILE}"))


def read(chapter: str, judged: bool = True) -> Read:
    """The chapter's limits and judgements, each asked of its face on its own: one failing leaves the other
    (`judged` False: the limits alone, for a page that states no verdict; judging is most of a chapter's reading)."""
    if not has_data(chapter):
        return Read(chapter, missing=f"no data yet (`invoke run {chapter}` measures it)")
    try:
        face = chapters.face(chapter)
    except LabError as err:
        return Read(chapter, missing=first_line(err))
    answers, problems = {}, []
    for name in ("limits", "judge") if judged else ("limits",):
        try:
            answers[name] = tuple(getattr(face, name)())
        except LabError as err:  # broken data, a step the face needs is missing …
            problems.append(first_line(err))
    # as the chapter's verdict table states them
    verdicts = book_verdicts(chapter, list(answers.get("judge", ()))) if judged else []
    return Read(chapter, answers.get("limits", ()), tuple(verdicts), "; ".join(dict.fromkeys(problems)))


def first_line(err: LabError) -> str:
    """A LabError's first line: what went wrong (the lines after it list every step, for the terminal)."""
    return str(err).splitlines()[0]


def answer(judged: bool = True) -> Answer:
    """Every chapter's face, read once for the page (`judged` False: their limits alone)."""
    return Answer(tuple(read(chapter, judged) for chapter in CHAPTERS))
