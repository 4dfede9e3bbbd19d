"""Cross-reference labels are the book's, not a chapter's: Quarto resolves @tbl-x to whichever page defines it, so a
label two pages define sends one page's reference into the other (chapter 4's "Table 7.1" once did)."""
import re
from collections import Counter

from harness import ROOT

LABEL = re.compile(r"^#\| label: ([a-z0-9-]+)|\{#([a-z0-9-]+)", re.M)


def labels(text: str) -> list[str]:
    return [a or b for a, b in LABEL.findall(text)]


def test_every_label_is_unique_book_wide():
    pages = sorted((ROOT / "chapters").glob("*.qmd")) + [ROOT / "index.qmd"]
    found = Counter(label for page in pages for label in labels(page.read_text()))
    assert len(found) > 100  # the pattern finds the book's labels at all
    assert [label for label, n in found.items() if n > 1] == []


def test_the_label_finder_reads_both_forms():
    assert labels("```{python}\n#| label: tbl-a\n```\n## Head {#sec-b}\n: caption {#tbl-c}") == ["tbl-a", "sec-b", "tbl-c"]
