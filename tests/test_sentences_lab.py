"""The lab appendix's and the preface's computed sentences: on the committed data (numbers read here straight from
data/'s files), and on synthetic steps where each must say something else."""
import json

import pytest

from harness.lab import store
from harness import ROOT
from harness.lab.store import ChapterData, load
from harness.book.provenance import duration_text, run_length_text
from harness.book.step_tables import ceiling_sentences, outcome_sentences, sampling_sentence, scale_sentence

SMOKE = ROOT / "data" / "smoke"


@pytest.fixture(scope="module")
def smoke():
    return load("smoke")


def step_json(chapter: str, step: str) -> dict:
    return json.loads((ROOT / "data" / chapter / step / "step.json").read_text())


def with_steps(data: ChapterData, change) -> ChapterData:
    """The same data with every step.json passed through `change`."""
    return ChapterData(data.chapter, {s: change(json.loads(json.dumps(m))) for s, m in data.steps.items()}, data.requests,
                       data.ss, data.actuator, data.process, data.startup)


def test_scale_sentence(smoke):
    waves = step_json("smoke", "waves")
    assert (waves["config"]["server"]["TOMCAT_MAX_THREADS"], waves["config"]["load"]["vus"]) == (2, 10)
    assert scale_sentence(smoke) == "`smoke`: two worker threads and ten users."

    def one(meta):
        meta["model"]["threads"], meta["config"]["load"]["vus"] = 1, 1
        return meta
    assert scale_sentence(with_steps(smoke, one)) == "`smoke`: one worker thread and one user."


def test_sampling_sentence(smoke):
    interval = step_json("smoke", "waves")["config"]["system"]["sample_interval_ms"]
    assert sampling_sentence(smoke).endswith(f"the smoke steps ran at {interval:,} ms.")
    assert "every 500 ms unless a step sets" in sampling_sentence(smoke)

    def faster(meta):
        meta["config"]["system"]["sample_interval_ms"] = 100
        return meta
    assert sampling_sentence(with_steps(smoke, faster)).endswith("ran at 100 ms.")


def test_outcome_sentences_on_the_smoke_run(smoke):
    waves = store.read_parquet(SMOKE / "waves" / "requests.parquet", "requests")
    ok = waves[(waves.status == 200) & (waves.error_code == 0)]
    sizes = ((ok.end_ms - waves.start_ms.min()) / 1000).round().value_counts()
    assert len(ok) == 10 and set(sizes) == {2} and len(sizes) == 5
    kept = store.read_parquet(SMOKE / "keep-alive" / "requests.parquet", "requests")
    failed = kept[kept.status != 200]
    assert len(failed) == 6 and set(failed.error) == {"request timeout"}
    text = outcome_sentences(smoke)
    assert "(`waves`), slots free after every response: all ten users are answered, in five waves of two." in text
    assert "the first four users keep their connections, and with them all four of Tomcat's slots," in text
    assert "the other six wait in the accept queue and in SYN retries until k6's 8 s timeout gives up on them" in text
    assert f"(6 request timeout at {((failed.end_ms - kept.start_ms.min()) / 1000).min():.1f} s)" in text


def test_outcome_sentences_when_the_failures_are_something_else(smoke):
    requests = smoke.requests.copy()
    refused = (requests.step == "keep-alive") & (requests.status == 0)
    requests.loc[refused, "error"] = "connection refused"
    requests.loc[refused, "error_code"] = 1212
    slow = requests[requests.step == "waves"]["end_ms"].idxmax()
    requests.loc[slow, "end_ms"] += 1000  # the last answer lands a wave later: waves of 2, 2, 2, 2, 1, 1
    changed = ChapterData(smoke.chapter, smoke.steps, requests, smoke.ss, smoke.actuator, smoke.process, smoke.startup)
    text = outcome_sentences(changed)
    assert "wait in the accept queue and in SYN retries and fail: 6 connection refused" in text
    assert "in waves of two, two, two, two, one, one" in text


def test_ceiling_sentences_fall_back_to_spring_defaults(smoke):
    def unset(meta):  # a step from before step.json recorded every knob (`knobs`), without these two in its spec
        for knob in ("TOMCAT_MAX_CONNECTIONS", "TOMCAT_ACCEPT_COUNT"):
            meta["config"]["server"].pop(knob, None)
        meta.pop("knobs", None)
        return meta
    text = ceiling_sentences(with_steps(smoke, unset))
    assert "max-connections 8,192, accept-count 100:" in text  # the book's number format
    assert "max-connections 4, accept-count 6:" in ceiling_sentences(smoke)


def test_run_length_of_chapter_3():
    metas = [json.loads(p.read_text()) for p in (ROOT / "data" / "chapter3").glob("*/step.json")]
    done = [m for m in metas if m.get("status") == "complete"]
    expected = f"{duration_text(sum(m.get('wall_s', 0) for m in done))} for its {len(done)} steps, start-up included"
    assert run_length_text("chapter3").startswith(expected)


def test_run_length_without_data(data_dir):
    assert run_length_text("chapter3") == "not measured yet"
