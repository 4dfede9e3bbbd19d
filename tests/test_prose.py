"""The book's one number format (harness.book.prose): counts, decimals, percentages, units, durations, ranges."""
import pytest

from harness.book.prose import (count, differences, duration, ms, number, percent, plain, seconds, significant, span,
                                with_unit, words)

NBSP = "\u00a0"


def test_counts_have_thousands_separators_whatever_their_type():
    assert [count(8293), count(8293.0), count(15_000_000), count(7)] == ["8,293", "8,293", "15,000,000", "7"]


def test_a_negative_number_has_a_minus_sign_and_a_zero_none():
    assert number(-3.25, 1) == "\u22123.2"  # Python rounds half to even, like every other format here
    assert [number(-0.04, 1), number(-0.0), number(0.04, 1)] == ["0.0", "0", "0.0"]


def test_a_setting_keeps_the_decimals_it_has_and_no_more():
    assert [plain(5), plain(5.0), plain(0.25), plain(0.1 + 0.2), plain(8192)] == ["5", "5", "0.25", "0.3", "8,192"]
    assert [plain(1e-05), plain(2_000_000.0), plain(-1.5)] == ["0.00001", "2,000,000", "\u22121.5"]


def test_a_measured_value_keeps_three_significant_digits_and_never_an_e():
    assert [significant(1.5), significant(0.012345), significant(1234.5), significant(42.123)] == \
        ["1.5", "0.0123", "1,234", "42.1"]
    assert [significant(4.4e-05, 2), significant(7.3e-05), significant(-0.00001234)] == \
        ["4.4 × 10⁻⁵", "7.3 × 10⁻⁵", "\u22121.23 × 10⁻⁵"]
    assert [significant(0), significant(-0.00004), significant(-0.000649)] == ["0", "\u22124 × 10⁻⁵", "\u22120.000649"]


def test_differences_are_worded_by_their_signs():
    assert differences(27, 2503, "ms", "slower", "faster") == f"27 to 2,503{NBSP}ms slower"
    assert differences(-40, -5, "ms", "slower", "faster") == f"5 to 40{NBSP}ms faster"
    assert differences(-798.4, 5055.4, "ms", "slower", "faster") == \
        f"between 798{NBSP}ms faster and 5,055{NBSP}ms slower"


@pytest.mark.parametrize(("share", "sign", "text"), [
    (0.86, "", "86%"), (0.093, "", "9%"), (0.004, "", "0.4%"), (0.0, "", "0%"), (0.0001, "", "0%"),
    (-0.09, "", "\u22129%"), (0.09, "+", "+9%"), (-0.0001, "+", "0%"), (1.824, "", "182%"),
])
def test_one_percent_style(share, sign, text):
    assert percent(share, sign) == text


def test_a_unit_follows_its_number_after_a_no_break_space():
    assert with_unit(1200, "MiB") == f"1,200{NBSP}MiB"
    assert [ms(120), ms(2.54), ms(1250)] == [f"120{NBSP}ms", f"2.5{NBSP}ms", f"1,250{NBSP}ms"]
    assert [seconds(2.5), seconds(42.4), seconds(1800)] == [f"2.5{NBSP}s", f"42{NBSP}s", f"1,800{NBSP}s"]


def test_durations_read_as_people_say_them():
    assert duration(12.46) == f"12.5{NBSP}s"
    assert duration(187) == f"3{NBSP}min 7{NBSP}s"
    assert duration(3725) == f"1{NBSP}h 2{NBSP}min"


def test_ranges_share_their_unit():
    assert span([0.09, 0.12]) == "9–12%"
    assert span([0.091, 0.094]) == "9%"
    assert span([2.5, 3.25], seconds) == f"2.5–3.2{NBSP}s"


def test_small_counts_in_words_large_ones_in_digits():
    assert [words(0), words(9), words(1000), words(2.5)] == ["no", "nine", "1,000", "2.5"]


def test_a_text_written_elsewhere_gets_the_books_number_style_and_nothing_else_changes():
    from harness.book.prose import in_book_style

    assert in_book_style("at most 8293 connections (8192 + 100 + 1), 20000 users") == \
        "at most 8,293 connections (8,192 + 100 + 1), 20,000 users"
    assert in_book_style("pool 10 against 20 (+37 %); 98.25\u00a0% at 150") == "pool 10 against 20 (+37%); 98.25% at 150"
    assert in_book_style("TPS of max-connections-4000, -6000, -8000 (3 runs each); mc-8000, -6000; 3 runs") == \
        "TPS of max-connections-4000, max-connections-6000, max-connections-8000 (3 runs each); mc-8000, mc-6000; 3 runs"
    assert in_book_style("answers all 2000 by 50 s; threads.max (2000)") == "answers all 2,000 by 50 s; threads.max (2,000)"
    same = ("in 2023, on 2026-11-27, v1.8.1, step f-10k-cv, 1234.5 ms, 1,200 users, F000-c.2a, port:8080, #4096, "
            "up to 5 % of a core, a-300-pv, 1-5 s, /every-nth?sleepMs=2000, Little 1961")
    assert in_book_style(same) == same.replace("5 %", "5%")


def test_a_signed_number_always_shows_its_sign_but_zero_has_none():
    from harness.book.prose import signed

    assert [signed(34242.2, 1), signed(-27), signed(2503), signed(0.04, 1), signed(-0.04, 1)] == \
        ["+34,242.2", "\u221227", "+2,503", "0.0", "0.0"]


def test_every_no_or_not_every_follows_the_counts():
    from harness.book.prose import every

    assert every([2000, 2000], 2000, "user") == "every user was answered"
    assert every([1303, 2000], 2000, "user") == "not every user was answered"
    assert every([0, 0], 2000, "user") == "no user was answered"
    assert every([5], 5, "request", "came back") == "every request came back"


def test_all_or_how_many_of_them_follows_the_count():
    from harness.book.prose import of_all

    assert of_all(1000, 1000, "threads") == "all 1,000 threads"
    assert of_all(900, 1000, "threads") == "900 of the 1,000 threads"


def test_a_share_is_never_printed_above_itself():
    """"never less than 99% of its core" for 0.9864, and "(100%)" beside "it never ran out" for 28,125 of 28,232."""
    from harness.book.prose import percent_at_most

    assert percent_at_most(0.9864) == "98.6%" and percent_at_most(0.98999) == "98.9%"
    assert percent_at_most(28125 / 28232) == "99.6%" and percent_at_most(0.99999) == "99.9%"
    assert percent_at_most(0.99) == "99%" and percent_at_most(0.994) == "99%" and percent_at_most(0.5) == "50%"
    assert percent_at_most(1.0) == "100%"


def test_a_most_share_is_never_printed_below_itself():
    """"The samplers take at most 3% of a core" for 0.0244 read "at most 2%"."""
    from harness.book.prose import percent_at_least

    assert percent_at_least(0.0244) == "2.5%" and percent_at_least(0.0251) == "3%" and percent_at_least(0.02) == "2%"
    assert percent_at_least(0.004) == "0.4%" and percent_at_least(0.0041) == "0.5%" and percent_at_least(0.9951) == "100%"
