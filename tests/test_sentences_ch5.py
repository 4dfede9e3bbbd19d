"""Chapter 5's sentences on its committed data: every number they state is the step table's, and a sentence whose
claim depends on the data says the opposite when the data does."""
import pytest

from harness.book.chapters.ch5_sentences import (apis_sentence, final_sentence, goal_sentence, index_sentence,
                                                 meaning_list, osiv_sentence, pool_sentence, setup_sentence,
                                                 tomcat_sentence, load_sentence)
from harness.book.chapters.ch5_steps import API, steps_table
from harness.book.chapters.ch5_verdicts import article_apis
from harness.lab.store import load


@pytest.fixture(scope="module")
def chapter():
    data = load("chapter5")
    return data, steps_table(data)


def test_the_apis_sentence_states_the_tables_numbers(chapter):
    _, table = chapter
    apis = table[table["kind"] == API]
    text = apis_sentence(table, article_apis())
    assert f"{apis['tps'].min():.0f}–{apis['tps'].max():.0f} answered requests per second" in text
    assert f"up to {apis['pending_max'].max():.0f} at once" in text
    assert "The database is what fills up" in text


def test_the_apis_sentence_turns_when_the_database_keeps_up(chapter):
    _, table = chapter
    cheap = table.assign(db_cpu_ms=table["db_cpu_ms"] / 100)
    assert "The database is not the limit" in apis_sentence(cheap, article_apis())


def test_open_in_view_and_the_final_run_in_numbers(chapter):
    _, table = chapter
    rows = table.set_index("step")
    assert f"**{rows.loc['pool-10', 'hold_ms']:,.0f} ms**" in osiv_sentence(table)
    assert f"**{rows.loc['no-osiv', 'hold_ms']:,.0f} ms**" in osiv_sentence(table)
    assert f"**{rows.loc['final-no-osiv', 'peak_tps']:.0f}/s**" in final_sentence(table)
    assert f"{rows.loc['no-index', 'db_cpu_ms']:.1f} ms of CPU" in index_sentence(table)


def test_every_sentence_renders_from_the_committed_data(chapter):
    data, table = chapter
    texts = [goal_sentence(), setup_sentence(data, table), load_sentence(data, table), pool_sentence(table),
             tomcat_sentence(table), meaning_list(table)]
    assert all(texts) and not any("nan" in t for t in texts)
    assert "220.83 requests per second" in texts[0] and "883 per second" in texts[0]
