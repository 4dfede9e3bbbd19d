"""The rendered book read as a reader reads it (issue 41): the prose of each page's text column, outside code, charts
and formulas, holds no source text (`{python}`, an unresolved @sec-/@tbl-/@fig- reference, Markdown's ** or
backticks) and writes its numbers in the book's one format (harness.book.prose): thousands separators from 1,000, a
percent sign without a space, a true minus sign. Each finder is checked on its own on a sentence that breaks it."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from book_pages import book_chapters, html_path  # noqa: E402,I001 (beside this file)
from harness.book.prose import YEAR  # 19xx or 20xx, not a round hundred ("all 2000 answered" is a count)

PAGES = [html_path(chapter) for chapter in book_chapters()]
MAIN = re.compile(r'<main[^>]*id="quarto-document-content"[^>]*>(.*)</main>', re.S)
HIDDEN = {"script", "style", "code", "pre", "svg", "math", "kbd", "samp", "template"}


class Prose(HTMLParser):
    """The text a reader reads in an HTML fragment: every text node outside HIDDEN elements and chart containers."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hidden = 0
        self.stack: list[bool] = []
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "hr", "input", "meta", "link", "wbr", "source", "col"):
            return  # void elements: no end tag comes
        hides = tag in HIDDEN or "lab-chart" in (dict(attrs).get("class") or "")
        self.stack.append(hides)
        self.hidden += hides

    def handle_endtag(self, tag):
        if self.stack:
            self.hidden -= self.stack.pop()

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def prose(html: str) -> str:
    match = MAIN.search(html)
    reader = Prose()
    reader.feed(match.group(1) if match else html)
    return " ".join(reader.parts)


# Each finder: the places in a page's prose that break one rule, as short excerpts.
def _around(text: str, match: re.Match) -> str:
    return text[max(0, match.start() - 30):match.end() + 30].replace("\n", " ")


def finder(pattern: str, in_quotes: bool = True):
    """A rule's finder; `in_quotes=False` leaves out the articles' words (“…”), which the book quotes as written."""
    compiled = re.compile(pattern)

    def find(text: str) -> list[str]:
        text = text if in_quotes else QUOTED.sub("“…”", text)
        return [_around(text, m) for m in compiled.finditer(text)]
    return find


QUOTED = re.compile(r"“[^”]*”")


FINDERS = {
    "source text": finder(r"\{python\}|\{r\}|`"),
    "an unresolved cross-reference": finder(r"(?<![\w/.])\??@(?:sec|tbl|fig|eq)-[\w-]+"),
    "Markdown's bold or italics markers": finder(r"\*\*|__\w"),
    "a number of 1,000 or more without separators": finder(rf"(?<![\w.,/:#=\u2212-])(?!{YEAR}\b)\d{{4,}}(?![\w.,]\d)",
                                                          in_quotes=False),
    "a space before a percent sign": finder(r"\d[ \u00a0\u202f]%", in_quotes=False),
    "a hyphen as a minus sign": finder(r"(?<![\w)\]])-\d", in_quotes=False),
    # pandas's and Python's leaks ("NaN", capitalised, is a word the protocol's notes explain)
    "a value that did not compute": finder(r"\b(?:nan|inf|NaT)\b|\bNone\b(?! of)"),
    # an inline value shown as Python's repr: its no-break spaces and other unprintables written as escapes
    "an escaped character": finder(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|n\b)"),
}


@pytest.fixture(scope="module")
def texts(book) -> dict[str, str]:
    return {page: prose((book / page).read_text()) for page in PAGES}


@pytest.mark.parametrize("rule", FINDERS)
def test_no_page_breaks_the_rule(texts, rule):
    found = {page: hits for page in PAGES if (hits := FINDERS[rule](texts[page]))}
    places = sum(map(len, found.values()))
    assert places == 0, f"{places} place(s) with {rule}: {found}"


def test_no_value_at_a_lines_start_turns_a_sentence_into_a_list(book):
    """A line of a .qmd that starts with an inline value reading "11." or "4)" becomes an ordered list once the value
    is in (chapter 4's formula was cut into list items so): the book writes no list that starts past 1."""
    found = {page: re.findall(r'<ol start="(\d+)"', MAIN.search((book / page).read_text()).group(1)) for page in PAGES}
    assert not any(found.values()), found


def test_the_prose_reader_skips_code_charts_and_scripts():
    html = ('<main id="quarto-document-content"><p>Seen 1,200 <code>8080</code></p><div class="lab-chart">'
            '<span>9999</span></div><script>var x = 12345;</script><p>also<br>seen</p></main><p>outside</p>')
    assert prose(html).split() == ["Seen", "1,200", "also", "seen"]


@pytest.mark.parametrize("rule, broken, fine", [
    ("source text", "the cut-off is {python} w.cut_off(o) s", "the cut-off is 20 s"),
    ("source text", "step `a-300-pv` ran", "step a-300-pv ran"),
    ("an unresolved cross-reference", "as shown (@sec-ch6-hosts)", "as shown in Section 6.2 (mail a@b.org)"),
    ("Markdown's bold or italics markers", "the **burst** lesson", "the burst lesson"),
    ("a number of 1,000 or more without separators", "8293 connections, all 2000 answered",
     "8,293 connections in 2023, v1.8.1, sleepMs=2000, as “TPS : 1831” says"),
    ("a space before a percent sign", "5 % of the time", "5% of the time"),
    ("a hyphen as a minus sign", "a margin of -1808.4σ", "a margin of −1,808.4σ over 1-5 s, F000-c.2"),
    ("a value that did not compute", "the rate was nan per second, None held", "None of them failed; infinite"),
    ("an escaped character", "between 798\\xa0ms faster", "between 798\u00a0ms faster, C:\\data"),
])
def test_each_finder_finds_what_it_names_and_only_that(rule, broken, fine):
    assert FINDERS[rule](broken), broken
    assert FINDERS[rule](fine) == [], fine


def test_every_page_has_prose_to_read(texts):
    assert all(len(texts[page]) > 500 for page in PAGES), {p: len(t) for p, t in texts.items()}
