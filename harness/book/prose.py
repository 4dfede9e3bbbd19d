"""The book's one number format, for sentences, tables (harness.book.tables) and the Reproduce box alike.

- Counts with thousands separators: 8,293 (never 8293), small counts in words where a sentence wants them (`words`).
- Decimals as few as the number needs, the same in a table column; a true minus sign (−3.5), and never "−0.0".
- Percentages without a space, as the charts (d3's "%") and Python's "{:.0%}" write them: 86%, 0.4%, −9%, +9%.
- A unit after a no-break space, so a line never ends between a number and its unit: 120 ms, 2.5 s, 1.2 GiB.

Charts use the same conventions through their formats (harness.book.chart_style: thousands separators, d3's minus).
"""
from __future__ import annotations

import math
import re
from decimal import Decimal

WORDS = dict(enumerate(["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]))
MINUS = "\u2212"  # "−", not the hyphen "-"
NBSP = "\u00a0"  # between a number and its unit


def number(value: float, decimals: int = 0) -> str:
    """1234.5 → "1,234.5" (decimals=1); a true minus sign; a value that rounds to zero has no sign."""
    rounded = round(float(value), decimals)
    text = f"{abs(rounded):,.{decimals}f}"
    return (MINUS if rounded < 0 else "") + text


def count(n: float) -> str:
    """A count: 8293 → "8,293" (a whole float too: 8293.0 → "8,293")."""
    return number(n, 0)


# A whole number of four digits or more standing alone in a text (not part of a word, an id, a decimal, a version, a
# date or a URL's "=2000"), other than a year: what `in_book_style` formats. A year is 19xx or 20xx but not a round
# hundred: the book cites no year 1900 or 2000, while "all 2000 answered" is a count.
YEAR = r"(?:19|20)(?!00)\d\d"
BARE_NUMBER = re.compile(rf"(?<![\w.,/:#=\u2212-])(?!{YEAR}\b)\d{{4,}}(?![\w.,]?\d)")
SPACED_PERCENT = re.compile(r"(?<=\d)[ \u00a0\u202f]%")
# "max-connections-4000, -6000, -8000": a list of step names that share a stem, the stem written once.
ELIDED_STEPS = re.compile(r"\b([a-z][\w]*(?:-[a-z]\w*)*-)(\d+)((?:, -\d+)+)")


def in_book_style(text: str) -> str:
    """A text written elsewhere (a claims file's rule, kept byte for byte in its digest) in the book's number format:
    bare counts with separators ("at most 8293 connections" → "8,293"), no space before a percent sign ("37 %" →
    "37%"), and step names in full where the text elides their stem ("max-connections-4000, -6000" →
    "max-connections-4000, max-connections-6000", whose "-6000" would read as a minus). Years and ids stay as they are."""
    text = ELIDED_STEPS.sub(lambda m: m.group(1) + m.group(2) + m.group(3).replace(", -", ", " + m.group(1)), text)
    return SPACED_PERCENT.sub("%", BARE_NUMBER.sub(lambda m: count(int(m.group())), text))


SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def significant(value: float, digits: int = 3) -> str:
    """A measured value to `digits` significant digits, trailing zeros dropped: 1.5, 0.0123, 1,234 (whole digits are
    kept), 0.000971; below a ten-thousandth, where Python's "g" writes "4.4e-05", as a power of ten: 4.4 × 10⁻⁵."""
    size = abs(float(value))
    if 0 < size < 1e-4:
        mantissa, exponent = f"{size:.{digits - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
        text = f"{mantissa} × 10{str(int(exponent)).translate(SUPERSCRIPTS)}"
    else:
        text = f"{size:,.0f}" if size >= 10 ** (digits - 1) else f"{size:,.{digits}g}"
    return (MINUS if value < 0 and float(text.split(" ")[0].replace(",", "")) != 0 else "") + text


def plain(value: float) -> str:
    """A value as it was set, with the decimals it has (up to six digits in all): 5 → "5", 0.25 → "0.25", 8192 →
    "8,192", 1e-05 → "0.00001": for settings and model inputs, where "5.0 s" would claim a precision nobody measured."""
    digits = Decimal(f"{float(value):.6g}")
    return number(value, max(0, -digits.as_tuple().exponent))


def signed(value: float, decimals: int = 0) -> str:
    """+1,234.5 or −27: a difference or a margin with its sign always shown (none on a value that rounds to zero)."""
    text = number(value, decimals)
    return text if text.startswith(MINUS) or float(text.replace(",", "")) == 0 else "+" + text


def differences(low: float, high: float, unit: str, more: str, less: str) -> str:
    """Differences from `low` to `high` in words that follow their signs: "27 to 2,503 ms slower" when all are above 0,
    "5 to 40 ms faster" when all are below, "between 798 ms faster and 5,055 ms slower" when they straddle it."""
    def amount(v):
        return with_unit(abs(v), unit)
    if low > 0:
        return f"{number(low)} to {amount(high)} {more}"
    if high < 0:
        return f"{number(-high)} to {amount(low)} {less}"
    return f"between {amount(low)} {less} and {amount(high)} {more}"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """A count with its noun: 1 run, 3 runs, 1,000 runs (`nouns` where adding an s is wrong)."""
    return f"{count(n)} {noun if n == 1 else nouns or noun + 's'}"


def every(counts, total: int, noun: str, verb: str = "was answered") -> str:
    """Whether each run got all of `total`, in words that follow the counts: "every user was answered" when every
    count is the total, "no user was answered" when every one is 0, "not every user was answered" otherwise."""
    counts = list(counts)
    which = "every" if all(c == total for c in counts) else "no" if not any(counts) else "not every"
    return f"{which} {noun} {verb}"


def of_all(n: int, total: int, nouns: str) -> str:
    """"all 1,000 threads" when `n` reached `total`, "900 of the 1,000 threads" when it did not."""
    return f"all {count(total)} {nouns}" if n >= total else f"{count(n)} of the {count(total)} {nouns}"


def words(n: float) -> str:
    """A small whole number in words ("nine"), a larger one in digits ("1,000")."""
    return WORDS.get(round(n), count(n)) if float(n).is_integer() else f"{n:,g}"


def cores_text(n: int) -> str:
    """A machine's cores in words: "one core", "two cores", "12 cores"."""
    return "one core" if n == 1 else f"{words(n)} cores"


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def percent(share: float, sign: str = "") -> str:
    """0.093 → "9%"; below one percent one decimal ("0.4%"); sign="+" writes "+9%" (and "−9%" always)."""
    value = abs(share) * 100
    text = f"{value:.0f}" if round(value) >= 1 or value < 0.05 else f"{value:.1f}"
    shown = float(text) != 0
    return (MINUS if share < 0 and shown else sign if share > 0 and shown else "") + text + "%"


def how_many_times(low: int, high: int | None = None) -> str:
    """How many times something ran, in words: "once", "twice", "five times", "three to seven times" from the fewest
    to the most (`high`) where they differ."""
    high = low if high is None else high
    if low != high:
        return f"{words(low)} to {words(high)} times"
    return {0: "never", 1: "once", 2: "twice"}.get(low, f"{words(low)} times")


def percent_at_most(share: float) -> str:
    """A share as `percent` writes it, but never above it: where rounding up would print more ("99%" for 0.9864, "100%"
    for 0.9962), floored to one decimal ("98.6%", "99.6%"), for a least share or one short of all."""
    text = percent(share)
    if float(text.rstrip("%").replace(MINUS, "-").lstrip("+")) <= share * 100 + 1e-9:
        return text
    floored = math.floor(round(abs(share) * 1000, 6)) / 10
    return f"{MINUS if share < 0 else ''}{floored:.1f}%"


def percent_at_least(share: float) -> str:
    """A positive share as `percent` writes it, but never below it: where rounding down would print less ("2%" for
    0.0244), ceiled to one decimal ("2.5%"), for a most share ("at most 2.5% of a core")."""
    text = percent(share)
    if float(text.rstrip("%")) >= share * 100 - 1e-9:
        return text
    return f"{math.ceil(round(share * 1000, 6)) / 10:.1f}%"


def printed_alike(own, book) -> bool:
    """Whether two sets of counts read the same as the page prints them (whole, with separators)."""
    return all(count(a) == count(b) for a, b in zip(own, book, strict=True))


def with_unit(value: float, unit: str, decimals: int = 0) -> str:
    """"120 ms", "1,200 MiB": the number, a no-break space, the unit."""
    return number(value, decimals) + NBSP + unit


def ms(value: float) -> str:
    """Milliseconds: whole ones from 10 ms on ("120 ms", "1,250 ms"), one decimal below ("2.5 ms")."""
    return with_unit(value, "ms", 0 if abs(value) >= 10 else 1)


def seconds(value: float) -> str:
    """Seconds: one decimal below 10 s ("2.5 s"), whole ones from there ("42 s", "1,800 s")."""
    return with_unit(value, "s", 0 if abs(value) >= 10 else 1)


def duration(seconds_: float) -> str:
    """How long something took, for people: "12.5 s", "3 min 7 s", "1 h 2 min"."""
    if seconds_ < 60:
        return with_unit(seconds_, "s", 1)
    minutes, secs = divmod(round(seconds_), 60)
    if minutes < 60:
        return f"{minutes}{NBSP}min {secs}{NBSP}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}{NBSP}h {minutes}{NBSP}min"


def span(values, fmt=percent, unit: str = "") -> str:
    """"9–12%" or "0.9 s": the range of values as the reader needs it, one number when they round alike."""
    low, high = fmt(min(values)), fmt(max(values))
    if low == high:
        return low + unit
    suffix = next((s for s in ("%", NBSP + "ms", NBSP + "s") if low.endswith(s) and high.endswith(s)), "")
    return f"{low[:len(low) - len(suffix)]}–{high}{unit}"


def and_list(items) -> str:
    """["a", "b", "c"] → "a, b and c" (items as they are, in order)."""
    items = [str(item) for item in items]
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def listed(levels) -> str:
    """[500, 1, 10] → "1, 10 and 500"."""
    return and_list(count(c) for c in sorted(levels))


def times(ratio: float) -> str:
    return f"{words(round(ratio))} times" if abs(ratio - round(ratio)) < 0.05 else f"{ratio:.1f} times"
