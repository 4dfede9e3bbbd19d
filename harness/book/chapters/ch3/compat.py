"""Chapter 2's check of chapter 3's headline verdict on each repeat (ch2_checks.check_verdict_repeats, handed this as
`f000_f`), until chapter 2 reads F000-f's judgements instead: F000-f's core claims judged on the one step in `data`,
with the rules of experiments/claims/chapter3.toml and no spread (one run)."""
from __future__ import annotations

from harness.book import claims
from harness.book.chapters.ch3 import runs as r
from harness.book.chapters.ch3.claims import held_unanswered
from harness.book.verdict import NOT_REPRODUCED, REPRODUCED, Verdict, failure_kinds
from harness.lab.store import ChapterData, answered

ARTICLE = "10k users (1000 threads, 8192 + 100): only ~8293 succeed; ss never shows more than ~8293"


def f000_f(data: ChapterData) -> Verdict:
    (name, meta), = data.steps.items()
    rows = data.requests
    rows = rows.assign(ok=answered(rows), kind=failure_kinds(rows), own_s=rows["duration_ms"] / 1000,
                       end_s=(rows["end_ms"] - rows["start_ms"].min()) / 1000)
    run = r.Run(name, data.chapter, meta, rows, data.ss, data.actuator)
    rules = claims.rules(r.CHAPTER)
    values = {"F000-f.2a": r.beyond_share(run), "F000-f.2b": held_unanswered(run)}
    if run.sampled:
        values["F000-f.3a"] = r.ceiling_distance(run)
    held = all(claims.margin(rules[claim], value) > 0 for claim, value in values.items())
    measured = ", ".join(f"{claim} {value:.3g}" for claim, value in values.items())
    return Verdict("F000-f", ARTICLE, f"{name}: {run.ok} of {run.users} answered; {measured}",
                   REPRODUCED if held else NOT_REPRODUCED)
