"""The answer page, the references and the glossary (harness.book.chapters.ch0, chapters/00-the-answer.qmd,
references.qmd, glossary.qmd). The page reads the chapters only through their faces, so the tests give it small
stand-in faces (judge(), limits()): every claim on the page comes from them and changes when they do, a chapter
without a face or data is named and the page still renders."""
from __future__ import annotations

import re
import sys
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from harness import LabError, ROOT
from harness.book import chapters, passes
from harness.book.chapters import ch0
from harness.book.chapters.ch0 import outcomes
from harness.book.chapters.ch0 import gather, sources
from harness.book.chapters.ch0 import terms
from harness.book.chapters.ch0.outcomes import NOT_JUDGED
from harness.book.claims import NOT_REPRODUCED, PARTLY, REPRODUCED, Measured, judge, rules
from harness.book.faces import CHAPTERS, Limit
from harness.book.verdict_tables import number
from harness.lab.services.tomcat.knobs import SERVER_KEYS

sys.path.insert(0, str(ROOT / "tests"))
import qmd  # noqa: E402

# ---- stand-in faces ------------------------------------------------------------------------------------------------


def inside(rule) -> float:
    """A value inside the rule's region: the claim holds."""
    t = rule.threshold
    return {"above": lambda: t + 1, "below": lambda: t - 1, "within": lambda: 0.0,
            "band": lambda: (t[0] + t[1]) / 2}[rule.shape]()


def outside(rule) -> float:
    t = rule.threshold
    return {"above": lambda: t - 1, "below": lambda: t + 1, "within": lambda: abs(t) + 1,
            "band": lambda: t[1] + 1}[rule.shape]()


def judged(chapter: str, failing=()) -> list:
    """Every claim of the chapter judged on an exact value: held, except the claims in `failing`, whose steps' CPUs
    were saturated where their rule names the steps that would show a machine fact."""
    return [judge(rule, Measured((outside(rule) if claim in failing else inside(rule),), exact=True,
                                 busy=1.0 if rule.machine_steps else None))
            for claim, rule in rules(chapter).items()]


LIMITS = {  # what each chapter's face might say: one limit each (two for chapter 7), in the order they bind
    "chapter1": [Limit(1, "the thread pool", 484.1, "requests/s", "100 threads answer 484.1 requests/s.", "chapter1",
                       "sec-the-thread-pool")],
    "chapter3": [Limit(2, "the connection ceiling", 8293, "connections", "8,192 + 100 + 1 held at once.", "chapter3",
                       "sec-not-in-the-chapter")],
    "chapter4": [Limit(3, "the CPU", 3100, "requests/s", "The plateau: 3,100 requests/s on two cores.", "chapter4", "")],
    "chapter5": [Limit(4, "the database pool", 10, "connections", "Ten connections serve 12 requests/s.", "chapter5", "")],
    "chapter6": [Limit(5, "the proxy's upstream connections", 32, "connections", "32 kept connections.", "chapter6", "")],
    "chapter7": [Limit(6, "open files", 19800, "connections", "19,800 connections at 20,000 open files.", "chapter7", ""),
                 Limit(7, "memory per connection", 60, "KiB", "60 KiB per connection.", "chapter7", "")],
}


class Faces:
    """Stand-in faces for `chapters`; any other chapter has none (chapters.face raises as it does for a missing module)."""

    def __init__(self, chapters=CHAPTERS, failing=(), limits=None):
        self.limits = {c: list((limits or LIMITS).get(c, [])) for c in chapters}
        self.failing = set(failing)

    def face(self, chapter: str):
        if chapter not in self.limits:
            raise LabError(f"{chapter} has no face module (harness/book/chapters/ch{chapter[-1]})")
        return SimpleNamespace(judge=lambda: judged(chapter, self.failing), limits=lambda: self.limits[chapter])


@pytest.fixture
def stand_ins(monkeypatch, tmp_path):
    """Install stand-in faces: `stand_ins(Faces(...))`; every chapter counts as having data, and none has a kept pass
    (the page would state the book's pooled verdicts over the faces' own)."""
    monkeypatch.setattr(gather, "has_data", lambda chapter: True)
    monkeypatch.setattr(passes, "DATA", tmp_path / "no-kept-passes")

    def install(fake: Faces) -> Faces:
        monkeypatch.setattr(chapters, "face", fake.face)
        return fake
    return install


# ---- the page, as Quarto runs it ------------------------------------------------------------------------------------

INLINE = re.compile(r"`\{python\} (.+?)`")


def page_text(page: str) -> str:
    """The page's Markdown with its cells' outputs and inline values in place (cells run in order, in this process)."""
    text = qmd.expand_includes(ROOT / page, ROOT)
    namespace: dict = {}
    outputs = []
    for cell in qmd.python_cells(text):
        source = "\n".join(line for line in cell.splitlines() if not line.startswith("#|")).strip()
        *body, last = source.splitlines()
        exec("\n".join(body), namespace)
        try:
            value = eval(last, namespace)
        except SyntaxError:
            exec(last, namespace)
            value = None
        outputs.append(value)
    shown = [getattr(v, "data", None) or (v._repr_markdown_() if hasattr(v, "_repr_markdown_") else "") for v in outputs
             if v is not None]
    prose = INLINE.sub(lambda m: str(eval(m.group(1), namespace)), text)
    return prose + "\n" + "\n".join(shown)


def test_with_no_face_and_no_data_the_page_renders_and_says_so(data_dir):
    text = page_text("chapters/00-the-answer.qmd")
    assert "No chapter's limits could be computed yet" in text
    for chapter in CHAPTERS:
        assert f"{sources.chapter_name(chapter)}, *{sources.chapter_title(chapter)}*" in text
        assert f"`invoke run {chapter}` measures it" in text
    assert "Of the 31 findings, 0 reproduced" in text and "31 not judged yet." in text
    assert 'class="lab-explorer"' in text


def test_the_page_asks_all_seven_chapters(stand_ins, data_dir, monkeypatch):
    fake, asked = stand_ins(Faces()), []
    monkeypatch.setattr(chapters, "face", lambda chapter: asked.append(chapter) or fake.face(chapter))
    page_text("chapters/00-the-answer.qmd")
    assert asked == list(CHAPTERS) and len(CHAPTERS) == 7


def test_every_limit_is_a_faces_number_in_the_order_they_bind(stand_ins, data_dir):
    stand_ins(Faces())
    answer = ch0.answer()
    items = ch0.limits_list(answer).data.splitlines()
    expected = sorted((limit for limits in LIMITS.values() for limit in limits), key=lambda limit: limit.order)
    assert len(items) == len(expected)
    for n, (item, limit) in enumerate(zip(items, expected, strict=True), start=1):
        assert item.startswith(f"{n}. **{limit.name[0].upper()}{limit.name[1:]}: {number(limit.value, limit.unit)}.**")
        assert limit.sentence in item
    assert items[1].endswith("(@sec-from-300-to-15000)")  # an anchor its chapter does not have: the chapter instead
    assert ch0.missing_note(answer).data == ""


class Unjudged(Faces):
    """Faces whose claims must not be judged."""

    def face(self, chapter: str):
        face = super().face(chapter)
        face.judge = lambda: pytest.fail(f"{chapter}'s claims judged for a page that states no verdict")
        return face


def test_your_server_page_lists_the_answers_limits_and_judges_nothing(stand_ins, data_dir):
    """The your-server page lists the same limits as the answer page, read without judging any claim (judging is
    most of a chapter's reading, and that page states no verdict)."""
    stand_ins(Faces())
    listed = ch0.limits_list(ch0.answer()).data
    stand_ins(Unjudged())
    alone = ch0.answer(judged=False)
    assert ch0.limits_list(alone).data == listed and alone.judgements == {} and alone.missing == {}
    page = qmd.namespace(ROOT / "chapters" / "a2-your-server.qmd")["answer"]  # what its list cell reads
    assert ch0.limits_list(page).data == listed and page.judgements == {}


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c in LIMITS])
def test_each_limit_on_the_page_changes_when_its_data_does(chapter, stand_ins, data_dir):
    stand_ins(Faces())
    before = page_text("chapters/00-the-answer.qmd")
    changed = {**LIMITS, chapter: [Limit(**{**vars(LIMITS[chapter][0]), "value": LIMITS[chapter][0].value * 3 + 7,
                                            "sentence": "Measured again: a new sentence."})]}
    stand_ins(Faces(limits=changed))
    after = page_text("chapters/00-the-answer.qmd")
    old, new = LIMITS[chapter][0], changed[chapter][0]
    assert f"{number(old.value, old.unit)}.** {old.sentence}" in before and old.sentence not in after
    assert f"{number(new.value, new.unit)}.** {new.sentence}" in after


def finding_row(table: str, finding: str) -> str:
    return next(line for line in table.splitlines() if line.startswith(f"| {finding} |"))


def test_findings_are_composed_from_every_chapters_claims(stand_ins, data_dir):
    stand_ins(Faces())
    answer = ch0.answer()
    table = ch0.findings_table(answer).data
    every = {rule.finding for chapter in CHAPTERS for rule in rules(chapter).values()}
    rows = [line for line in table.splitlines() if line.startswith("| F0")]
    assert len(rows) == len(every) == 31
    row = finding_row(table, "F002-d")  # judged by chapter 1 (d.0) and chapter 7 (d.1–d.3)
    assert "**reproduced**" in row and "[Chapter 1](01-one-thread-one-request.qmd#verdict-f002-d) and [Chapter 7](07-past-thread-per-request.qmd#verdict-f002-d)" in row
    quote = rules("chapter1")["F002-d.0a"].quote
    assert f"“{quote}” ([Choo 2021](https://joshchoo.com/writing/thread-pool-concurrency))" in row
    rule = rules("chapter3")["F000-a.1a"]
    assert f"{rule.measure.split(':')[0]}: {number(inside(rule), rule.unit)} (yes)" in finding_row(table, "F000-a")
    assert ch0.tally_sentence(answer) == ("Of the 31 findings, 31 reproduced, 0 partly reproduced, 0 not reproduced, "
                                          "0 differing on this hardware and 0 inconclusive.")


def test_each_finding_and_the_tally_change_when_a_claims_data_does(stand_ins, data_dir):
    stand_ins(Faces())
    before = page_text("chapters/00-the-answer.qmd")
    stand_ins(Faces(failing=["F000-j.1", "F001-c.1", "F001-c.2", "F001-b.1"]))
    after = page_text("chapters/00-the-answer.qmd")
    answer = ch0.answer()
    outcomes = {f.finding: f.outcome for f in ch0.findings(answer)}
    assert (outcomes["F000-j"], outcomes["F001-c"], outcomes["F001-b"]) == (PARTLY, NOT_REPRODUCED, PARTLY)
    assert "Of the 31 findings, 31 reproduced, 0 partly reproduced" in before
    assert "Of the 31 findings, 28 reproduced, 2 partly reproduced, 1 not reproduced" in after
    table = ch0.findings_table(answer).data
    assert finding_row(table, "F001-c").count("(no)") == 2 and "**not reproduced**" in finding_row(table, "F001-c")
    # F001-b.1 names a machine fact that is no CPU's share, which its data cannot show: a miss is a miss
    assert "(differs on this hardware)" not in finding_row(table, "F001-b") and "(no)" in finding_row(table, "F001-b")


def test_a_miss_the_machine_decides_differs_on_this_hardware(stand_ins, data_dir):
    parts = {claim: rule for claim, rule in rules("chapter6").items() if rule.finding == "F003-a"}
    machine = [claim for claim, rule in parts.items() if rule.machine]
    assert machine and len(machine) < len(parts), "F003-a's rules changed: pick a finding with machine-bound parts"
    stand_ins(Faces(failing=machine))
    row = finding_row(ch0.findings_table(ch0.answer()).data, "F003-a")
    assert row.count("(differs on this hardware)") == len(machine) and f"**{PARTLY}**" in row


def test_a_finding_with_a_chapter_missing_is_not_judged(stand_ins, data_dir):
    stand_ins(Faces(chapters=[c for c in CHAPTERS if c != "chapter7"]))
    answer = ch0.answer()
    found = {f.finding: f for f in ch0.findings(answer)}
    assert found["F002-d"].outcome == NOT_JUDGED  # chapter 1 judged its part: a part must not pass for the whole
    assert found["F002-d"].missing == ("Chapter 7: see the note above",)
    assert found["F002-a"].outcome == REPRODUCED
    row = finding_row(ch0.findings_table(answer).data, "F002-d")
    unjudged = len(rules("chapter7")) - sum(r.finding == "F000-k" for r in rules("chapter7").values())
    assert row.count("(yes)") == 2 and f"; {unjudged} more claims not judged |" in row
    note = ch0.missing_note(answer).data
    assert "Chapter 7, *Past thread-per-request*" in note and "chapter7 has no face module" in note
    assert "Chapter 1" not in note
    assert ch0.tally_sentence(answer).endswith("; 2 not judged yet.")  # F000-k and F002-d


def test_a_face_that_cannot_read_its_data_is_named_and_the_page_renders(stand_ins, data_dir, monkeypatch):
    fake = stand_ins(Faces())

    def face(chapter):
        if chapter == "chapter4":
            raise LabError("3 step(s) of chapter4 are broken, so nothing is read from them:\n  - …")
        return fake.face(chapter)
    monkeypatch.setattr(chapters, "face", face)
    text = page_text("chapters/00-the-answer.qmd")
    assert ("Chapter 4, *More threads, more throughput?* (@sec-more-threads-more-throughput): 3 step(s) of chapter4 "
            "are broken, so nothing is read from them:") in text
    assert "The plateau" not in text and "**The thread pool: 484\u00a0requests/s.**" in text


def test_a_face_whose_verdicts_fail_still_gives_its_limits(stand_ins, data_dir, monkeypatch):
    fake = stand_ins(Faces())

    def face(chapter):
        found = fake.face(chapter)
        if chapter == "chapter6":
            def judge():
                raise LabError("chapter6: the step wrk-keepalive-32 its rule F003-b.2 reads is missing")
            found.judge = judge
        return found
    monkeypatch.setattr(chapters, "face", face)
    answer = ch0.answer()
    assert "**The proxy's upstream connections: 32\u00a0connections.**" in ch0.limits_list(answer).data
    assert "the step wrk-keepalive-32 its rule F003-b.2 reads is missing" in ch0.missing_note(answer).data
    assert {f.finding: f.outcome for f in ch0.findings(answer)}["F003-b"] == NOT_JUDGED


def test_finding_links_land_on_the_findings_verdict_in_its_chapter(monkeypatch):
    assert sources.verdict_link("chapter3", "F000-a") == "[Chapter 3](03-from-300-to-15000-users.qmd#verdict-f000-a)"
    monkeypatch.setattr(sources, "section_ids", lambda chapter: ("sec-chapter", "sec-f000-a"))
    assert sources.anchor("chapter3", "sec-elsewhere") == "sec-chapter"


# ---- the references ---------------------------------------------------------------------------------------------------

def test_the_articles_file_names_its_source_and_every_seed_the_rules_use():
    assert sources.ARTICLES_CSV.read_text().startswith("# The five articles")
    assert "seeds/README.md" in sources.ARTICLES_CSV.read_text().split("\n\n")[0]
    articles = sources.articles()
    seeds = {rule.seed for chapter in CHAPTERS for rule in rules(chapter).values()}
    assert set(articles) == seeds == {"000", "001", "002", "003", "004"}
    assert all(a.url.startswith("https://") and a.title and a.author and a.date for a in articles.values())
    assert outcomes.articles is sources.articles  # the findings table links the same articles


def test_the_references_page_lists_each_article_with_its_findings(data_dir):
    text = page_text("chapters/references.qmd")
    for article in sources.articles().values():
        assert f"[{article.title}]({article.url})" in text
    assert "| 000 |" in text and "12: F000-a … F000-l" in text and "@sec-from-300-to-15000 and @sec-past-thread-per-request" in text


# ---- the glossary -------------------------------------------------------------------------------------------------------

TERMS = ("HikariCP", "open-in-view", "Upstream keepalive", "TIME_WAIT", "SYN-RECV", "Virtual threads", "Event loop",
         "USL", "Little's law", "Keep-alive", "accept queue", "somaxconn", "tcp_syn_retries", "Open files", "gracefulStop",
         "Executors", "Closed loop", "Seed, finding, claim", "Stray failures")


def test_the_glossary_covers_the_books_terms_and_every_setting_the_server_reads():
    text = page_text("chapters/glossary.qmd")
    for term in TERMS:
        assert term in text, term
    env = ch0.glossary().env
    assert set(env.values()) <= set(SERVER_KEYS) and len(env) >= 10
    for prop, var in env.items():
        assert f"| `{prop}` |" in text and f"`{var}`" in text
    assert "1, 3, 7, 15, 31 and 63 s" in text  # one retry schedule, the model's, in words and tables alike


def test_the_glossarys_defaults_are_what_the_running_server_reported(monkeypatch):
    """SERVER_DEFAULTS (tomcat.knobs) is typed by hand; a server that left a knob unset reports Tomcat's own (synthetic steps)."""
    def meta(server, reported, nofile=4096):
        return {"chapter": "chapter3", "config": {"server": server}, "server_info": {"tomcat": reported},
                "machine": {"nofile_limit": nofile, "somaxconn": 4096}}
    metas = [meta({"TOMCAT_CONNECTION_TIMEOUT": 20000}, {"keepAliveTimeout": 20000, "minSpareThreads": 10}),
             meta({}, {"keepAliveTimeout": 60000, "minSpareThreads": 10}),
             meta({"TOMCAT_CONNECTION_TIMEOUT": 20000}, {"minSpareThreads": 10}, nofile=20000)]
    assert terms.reported_default("TOMCAT_KEEP_ALIVE_TIMEOUT", metas) == 60000  # the step that set neither
    assert terms.reported_default("TOMCAT_MIN_SPARE_THREADS", metas) == 10
    monkeypatch.setattr(terms, "step_metas", lambda: metas)
    g = terms.glossary()
    assert g.defaults["TOMCAT_MIN_SPARE_THREADS"] == 10 and g.article_connection_timeout_ms == 20000
    assert g.nofile == 4096 and g.somaxconn == 4096


def test_the_sidebar_lists_the_references_and_the_glossary():
    appendices = yaml.safe_load((ROOT / "_quarto.yml").read_text())["book"]["appendices"]
    assert "chapters/references.qmd" in appendices and "chapters/glossary.qmd" in appendices


def test_the_findings_table_is_a_table_of_five_columns(stand_ins, data_dir):
    stand_ins(Faces())
    frame = outcomes.table_frame(ch0.answer())
    assert list(frame.columns) == ["Finding", "The article says", "Measured here", "Outcome", "Judged in"]
    assert isinstance(frame, pd.DataFrame) and frame["Finding"].is_unique


def test_a_findings_core_claims_are_marked_where_it_has_others():
    """F003-c read "yes; inconclusive; yes" and was inconclusive, F002-d "yes … inconclusive" and partly reproduced:
    the difference is which claims are core, so the table says it."""
    from harness.book.chapters.ch0.outcomes import Finding, measured
    from harness.book.claims import INCONCLUSIVE, REPRODUCED, Judgement, Measured, Rule

    def claim(part, core, outcome):
        rule = Rule(f"F9-a.{part}", "F9-a", "002", "q", f"part {part}: more", "below", 1.0, "s", core=core)
        return ("chapter1", rule), Judgement(rule, Measured((0.5,)), outcome, 2.0)

    mixed = [claim(1, True, REPRODUCED), claim(2, False, INCONCLUSIVE)]
    finding = Finding("F9-a", "002", tuple(c for c, _ in mixed), tuple(j for _, j in mixed), ())
    assert measured(finding) == "part 1 (core): 0.5 (yes); part 2: 0.5 (inconclusive)"
    assert finding.outcome == "partly reproduced"
    alike = [claim(1, True, REPRODUCED), claim(2, True, INCONCLUSIVE)]
    finding = Finding("F9-a", "002", tuple(c for c, _ in alike), tuple(j for _, j in alike), ())
    assert measured(finding) == "part 1: 0.5 (yes); part 2: 0.5 (inconclusive)"
    assert finding.outcome == "inconclusive"
