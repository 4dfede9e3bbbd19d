"""The clauses of chapter 3 whose wording, not only their numbers, depends on the data: each says what the values
show, and a range whose ends are one number says it once. Plain values in, text out (the values modules call these,
so nothing here imports them)."""
from __future__ import annotations

from harness.book.prose import and_list, cores_text, count, span, with_unit, words


def per_run(values, each: str, spread: str) -> str:
    """A count over runs: "1,707 {each}" when every run gave the same, "1,500 to 1,707 {spread}" otherwise."""
    low, high = min(values), max(values)
    return f"{count(low)} {each}" if low == high else f"{count(low)} to {count(high)} {spread}"


def repeats_text(answered, got_in, beyond: int) -> str:
    """What the headline step's runs answered and how many of the users beyond the ceiling got in: "Every run
    answered 8,293: none of the 1,707 users beyond the ceiling got in", or the range and the most that got in."""
    low, high, most = min(answered), max(answered), max(got_in)
    head = f"Every run answered {count(low)}" if low == high else f"The answered ranged from {count(low)} to {count(high)}"
    if most <= 0:
        tail = f"none of the {count(beyond)} users beyond the ceiling got in"
    elif low == high:
        tail = f"{count(most)} of the {count(beyond)} users beyond the ceiling got in each time"
    else:
        tail = f"at most {count(most)} of the {count(beyond)} users beyond the ceiling got in"
    return f"{head}: {tail}"


def isolating_changes(base: str, steps) -> str:
    """How many steps isolate the ceiling's cause and what each changes of `base` (`steps`: each with its `step` and
    the settings it `changes`): "Four more steps each change one thing of `f-10k-pv` to test this", or the steps that
    change more than one."""
    lead = f"{words(len(steps)).capitalize()} more {'step' if len(steps) == 1 else 'steps'}"
    several = {i.step: i.changes for i in steps if len(i.changes) != 1}  # the exceptions: two or more, or none
    if not several:
        each = "changes" if len(steps) == 1 else "each change"
        return f"{lead} {each} one thing of `{base}` to test this"
    if len(several) == len(steps):
        return f"{lead} change `{base}` to test this: " + "; ".join(
            f"`{step}` in {and_list(changed) or 'nothing'}" for step, changed in several.items())
    if len(several) == 1:
        (step, changed), = several.items()
        what = f"{words(len(changed))}: {and_list(changed)}" if changed else "none of its settings"
        return f"{lead} change `{base}` to test this, each one thing but `{step}`, which changes {what}"
    return f"{lead} change `{base}` to test this, each one thing but " + and_list(
        f"`{step}` ({and_list(changed) or 'nothing'})" for step, changed in several.items())


def answered_in_runs(answered: dict[str, tuple[int, ...]], users: int) -> str:
    """What each step's runs answered of `users`, naming the steps: "2,000 of 2,000 in every run: the five of `a` and
    the one of `b`" when every run answered alike, else each step's counts ("1,303 and 2,000 of 2,000 in the two runs
    of `a`")."""
    every = [n for counts in answered.values() for n in counts]
    if len(set(every)) == 1:
        return f"{count(every[0])} of {count(users)} in every run: " + and_list(
            f"the {words(len(counts))} of `{step}`" for step, counts in answered.items())

    def one(step: str, counts: tuple[int, ...]) -> str:
        if len(counts) == 1:
            return f"{count(counts[0])} of {count(users)} in the one run of `{step}`"
        if len(set(counts)) == 1:
            return f"{count(counts[0])} of {count(users)} in each of the {words(len(counts))} runs of `{step}`"
        return f"{and_list(map(count, counts))} of {count(users)} in the {words(len(counts))} runs of `{step}`"
    return "; ".join(one(step, counts) for step, counts in answered.items())


def waves_before_timeout(fit: int, threads: int, next_due_s: float, timeout_s: float, answered) -> str:
    """Why requests time out in a step with more waves than k6's timeout leaves room for, as far as its runs show it:
    "Only 11 waves end before k6's 60 s, so the rest time out", or, where a run also got the next wave (due at
    `next_due_s`) in, how many did."""
    head = f"Only {fit} waves end before k6's {timeout_s:g} s"
    beyond = sum(a > fit * threads for a in answered)
    if not beyond:
        return f"{head}, so the rest time out"
    runs = "every run" if beyond == len(answered) else f"{beyond} of the {len(answered)} runs"
    return (f"{head}, and the next is due at {next_due_s:g} s: {runs} got answers of that wave too before the timeout, "
            "and the rest timed out")


def last_answer(longest_s) -> str:
    """When the last answer came over several runs: "50.7 s", or "50.4–51.0 s" when the runs differ."""
    return span(longest_s, fmt=lambda v: with_unit(v, "s", 1))


def machine_cores(cores) -> str:
    """The cores of the machine the chapter's steps ran on, from their machine records: "this machine's two cores", or
    the range when the steps ran on machines that differ."""
    found = sorted(set(cores))
    if len(found) == 1:
        return f"this machine's {cores_text(found[0])}"
    return f"these machines' {count(found[0])} to {count(found[-1])} cores"
