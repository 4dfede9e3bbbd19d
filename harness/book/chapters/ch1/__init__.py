"""Chapter 1, one thread, one request (seed 002): its face, what chapters/01-one-thread-one-request.qmd and the answer
page import (`from harness.book.chapters import ch1`).

- `judge()`: the chapter's claims judged by experiments/claims/chapter1.toml's rules (ch1.claims);
- `limits()`: the limit its data shows, the thread pool's throughput (for the answer page);
- the numbers its prose quotes (ch1.values), its charts and tables (ch1.charts) and the words that depend on them.
"""
from __future__ import annotations

from harness.book.chapters.ch1.claims import judge
from harness.book.chapters.ch1.charts import (
    busy_chart,
    latency_chart,
    latency_table,
    little_table,
    predictions_table,
    rates_chart,
    rates_table,
)
from harness.book.chapters.ch1.runs import CHAPTER, pool_of, steps_with
from harness.book.chapters.ch1.values import busy, lesson, little, pace, premise, queue, rates, setup, steady_plateau
from harness.book.chapters.ch1.words import busy_over_words, pace_words, signed_mean_words, sleeps_words, tail_words
from harness.book.faces import IN_SERVICE, Limit
from harness.lab import store
from harness.lab.store import ChapterData

__all__ = ["judge", "limits", "load", "rate_steps", "phase_steps", "setup", "rates", "pace", "little",
           "queue", "busy", "premise", "lesson", "rates_chart", "latency_chart", "busy_chart", "predictions_table",
           "rates_table", "little_table", "latency_table", "pool_of", "sleeps_words", "tail_words", "pace_words",
           "busy_over_words", "signed_mean_words"]

POOL_ANCHOR = "sec-ch1-rates"  # the section that shows the pool's plateau


def load() -> ChapterData:
    return store.load(CHAPTER)


def rate_steps(data: ChapterData) -> ChapterData:
    """The smallest C's steps (one client): whether the rate holds over a whole run."""
    return data.only(steps_with(data, min(m["config"]["load"]["vus"] for m in data.steps.values())))


def phase_steps(data: ChapterData) -> ChapterData:
    """The k6 steps with the pool full and overfull (ab stamps starts to the second only, too coarse for 100 ms)."""
    pool = pool_of(data)
    return data.only(steps_with(data, lambda c: c >= pool.threads, tool="k6"))


def limits() -> list[Limit]:
    """The thread pool: its plateau, the mean steady rate of every run that kept it full."""
    pool, plateau = steady_plateau(load())
    sentence = (f"With {pool.threads:,} threads and requests that hold one for {pool.mean_service_ms / 1000:g} s on "
                f"average, the server answered {plateau:,.0f} requests per second however many clients beyond "
                f"{pool.threads:,} were waiting: threads ÷ time held = {pool.model_rps(pool.threads):,.0f}.")
    return [Limit(1, "the thread pool", pool.threads, IN_SERVICE, sentence, CHAPTER, POOL_ANCHOR, rate=plateau)]
