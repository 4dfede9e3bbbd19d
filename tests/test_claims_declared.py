"""The rules every chapter declares before its data (experiments/claims/<chapter>.toml, read by harness.book.claims):
each file loads, every claim belongs to one of the seeds' 31 findings and every finding is judged somewhere, every
quote is the article's own words, every threshold names where it comes from, and none is marked changed (these are
first declarations)."""
from __future__ import annotations

import importlib
import re
import tomllib

import pytest

from harness import ROOT
from harness.book import claims

SEEDS = ROOT.parent / "shared" / "seeds"  # the articles and their findings, beside the repository (not in it)
SOURCE_KINDS = ("article", "model", "kernel", "TCP", "Tomcat", "k6", "nginx")
CLAIM_ID = re.compile(r"^(F\d{3}-[a-z])\.\d+[a-z]?$")
FINDING_LINE = re.compile(r"^- (F(\d{3})-[a-z]) ", re.MULTILINE)
ELLIPSIS = "…"  # a quote may leave words out: each piece between ellipses is verbatim, in the article's order
RENDERING = re.compile(r"^(?P<words>.*\S)\s*\[(?P<english>[^\[\]]+)\]$", re.DOTALL)  # a Korean quote's English
TRANSLATED = {"004"}  # seeds not in English: their quotes carry an English rendering in brackets


def declared() -> dict[str, claims.Rule]:
    """Every chapter's rules by claim id (a claim id is unique across the book)."""
    claims._rules.cache_clear()
    found: dict[str, claims.Rule] = {}
    for path in sorted(claims.CLAIMS_DIR.glob("*.toml")):
        for claim, rule in claims.rules(path.stem).items():
            assert claim not in found, f"{claim} is declared twice ({path.name})"
            found[claim] = rule
    return found


def seeds_or_skip():
    if not (SEEDS / "README.md").is_file():
        pytest.skip(f"the seed articles are not at {SEEDS} (a clone without ../shared/seeds/): quotes and finding ids "
                    f"cannot be checked")
    return SEEDS


def seed_findings() -> dict[str, str]:
    """Finding id → its seed's number, from the seeds' README (`- F000-a …` lines)."""
    return {m.group(1): m.group(2) for m in FINDING_LINE.finditer((seeds_or_skip() / "README.md").read_text())}


def normal(text: str) -> str:
    return " ".join(text.split())


def article(seed: str) -> str:
    (path,) = seeds_or_skip().glob(f"{seed}_*.txt")
    return normal(path.read_text())


def misquoted(rule: claims.Rule, text: str) -> str:
    """What is wrong with a rule's quote against its article's text ("" when every piece is there, in order)."""
    words = rule.quote
    if rule.seed in TRANSLATED:
        rendered = RENDERING.match(words)
        if not rendered:
            return "no English rendering in [brackets] after the article's words"
        words = rendered.group("words")
    at = 0
    for piece in (normal(p) for p in words.split(ELLIPSIS)):
        found = text.find(piece, at) if piece else -1
        if found < 0:
            return f"not in the article (after what precedes it): {piece!r}"
        at = found + len(piece)
    return ""


def test_every_chapters_claims_load():
    files = sorted(p.stem for p in claims.CLAIMS_DIR.glob("*.toml"))
    assert files, f"no rules in {claims.CLAIMS_DIR}"
    for chapter in files:
        claims._rules.cache_clear()
        assert claims.rules(chapter), f"{chapter}.toml declares no claim"


def test_claim_ids_name_their_finding_and_seed():
    findings = seed_findings()
    assert len(findings) == 31
    for claim, rule in declared().items():
        match = CLAIM_ID.match(claim)
        assert match and match.group(1) == rule.finding, f"{claim}: a claim id is <finding>.<part>, e.g. F000-f.2"
        assert rule.finding in findings, f"{claim}: {rule.finding} is not a finding of the seeds"
        assert rule.seed == findings[rule.finding], f"{claim}: {rule.finding} is seed {findings[rule.finding]}"


def test_every_finding_of_the_seeds_is_judged_in_some_chapter():
    judged = {rule.finding for rule in declared().values()}
    assert sorted(set(seed_findings()) - judged) == []


def test_every_quote_is_the_articles_own_words():
    rules = declared().values()
    wrong = [f"{r.claim}: {problem}" for r in rules if (problem := misquoted(r, article(r.seed)))]
    assert wrong == []


@pytest.mark.parametrize("quote, seed", [
    ("As expected, 300 requests are processed first at 5-second intervals", "000"),  # one word changed
    ("followed by the remaining 100 requests. … As expected, 200 requests are processed first", "000"),  # out of order
    ("최대 쓰레드 개수인 800개까지 생성되지는 않는 부하라고 판단됨", "004"),  # Korean without its English rendering
    ("JVM 최대 쓰레드 개수 562개 [562 live JVM threads at most]", "004"),
])
def test_a_quote_the_article_does_not_say_is_caught(quote, seed):
    rule = claims.Rule("F000-a.1", "F000-a", seed, quote, "m", "above", 0.0, "article: …")
    assert misquoted(rule, article(seed))


def test_the_checker_accepts_pieces_in_order_and_a_rendering():
    both = claims.Rule("F004-c.1", "F004-c", "004", "JVM 최대 쓰레드 개수 561개 … 최대 쓰레드 개수인 800 + 기본 쓰레드를 "
                       "포함한 860개 달성 [561 live threads … 860 reached]", "m", "above", 0.0, "article: …")
    assert misquoted(both, article("004")) == ""


def test_a_changed_rule_says_when_why_and_on_which_passes_it_judges():
    """`changed` says why a rule moved after it was first declared, from when, and that only passes measured after the
    change are judged by it (the rules' digest changes with it: harness.book.passes)."""
    for path in sorted(claims.CLAIMS_DIR.glob("*.toml")):
        for table in tomllib.loads(path.read_text()).get("claim", []):
            if "changed" in table:
                text = table["changed"]
                assert re.match(r"\d{4}-\d{2}-\d{2} ", text) and "passes measured after" in text, \
                    f"{path.name} {table['claim']}: changed must give the date, why, and the passes it judges"


def test_every_threshold_names_its_source():
    for claim, rule in declared().items():
        kind, _, what = rule.source.partition(":")
        assert kind in SOURCE_KINDS and what.strip(), f"{claim}: source must start with one of {SOURCE_KINDS} and ':'"
        assert "our data" not in rule.source.lower(), f"{claim}: a threshold does not come from the data it judges"
        for module in re.findall(r"harness\.models\.[a-z_]+", rule.source):
            importlib.import_module(module)  # a model the source names exists
        assert bool(rule.window) == bool(rule.nearby), f"{claim}: a window is read with its nearby windows"
        assert rule.k == 3, f"{claim}: k = 3 throughout (issue 28)"
        assert rule.measure.strip() and rule.unit.strip(), f"{claim}: say what is measured and in which unit"


# A claim's words may say how many runs a step has: "k6-c500 and ab-c500 (5 runs each)", "(sweep-800, 5 runs)".
STEP_ID = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+"
RUNS_AFTER = re.compile(rf"((?:{STEP_ID})(?:(?:, |,? and ){STEP_ID})*) \((?:[^()]*?, )?(\d+) runs(?: each)?\)")
RUNS_INSIDE = re.compile(rf"\(({STEP_ID}), (\d+) runs\)")


def runs_said(text: str) -> list[tuple[str, int]]:
    """(step id, runs) for each number of runs a claim's words give a step."""
    found = [*RUNS_AFTER.finditer(text), *RUNS_INSIDE.finditer(text)]
    return [(step, int(m.group(2))) for m in found for step in re.findall(STEP_ID, m.group(1))]


def test_the_runs_a_claims_words_give_a_step_are_the_runs_its_spec_asks():
    """Chapter 1's rules said "3 runs each" of k6-c500 and ab-c500 beside a Runs column of 5 (issue 41)."""
    wrong = []
    for rule in declared().values():
        chapter = next(p.stem for p in claims.CLAIMS_DIR.glob("*.toml") if rule.claim in claims.rules(p.stem))
        spec = tomllib.loads((ROOT / "experiments" / f"{chapter}.toml").read_text())
        runs = {step["id"]: step.get("runs", 1) for step in spec.get("step", [])}
        wrong += [(rule.claim, step, n, runs[step]) for step, n in runs_said(rule.measure) if runs.get(step, n) != n]
    assert not wrong, f"(claim, step, runs its words say, runs the spec asks): {wrong}"


def test_runs_said_reads_the_ways_the_claims_write_them():
    assert runs_said("on k6-c100 and ab-c100 (3 runs each), k6-c500 and ab-c500 (5 runs each), as") == \
        [("k6-c100", 3), ("ab-c100", 3), ("k6-c500", 5), ("ab-c500", 5)]
    assert runs_said("of k6-c500 and ab-c500 (5000 requests each, 5 runs) less") == [("k6-c500", 5), ("ab-c500", 5)]
    assert runs_said("at 800 users (sweep-800, 5 runs) over") == [("sweep-800", 5)]
    assert runs_said("TPS of threads-100, threads-150 (3 runs each) and") == [("threads-100", 3), ("threads-150", 3)]
