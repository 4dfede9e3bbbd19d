"""The clauses of chapter 4 whose wording, not only their numbers, depends on the data: each says the opposite when
the data does (the numbers themselves are inline values in the .qmd, or formatted here with harness.book.prose)."""
from __future__ import annotations

from harness.book.chapters.ch4.values import ThreadPair
from harness.book.claims import Measured
from harness.book.prose import count, listed, number, percent, plain, words


def threads_effect(pairs: list[ThreadPair]) -> str:
    """What a larger threads.max did in the article's runs that changed nothing else but the pool (each pair's users,
    runs, settings and throughput): raised it, did not, or raised it at some users only."""
    def pair(p: ThreadPair) -> str:
        spare = f" and min-spare {count(p.spare_from)} to {count(p.spare_to)}" if p.spare_to != p.spare_from else ""
        return (f"{count(p.tps_from)} to {count(p.tps_to)} ({percent(p.gain, '+')}) in runs {p.before} and {p.after}, "
                f"threads.max {count(p.threads_from)} to {count(p.threads_to)}{spare}")

    def at(ps: list[ThreadPair]) -> str:
        return f"at {listed({p.users for p in ps})} users"
    if not pairs:
        return "None of the article's runs raised threads.max and changed nothing else but the pool."
    raised = [p for p in pairs if p.tps_to > p.tps_from]
    other = [p for p in pairs if p.tps_to <= p.tps_from]
    if not other:
        return f"More threads raised it too: {'; '.join(map(pair, raised))}."
    if not raised:
        return f"More threads did not: {'; '.join(map(pair, other))}."
    return (f"More threads raised it {at(raised)}: {'; '.join(map(pair, raised))}. {at(other).capitalize()} they did "
            f"not: {'; '.join(map(pair, other))}.")


def cpu_gain(ratio: float, book: Measured) -> str:
    """Twice the CPU's gain: these runs' ratio, and, when the verdict pools kept passes, the pooled ratio it judges."""
    here = f"×{number(ratio, 2)} in these runs"
    if book.passes > 1 and book.pooled_value is not None:
        return f"{here}, ×{number(book.pooled_value, 2)} pooled over the book's {words(book.passes)} kept passes"
    return here


def knee_text(measured: float, model: float) -> str:
    """The knee the measured CPU gives against the model's (one decimal): fewer requests at once, more, or as many."""
    shown = round(measured, 1)
    relation = "fewer than" if shown < model else "more than" if shown > model else "as many as"
    return (f"about {number(measured, 1)} requests in progress at once keep the core busy, {relation} the model's "
            f"{plain(model)}")


def lambda_text(lambda_: float, user_tps: float, cycle_ms: float) -> str:
    """The USL's λ against what one user can send at most (1,000 / its cycle, in the model): above it, λ is a parameter
    of the fitted curve, no user's rate."""
    most = f"the {number(user_tps, 1)} requests a second one user can send at most (1,000 / {plain(cycle_ms)} ms)"
    if round(lambda_, 1) > round(user_tps, 1):
        return f"That λ is more than {most}: a parameter of the fitted curve, not a rate any user reached."
    return f"That λ is within {most}."
