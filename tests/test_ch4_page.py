"""Chapter 4's page on the reference data: its cells run, every inline value it writes is a number or word (never
"nan"), and the numbers its sentences quote agree with the data read another way (straight from the step files)."""
from __future__ import annotations

import re

import pytest

from harness import ROOT
from harness.lab import store
from harness.lab.store import answered

import qmd  # noqa: I001 (tests/qmd.py: the page's cells)

PAGE = ROOT / "chapters" / "04-more-threads-more-throughput.qmd"
INLINE = re.compile(r"`\{python\} ([^`]+)`")


@pytest.fixture(scope="module")
def page() -> dict:
    """The namespace the page's cells leave behind (what its inline values read)."""
    return qmd.namespace(PAGE)


def test_every_inline_value_is_written(page):
    text = PAGE.read_text()
    expressions = INLINE.findall(text)
    assert len(expressions) == len(re.findall(r"(?<!`)`\{python\}", text)), "an inline value spans lines or holds a backtick"
    written = {expression: str(eval(expression, page)) for expression in expressions}  # noqa: S307
    bad = {e: w for e, w in written.items() if not w or re.search(r"\bnan\b|\bNone\b|\binf\b", w)}
    assert not bad, bad


def plateau_rate(data: store.ChapterData, step: str, first: int = 15, last: int = 39) -> float:
    """Answered requests per second over the plateau, straight from the per-second outcomes."""
    outcomes = data.outcomes[(data.outcomes.step == step) & data.outcomes.second.between(first, last - 1)]
    return outcomes[answered(outcomes)]["requests"].sum() / (last - first)


def test_the_plateau_and_its_800_users_are_the_datas(page):
    data = store.load("chapter4")
    steps = ("sweep-20", "sweep-50", "sweep-100", "sweep-200")
    assert page["p"].tps == pytest.approx(sum(plateau_rate(data, s) for s in steps) / len(steps))
    runs = [store.load_run("chapter4", s) for s in ["sweep-800"] + [f"sweep-800.{k}" for k in range(2, 1 + len(data.runs["sweep-800"]))]]
    assert page["p"].held_tps == pytest.approx(sum(plateau_rate(r, next(iter(r.steps))) for r in runs) / len(runs))
    assert page["p"].alone_tps == pytest.approx(plateau_rate(data, "sweep-2"))


def test_the_switches_per_request_are_the_step_files(page):
    data = store.load("chapter4")
    for step, threads in (("sweep-800", 200), ("threads-800-800", 800)):
        metas = data.runs[step]
        per_request = [m["during_load"]["server"]["voluntary"] / m["requests"]["issued"] for m in metas]
        assert page["sw"][threads].voluntary == pytest.approx(sum(per_request) / len(per_request))
        assert page["sw"][threads].runs == len(metas)


def test_the_bursts_first_requests_are_the_request_files(page):
    data = store.load("chapter4")
    means = {}
    for step in ("burst-spare-10", "burst-spare-400"):
        first = data.requests[data.requests.step == step].sort_values("start_ms").drop_duplicates("vu")
        means[step] = first["duration_ms"].mean()
    first_pair = means["burst-spare-10"] - means["burst-spare-400"]
    assert page["b"].difference_low <= first_pair + 1e-9 and first_pair <= page["b"].difference_high + 1e-9
    assert page["b"].failed == sum(m["requests"]["failed"] for s in ("burst-spare-10", "burst-spare-400")
                                   for m in data.runs[s])


def test_the_cpu_limit_reads_in_requests_at_once_with_its_rate_beside():
    """The answer page's unit (issue 41): the CPU's limit is the requests in service at once that keep it busy, the
    plateau's rate times the time each spends in service (Little's law), with that rate beside it."""
    from harness.book.chapters import ch4

    (limit,) = ch4.limits()
    assert limit.unit == "requests in service at once" and limit.rate > 0
    assert f"about {limit.value:,.1f} requests are in service at once" in limit.sentence
    assert f"answered {limit.rate:,.0f} requests per second" in limit.sentence
    assert 1 < limit.value < 100  # a few requests keep one core busy: 40 ms of waiting on a few ms of CPU


def test_the_burst_lesson_says_only_what_f004_d1_decided():
    from harness.book.chapters.ch4.values import burst_lesson
    from harness.book.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

    assert burst_lesson(REPRODUCED).startswith("**Raise min-spare")
    assert "cannot tell a warm pool from a cold one" in burst_lesson(INCONCLUSIVE)
    assert burst_lesson(NOT_REPRODUCED).startswith("**min-spare decides how many threads are ready")
