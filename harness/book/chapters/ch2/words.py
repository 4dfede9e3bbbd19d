"""The few clauses of chapter 2 whose wording, not just a number, depends on the data (e.g. "holds" or "does not
hold"). Plain text, for inline use in the .qmd; every other sentence is written there.
"""
from __future__ import annotations

from harness.book.chapters.ch2.lab_checks import Check
from harness.book.chapters.ch2.lab import BATCH, CV, HOLD, QUEUE
from harness.book.chapters.ch2.values import Batch, Noise, Overflows, Setup, Starts
from harness.book.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED
from harness.book.prose import cores_text, words

OUTCOME = {REPRODUCED: "holds", NOT_REPRODUCED: "does not hold", INCONCLUSIVE: "inconclusive"}


def outcome(check: Check) -> str:
    """A check's outcome in the lab's words."""
    return OUTCOME.get(check.judgement.outcome, check.judgement.outcome)


def held(s: Setup) -> str:
    """Whether the sleep outlasts k6's slowest start: are all N held at once?"""
    if s.slowest_start_s < s.sleep_s:
        return (f"longer than the {s.slowest_start_s:.1f} s k6 needed at most to start every user, so at the peak the "
                "server holds all N at once, each on its own thread")
    return (f"shorter than the {s.slowest_start_s:.1f} s k6 needed to start every user: at the largest N not every user "
            "is held at once")


def spike(st: Starts) -> str:
    """Up to which N a spike is a spike, and how long the others take."""
    if st.limit == st.largest:
        return f"all {st.largest:,} users start within {st.spike_s:g} s"
    head = (f"up to {st.limit:,} users all start within {st.spike_s:g} s" if st.limit else
            f"even the smallest spike takes more than {st.spike_s:g} s to start")
    return f"{head}; beyond, the last user starts {st.slow_low_s:.1f}–{st.slow_high_s:.1f} s after the first"


def ramps(st: Starts, wave_s: float) -> str:
    """Whether the users of the largest spikes still reach the server's threads as one wave (chapter 3's model lets
    every user arrive at once: its waves count from the first start)."""
    if not st.ramps:
        return (f"No step's last user starts later than one wave ({wave_s:g} s): to threads that each hold a request "
                "for a wave, every hold-N step arrives at once, as chapter 3's model has it")
    return (f"At {st.ramps} users the last user starts later than one wave ({wave_s:g} s): the first answers come back "
            "before the last requests go out, so the step is a ramp, not a spike, and chapter 3's model, in which "
            "every user arrives at once, does not fit it")


def spike_head(st: Starts) -> str:
    """The lesson of the start curves, as a bullet's head."""
    if st.limit == st.largest:
        return f"Every spike is a spike: k6 starts all {st.largest:,} users within {st.spike_s:g} s."
    return (f"A spike is a spike up to {st.limit:,} users." if st.limit else "Not even the smallest spike is a spike.")


def spike_tail(st: Starts) -> str:
    if st.limit == st.largest:
        return ""
    return f"Beyond, k6 needs up to {st.largest_s:.1f} s to start {st.largest:,} users."


def batch_pace(b: Batch) -> str:
    if not b.slower:
        return "faster at every N"
    if not b.faster:
        return "no faster at any N"
    return f"faster at {b.faster} users and no faster at {b.slower}"


def batch_goal(b: Batch, goal_s: float, cores: int) -> str:
    """Whether batch mode met the lab's goal at the largest N, and what the cores did meanwhile when it did not."""
    if b.batch_s <= goal_s:
        return f"That is within the lab's goal of {goal_s:g} s for a spike."
    busy = b.k6_cores + b.server_cores
    why = ("the machine was saturated: even through http.batch, reaching the goal at this N needs more cores"
           if busy >= 0.8 * cores else "the cores had room, so CPU is not what holds the start back")
    return (f"The lab's goal is {goal_s:g} s. While those users started, k6 used {b.k6_cores:.1f} and the server "
            f"{b.server_cores:.1f} of the {cores_text(cores)}. {why[0].upper()}{why[1:]}.")


SERIES_WORDS = {HOLD: "with one VU per user", BATCH: "through http.batch", QUEUE: "on the 200-thread server (queue-N)",
                CV: "with constant-vus"}


def overflowed(o: Overflows) -> str:
    """Per series, the N whose spike overflowed the accept queue: what the overflow table beside it shows."""
    parts = [f"{SERIES_WORDS[p]} at {o.overflowed[p]} users" if o.overflowed[p] else f"{SERIES_WORDS[p]} at no N"
             for p in (HOLD, BATCH, QUEUE, CV)]
    return "; ".join(parts)


def late_users(o: Overflows) -> str:
    """Users whose SYN was dropped arrive late, and the constant-vus requests k6 cut off at gracefulStop for it, when
    any (never an empty string: Quarto leaves an inline expression whose value is empty as its source text)."""
    late = "The users whose SYN was dropped arrive at the server later than k6 started them."
    if not o.cut:
        return late
    where = "the constant-vus step" if o.cut_steps == 1 else "the constant-vus steps"
    return (f"{late} The {o.cut} requests k6 cut off (interrupted) in {where} at {o.cut_users} users did not finish "
            f"within the {o.graceful_stop_s:g} s gracefulStop; late users would explain them, though the data has no "
            "connect time to show which users they were.")


def acceptor_head(o: Overflows) -> str:
    if not any(o.overflowed.values()):
        return "Tomcat's acceptor kept up with every spike."
    return "Tomcat's acceptor can be slower than a spike."


def acceptor_tail(o: Overflows) -> str:
    if not any(o.overflowed.values()):
        return "The accept queue never overflowed: the model's instant acceptor holds on this machine."
    firsts = [f"at {o.first[p]:,} users {SERIES_WORDS[p]}" for p in (HOLD, BATCH) if o.first[p]]
    return (f"With max-connections far away, the accept queue still overflowed, first {' and '.join(firsts) or 'elsewhere'}. "
            "The model accepts instantly, so where it predicts no overflow its times are a lower bound.")


def first_bound(files_first: Check) -> str:
    """Which binds first as users grow on this machine: open files or memory (the files-first check)."""
    return {True: "Open files bind before memory.", False: "Memory binds before open files."}.get(
        files_first.holds, "Open files or memory: the data cannot tell which binds first.")


def sampling_effect(failures: Check, waves: Check) -> str:
    """What switching the samplers off did, from the two sampling checks."""
    if failures.holds and waves.holds:
        return "switching them off moved no result beyond the runs' own spread"
    moved = [what for what, check in (("the failures", failures), ("the waves", waves)) if check.holds is False]
    if moved:
        return f"switching them off moved {' and '.join(moved)} beyond the runs' own spread"
    return "whether switching them off moves a result, the runs cannot tell yet"


def same(check: Check, what: str) -> str:
    """A "same" check's result: the difference in σ of its spread, and what that means."""
    z = abs(check.judgement.measured.value) if check.judgement.measured.values else float("nan")
    if z != z:
        return f"the runs cannot tell yet whether {what}"
    if check.identical:
        return f"every run of both gave the same number ({check.judgement.measured.note}): no difference at all"
    if check.holds:
        return (f"the difference is {z:.1f}σ of the runs' own spread, within 3σ: no difference the repeats can tell "
                "from noise")
    return f"the difference is {z:.1f}σ of the runs' own spread, more than 3σ: {what} differ"


def outside(n: Noise) -> str:
    """How many runs without samplers fall outside the sampled runs' range of failures."""
    if n.off_outside == 0:
        return "every run without samplers lies inside the sampled runs' range"
    return (f"{'all' if n.off_outside == n.unsampled else words(n.off_outside)} of the {words(n.unsampled)} runs "
            "without samplers lie outside the sampled runs' range")
