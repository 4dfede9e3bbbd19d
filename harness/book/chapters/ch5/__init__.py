"""Chapter 5, the pool behind the pool (seed 001): its face, what chapters/05-the-pool-behind-the-pool.qmd and the
rest of the book read. `judge()` judges the chapter's claims (experiments/claims/chapter5.toml) on the data being
read; `limits()` gives the answer page the limit this chapter measures, HikariCP's pool.

The modules behind it, named as in every chapter: runs (one row per run, read from each run's recorded config),
claims (one statistic per claim), values (the numbers the text quotes), words, tables, charts.
"""
from __future__ import annotations

from harness.book.chapters.ch5 import values
from harness.book.chapters.ch5.charts import (apis_chart, final_chart, gc_chart, pool_chart, timeline_chart,
                                              tomcat_chart)
from harness.book.chapters.ch5.runs import runs_table, steps_table
from harness.book.chapters.ch5.tables import (article_apis_table, article_runs_table, inside_table, model_table,
                                              outcome_table)
from harness.book.chapters.ch5.claims import judge
from harness.book.faces import Limit
from harness.lab.store import complete_steps

OPEN_IN_VIEW_SECTION = "sec-ch5-open-in-view"

__all__ = ["judge", "limits", "runs_table", "steps_table", "values", "article_apis_table", "article_runs_table", "model_table", "outcome_table",
           "inside_table", "apis_chart", "pool_chart", "timeline_chart", "tomcat_chart", "gc_chart", "final_chart"]


def limits() -> list[Limit]:
    """HikariCP's pool: with open-in-view on (Spring Boot's default), each event stream keeps a connection for its
    life, and the pool carries pool ÷ hold time requests a second; [] when the steps that show it are not in the data."""
    if not {values.SMALL_POOL, values.FREED} <= set(complete_steps("chapter5")):
        return []
    o = values.open_in_view(steps_table(runs_table()))
    sentence = (f"A request that needs the database borrows one of HikariCP's {o.pool} connections; with Spring Boot's "
                "default open-in-view each pair-programming room's event stream kept one for as long as it stayed "
                f"open, so a use held one {o.held_ms:,.0f} ms on average over every use, and the pool carried "
                f"{o.held_tps:,.1f} requests a second (its bound, {o.pool} ÷ the hold time: {o.held_bound:,.1f}), where the same server answered {o.freed_tps:,.0f} a second with "
                "open-in-view off.")
    return [Limit(2, "the database pool (HikariCP)", o.pool, "requests holding a connection at once", sentence,
                  "chapter5", OPEN_IN_VIEW_SECTION, rate=round(o.held_tps, 1))]
