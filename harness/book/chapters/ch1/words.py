"""The few words of chapter 1 whose wording, not only their numbers, depends on the data."""
from __future__ import annotations

from harness.book.chapters.ch1.values import Busy, Pace, Queue, Rates
from harness.book.prose import and_list, cores_text, count, number, percent, plain, span
from harness.book.verdict import within

HOLDS = 0.10  # "the rate holds": every window within 10% of the model (the book's tolerance for a model's number, F002-a)



def tail_words(rates: Rates, n_cores: int) -> str:
    """Whether the tail of sleeps explains how far the whole-run rates fell short of the model, and if not, how long the
    runs that fell further took."""
    if rates.beyond_tail == 0:
        return "the tail explains all of it"
    which = "all" if rates.beyond_tail == rates.full_runs else f"{rates.beyond_tail} of the {rates.full_runs}"
    return (f"the tail explains only part of it: {which} runs fell further short, taking up to "
            f"{rates.span_high_s:.1f} s where the model expects {rates.full_run_s:g} s and the tail adds at most {rates.tail_s:g} s, on {cores_text(n_cores)} the server "
            f"shares with the load tool")


def sleeps_words(queue: Queue, sleep_s: float) -> str:
    """How many sleeps the longest requests took, from the data, against the model's two to three (a wait for a
    thread, then a sleep of their own): "between two and three sleeps, …" when every run's longest lies there, the
    span in sleeps otherwise ("2.2–3.3 sleeps, where the model puts them between two and three: …")."""
    low, high = queue.longest_low_s / sleep_s, queue.longest_high_s / sleep_s
    model = "a wait for a thread, then a sleep of their own"
    if 2 <= low and high <= 3:
        return f"between two and three sleeps, as the model puts them: {model}"
    return f"{span([low, high], lambda v: number(v, 1))} sleeps, where the model puts them between two and three: {model}"


def signed_mean_words(values: tuple[float, ...], mean: float) -> str:
    """What a rule that averages each run's signed deviation from the model hides: the runs above and below it, which
    partly cancel ("3 of 15 runs lie 10–13% above the model and 12 lie 1–5% below: their mean, +0.1%, …"); with every
    run on one side, only where they lie."""
    above, below = [v for v in values if v > 0], [-v for v in values if v < 0]
    if not values or len(above) + len(below) < len(values):  # no runs, or some exactly on the model
        return f"their mean is {percent(mean, '+')}"
    if not (above and below):
        side = "above" if above else "below"
        return f"every run lies {span(above or below)} {side} the model, and so does their mean, {percent(mean, '+')}"
    return (f"{count(len(above))} of {count(len(values))} runs lie {span(above)} above the model and "
            f"{count(len(below))} lie {span(below)} below: their mean, {percent(mean, '+')}, hides both")


def busy_over_words(busy: Busy) -> str:
    """Whether a pool below its size showed more busy threads than clients, and why a sample can (never empty: Quarto
    would print an empty inline value's source)."""
    if not busy.part_over:
        return ", never more than the clients"
    return (f", more than the clients in {count(busy.part_over_samples)} of {count(busy.part_samples)} samples "
            f"({and_list(busy.part_over)}): a sample can catch the thread that sent a client its answer still "
            f"finishing up while the client's next request already holds another")


def pace_words(pace: Pace) -> str:
    """Whether the smallest C's rate held over its whole run, window by window: "holds" when every window lies within
    HOLDS of the model, else how far below it the slowest window fell."""
    rates = span([pace.low, pace.high], lambda v: number(v, 1))
    run = f"the whole {count(pace.run_s)}-s run"
    window = f"{count(pace.answers)} answers ({plain(pace.window_s)} s at the model's pace)"
    if within(pace.low, pace.model, HOLDS) and within(pace.high, pace.model, HOLDS):
        return (f"the rate holds over {run}: every {window} came at {rates} requests per second, against the "
                f"model's {plain(pace.model)}. No warm-up or drift hides in the average")
    return (f"the rate does not hold over {run}: its windows of {window} came at {rates} requests per second "
            f"against the model's {plain(pace.model)}, the slowest {percent(1 - pace.low / pace.model)} below it. The "
            "average hides a slower stretch")
