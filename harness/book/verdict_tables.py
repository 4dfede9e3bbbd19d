"""How verdicts are shown: the rules and protocol a chapter declares (before its data), each finding's claims judged
with their margins (measured value, threshold and source, margin in σ, runs and passes, held in n of m kept passes),
and a tally of outcomes. The book's verdict pools every kept pass (harness.book.passes); the data a page reads, when it
is not a kept pass (a reader's run, or data measured before the protocol), is judged beside it, never mixed in."""
from __future__ import annotations

from collections import Counter

import pandas as pd
from IPython.display import Markdown

from harness.book.claims import DIFFERS, INCONCLUSIVE, NOT_REPRODUCED, PARTLY, WORDS, Judgement, Rule, compose, rules
from harness.lab.protocol import protocol
from harness.lab.store import data_root
from harness.book import passes
from harness.book.faces import CHAPTERS, chapter_name
from harness.book.downloads import data_links, step_records
from harness.book.tables import folded, markdown_table
from harness.book.prose import MINUS, NBSP, and_list, in_book_style, percent, plain, plural, signed, significant

ARTICLES = {"000": "Song 2023", "001": "김민종 2024", "002": "Choo 2021", "003": "Çalışkan 2015", "004": "lucas-k 2023"}


def number(x: float, unit: str = "") -> str:
    """A measured value as the book prints numbers: thousands separators, three significant digits, its unit."""
    if x is None or x != x:
        return "–"
    return labelled(significant(x, 3), unit)


def declared(x: float, unit: str = "") -> str:
    """A threshold as its rule writes it, every digit kept (a band of 106.5 – 107.5 ms is not "106 – 108 ms")."""
    return labelled(plain(x), unit)


def declared_share(share: float) -> str:
    """A threshold that is a share, as a percent with every digit its rule gives it (0.032 → "3.2%", 0.34 → "34%")."""
    return declared(100 * share, "%")


# The claims' units that count things, in the plural: one of them is singular ("1 connection", not "1 connections").
COUNTED = {"APIs", "answers", "connections", "files", "kinds", "one-way delays", "requests", "threads", "users", "waves"}


def labelled(text: str, unit: str) -> str:
    """A number written out, and its unit after it (a percent sign without a space; a counted unit singular for 1)."""
    if unit in COUNTED and text.lstrip(MINUS) == "1":
        unit = unit[:-1]
    return text + "%" if unit == "%" else f"{text}{NBSP}{unit}" if unit else text


def short(rule: Rule) -> str:
    """The claim in a few plain words: its measure up to the first colon ("200 at once")."""
    return in_book_style(rule.measure.split(":")[0])


def threshold_text(rule: Rule) -> str:
    t, u = rule.threshold, rule.unit
    text = {"above": lambda: f"> {declared(t, u)}", "below": lambda: f"< {declared(t, u)}",
            "within": lambda: f"|·| < {declared(t, u)}", "band": lambda: f"{declared(t[0], u)} – {declared(t[1], u)}"}
    return text[rule.shape]()


def rules_table(chapter: str) -> Markdown:
    """The chapter's rules as declared, before any data: what is measured, the threshold and where it comes from."""
    declared_rules = rules(chapter)
    if not declared_rules:
        return Markdown("*This chapter declares no rules yet.*")
    frame = pd.DataFrame([{"Claim": r.claim + (" (core)" if r.core else ""), "The article says": f"“{r.quote}” ({ARTICLES.get(r.seed, r.seed)})",
                           "Measured": in_book_style(r.measure), "Claim holds when": threshold_text(r),
                           "Threshold from": in_book_style(r.source), "k": f"{r.k:g}σ",
                           "Window": in_book_style(r.window + (f" (also {r.nearby})" if r.nearby else ""))}
                          for r in declared_rules.values()])
    changed = [f"**{r.claim}** changed: {in_book_style(changed_note(r))}" for r in declared_rules.values() if r.changed]
    return Markdown(markdown_table(frame) + ("\n\n" + "\n\n".join(changed) if changed else ""))


def changed_note(rule: Rule) -> str:
    """Why a rule changed, as its claims file says, with the fields it names written out: busy_above as a share, and
    the steps (machine_steps) whose CPUs would show the machine fact (whether they did is the verdict's)."""
    note = rule.changed.replace("busy_above", declared_share(rule.busy_above))
    return note + (f" The steps whose CPUs would show it: {and_list(rule.machine_steps)}." if rule.machine_steps else "")


def claim_rows(judgements: list[Judgement], chapter: str, this_data: dict[str, Judgement] | None = None,
               kept: dict | None = None) -> pd.DataFrame:
    rows = []
    kept = passes.kept(chapter) if kept is None else kept  # read once: each row's "held" counts in it
    for j in judgements:
        n, m = passes.held(chapter, j, kept_passes=kept)
        sigma = j.measured.sigma
        row = {"Claim": f"{j.rule.claim}: {short(j.rule)}", "Measured": number(j.measured.value, j.rule.unit) + (
            f" ± {number(sigma, j.rule.unit)}" if sigma else " (exact)" if sigma == 0 else ""),
            "Claim holds when": threshold_text(j.rule),
            "Margin": "–" if j.margin_sigma is None else signed(j.margin_sigma, 1) + "σ",
            "Runs": f"{j.measured.runs} in {j.measured.passes} passes" if j.measured.passes > 1 else j.measured.runs,
            "Held": f"{n} of {m}" if m else "–",
            "Outcome": f"**{j.outcome}**" + (f": {in_book_style(j.why)}" if j.why else "")}
        if this_data is not None:
            mine = this_data.get(j.rule.claim)
            row["This data"] = f"{number(mine.measured.value, mine.rule.unit)}: {mine.outcome}" if mine else "–"
        rows.append(row)
    return pd.DataFrame(rows)


def book_verdicts(chapter: str, judgements: list[Judgement], kept: dict | None = None) -> list[Judgement]:
    """The book's verdicts on the chapter's claims, what its verdict table, its sentences and the answer page state:
    every kept pass pooled (`kept`: passes.kept, already read); with none kept yet, `judgements` (the data's own).
    Here, not in harness.book.passes: that file judges, so its text is part of every chapter's rules digest."""
    return passes.pooled(chapter, kept_passes=kept) or judgements


def book_and_this(judgements: list[Judgement], chapter: str, kept: dict) -> tuple[list[Judgement],
                                                                                  dict[str, Judgement] | None]:
    """The book's verdicts (every `kept` pass pooled) and, when the data being read is not one of them, its own
    judgements by claim to show beside; with no kept pass yet, the data's judgements alone."""
    if not kept:
        return judgements, None
    book = book_verdicts(chapter, judgements, kept)
    return book, None if passes.this_pass(chapter).label in kept else {j.rule.claim: j for j in judgements}


def said_outcomes(chapter: str, judgements: list[Judgement]) -> dict[str, str]:
    """What a page's sentences say of each claim and finding, by id ("F002-c.3", "F002-b"): the book's verdict, as
    its verdict table states it; when the data being read is not a kept pass (a reader's run), its own beside it,
    each named ("reproduced over the book's passes, inconclusive in this data"), never one passed for the other."""
    book, this = book_and_this(judgements, chapter, passes.kept(chapter))
    stated = {j.rule.claim: j.outcome for j in book} | finding_outcomes(book)
    if this is None:
        return stated
    own = {claim: j.outcome for claim, j in this.items()} | finding_outcomes(list(this.values()))
    return {key: f"{outcome} over the book's passes, {own.get(key, 'not judged')} in this data"
            for key, outcome in stated.items()}


def machine_clause(j: Judgement) -> str:
    """Why a miss whose rule names a fact of this machine is "not reproduced", not "differs on this hardware": the
    steps' own data did not show the fact ("" for any other judgement)."""
    if j.outcome != NOT_REPRODUCED or not j.rule.machine:
        return ""
    return (f"; not \"{DIFFERS}\", which needs the busiest CPU above {percent(j.rule.busy_above)} during "
            f"{and_list(j.rule.machine_steps)}, and the data does not show it")


def verdict_id(finding: str) -> str:
    """The id of a finding's verdict on its chapter's page: where the answer page's "Judged in" links land."""
    return f"verdict-{finding.lower()}"


def verdict_table(judgements: list[Judgement], chapter: str) -> Markdown:
    """Each finding's composed outcome, then its claims with their margins; the evidence folded below. The book's
    verdict pools its kept passes; the data being read, when not a kept pass, is shown beside it."""
    kept = passes.kept(chapter)
    shown, this_data = book_and_this(judgements, chapter, kept)
    by_finding: dict[str, list[Judgement]] = {}
    for j in shown:
        by_finding.setdefault(j.rule.finding, []).append(j)
    blocks = []
    for finding, parts in by_finding.items():
        outcome = compose(parts)[0]
        words = "; ".join(f"{short(j.rule)}: {WORDS[j.outcome]}" for j in parts)  # each part in a few words
        blocks.append(f"[**{finding}: {outcome}**]{{#{verdict_id(finding)}}}"
                      + (f" ({words})" if outcome in (PARTLY, INCONCLUSIVE) else "") + elsewhere_note(finding, chapter)
                      + "\n\n" + markdown_table(claim_rows(parts, chapter, this_data, kept)))
    evidence = "\n\n".join(in_book_style(
        f"**{j.rule.claim}**: {j.rule.measure}, measured {number(j.measured.value, j.rule.unit)} over "
        f"{plural(j.measured.runs, 'run')}; σ from {j.measured.sigma_source}"
        + (f". {j.measured.note}" if j.measured.note else "") + f". Threshold: {j.rule.source}.") for j in shown)
    downloads = data_links(chapter, {"claims": claim_values(shown), "steps": step_records(chapter)}).data
    return Markdown("\n\n".join(blocks) + "\n\n" + folded("The evidence behind each claim", evidence)
                    + "\n\n" + downloads)


def elsewhere_note(finding: str, chapter: str) -> str:
    """Where other chapters judge claims of the same finding: this page's outcome is then its own claims' only, and
    the answer page composes the finding from all of them ("" where this chapter judges the whole finding)."""
    others = [c for c in CHAPTERS if c != chapter and any(r.finding == finding for r in rules(c).values())]
    if not others:
        return ""
    named = and_list(chapter_name(c).lower() for c in others)
    return f". This chapter's claims only: {named} judges the rest, and the answer page composes the whole finding."


def claim_values(judgements: list[Judgement]) -> pd.DataFrame:
    """The verdict rows as numbers, for a reader's own analysis: each claim's measured mean and σ, threshold, margin,
    runs, passes and outcome."""
    def bounds(rule: Rule) -> tuple:
        return tuple(rule.threshold) if rule.shape == "band" else (rule.threshold, None)
    return pd.DataFrame([{"claim": j.rule.claim, "finding": j.rule.finding, "measure": j.rule.measure,
                          "value": j.measured.value, "sigma": j.measured.sigma, "unit": j.rule.unit,
                          "holds_when": j.rule.shape, "threshold": bounds(j.rule)[0], "threshold_high": bounds(j.rule)[1],
                          "margin_sigma": j.margin_sigma, "runs": j.measured.runs, "passes": j.measured.passes,
                          "outcome": j.outcome} for j in judgements])


def as_typed(text: str) -> str:
    """Free text (a withdrawn pass's reason) whose "--" stays two hyphens ("--keep"), not Pandoc's dash."""
    return text.replace("--", "-\\-")


def protocol_note(chapter: str) -> Markdown:
    """The chapter's protocol and where its verdicts stand, for the top of its page: how many clean passes it keeps,
    how many are kept, whether the data this page reads is one of them, and any pass withdrawn and why."""
    rule = protocol(chapter)
    if rule is None:
        return Markdown("")
    kept = passes.kept(chapter)
    mine = passes.this_pass(chapter)
    # rule.passes is the least the book keeps: a campaign measuring the whole book again adds a pass beyond it
    stands = (f"none of the {rule.passes} clean passes its protocol keeps yet" if not kept else
              f"{len(kept)} of the {rule.passes} clean passes its protocol keeps" if len(kept) < rule.passes else
              f"{len(kept)} clean passes; its protocol keeps at least {rule.passes}")
    if mine.label in kept:
        where = (f"The data on this page is one of them ({mine.label}); the verdicts pool all {len(kept)}. Pooled, "
                 "the runs of every pass narrow σ, so a claim can be decided where no pass alone decided it (Held "
                 f"\"0 of {len(kept)}\" beside \"reproduced\")." if len(kept) > 1 else
                 f"The data on this page is one of them ({mine.label}).")
    elif kept:
        where = (f"The data on this page ({mine.label}) is not among them: the verdict tables give the book's pooled "
                 "outcome and, beside it, this data's own.")
    elif mine.label in passes.earlier(chapter):
        where = (f"The data on this page ({mine.label}) was kept under earlier rules, so until a pass measured under "
                 "these is kept, the verdicts judge it alone.")
    else:
        problems = passes.pass_problems(chapter, data_root())
        where = (f"Until one is kept, the verdicts judge the data on this page alone ({mine.label}), which is not a "
                 "kept pass: " + ("; ".join(problems) if problems else
                                       f"`invoke compare {chapter} --keep` has not kept it") + ".")
    lines = [f"**The protocol.** This chapter has {stands}. {where} A run is void when other processes took more "
             f"than {rule.void_outside_cpu:.0%} of the machine's CPUs during its load; it is measured again at once, up "
             f"to {rule.reruns} times, and every run is kept. A claim's rule covers its statistic's code "
             f"({', '.join(f'`{p}`' for p in rule.code)}); the rules' digest is `{passes.rules_digest(chapter)}`, "
             "and a pass is pooled only with passes judged under the same digest."]
    if rule.changed:
        lines.append(f"The protocol changed: {rule.changed}")
    if earlier := passes.earlier(chapter):
        lines.append(f"Kept under earlier rules, not pooled: {', '.join(earlier)}.")
    lines += [f"Withdrawn: {w['pass']}, {as_typed(w['why'])} (recorded {w['recorded']})." for w in passes.withdrawn(chapter)]
    return Markdown('::: {.callout-note title="Where this chapter\'s verdicts stand"}\n' + "\n\n".join(lines) + "\n:::")


def finding_outcomes(judgements: list[Judgement]) -> dict[str, str]:
    by_finding: dict[str, list[Judgement]] = {}
    for j in judgements:
        by_finding.setdefault(j.rule.finding, []).append(j)
    return {finding: compose(parts)[0] for finding, parts in by_finding.items()}


def tally(judgements: list[Judgement]) -> Counter:
    """How many findings came out each way (a finding judged in two chapters counts once per chapter)."""
    return Counter(finding_outcomes(judgements).values())
