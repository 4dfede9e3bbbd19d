"""The shared calls a page may import at once (`from harness.book.page import *`: the preface and the lab appendix do;
chapters import their own face, harness.book.chapters.chN, and the few shared modules they use by name).

It gives `load(chapter)`, the shared chart builders and tables, `reproduce_box(chapter)`,
`verdict_table(verdicts)` and the capacity explorer. Logic lives in those modules; this file only gathers them.
"""
from __future__ import annotations

import altair as alt
import pandas as pd
from IPython.display import Markdown

from harness.book.analysis import throughput_table
from harness.book.charts import (
                                            busy_threads_chart,
                                            completion_rate_chart,
                                            completions_chart,
                                            connections_chart,
                                            failures_chart,
                                            latency_ecdf_chart,
                                            rps_chart,
                                            ss_timeline_chart,
)
from harness.book.explorer import capacity_explorer, explorer_measured
from harness.book.provenance import first_run_sentence, machines_table, readme_commands, reproduce_box
from harness.book.downloads import data_links
from harness.book.tables import captioned, people_table
from harness.book.step_tables import (
                                            ceiling_sentences,
                                            completion_table,
                                            outcome_sentences,
                                            peaks_table,
                                            sampling_sentence,
                                            scale_sentence,
                                            steps_table,
)
from harness.book.verdict import verdict_table
from harness.lab.store import ChapterData, load

__all__ = [
    "alt", "pd", "Markdown", "load", "ChapterData", "reproduce_box", "readme_commands", "machines_table", "first_run_sentence",
    "verdict_table", "data_links", "captioned", "people_table",
    # shared charts and tables
    "completions_chart", "ss_timeline_chart", "busy_threads_chart", "rps_chart", "latency_ecdf_chart",
    "completion_rate_chart", "failures_chart", "connections_chart", "throughput_table",
    "steps_table", "peaks_table", "completion_table", "ceiling_sentences", "outcome_sentences", "sampling_sentence",
    "scale_sentence",
    # the capacity explorer (the answer page and chapter 3)
    "capacity_explorer", "explorer_measured",
]
