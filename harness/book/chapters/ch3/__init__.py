"""Chapter 3's face: what chapters/03-from-300-to-15000-users.qmd uses (values, tables, charts, the claims judged)
and what the answer page reads (`judge()`, `limits()`)."""
from harness.book.chapters.ch3 import charts, tables, words  # noqa: F401
from harness.book.chapters.ch3.article import article  # noqa: F401
from harness.book.chapters.ch3.ceiling import (  # noqa: F401
    ceiling,
    fifteen,
    fixes,
    isolating,
    isolation_text,
    keep_alive_decides,
    limits,
    one_connection,
    other_errors,
    plus_one,
    repeats,
    repeats_machines,
    timeout_effect,
)
from harness.book.chapters.ch3.claims import judge  # noqa: F401
from harness.book.chapters.ch3.runs import HEADLINE  # noqa: F401
from harness.book.chapters.ch3.values import (  # noqa: F401
    counts, executors, grace, repeated_steps, runs_word, setup, timeout_clock_words, timeouts, waves,
)
