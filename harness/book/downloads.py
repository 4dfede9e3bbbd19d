"""A reader can get the data: each chapter's steps and claim values as CSV files served with the page, and a link to
the chapter's data folder in the repository.

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
from harness.lab import store

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


def data_links(chapter: str, tables: dict[str, pd.DataFrame]) -> Markdown:
    """One line for a chapter's page: each table as a CSV file the site serves (`<chapter>-<name>.csv`, its columns as
    the frame has them, numbers unformatted; linked as "the <name> as CSV") and the chapter's data folder in the
    repository."""
    bad = [n for n in (chapter, *tables) if not NAME.match(n)]
    if bad:
        raise ValueError(f"data_links({chapter!r}): {bad}: lower-case letters, digits, '-', '_' and '.' only")
    links = [f"[the {name} as CSV]({csv_file(chapter, table, name)}){{download=\"{file_name(chapter, name)}\"}}"
             for name, table in tables.items()]
    return Markdown(f"Get the data: {' · '.join(links)} · {folder_link(chapter)}.")


def file_name(chapter: str, name: str) -> str:
    return f"{chapter}-{name}.csv"


def csv_file(chapter: str, table: pd.DataFrame, name: str) -> str:
    """Where the page links `table` as CSV: written beside the page inside a render, nowhere outside one."""
    page = quarto_document()
    support = page.with_name(f"{page.stem}_files") if page else Path("outside-a-render")
    if page:
        target = support / "data" / file_name(chapter, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(target, index=any(n is not None for n in table.index.names))
    return f"{support.name}/data/{file_name(chapter, name)}"


def step_records(chapter: str) -> pd.DataFrame:
    """Every complete step of the chapter's data, one row each, from its step.json: what it asked and got, when it
    ran, how long it took, how busy the machine was besides, and the commit it ran from."""
    rows = []
    for step, meta in store.complete_steps(chapter).items():
        counts = meta.get("requests") or {}
        rows.append({"step": step, "why": meta.get("why"),
                     "started": pd.to_datetime(meta.get("started_ms"), unit="ms", utc=True),
                     "wall_s": meta.get("wall_s"),
                     **{k: counts.get(k) for k in ("asked", "issued", "succeeded", "failed", "interrupted",
                                                   "dropped_iterations")},
                     "outside_cpu_share": (meta.get("outside_cpu") or {}).get("share"),
                     "git_commit": meta.get("git_commit")})
    return pd.DataFrame(rows)
