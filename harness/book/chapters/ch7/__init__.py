"""Chapter 7, past thread-per-request: its face, what chapters/07-past-thread-per-request.qmd and the answer page
import (`from harness.book.chapters import ch7`).

- `judge()`: the chapter's claims (experiments/claims/chapter7.toml) judged on the data being read;
- `limits()`: what the data shows of the limits past a thread per request, for the answer page;
- `load()`, `steps_table(data)`: the steps as they ran (first runs), one row each;
- the values the prose quotes (`setup`, `one_wait`, `concurrency`, `pooled`, `thread_cost`, `resident`, `fifteen_k`,
  `past_limit`, `held_count`, `lost_unnamed`, `model_fit`), the charts and the tables.
"""
from __future__ import annotations

from harness.book.chapters.ch7.charts import answers_chart, concurrency_chart, limit_chart, thread_memory_chart
from harness.book.chapters.ch7.claims import JUDGED_USERS, judge
from harness.book.chapters.ch7.limits import ANCHORS, limits
from harness.book.chapters.ch7.runs import CHAPTER, steps_table
from harness.book.chapters.ch7.tables import client_table, download_frame, predictions_table, server_table
from harness.book.chapters.ch7.values import (concurrency, fifteen_k, held_count, lost_unnamed, model_fit, one_wait,
                                              past_limit, pooled, resident, setup, thread_cost)
from harness.book.chapters.ch7.words import (failed_above_sentence, fifteen_k_sentence, held_count_sentence,
                                             lost_unnamed_sentence, memory_sigma_sentence, one_wait_sentence,
                                             pooled_sentence, switches_sentence)
from harness.lab import store


def load() -> store.ChapterData:
    return store.load(CHAPTER)


__all__ = ["ANCHORS", "CHAPTER", "JUDGED_USERS", "answers_chart", "client_table", "concurrency", "concurrency_chart",
           "download_frame", "failed_above_sentence", "fifteen_k", "fifteen_k_sentence", "held_count",
           "held_count_sentence", "judge", "limit_chart", "limits", "load", "lost_unnamed", "lost_unnamed_sentence",
           "memory_sigma_sentence", "model_fit", "one_wait", "one_wait_sentence", "past_limit", "pooled", "pooled_sentence", "predictions_table", "resident",
           "server_table", "setup", "steps_table", "switches_sentence", "thread_cost", "thread_memory_chart"]
