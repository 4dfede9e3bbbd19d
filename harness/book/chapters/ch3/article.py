"""What the article reports (seed 000), as data/chapter3/article-numbers.csv keeps it (its source: article.md there):
the loads it sent, its endpoint and Tomcat settings, its own arithmetic for the last wave, the most users it saw
answered at 10,000."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness import DATA
from harness.book.prose import count

ARTICLE_NUMBERS = DATA / "chapter3" / "article-numbers.csv"


@dataclass(frozen=True)
class Article:
    users: tuple[int, ...]  # its loads, in its order
    sleep_s: float  # its endpoint's service time
    max_connections: int
    accept_count: int
    wave_threads: int  # its arithmetic for the last wave: wave_users / wave_threads × sleep_s = last_wait_s
    wave_users: int
    last_wait_s: float
    most_connections: int  # "only 8293 VUs were successful"

    @property
    def wave_text(self) -> str:
        """Its arithmetic as it writes it, in the book's numbers: "3,000 / 200 × 5 = 75 s"."""
        return f"{count(self.wave_users)} / {count(self.wave_threads)} × {self.sleep_s:g} = {self.last_wait_s:g} s"


def article() -> Article:
    frame = pd.read_csv(ARTICLE_NUMBERS)
    one = {name: value for name, value in zip(frame["name"], frame["value"], strict=True) if name != "users"}
    return Article(users=tuple(int(v) for v in frame.loc[frame["name"] == "users", "value"]),
                   sleep_s=float(one["sleep_s"]), max_connections=int(one["max_connections"]),
                   accept_count=int(one["accept_count"]), wave_threads=int(one["wave_threads"]),
                   wave_users=int(one["wave_users"]), last_wait_s=float(one["last_wait_s"]),
                   most_connections=int(one["most_connections"]))
