"""Numbers as computed sentences write them: small counts in words, percentages and ranges the way the book prints
them ("9–12 %"), lists of levels ("1, 10, 100 and 500").
"""
from __future__ import annotations

WORDS = dict(enumerate(["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]))


def words(n: float) -> str:
    """A small whole number in words ("nine"), a larger one in digits ("1,000")."""
    return WORDS.get(round(n), f"{n:,.0f}") if float(n).is_integer() else f"{n:,g}"


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def percent(share: float, sign: str = "") -> str:
    """0.093 → "9 %"; below one percent one decimal ("0.4 %"); sign="+" writes "+9 %" and "−9 %"."""
    text = f"{abs(share) * 100:.0f}" if round(abs(share) * 100) >= 1 or abs(share) < 0.0005 else f"{abs(share) * 100:.1f}"
    return ("−" if share < 0 else sign if share > 0 else "") + text + " %"


def span(values, fmt=percent, unit: str = "") -> str:
    """"9–12 %" or "0.9 s": the range of values as the reader needs it, one number when they round alike."""
    low, high = fmt(min(values)), fmt(max(values))
    if low == high:
        return low + unit
    parts = low.split(" ")
    return (f"{parts[0]}–{high}" if len(parts) == 2 and high.endswith(parts[1]) else f"{low}–{high}") + unit


def and_list(items) -> str:
    """["a", "b", "c"] → "a, b and c" (items as they are, in order)."""
    items = [str(item) for item in items]
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def listed(levels) -> str:
    """[500, 1, 10] → "1, 10 and 500"."""
    return and_list(f"{c:,}" for c in sorted(levels))


def times(ratio: float) -> str:
    return f"{words(round(ratio))} times" if abs(ratio - round(ratio)) < 0.05 else f"{ratio:.1f} times"
