"""Chapter 3's charts on the reference data: valid Vega-Lite, every tooltip field and legend entry named in words,
no log axis, and the data they draw is the data's."""
from __future__ import annotations

import json

import pytest

from harness.book.chapters import ch3
from harness.book.chapters.ch3.charts import SERIES

CHARTS = {
    "waves": lambda: ch3.charts.climb(["a-300-pv", "b-1000-pv"]),
    "grace": lambda: ch3.charts.climb(["c-2000-cv-grace30s", "c-2000-cv-grace5m"], deadlines=True),
    "failures": lambda: ch3.charts.failures(["f-10k-pv", "h-10k-ct30000-pv"]),
    "connections": lambda: ch3.charts.connections(["f-10k-pv", "g-10k-mc20000-pv"]),
    "answers": lambda: ch3.charts.answers(["j-1-1-1-pv", "j-1-1-10-no-reuse"]),
}


def walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


@pytest.fixture(scope="module", params=list(CHARTS))
def spec(request) -> dict:
    return CHARTS[request.param]().to_dict(validate=True)


def test_every_tooltip_field_has_a_title(spec):
    tips = [t for node in walk(spec) if "tooltip" in node for t in
            (node["tooltip"] if isinstance(node["tooltip"], list) else [node["tooltip"]]) if isinstance(t, dict)]
    assert tips and all(t.get("title") for t in tips), [t for t in tips if not t.get("title")]


def test_legend_entries_are_words_from_the_books_series(spec):
    domains = [node["scale"]["domain"] for node in walk(spec) if node.get("field") == "series" and "scale" in node]
    assert domains and all(set(d) <= set(SERIES) for d in domains)
    assert not any(":" in name.split("(")[0] for d in domains for name in d)  # no "measured: ok"


def test_no_axis_is_logarithmic(spec):
    assert not [node for node in walk(spec) if node.get("type") == "log"]


def test_the_staircase_counts_every_answered_user():
    spec = CHARTS["waves"]().to_dict()
    rows = next(iter(spec["datasets"].values()))
    for step in ("a-300-pv", "b-1000-pv"):
        answered = [x["requests"] for x in rows if x.get("step") == step and x.get("series") == "answered"]
        assert max(answered) == ch3.claims.r.first(step).ok


def test_the_failures_chart_counts_every_failure():
    rows = next(iter(CHARTS["failures"]().to_dict()["datasets"].values()))
    for step in ("f-10k-pv", "h-10k-ct30000-pv"):
        drawn = sum(x["requests"] for x in rows if x.get("step") == step and x.get("kind") == "bars")
        assert drawn == ch3.claims.r.first(step).failed


def test_charts_stay_small():
    for name, build in CHARTS.items():
        assert len(json.dumps(build().to_dict())) < 200_000, name
