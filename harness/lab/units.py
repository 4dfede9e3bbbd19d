"""Durations and sizes as a spec writes them ("30s", "5m", "2g"), in ms and bytes."""
from __future__ import annotations

import re

# ASCII digits only (k6 reads no other), at most 12 a part: more is no duration a lab step could wait for (the load's
# checks bound them further).
DURATION = re.compile(r"^(?:(\d{1,12})h)?(?:(\d{1,12})m(?!s))?(?:(\d{1,12})s)?(?:(\d{1,12})ms)?$", re.ASCII)

MEMORY = re.compile(r"^([1-9]\d{0,12})([kmg])$", re.IGNORECASE | re.ASCII)

MEMORY_UNITS = {"k": 2**10, "m": 2**20, "g": 2**30}


def duration_ms(text: str) -> int:
    """k6 duration ('1m30s', '500ms', '5m') → milliseconds; ValueError when malformed."""
    match = DURATION.fullmatch(text) if isinstance(text, str) else None
    if not text or not match or not any(match.groups()):
        raise ValueError(f"{text!r} is not a duration like '30s', '5m' or '500ms'")
    h, m, s, ms = (int(g or 0) for g in match.groups())
    return ((h * 60 + m) * 60 + s) * 1000 + ms


def memory_bytes(text: str) -> int:
    """docker's memory size ('2g', '512m', '65536k') → bytes; ValueError when malformed."""
    match = MEMORY.fullmatch(text) if isinstance(text, str) else None
    if not match:
        raise ValueError(f"{text!r} is not a size like '2g' or '512m'")
    return int(match.group(1)) * MEMORY_UNITS[match.group(2).lower()]
