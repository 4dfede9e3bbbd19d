"""A reader can get the data: each chapter's step table as a CSV file served with the page, and links to the chapter's
data folder in the repository.

The CSV is written while Quarto runs the page, into the page's own support folder (`<page>_files/data/`): Quarto
copies that folder into the site beside the page, and keeps it with the page's frozen output (harness.book.
render_cache), so the link works offline and after a render that did not run the page. Outside a render (a test
running a chapter's cells) nothing is written, and the CSV link leads nowhere.

The repository's address is _quarto.yml's `book.repo-url` (with `repo-branch`), the one place it is written: the
site's "Edit this page" and "Report an issue" links come from there too. Until the book says where it is published
there is no address: the folder is then named, not linked (a made-up address would be a broken link).
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import yaml
from IPython.display import Markdown

from harness import ROOT
from harness.book.render_cache import quarto_document

NAME = re.compile(r"^[a-z0-9][a-z0-9_@.-]*$")


def repository(quarto_yml: Path = ROOT / "_quarto.yml") -> tuple[str, str] | None:
    """The repository's address and branch from _quarto.yml, or None where it names none."""
    book = yaml.safe_load(quarto_yml.read_text())["book"]
    return (book["repo-url"].rstrip("/"), book.get("repo-branch", "main")) if book.get("repo-url") else None


def folder_link(chapter: str, text: str = "`data/{chapter}/` in the repository") -> str:
    """The chapter's data folder as a Markdown link to it in the repository (its name alone when there is none)."""
    where = repository()
    if where is None:
        return text.format(chapter=chapter)
    url, branch = where
    return f"[{text.format(chapter=chapter)}]({url}/tree/{branch}/data/{chapter})"


def data_links(chapter: str, table: pd.DataFrame, name: str = "steps") -> Markdown:
    """One line for under a chapter's step table: the table as CSV (`<chapter>-<name>.csv`, every column as the table
    has it, numbers unformatted) and the chapter's data folder in the repository."""
    if not (NAME.match(chapter) and NAME.match(name)):
        raise ValueError(f"data_links({chapter!r}, name={name!r}): lower-case letters, digits, '-', '_' and '.' only")
    file = f"{chapter}-{name}.csv"
    page = quarto_document()
    support = page.with_name(f"{page.stem}_files") if page else Path("outside-a-render")
    if page:
        target = support / "data" / file
        target.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(target, index=any(n is not None for n in table.index.names))
    href = f"{support.name}/data/{file}"
    return Markdown(f"Get the data: [this table as CSV]({href}){{download=\"{file}\"}} · {folder_link(chapter)}.")

