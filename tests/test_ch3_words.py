"""Chapter 3's words that follow the data (harness.book.chapters.ch3.words), each branch on synthetic values, and the
values they read, on the reference data, against the step files read on their own."""
from __future__ import annotations

from types import SimpleNamespace

from harness.book.chapters import ch3
from harness.book.chapters.ch3 import words
from harness.book.chapters.ch3.ceiling import Fix, Repeats
from harness.book.prose import NBSP
from harness.lab import store


def test_a_count_over_runs_is_said_once_when_every_run_gave_it():
    assert words.per_run((1707, 1707), "in every run", "a run") == "1,707 in every run"
    assert words.per_run((1500, 1707, 1645), "in every run", "a run") == "1,500 to 1,707 a run"


def test_the_headline_repeats_say_a_range_only_when_the_runs_differ():
    same = words.repeats_text((8293,) * 9, (0,) * 9, 1707)
    assert same == "Every run answered 8,293: none of the 1,707 users beyond the ceiling got in"
    assert "to 8,293" not in same and "at most" not in same
    assert words.repeats_text((8300, 8300), (7, 7), 1707) == (
        "Every run answered 8,300: 7 of the 1,707 users beyond the ceiling got in each time")
    assert words.repeats_text((8293, 8393), (0, 100), 1707) == (
        "The answered ranged from 8,293 to 8,393: at most 100 of the 1,707 users beyond the ceiling got in")
    assert words.repeats_text((8200, 8293), (-93, 0), 1707).endswith(": none of the 1,707 users beyond the ceiling got in")


def test_the_timeouts_cause_says_where_a_run_got_the_next_wave_in():
    """d-3000-t200-pv's third run answered 2,396, nearly 12 waves of 200, where "only 11 waves end before 60 s, so the
    rest time out" said none could."""
    assert words.waves_before_timeout(11, 200, 60, 60, (2150, 2200)) == "Only 11 waves end before k6's 60 s, so the rest time out"
    assert words.waves_before_timeout(11, 200, 60, 60, (2204, 2223, 2396)) == (
        "Only 11 waves end before k6's 60 s, and the next is due at 60 s: every run got answers of that wave too "
        "before the timeout, and the rest timed out")
    assert words.waves_before_timeout(11, 200, 60, 60, (2200, 2396)).endswith(": 1 of the 2 runs got answers of that "
                                                                             "wave too before the timeout, and the rest timed out")


def step(name: str, *changes: str) -> SimpleNamespace:
    return SimpleNamespace(step=name, changes=changes)


def test_the_isolating_steps_say_which_change_more_than_one_thing():
    one = [step("a", "keep-alive"), step("b", "threads.max")]
    assert words.isolating_changes("f", one) == "Two more steps each change one thing of `f` to test this"
    assert words.isolating_changes("f", one[:1]) == "One more step changes one thing of `f` to test this"
    mixed = one + [step("c", "threads.max", "keep-alive")]
    assert words.isolating_changes("f", mixed) == (
        "Three more steps change `f` to test this, each one thing but `c`, which changes two: threads.max and keep-alive")
    two = mixed + [step("d", "accept-count", "keep-alive")]
    assert words.isolating_changes("f", two).endswith(
        "each one thing but `c` (threads.max and keep-alive) and `d` (accept-count and keep-alive)")
    every = [step("c", "threads.max", "keep-alive"), step("d", "accept-count", "keep-alive")]
    assert "each one" not in words.isolating_changes("f", every)
    assert words.isolating_changes("f", one + [step("e")]).endswith("but `e`, which changes none of its settings")


def test_the_isolating_steps_changes_are_their_settings_against_the_headline_steps():
    steps = store.complete_steps("chapter3")
    base = steps["f-10k-pv"]["config"]
    for i in ch3.isolating():
        config = steps[i.step]["config"]
        differ = {k for k in ("TOMCAT_MAX_THREADS", "TOMCAT_CONNECTION_TIMEOUT")
                  if config["server"].get(k) != base["server"].get(k)}
        assert ("threads.max" in i.changes) == ("TOMCAT_MAX_THREADS" in differ)
        reuse = config["load"].get("connection_reuse", True)
        assert ("keep-alive" in i.changes) == ("TOMCAT_CONNECTION_TIMEOUT" in differ or not reuse)


def test_the_longer_grace_names_each_step_and_covers_every_run():
    alike = words.answered_in_runs({"a": (2000,) * 5, "b": (2000,)}, 2000)
    assert alike == "2,000 of 2,000 in every run: the five of `a` and the one of `b`"
    differ = words.answered_in_runs({"a": (1303, 2000), "b": (2000,)}, 2000)
    assert differ == "1,303 and 2,000 of 2,000 in the two runs of `a`; 2,000 of 2,000 in the one run of `b`"
    assert words.answered_in_runs({"a": (1990,) * 3, "b": (2000,)}, 2000).startswith(
        "1,990 of 2,000 in each of the three runs of `a`")
    assert words.last_answer((50.4, 50.97)) == f"50.4–51.0{NBSP}s"
    assert words.last_answer((50.71, 50.69)) == f"50.7{NBSP}s"
    g = ch3.grace()
    runs = {s: sorted((n for n in store.complete_steps("chapter3") if store.run_of(n)[0] == s), key=store.run_of)
            for s in g.long_answered}
    assert {s: len(v) for s, v in g.long_answered.items()} == {s: len(n) for s, n in runs.items()}
    assert len(g.long_longest_s) == len(g.long_counts) == sum(map(len, runs.values()))


def test_the_cores_come_from_the_machine_records():
    assert words.machine_cores((2,)) == "this machine's two cores"
    assert words.machine_cores((1,)) == "this machine's one core"
    assert words.machine_cores((2, 4)) == "these machines' 2 to 4 cores"
    recorded = {m["machine"]["cores"] for m in store.complete_steps("chapter3").values()}
    assert set(ch3.setup().cores) == recorded


def fix(dial: int, request: int) -> Fix:
    return Fix("h", "connection-timeout 30 s", "30 s", 10_000, 8293, (8293,), 8293, 101, dial, request, 61.0, 0)


def repeats(dial=(1500, 1707, 1645), request=(207, 0, 62)) -> Repeats:
    return Repeats(len(dial), 1, 1, (8293,) * len(dial), (0,) * len(dial), 1707, (8293,), request, dial, (0,))


def test_each_failure_count_of_the_30_s_run_stands_beside_its_own_range():
    text = ch3.timeout_effect(fix(1586, 121), repeats())
    assert "against 8,293 in each of the 3 runs at 20 s." in text and "8,293 to 8,293" not in text
    assert ("Nor did it change how the others failed: 1,586 gave up connecting (1,500 to 1,707 a run at 20 s) and 121 "
            "waited until k6's request timeout (0 to 207 a run).") in text
    outside = ch3.timeout_effect(fix(1400, 100), repeats())
    assert "How the others failed: 1,400 gave up connecting" in outside and "Nor did" not in outside
    alike = ch3.timeout_effect(fix(1707, 0), repeats(dial=(1707, 1707), request=(0, 0)))
    assert "1,707 gave up connecting (1,707 in every run at 20 s)" in alike and "(0 in every run)" in alike


def test_the_machines_of_the_headline_steps_runs_are_compared_by_their_cpus():
    """Chapter 2's runs of f-10k-pv lend chapter 3 their spread: the pages say whether they ran on the same CPUs."""
    from harness.book.provenance import machines_compared

    amd = {"machine": {"cores": 2, "cpu_model": "AMD EPYC"}}
    intel = {"machine": {"cores": 2, "cpu_model": "Intel Xeon"}}
    assert machines_compared({"a": amd}, {"b": amd}, "this chapter", "chapter 2") == "on the same CPUs, 2 cores (AMD EPYC)"
    assert machines_compared({"a": intel}, {"b": amd, "c": amd}, "this chapter", "chapter 2") == (
        "on other CPUs: chapter 2's on 2 cores (AMD EPYC), this chapter's on 2 cores (Intel Xeon)")
    assert machines_compared({}, {"b": amd}, "chapter 3", "this chapter") == (
        "on CPUs this book cannot compare: chapter 3 has no runs of it here")


def test_the_book_says_chapter_2s_headline_runs_ran_on_other_cpus_than_chapter_3s():
    from harness.book.chapters import ch3
    from harness.lab.store import complete_steps

    cpus = {c: {m["machine"]["cpu_model"] for n, m in complete_steps(c).items()
                if n.startswith("f-10k-pv") or m.get("config", {}).get("same_as") == "chapter3:f-10k-pv"}
            for c in ("chapter2", "chapter3")}
    assert ch3.repeats_machines().startswith("on the same CPUs" if cpus["chapter2"] == cpus["chapter3"] else "on other CPUs")
