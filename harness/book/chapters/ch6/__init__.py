"""Chapter 6, a proxy in between (seed 003): its face, what chapters/06-a-proxy-in-between.qmd and the answer page
import (`from harness.book.chapters import ch6`).

- `judge()`: the chapter's claims judged by experiments/claims/chapter6.toml's rules (ch6.claims);
- `limits()`: the limit its data shows for the answer page: none of the thread pool's kind (a proxy's limits are its
  own: upstream connections and ports), so [];
- the step table (`table`: each step's numbers, the mean of its runs), the numbers its prose quotes (ch6.values), its
  charts (ch6.charts) and tables (ch6.tables).
"""
from __future__ import annotations

from harness.book.chapters.ch6.claims import judge
from harness.book.chapters.ch6.charts import connections_chart, cpu_chart, ports_chart, series_chart
from harness.book.chapters.ch6.runs import CHAPTER, mean_table
from harness.book.chapters.ch6.tables import handshake_table, model_table, steps_summary
from harness.book.chapters.ch6.values import (article, bottleneck, climb, handshake, hosts, setup, stall, variants,
                                              wall)
from harness.book.chapters.ch6.words import bottleneck_words, missed_words, ports_words, pooled_stall_words
from harness.book.faces import Limit
from harness.lab import store
from harness.lab.store import ChapterData

__all__ = ["judge", "limits", "load", "table", "article", "setup", "stall", "climb", "variants", "hosts",
           "wall", "bottleneck", "handshake", "series_chart", "connections_chart", "ports_chart", "cpu_chart",
           "steps_summary", "model_table", "handshake_table", "missed_words", "pooled_stall_words",
           "ports_words", "bottleneck_words"]


def load() -> ChapterData:
    return store.load(CHAPTER)


def table(data: ChapterData):
    """One row per step, each measured number the mean of its runs (ch6.runs.COLUMNS and `runs`)."""
    return mean_table(data)


def limits() -> list[Limit]:
    """None that the answer page orders as users grow: this chapter's limits are the proxy's (connections, ports)."""
    return []
