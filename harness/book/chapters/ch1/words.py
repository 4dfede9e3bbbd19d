"""The few words of chapter 1 whose wording, not only their numbers, depends on the data."""
from __future__ import annotations

from harness.book.chapters.ch1.values import Busy, Queue, Rates
from harness.book.prose import and_list, count, number, span


def tail_words(rates: Rates) -> str:
    """Whether the tail of sleeps explains how far the whole-run rates fell short of the model, and if not, how long the
    runs that fell further took."""
    if rates.beyond_tail == 0:
        return "the tail explains all of it"
    which = "all" if rates.beyond_tail == rates.full_runs else f"{rates.beyond_tail} of the {rates.full_runs}"
    return (f"the tail explains only part of it: {which} runs fell further short, taking up to "
            f"{rates.span_high_s:.1f} s where the model expects {rates.full_run_s:g} s and the tail adds at most {rates.tail_s:g} s, on two cores the server shares "
            f"with the load tool")


def sleeps_words(queue: Queue, sleep_s: float) -> str:
    """How many sleeps the longest requests took, from the data: "between two and three sleeps" when every run's
    longest lies there, the span in sleeps otherwise ("2.2–3.3 sleeps")."""
    low, high = queue.longest_low_s / sleep_s, queue.longest_high_s / sleep_s
    if 2 <= low and high <= 3:
        return "between two and three sleeps"
    return f"{span([low, high], lambda v: number(v, 1))} sleeps"


def busy_over_words(busy: Busy) -> str:
    """Whether a pool below its size showed more busy threads than clients, and why a sample can (never empty: Quarto
    would print an empty inline value's source)."""
    if not busy.part_over:
        return ", never more than the clients"
    return (f", more than the clients in {count(busy.part_over_samples)} of {count(busy.part_samples)} samples "
            f"({and_list(busy.part_over)}): a sample can catch the thread that sent a client its answer still "
            f"finishing up while the client's next request already holds another")
