"""The book's chapters, one package each: chN is a chapter's face (what its .qmd imports, and what the rest of the
book reads of it: harness.book.faces) with its modules beside it. `face` finds one by name, for what reads every
chapter (the answer page, `invoke compare`)."""
from __future__ import annotations

import importlib

from harness import LabError


def face(chapter: str):
    """A chapter's face module (chapter3 → harness.book.chapters.ch3), or a LabError saying it has none."""
    number = chapter.removeprefix("chapter")
    if not chapter.startswith("chapter") or not number.isdigit():
        raise LabError(f"not a chapter: {chapter!r} (chapter1 … chapter7)")
    name = f"{__name__}.ch{number}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name != name:  # the chapter exists; something it imports does not
            raise
        raise LabError(f"{chapter} has no face module (harness/book/chapters/ch{number})") from None
