"""The few clauses of chapter 5 whose wording, not only their numbers, depends on the data: each says the opposite
when the data does (the numbers themselves are inline values in the .qmd)."""
from __future__ import annotations

from harness.book.chapters.ch5.values import Apis, Final, Pools, Tomcat
from harness.book.claims import DIFFERS, NOT_REPRODUCED, REPRODUCED, Judgement
from harness.book.prose import count, number, percent, span


def waited(a: Apis) -> str:
    """Whether requests waited for a connection in every single API."""
    return "in every API" if a.waited == a.apis else f"in {a.waited} of the {a.apis} APIs"


def bottleneck(j: Judgement, apis: int) -> str:
    """F001-b.3's outcome as the sentence's opening: was the database the bottleneck? Reproduced: it was; not
    reproduced (or differs on this hardware): in how many of the `apis` APIs it was, by the rule's count (one value
    per kept pass: their range), not in most (or, where one pass found it in most, short of most on average);
    inconclusive: not clearly."""
    if j.outcome == REPRODUCED:
        return "The database was the bottleneck"
    if j.outcome in (NOT_REPRODUCED, DIFFERS) and j.measured.values:
        amount = span(j.measured.values, count)
        per_pass = " per kept pass" if j.measured.passes > 1 else ""
        most = ("not in most" if 2 * max(j.measured.values) < apis
                else f"{number(j.measured.value, 1)} on average, short of most")
        return (f"The database was the bottleneck (throttled in most of its CPU periods while requests waited for a "
                f"connection) in {amount} of the {apis} APIs{per_pass}, {most}")
    return "The database was not clearly the bottleneck"


def pool_shape(p: Pools) -> str:
    """How the scenario's throughput went with the pool (open-in-view on, the small database)."""
    sizes = sorted(p.small_on)
    best = max(p.small_on, key=p.small_on.get)
    if all(p.small_on[a] < p.small_on[b] for a, b in zip(sizes, sizes[1:], strict=False)):
        return "Throughput follows the pool, as the model said it would, and pool 10 is not the best"
    return f"Throughput peaks at pool {best}, against the model" + (": pool 10 is the best" if best == 10 else "")


def pool_off(p: Pools, change: float) -> str:
    """Which pool did best with open-in-view off, and what that says; `change`: the smallest difference the rules call
    one (F001-d.1's threshold), below which "best" is no more than the runs' order."""
    best = p.best_off
    smallest = best == min(p.small_off)
    said = (f"the smallest pool did best, {best}" if smallest else f"pool {best} did best") + \
        f" ({p.small_off[best]:,.0f} a second)"
    others = {pool: tps for pool, tps in p.small_off.items() if pool != best}
    if others:
        runner = max(others, key=others.get)
        lead = p.small_off[best] / others[runner] - 1
        if lead < change:  # the order, not a difference: no mechanism to read into it
            return (f"{said}, only {percent(lead)} ahead of pool {runner}, less than the {percent(change)} the rules "
                    "call a change")
    return said + (": more connections only add queries that wait for the same CPU inside the database" if smallest
                   else "")


def knobs(judgements: list[Judgement]) -> str:
    """Whether the three "no change" claims held (F001-d.1, F001-e.1, F001-f.1)."""
    flat = [j for j in judgements if j.rule.claim in ("F001-d.1", "F001-e.1", "F001-f.1")]
    if all(j.outcome == REPRODUCED for j in flat):
        return "Tomcat's knobs moved nothing beyond the runs' own spread"
    return "not every difference between Tomcat's settings stayed inside the runs' own spread"


KNOB_CLAIMS = ("F001-d.1", "F001-e.1", "F001-f.1")  # threads.max, max-connections, accept-count 200 against 100


def knob_differences(own: dict[str, Judgement], book: dict[str, Judgement]) -> str:
    """The three knobs' largest differences in the runs shown (the means just listed), then, when the verdicts pool
    kept passes, the pooled differences the verdict table judges."""
    def three(j: dict[str, Judgement]) -> list[str]:
        d, e, f = (j[c].measured.value for c in KNOB_CLAIMS)
        return [percent(d), percent(e), percent(f, sign="+")]
    this = three(own)
    text = (f"the largest difference between two threads.max settings is {this[0]}, between two max-connections "
            f"settings {this[1]}, and accept-count 200 against 100 {this[2]}")
    passes = book[KNOB_CLAIMS[0]].measured.passes
    if passes > 1:
        pooled = three(book)
        text += f" in these runs; pooled over the chapter's {passes} kept passes, {pooled[0]}, {pooled[1]} and {pooled[2]}"
    return text


def success(t: Tomcat) -> str:
    """The article's success rates against this lab's: every request answered at every threads.max, or not."""
    shares = ", ".join(f"{percent(m.mean)} at {k}" for k, m in t.success.items())
    if all(m.mean == 1 for m in t.success.values()):
        return f"have no counterpart here: every request was answered ({shares}), so no setting can be the most stable"
    return f"compare with the shares answered here: {shares}"


def final_reached(f: Final, goal: float) -> str:
    """Whether the final settings with open-in-view on reached the goal, as the model said they could not."""
    if f.held_tps < goal:
        return "The streams held the pool, as the model said before the run."
    return "The final settings reached the goal, against the model's bound."
