"""The references page: the five articles (data/articles.csv) with the findings each gives the book, and the chapters
that judge them (from the claims files, experiments/claims/)."""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch0.sources import articles, chapter_section
from harness.book.claims import rules
from harness.book.faces import CHAPTERS
from harness.book.prose import and_list
from harness.book.tables import markdown_table


def findings_by_article() -> dict[str, dict[str, list[str]]]:
    """Seed → finding → the chapters that judge it, in the claims files' order."""
    found: dict[str, dict[str, list[str]]] = {}
    for chapter in CHAPTERS:
        for rule in rules(chapter).values():
            chapters = found.setdefault(rule.seed, {}).setdefault(rule.finding, [])
            if chapter not in chapters:
                chapters.append(chapter)
    return {seed: dict(sorted(found[seed].items())) for seed in sorted(found)}


def span(ids: list[str]) -> str:
    """["F000-a", "F000-b", "F000-c"] → "F000-a … F000-c" (one id as it is)."""
    return ids[0] if len(ids) == 1 else f"{ids[0]} … {ids[-1]}"


def articles_table() -> Markdown:
    """One row per article: the seed, its title (linked), author, date, its findings and the chapters judging them."""
    by_article = findings_by_article()
    rows = []
    for seed, article in articles().items():
        findings = by_article.get(seed, {})
        chapters = list(dict.fromkeys(c for judged in findings.values() for c in judged))
        title = f"[{article.title}]({article.url})" + (f" ({article.where})" if article.where else "")
        rows.append({"Seed": seed, "Article": title, "Author": article.author, "Published": article.date,
                     "Findings": f"{len(findings)}: {span(list(findings))}" if findings else "–",
                     "Judged in": and_list(f"@{chapter_section(c)}" for c in chapters) or "–"})
    return Markdown(markdown_table(pd.DataFrame(rows)))
