"""The articles' numbers the chapters quote (data/chapterN/article-numbers.csv): each row's value is in the words it
was copied from, so a number typed wrong, or moved to another row, shows; and chapter 3's reader gives them back."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from harness import DATA
from harness.book.chapters.ch3.article import article

FILES = sorted(DATA.glob("chapter*/article-numbers.csv"))


def spelled(value: float) -> set[str]:
    """The ways an article writes a number: 8293, 8,293, 10k, 9k."""
    whole = int(value) if float(value).is_integer() else None
    ways = {f"{value:g}"}
    if whole is not None:
        ways |= {str(whole), f"{whole:,}"} | ({f"{whole // 1000}k"} if whole % 1000 == 0 and whole >= 1000 else set())
    return ways


def test_there_are_files_to_check():
    assert [f.parent.name for f in FILES] == ["chapter3", "chapter6"]


@pytest.mark.parametrize("path", FILES, ids=[f.parent.name for f in FILES])
def test_every_value_is_in_the_words_it_was_copied_from(path):
    frame = pd.read_csv(path)
    assert list(frame.columns) == ["name", "value", "unit", "quote"]
    missing = [(row.name, row.value) for row in frame.itertuples()
               if not any(re.search(rf"(?<![\d,.]){re.escape(way)}(?![\d,])", row.quote) for way in spelled(row.value))]
    assert not missing, f"{path.name}: values not in their quotes: {missing}"


def test_a_value_not_in_its_quote_is_found():
    assert not any(re.search(rf"(?<![\d,.]){re.escape(w)}(?![\d,])", "only 8293 VUs") for w in spelled(8192))
    assert any(re.search(rf"(?<![\d,.]){re.escape(w)}(?![\d,])", "10k requests") for w in spelled(10000))


def test_chapter3_reads_the_articles_loads_and_arithmetic():
    a = article()
    assert a.users == (300, 1000, 2000, 3000, 6000, 10000, 15000)
    assert a.wave_users / a.wave_threads * a.sleep_s == a.last_wait_s  # its own arithmetic holds
    assert a.most_connections == a.max_connections + a.accept_count + 1  # "+1": the mystery it reports
    assert a.wave_text == "3,000 / 200 × 5 = 75 s"
