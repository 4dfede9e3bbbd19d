"""Every finding of the five articles in one table: the article's words (linked to it), what the lab measured for each
claim, the outcome composed from the claims (harness.book.claims.compose, as each chapter's verdict table does) and the
section that judges it; and the book-wide tally of outcomes. The rules come from experiments/claims/, the judgements
from each chapter's face, so both pages print the same numbers."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd
from IPython.display import Markdown

from harness.book.chapters.ch0.gather import Answer
from harness.book.chapters.ch0.sources import articles, verdict_link
from harness.book.faces import chapter_name
from harness.book.claims import DIFFERS, INCONCLUSIVE, NOT_REPRODUCED, PARTLY, REPRODUCED, WORDS, Judgement, Rule, compose, rules
from harness.book.faces import CHAPTERS
from harness.book.prose import and_list
from harness.book.tables import markdown_table
from harness.book.verdict_tables import number, short

NOT_JUDGED = "not judged"
ORDER = (REPRODUCED, PARTLY, NOT_REPRODUCED, DIFFERS, INCONCLUSIVE, NOT_JUDGED)
COUNTED = {DIFFERS: "differing on this hardware"}  # an outcome as a count reads it: "0 differing on this hardware"


@dataclass(frozen=True)
class Finding:
    finding: str  # "F000-a"
    seed: str
    claims: tuple[tuple[str, Rule], ...]  # (chapter, rule) of each claim, in the claims files' order
    judgements: tuple[Judgement, ...]  # those judged
    missing: tuple[str, ...]  # why some claims are not judged: "Chapter 7: no data yet …"

    @property
    def chapters(self) -> list[str]:
        return list(dict.fromkeys(chapter for chapter, _ in self.claims))

    @property
    def outcome(self) -> str:
        """Composed from every claim, or not judged while any claim is not (a part would pass for the whole)."""
        return compose(list(self.judgements))[0] if not self.missing else NOT_JUDGED


def findings(answer: Answer) -> list[Finding]:
    """Each finding of the claims files once (a finding judged in two chapters gathers both chapters' claims)."""
    judged, missing = answer.judgements, answer.missing
    claims: dict[str, list[tuple[str, Rule]]] = {}
    for chapter in CHAPTERS:
        for rule in rules(chapter).values():
            claims.setdefault(rule.finding, []).append((chapter, rule))
    found = []
    for finding in sorted(claims, key=lambda f: (f[1:4], f)):
        parts = claims[finding]
        absent = [f"{chapter_name(chapter)}: see the note above" if chapter in missing
                  else f"{chapter_name(chapter)} did not judge {rule.claim}" for chapter, rule in parts if rule.claim not in judged]
        found.append(Finding(finding, parts[0][1].seed, tuple(parts),
                             tuple(judged[r.claim] for _, r in parts if r.claim in judged), tuple(dict.fromkeys(absent))))
    return found


def measured(finding: Finding) -> str:
    """Each judged claim in a few words, its measured value and whether it held: "200 at once: 0 answers (yes); …",
    then how many claims are not judged (their chapter's reason is in the Outcome column). Where a finding has claims
    that are not core, its core ones say so: an inconclusive core claim leaves the finding inconclusive, another
    makes it partly reproduced (claims.compose)."""
    judged = {j.rule.claim: j for j in finding.judgements}
    if not judged:
        return "–"
    mixed = len({rule.core for _, rule in finding.claims}) > 1
    said = [f"{short(rule)}{' (core)' if mixed and rule.core else ''}: "
            f"{number(judged[rule.claim].measured.value, rule.unit)} ({WORDS[judged[rule.claim].outcome]})"
            for _, rule in finding.claims if rule.claim in judged]
    unjudged = len(finding.claims) - len(judged)
    return "; ".join(said) + (f"; {unjudged} more {'claim' if unjudged == 1 else 'claims'} not judged" if unjudged else "")


def said(finding: Finding) -> str:
    """The article's words for the finding (its first claim's), linked to the article."""
    article = articles().get(finding.seed)
    quote = f"“{finding.claims[0][1].quote}”"
    return f"{quote} ({article.link()})" if article else quote


def table_frame(answer: Answer) -> pd.DataFrame:
    rows = []
    for f in findings(answer):
        outcome = f"**{f.outcome}**" + (f": {'; '.join(f.missing)}" if f.missing else "")
        rows.append({"Finding": f.finding, "The article says": said(f), "Measured here": measured(f),
                     "Outcome": outcome, "Judged in": and_list(verdict_link(c, f.finding) for c in f.chapters)})
    return pd.DataFrame(rows, columns=["Finding", "The article says", "Measured here", "Outcome", "Judged in"])


def findings_table(answer: Answer) -> Markdown:
    return Markdown(markdown_table(table_frame(answer)))


@dataclass(frozen=True)
class Tally:
    findings: int
    counts: dict[str, int]  # outcome → findings, in ORDER, every outcome present


def tally(answer: Answer) -> Tally:
    """How the book's findings came out, each finding once however many chapters judge it."""
    counted = Counter(f.outcome for f in findings(answer))
    return Tally(sum(counted.values()), {outcome: counted.get(outcome, 0) for outcome in ORDER})


def tally_sentence(answer: Answer) -> str:
    """"Of the 31 findings, 17 reproduced, 11 partly reproduced, 3 not reproduced, 0 differing on this hardware and 0
    inconclusive." (and how many are not judged yet, when any)."""
    t = tally(answer)
    parts = [f"{n:,} {COUNTED.get(outcome, outcome)}" for outcome, n in t.counts.items() if outcome != NOT_JUDGED]
    unjudged = t.counts[NOT_JUDGED]
    return f"Of the {t.findings:,} findings, {and_list(parts)}" + (f"; {unjudged:,} not judged yet." if unjudged else ".")
