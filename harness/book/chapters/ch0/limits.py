"""The answer itself: the limits a server meets as its users grow, in the order they bind, each with its number and
its sentence from the chapter that measured it (its face's limits()) and a link to the evidence; and what could not
be shown."""
from __future__ import annotations

from IPython.display import Markdown

from harness.book.chapters.ch0.gather import Answer
from harness.book.chapters.ch0.sources import anchor, chapter_section, chapter_title
from harness.book.faces import chapter_name
from harness.book.faces import Limit
from harness.book.prose import and_list
from harness.book.verdict_tables import number


def limit_item(limit: Limit) -> str:
    """One limit as a list item: its name and number in bold (requests at once, as the title asks, and the rate they
    allow beside where the limit has one), the chapter's sentence, the link to its section."""
    name = limit.name[:1].upper() + limit.name[1:]
    rate = f", {number(limit.rate, 'requests/s')}" if limit.rate is not None else ""
    return (f"**{name}: {number(limit.value, limit.unit)}{rate}.** {limit.sentence} "
            f"(@{anchor(limit.chapter, limit.anchor)})")


def limits_intro(answer: Answer) -> str:
    """Which data the list's numbers come from, and which the findings table's: this edition's run of each chapter,
    against each chapter's kept passes pooled (as many as its verdicts pool, counted from them)."""
    pooled = {read.chapter: max(j.measured.passes for j in read.judgements) for read in answer.reads
              if read.judgements}
    many = {chapter: n for chapter, n in pooled.items() if n > 1}
    said = "Each number in this list is from the data of this edition's run of its chapter"
    if not many:
        return f"{said}; the findings table further down judges each chapter's kept pass, or that run where none is kept."
    if len(set(many.values())) == 1 and len(many) == len(pooled):
        passes = f"each chapter's {next(iter(many.values()))} kept passes"
    else:
        others = " and judges the other chapters on one" if len(many) < len(pooled) else ""
        passes = "the kept passes of " + and_list(f"{chapter_name(c)} ({n})" for c, n in many.items()) + others
    return (f"{said}; the findings table further down pools {passes}, so where a limit and a claim measure the same "
            "thing their numbers can differ by the spread between passes.")


def limits_list(answer: Answer) -> Markdown:
    """The limits as a numbered list, first to bind first."""
    limits = answer.limits
    if not limits:
        return Markdown("*No chapter's limits could be computed yet: see the note below.*")
    return Markdown("\n".join(f"{n}. {limit_item(limit)}" for n, limit in enumerate(limits, start=1)))


def missing_note(answer: Answer) -> Markdown:
    """A note naming each chapter the page could not read, and why; nothing when every chapter answered."""
    missing = answer.missing
    if not missing:
        return Markdown("")
    lines = [f"- {chapter_name(c)}, *{chapter_title(c)}* (@{chapter_section(c)}): {why}" for c, why in missing.items()]
    return Markdown("::: {.callout-note}\n## Not shown yet\n\nThis page is computed from every chapter's data; these "
                    "chapters could not give it all they measure, so some limits and findings are missing above and "
                    "below:\n\n"
                    + "\n".join(lines) + "\n:::")
