"""Tables for people (harness.book.tables) and the provenance lines every chapter opens with (harness.book.provenance)."""
import numpy as np
import pandas as pd
import pytest

from harness.book.provenance import versions_of, versions_text
from harness.book.tables import captioned, markdown_table, people_table


def rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in text.splitlines()]


def test_a_named_index_becomes_the_first_column_and_a_plain_one_is_dropped():
    frame = pd.DataFrame({"step": ["a", "b"], "users": [300, 15000]})
    assert rows(markdown_table(frame))[0] == ["step", "users"]
    assert rows(markdown_table(frame.set_index("step")))[0] == ["step", "users"]
    assert rows(markdown_table(frame))[2] == ["a", "300"]
    assert rows(markdown_table(frame.sort_values("users", ascending=False)))[0] == ["step", "users"]


def test_cells_read_as_words_and_numbers():
    frame = pd.DataFrame({"n": [1000, 20000], "x": [1.5, 10.0], "ok": [True, np.False_], "note": [None, "a | b"]})
    table = rows(markdown_table(frame))
    assert table[2] == ["1,000", "1.5", "yes", "–"]
    assert table[3] == ["20,000", "10.0", "no", "a \\| b"]


def test_a_column_has_one_number_of_decimals_and_whole_floats_none():
    frame = pd.DataFrame({"whole": [3.0, 1200.0], "mixed": [0.25, 2.0], "long": [1 / 3, 2.0]})
    table = rows(markdown_table(frame))
    assert [table[2], table[3]] == [["3", "0.25", "0.33"], ["1,200", "2.00", "2.00"]]


def test_an_int_column_with_a_gap_stays_whole():
    frame = pd.DataFrame({"peak": [8294, None]})  # pandas makes it float
    assert [r[0] for r in rows(markdown_table(frame))[2:]] == ["8,294", "–"]


def test_formats_per_column_and_unknown_columns_refused():
    frame = pd.DataFrame({"error": [0.123, -0.05]})
    assert [r[0] for r in rows(markdown_table(frame, {"error": "{:+.1%}"}))[2:]] == ["+12.3%", "−5.0%"]
    with pytest.raises(ValueError, match="errr"):
        markdown_table(frame, {"errr": "{}"})


def test_numbers_align_right_and_long_text_gets_the_room():
    frame = pd.DataFrame({"why": ["a reason that runs over many words " * 3] * 2, "n": [1, 2]})
    rule = markdown_table(frame).splitlines()[1].strip("|").split("|")
    assert rule[1].endswith(":") and not rule[0].endswith(":")
    assert len(rule[0]) > 4 * len(rule[1])


def test_no_cell_is_cut():
    text = "x" * 500
    assert text in markdown_table(pd.DataFrame({"long": [text]}))


def test_versions_name_only_the_tools_a_step_used():
    ab = {"versions": {"ab": "2.3", "java": "17.0.15", "spring_boot": "3.5.16"}}
    k6 = {"versions": {"k6": "v1.8.1", "java": "17.0.15", "spring_boot": "3.5.16"}}
    assert versions_of(ab) == "Java 17.0.15, Spring Boot 3.5.16, ab 2.3"
    assert versions_text({"ab-c1": ab, "k6-c1": k6}) == "Java 17.0.15, Spring Boot 3.5.16, k6 v1.8.1, ab 2.3"
    newer = {"versions": {**k6["versions"], "java": "21.0.2"}}
    assert versions_text({"a": k6, "b": newer}).startswith("Java 17.0.15 / 21.0.2,")


def test_load_words_names_every_executors_load():
    from harness.book.step_tables import load_words
    from harness.lab.load.options import resolve_load

    def words(**load):
        problems = []
        resolved = resolve_load(load, "t", problems)
        assert not problems, problems
        return load_words(resolved)

    assert words(vus=300) == "per-vu-iterations, 300 VUs × 1 iteration(s)"
    assert words(executor="constant-vus", vus=10, duration="1s") == "constant-vus, 10 VUs for 1s"
    assert words(executor="ramping-vus", stages=[{"duration": "1m", "target": 100}, {"duration": "2m", "target": 500}]) \
        == "ramping-vus, 100 → 500 VUs"
    assert words(executor="constant-arrival-rate", rate=3000, duration="3m", pre_allocated_vus=100, max_vus=400) \
        == "constant-arrival-rate, 3000 per 1s, up to 400 VUs"
    assert words(executor="ramping-arrival-rate", stages=[{"duration": "30s", "target": 1000}], pre_allocated_vus=50) \
        == "ramping-arrival-rate, 1000 per 1s, up to 50 VUs"


def test_versions_name_the_services_a_step_ran():
    step = {"versions": {"k6": "v1.8.1", "java": "17.0.15"},
            "services": {"db": {"kind": "postgres", "version": "17.6"}, "proxy": {"kind": "nginx", "version": "1.22.1"}}}
    assert versions_of(step) == "Java 17.0.15, k6 v1.8.1, PostgreSQL 17.6, nginx 1.22.1"


def test_numbers_formatted_elsewhere_get_a_minus_sign_and_no_signed_zero():
    frame = pd.DataFrame({"change": [-0.05, -0.0001, 0.0001, 0.25]})
    assert [r[0] for r in rows(markdown_table(frame, {"change": "{:+.1%}"}))[2:]] == ["−5.0%", "0.0%", "0.0%", "+25.0%"]
    assert [r[0] for r in rows(markdown_table(pd.DataFrame({"x": [-2.5, -0.001]})))[2:]] == ["−2.50", "0.00"]


def test_columns_of_numbers_as_text_align_right_and_words_left():
    frame = pd.DataFrame({"rate": ["8,293", "86%"], "time": ["120\u00a0ms", "3\u00a0min 7\u00a0s"], "missing": ["1.5 s", None],
                          "step": ["a-300", "b-1000"], "mixed": ["12", "twelve"]})
    rule = markdown_table(frame).splitlines()[1].strip("|").split("|")
    assert [cell.endswith(":") for cell in rule] == [True, True, True, False, False]


def test_a_captioned_table_is_numbered_and_labelled_for_cross_references():
    text = people_table(pd.DataFrame({"n": [1]}), caption="What  each\nstep did", label="ch3-steps").data
    assert text.endswith("| 1 |\n\n: What each step did {#tbl-ch3-steps}\n")
    assert captioned("| a |\n|---|\n| b |", "Plain", "tbl-plain").data.endswith(": Plain {#tbl-plain}\n")
    assert captioned("| a |\n|---|\n| b |", "Unlabelled").data.endswith(": Unlabelled\n")
    with pytest.raises(ValueError, match="lower-case"):
        captioned("| a |", "Bad", "Steps Table")


def test_every_data_folder_of_the_preface_names_the_page_that_reads_it():
    from harness.book.provenance import chapter_pages

    pages = chapter_pages()  # the committed data/: each chapter's folder, and the report example's
    assert pages["chapter3"] == "@sec-from-300-to-15000"
    assert pages["report@sample-server"] == "@sec-your-server"  # read by Appendix B, which has no Reproduce box
