"""What the article reports (seed 003), as data/chapter6/article-*.csv keep it (their source: article.md there): its
numbers and its client's per-second series with keepalive 8."""
from __future__ import annotations

import pandas as pd

from harness import DATA

ARTICLE = DATA / "chapter6"


def article_numbers() -> dict[str, float]:
    frame = pd.read_csv(ARTICLE / "article-numbers.csv")
    return dict(zip(frame["name"], frame["value"], strict=True))


def article_series() -> pd.DataFrame:
    return pd.read_csv(ARTICLE / "article-series.csv")
