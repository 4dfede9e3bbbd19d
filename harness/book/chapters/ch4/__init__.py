"""Chapter 4's face (`from harness.book.chapters import ch4`): what its .qmd calls, its claims judged (`judge()`) and
the limit its data shows (`limits()`), for the answer page and `invoke compare`."""
from __future__ import annotations

from harness.book.chapters.ch4 import words  # noqa: F401
from harness.book.chapters.ch4.article import article, article_table, little, little_table  # noqa: F401
from harness.book.chapters.ch4.charts import (  # noqa: F401
    burst_chart,
    burst_pool_chart,
    cpu_chart,
    latency_chart,
    open_chart,
    pairs_chart,
    threads_chart,
    throughput_chart,
)
from harness.book.chapters.ch4.claims import judge, judgements  # noqa: F401
from harness.book.chapters.ch4.runs import CHAPTER, PLATEAU, first_requests, run_table, steps_table  # noqa: F401
from harness.book.chapters.ch4.tables import (  # noqa: F401
    article_summary,
    little_fit,
    measured,
    predictions,
    runs_summary,
    switches_table,
)
from harness.book.chapters.ch4.values import (  # noqa: F401
    burst,
    burst_lesson,
    busy_at_once,
    cpu,
    few_threads,
    open_steps,
    plateau,
    pool,
    pool_samples,
    scale,
    setup,
    steps_count,
    switches,
    thread_pairs,
    usl,
)
from harness.book.faces import IN_SERVICE, Limit
from harness.lab import store
from harness.lab.store import ChapterData

ANCHOR = "sec-throughput-stops-at-the-core"  # the section that shows the CPU plateau


def load() -> ChapterData:
    return store.load(CHAPTER)


def limits() -> list[Limit]:
    """The CPU plateau: past the knee the server's cores, not its pool, cap throughput (first runs' plateau)."""
    data = load()
    table = steps_table(data)
    the_setup, the_plateau = setup(data, table), plateau(table.assign(run=1, window=PLATEAU))
    at_once = busy_at_once(the_setup, the_plateau)  # Little's law at the plateau: the measured knee
    sentence = (f"Once about {at_once:,.1f} requests are in service at once (Little's law: {the_plateau.tps:,.0f} a "
                f"second × ({the_setup.wait_ms:g} ms of waiting + {the_plateau.cpu_ms:.1f} ms of CPU) each), the "
                f"{the_setup.cores:g} core's 1,000 ms a second are spent and cap throughput whatever threads.max: the "
                f"server answered {the_plateau.tps:,.0f} requests per second, however many more users waited.")
    return [Limit(2, "the CPU", round(at_once, 1), IN_SERVICE, sentence, CHAPTER, ANCHOR, rate=round(the_plateau.tps))]
