"""Every chapter's typed words against its data: where a sentence says "more than", "below", "every", "fewer than half"
beside a value the page computes, the word is a claim about that value. Each check below names the words as the page
types them (so rewording the sentence fails here until its check is looked at again) and asserts them on the values the
page's own cells compute from the committed data. Words computed by a function (prose.every, prose.of_all, the
chapters' words modules) are tested with those functions; these are the ones still typed."""
from __future__ import annotations

import ast
import re
from types import SimpleNamespace

import pytest

from harness import ROOT
from harness.book.chapters.ch2.values import overflow_table

import qmd  # noqa: I001 (tests/qmd.py: the page's cells)

# the steps of chapter 3's @fig-ch3-waves, as its cell names them
WAVES_STEPS = ast.literal_eval(re.search(r"climb\((\[[^\]]*\])\)",
                                         (ROOT / "chapters" / "03-from-300-to-15000-users.qmd").read_text())[1])
NEAR = 0.10  # "near" and "holds": within 10% of the model (the book's own tolerance for a model's number, F002-a)

# page → (words the page types, why they hold, the check on the page's values)
CHECKS = {
    "01-one-thread-one-request.qmd": [
        ("the runs here fell", "a full pool's runs fall short of the model, none beat it",
         lambda p: p.r.short_low >= 0),
        ("in flight wait for a thread at any moment", "some clients wait, not all",
         lambda p: 0 < p.q.waiting < p.q.clients),
        ("under half a sleep", "the medians are under half a sleep",
         lambda p: p.q.median_high_ms < p.q.half_sleep_s * 1000),
        ("is near Little's", "the mean latency is within 10% of Little's",
         lambda p: max(abs(p.q.mean_low_s / p.q.little_s - 1), abs(p.q.mean_high_s / p.q.little_s - 1)) < NEAR),
    ],
    "02-the-lab-and-its-limits.qmd": [
        ("connections, more than any N", "max-connections exceeds every N the hold-N steps ran",
         lambda p: p.o.room > overflow_table(p.data).users.max()),
        ("KiB more when the connection has a thread", "a thread of its own costs memory, beyond its error",
         lambda p: p.m.thread > p.m.thread_error),
    ],
    "03-from-300-to-15000-users.qmd": [
        ("a wave is exactly threads.max wide", "no stretch of any step of the waves figure held more answers than its "
         "threads, and one of each held that many",
         lambda p: all(w.widest == w.threads for w in map(p.ch3.waves, WAVES_STEPS))),
    ],
    "04-more-threads-more-throughput.qmd": [
        ("k6 never used more than", "k6 never used its whole core",
         lambda p: p.c.k6_most < 1),
        ("fewer than half its users", "the doubtful run's mean is under half of Little's",
         lambda p: p.little.claimed < 0.5),
        ("raised throughput from", "the article's doubled cores raised throughput",
         lambda p: p.a.scale_to_tps > p.a.scale_from_tps),
    ],
    "05-the-pool-behind-the-pool.qmd": [
        ("threads or more are far more than", "at least twice the threads as connections",
         lambda p: min(p.tomcat.threads) >= 2 * p.setup.pool),
        ("users never reach a max-connections of", "fewer users than the smallest max-connections",
         lambda p: p.tomcat.users < min(p.tomcat.connections)),
    ],
    "06-a-proxy-in-between.qmd": [
        ("the proxied service stalls", "through nginx without keep-alive, slower than either alone",
         lambda p: p.st.proxied < min(p.st.alone, p.st.nginx)),
        ("Every proxied request opened a connection to the service", "new upstream connections match the answers",
         lambda p: abs(p.st.proxied_new / p.st.proxied - 1) < NEAR),
    ],
    "07-past-thread-per-request.qmd": [
        ("users, below the open-files limit", "the judged users are below the open-files limit",
         lambda p: p.high < p.s.nofile),
        ("open files, below its", "the server's peak of open files is below its limit",
         lambda p: p.f.peak_open_files < p.s.nofile),
        ("well above the common default of 1,024", "this machine's open-files limit",
         lambda p: p.s.nofile > 1024),
    ],
}


def page_values(name: str) -> SimpleNamespace:
    return SimpleNamespace(**qmd.namespace(ROOT / "chapters" / name))


def prose(name: str) -> str:
    """The page's text outside its cells, on one line: a sentence is found whatever its line breaks."""
    text = re.sub(r"```\{python\}.*?```", "", (ROOT / "chapters" / name).read_text(), flags=re.S)
    return " ".join(text.split())


@pytest.mark.parametrize("page", sorted(CHECKS))
def test_the_typed_words_agree_with_the_pages_values(page):
    text = prose(page)
    gone = [words for words, _, _ in CHECKS[page] if words not in text]
    assert not gone, f"{page} no longer says {gone}: look at the sentence again, then at its check here"
    values = page_values(page)
    wrong = [f"{words!r}: {why}" for words, why, holds in CHECKS[page] if not holds(values)]
    assert not wrong, f"{page} says what its data does not: {wrong}"


def test_a_word_the_data_contradicts_fails():
    """The check can fail: chapter 7's limit of open files read as the common default of 1,024."""
    values = SimpleNamespace(s=SimpleNamespace(nofile=1024))
    assert not CHECKS["07-past-thread-per-request.qmd"][2][2](values)
