"""The few words of chapter 6 whose wording, not only their numbers, depends on the data."""
from __future__ import annotations

from harness.book.chapters.ch6.model import MODEL_MISS, SATURATED
from harness.book.chapters.ch6.values import Bottleneck, Stall, Wall
from harness.book.claims import Judgement
from harness.book.prose import and_list, percent, percent_at_most, printed_alike


def missed_words(bottleneck: Bottleneck) -> str:
    """The steps CPU 1 limited that the model's CPU bound overestimates, or that there are none; then the steps that
    beat it (beaten_words)."""
    if not bottleneck.missed:
        return (f"Every step CPU 1 limited answered within {percent(MODEL_MISS)} of the model's CPU bound, or above it."
                + beaten_words(bottleneck))
    which = "The steps" if len(bottleneck.missed) > 1 else "The step"
    return (f"{which} {and_list(bottleneck.missed)} answered more than {percent(MODEL_MISS)} below the model's CPU "
            "bound: "
            "proxying a request costs nginx more than answering it itself, and across the switch nginx spends CPU "
            "looking for a free port ([three hosts](#sec-ch6-hosts))." + beaten_words(bottleneck))


def beaten_words(bottleneck: Bottleneck) -> str:
    """The steps that answered more than MODEL_MISS above CPU 1's bound: there the bound is no bound, as one core
    cannot give that rate at the CPU per request the model predicts ("" when no step did)."""
    b = bottleneck
    if not b.beaten:
        return ""
    which = f"{len(b.beaten)} steps" if len(b.beaten) > 1 else "one step"
    opened = (" Every one of them opened upstream connections, whose cost the model took from one user at a time "
              f"({b.connection_cpu_ms:.3f} ms each)." if b.beaten_all_opened else "")
    return (f" It is too low for {which}, answering more than {percent(MODEL_MISS)} above it ({and_list(b.beaten)}), "
            f"up to {b.beaten_times:.1f}× in {b.beaten[0]}: at {b.beaten_tps:,.0f} requests a second one core has at "
            f"most {1000 / b.beaten_tps:.2f} ms for each, where the model counts {b.beaten_cpu_ms:.2f} ms, so for these "
            f"steps CPU 1's bound is an estimate, not a bound.{opened}")


def ports_words(wall: Wall) -> str:
    """Whether the long step ran out of ports: when, and what the requests got; or how close it came."""
    if wall.first_error is None:
        return (f"It never ran out: at most {wall.waiting_most:,.0f} of the {wall.ports:,} ports were in TIME_WAIT "
                f"({percent_at_most(wall.waiting_most / wall.ports)}), and no connect() failed for want of one.")
    return (f"At second {wall.first_error} every port was taken ({wall.waiting_most:,.0f} in TIME_WAIT), nginx logged "
            f"`connect() failed (99: Cannot assign requested address)` {wall.errors:,.0f} times, and {wall.failed:,} "
            "requests got a 502 instead of an answer.")


def bottleneck_words(bottleneck: Bottleneck) -> str:
    """How many sustained steps each core limited, and what "neither" means when some had no full core."""
    b = bottleneck
    tool = (f"the load generator's core in {b.load_tool}" + (f" ({b.load_tool_k6} of them k6's)" if b.load_tool else ""))
    text = f"Of the {b.steps} sustained steps, CPU 1 was full in {b.servers} and {tool}"
    if not b.round_trips:
        return text + "."
    return (text + f"; in {b.round_trips} neither core was full of the lab's own processes, so the closed loop's round "
            "trips, or CPU those processes did not get, set the pace. (A core counts as full here when the processes "
            f"on it used {percent(SATURATED)} of it; the kernel's own work for the network is not theirs, so a core can "
            "be busier than its processes: the verdicts' busiest-CPU share reads the whole core.)")


STALL_CLAIMS = {"alone": "F003-a.2c", "nginx": "F003-a.2b", "proxied": "F003-a.2a"}  # the rates F003-a's verdicts read


def pooled_stall_words(stall: Stall, verdicts: dict[str, Judgement]) -> str:
    """The rates the verdicts below read for the three wrk steps, beside the ones the sentences quote from this
    edition's runs: the same, or the kept passes pooled (a pass can sit far from the others)."""
    own = {name: getattr(stall, name) for name in STALL_CLAIMS}
    book = {name: verdicts[claim].measured for name, claim in STALL_CLAIMS.items() if claim in verdicts}
    if len(book) < len(own) or any(not m.values for m in book.values()):  # never empty: Quarto prints the source
        return "The verdicts below have not judged these rates yet."
    if printed_alike(own.values(), (book[name].value for name in own)):
        return "The verdicts below read the same rates."
    passes = max(m.passes for m in book.values())
    pooled = f"pool the chapter's {passes} kept passes" if passes > 1 else "judge the chapter's kept pass"
    return (f"Those are this edition's runs; the verdicts below {pooled}: the service alone "
            f"{book['alone'].value:,.0f}/s, nginx alone {book['nginx'].value:,.0f}/s, through nginx "
            f"{book['proxied'].value:,.0f}/s.")
