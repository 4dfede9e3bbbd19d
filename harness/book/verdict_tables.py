"""How verdicts are shown: the rules a chapter declares (before its data), each finding's claims judged with their
margins (measured value, threshold and source, margin in σ, runs, held in n of m kept runs), and a tally of outcomes."""
from __future__ import annotations

from collections import Counter

import pandas as pd
from IPython.display import Markdown

from harness.book.claims import INCONCLUSIVE, PARTLY, Judgement, Rule, compose, rules
from harness.book.history import held
from harness.book.tables import folded, markdown_table
from harness.book.prose import MINUS, NBSP

ARTICLES = {"000": "Song 2023", "001": "김민종 2024", "002": "Choo 2021", "003": "Çalışkan 2015", "004": "lucas-k 2023"}


def number(x: float, unit: str = "") -> str:
    """A measured value as the book prints numbers: thousands separators, three significant digits, its unit."""
    if x is None or x != x:
        return "–"
    size = abs(x)
    text = f"{size:,.0f}" if size >= 100 else f"{size:,.3g}" if size >= 1 else f"{size:.3g}"
    text = (MINUS if x < 0 and float(text.replace(",", "")) != 0 else "") + text  # prose's true minus, no "−0"
    return text + "%" if unit == "%" else f"{text}{NBSP}{unit}" if unit else text


def threshold_text(rule: Rule) -> str:
    t, u = rule.threshold, rule.unit
    text = {"above": lambda: f"> {number(t, u)}", "below": lambda: f"< {number(t, u)}",
            "within": lambda: f"|·| < {number(t, u)}", "band": lambda: f"{number(t[0], u)} – {number(t[1], u)}"}
    return text[rule.shape]()


def rules_table(chapter: str) -> Markdown:
    """The chapter's rules as declared, before any data: what is measured, the threshold and where it comes from."""
    declared = rules(chapter)
    if not declared:
        return Markdown("*This chapter declares no rules yet.*")
    frame = pd.DataFrame([{"Claim": r.claim, "The article says": f"“{r.quote}” ({ARTICLES.get(r.seed, r.seed)})",
                           "Measured": r.measure, "Claim holds when": threshold_text(r),
                           "Threshold from": r.source, "k": f"{r.k:g}σ",
                           "Window": r.window + (f" (also {r.nearby})" if r.nearby else "")}
                          for r in declared.values()])
    changed = [f"**{r.claim}** changed: {r.changed}" for r in declared.values() if r.changed]
    return Markdown(markdown_table(frame) + ("\n\n" + "\n\n".join(changed) if changed else ""))


def claim_rows(judgements: list[Judgement], chapter: str) -> pd.DataFrame:
    rows = []
    for j in judgements:
        n, m = held(chapter, j)
        sigma = j.measured.sigma
        rows.append({"Claim": j.rule.claim, "Measured": number(j.measured.value, j.rule.unit) + (
            f" ± {number(sigma, j.rule.unit)}" if sigma else " (exact)" if sigma == 0 else ""),
            "Claim holds when": threshold_text(j.rule),
            "Margin": "–" if j.margin_sigma is None else f"{j.margin_sigma:+.1f}σ",
            "Runs": j.measured.runs, "Held": f"{n} of {m}" if m else "–",
            "Outcome": f"**{j.outcome}**" + (f": {j.why}" if j.why else "")})
    return pd.DataFrame(rows)


def verdict_table(judgements: list[Judgement], chapter: str) -> Markdown:
    """Each finding's composed outcome, then its claims with their margins; the evidence folded below."""
    by_finding: dict[str, list[Judgement]] = {}
    for j in judgements:
        by_finding.setdefault(j.rule.finding, []).append(j)
    blocks = []
    for finding, parts in by_finding.items():
        outcome, words = compose(parts)
        blocks.append(f"**{finding}: {outcome}**" + (f" ({words})" if outcome in (PARTLY, INCONCLUSIVE) else "")
                      + "\n\n" + markdown_table(claim_rows(parts, chapter)))
    evidence = "\n\n".join(f"**{j.rule.claim}**: {j.rule.measure}, measured {number(j.measured.value, j.rule.unit)} over "
                           f"{j.measured.runs} run(s); σ from {j.measured.sigma_source}"
                           + (f". {j.measured.note}" if j.measured.note else "") + f". Threshold: {j.rule.source}."
                           for j in judgements)
    return Markdown("\n\n".join(blocks) + "\n\n" + folded("The evidence behind each claim", evidence))


def finding_outcomes(judgements: list[Judgement]) -> dict[str, str]:
    by_finding: dict[str, list[Judgement]] = {}
    for j in judgements:
        by_finding.setdefault(j.rule.finding, []).append(j)
    return {finding: compose(parts)[0] for finding, parts in by_finding.items()}


def tally(judgements: list[Judgement]) -> Counter:
    """How many findings came out each way (a finding judged in two chapters counts once per chapter)."""
    return Counter(finding_outcomes(judgements).values())
