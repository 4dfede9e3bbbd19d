"""Chapter 2's computed sentences: on the committed data (numbers read here straight from data/chapter2's files and the
specs), and on synthetic data where each must say something else."""
import json
import tomllib

import pandas as pd
import pytest

from harness.lab import store
from harness import ROOT
from harness.lab.store import ChapterData, load
from harness.book.chapters import ch2_sentences as ch2
from harness.book.chapters.ch2_lab import issued_sentence
from harness.book.chapters.ch2_tables import ceilings, nofile_caps, somaxconn_caps

from test_calibration import MACHINE, chapter, meta, noise_data, spike, with_overflows  # noqa: I001

DATA = ROOT / "data" / "chapter2"


@pytest.fixture(scope="module")
def data():
    return load("chapter2")


def step_json(step: str) -> dict:
    return json.loads((DATA / step / "step.json").read_text())


def steps(prefix: str) -> list[str]:
    return sorted((p.name for p in DATA.glob(f"{prefix}*") if (p / "step.json").exists()),
                  key=lambda s: step_json(s)["config"]["load"].get("vus", 0))


def last_first_start_s(step: str) -> float:
    requests = store.read_parquet(DATA / step / "requests.parquet", "requests")
    return (requests.groupby("vu")["start_ms"].min().max() - requests["start_ms"].min()) / 1000


def replace(data: ChapterData, **changes) -> ChapterData:
    fields = {"steps": data.steps, "requests": data.requests, "ss": data.ss, "actuator": data.actuator,
              "process": data.process, "startup": data.startup} | changes
    return ChapterData(data.chapter, **fields)


def test_cores_come_from_the_machine(data):
    assert step_json("hold-300")["machine"]["cores"] == 2
    assert "share the same two cores" in ch2.cores_sentence(data)
    eight = chapter({300: 0.1}, {})
    eight = replace(eight, steps={s: m | {"machine": MACHINE | {"cores": 8}} for s, m in eight.steps.items()})
    assert "share the same eight cores" in ch2.cores_sentence(eight)


def test_setup_list_on_the_committed_steps(data):
    hold = steps("hold-")
    users = [f"{step_json(s)['config']['load']['vus']:,}" for s in hold]
    server = step_json(hold[0])["config"]["server"]
    spread = max(last_first_start_s(s) for s in hold)
    text = ch2.setup_list(data)
    assert f"N users ({', '.join(users[:-1])} and {users[-1]})" in text
    assert f"room for {server['TOMCAT_MAX_CONNECTIONS']:,} connections" in text
    assert f"sleeps {server['SLEEP_MS'] / 1000:g} s, longer than the {spread:.1f} s k6 needed" in text
    assert step_json("queue-300")["model"]["threads"] == 200 and "on Spring Boot's 200 threads" in text
    assert "k6 gives up after 30 s" in text and "`constant-vus` for 1 s" in text
    assert f"noise-1 … {len(steps('noise-'))}, unsampled-1 … {len(steps('unsampled-'))}" in text
    assert "10,000 users, 1,000 threads, max-connections 8,192" in text
    assert "every user answered 25 s after it arrived" in text


def test_setup_list_says_when_a_spike_outlasts_the_sleep():
    text = ch2.setup_list(chapter({300: 0.2, 3000: 30.0}, {}))  # the default sleep, 5 s
    assert "shorter than the 30.0 s k6 needed to start every user" in text


def test_starts_sentence(data):
    spreads = {step_json(s)["config"]["load"]["vus"]: last_first_start_s(s) for s in steps("hold-")}
    fast = [n for n, s in spreads.items() if s <= 1]
    text = ch2.starts_sentence(data)
    assert f"Up to {max(fast):,} users that takes less than 1 s on two cores" in text
    slow = [s for s in spreads.values() if s > 1]
    assert f"the users arrive over {min(slow):.1f}–{max(slow):.1f} s" in text
    assert f"as at {', '.join(f'{n:,}' for n, s in spreads.items() if s > 5)} users" in text


def test_starts_sentence_when_every_spike_is_fast():
    text = ch2.starts_sentence(chapter({300: 0.2, 3000: 0.8}, {}))
    assert "Up to 3,000 users that takes less than 1 s" in text and "No step's last user starts later" in text


def test_overflow_and_acceptor_sentences(data):
    overflows = {step_json(s)["config"]["load"]["vus"]: int(pd.read_parquet(DATA / s / "ss.parquet")["listen_overflows"].sum())
                 for s in steps("hold-")}
    first = min(n for n, count in overflows.items() if count > 0)
    assert f"yet from {first:,} users on the kernel counted" in ch2.overflow_sentence(data)
    cut = {step_json(s)["config"]["load"]["vus"]: step_json(s)["requests"]["interrupted"] for s in steps("cv-")}
    cut = {n: count for n, count in cut.items() if count}
    text = ch2.acceptor_sentence(data)
    assert "accept-count + 1 (101)" in text
    if cut:  # constant-vus steps whose late users k6 cut off at gracefulStop: named, with their counts
        assert f"The {', '.join(f'{c:,}' for c in cut.values())} requests cut off by k6" in text
        assert f"at {', '.join(f'{n:,}' for n in cut)} users" in text
    else:
        assert "cut off" not in text


def test_the_acceptor_sentence_names_the_requests_k6_cut_off():
    data = with_overflows(chapter({300: 0.1, 3000: 0.4}, {3000: 2500}), {"hold-3000": 50})
    cv = data.steps["cv-3000"]
    cut = cv | {"requests": cv["requests"] | {"interrupted": 120},
                "config": cv["config"] | {"load": cv["config"]["load"] | {"graceful_stop": "30s"}}}
    text = ch2.acceptor_sentence(replace(data, steps=data.steps | {"cv-3000": cut}))
    assert "The 120 requests cut off by k6 (`interrupted`) in the constant-vus step at 3,000 users" in text
    assert "within the 30 s `gracefulStop`" in text
    assert "cut off" not in ch2.acceptor_sentence(data)


def test_no_overflow_no_acceptor_story():
    quiet = with_overflows(chapter({300: 0.1, 1000: 0.2}, {}), {})
    assert "counted no accept-queue overflows" in ch2.overflow_sentence(quiet)
    assert ch2.acceptor_sentence(quiet) == ""


def test_repeats(data):
    assert f"cv-10000 ran {['no', 'one', 'two', 'three'][len(steps('again-cv-'))]} more times" in ch2.repeats_intro(data)
    assert ch2.repeats_intro(chapter({300: 0.1}, {10000: 3000})) == "No constant-vus step ran again yet."


def test_issued_sentence_when_the_executors_agree():
    data = chapter({10000: 0.5}, {10000: 10000})
    again = replace(data, steps=data.steps | {"again-cv-10000-1": meta("again-cv-10000-1", 10000, issued=10000)},
                    requests=pd.concat([data.requests, spike("again-cv-10000-1", 10000, 0.8)]))
    text = issued_sentence(again)
    assert "around the 10,000 users" in text and "start users at about the same pace" in text
    assert "more slowly" not in text


def test_sampler_setup_and_lag(data):
    interval = step_json("noise-1")["config"]["system"]["sample_interval_ms"]
    assert f"Every {interval:,} ms the samplers" in ch2.sampler_setup_sentence(data)
    assert "run three times with every sampler off" in ch2.sampler_setup_sentence(data)
    spreads = [last_first_start_s(s) for s in steps("noise-") + steps("unsampled-")]
    text = ch2.lag_sentence(data)
    assert f"k6 took {min(spreads):.1f}–{max(spreads):.1f} s to start the 10,000 users" in text
    assert "lag its 5 s steps" in text and "over the five sampled runs" in text


def test_lag_sentence_on_synthetic_runs():
    data = noise_data({"noise-1": 10, "noise-2": 14, "unsampled-1": 12}, {"noise-2": 0.4})
    data = replace(data, steps={s: m | {"model": m["model"] | {"service_ms": 5000}} for s, m in data.steps.items()})
    text = ch2.lag_sentence(data)
    assert "by 0.0–0.4 s" in text and "over the two sampled runs" in text


def test_somaxconn_is_raised_where_chapter_3s_spec_says():
    spec = tomllib.loads((ROOT / "experiments" / "chapter3.toml").read_text())
    raised = [s for s in spec["step"] if s.get("system", {}).get("raise_somaxconn")]
    assert {s["server"]["TOMCAT_ACCEPT_COUNT"] for s in raised} == {5000}
    text = somaxconn_caps("chapter3")
    assert text.endswith(f"chapter 3 raises it for its 15,000-user steps' accept-count 5,000 ({', '.join(s['id'] for s in raised)})")
    assert "2000" not in text and "2,000" not in text
    assert somaxconn_caps("chapter1").endswith("no step of chapter 1 raises it")


def test_open_files_and_ports(data):
    machine = step_json("hold-300")["machine"]
    assert f"at most {machine['nofile_limit'] - 200:,} users" in nofile_caps(data, "chapter3")
    assert nofile_caps(data, "chapter3").endswith("chapter 3's largest step has 15,000")
    low, high = (int(p) for p in machine["local_port_range"])
    assert f"at most {high - low + 1:,} connections at once" in ceilings(data, "chapter3")["local_port_range"][1]
