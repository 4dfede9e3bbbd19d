"""The few words of chapter 6 whose wording, not only their numbers, depends on the data."""
from __future__ import annotations

from harness.book.chapters.ch6.model import MODEL_MISS
from harness.book.chapters.ch6.values import Bottleneck
from harness.book.prose import and_list, percent


def missed_words(bottleneck: Bottleneck) -> str:
    """The steps CPU 1 limited that the model's CPU bound overestimates, or that there are none."""
    if not bottleneck.missed:
        return f"Every step CPU 1 limited answered within {percent(MODEL_MISS)} of the model's CPU bound, or above it."
    return (f"The model's CPU bound is more than {percent(MODEL_MISS)} too high for {and_list(bottleneck.missed)}: "
            "proxying a request costs nginx more than answering it itself, and across the switch nginx spends CPU "
            "looking for a free port (@sec-ch6-hosts).")
