"""A reader can get the data (harness.book.downloads): the steps and claim values as CSV beside the page, the data
folder's link."""
import pandas as pd
import pytest

from harness.book.downloads import data_links, folder_link, repository, step_records


def test_the_repository_address_comes_from_quarto_yml(tmp_path):
    quarto_yml = tmp_path / "_quarto.yml"
    quarto_yml.write_text("book:\n  repo-url: https://example.org/lab/\n  repo-branch: trunk\n")
    assert repository(quarto_yml) == ("https://example.org/lab", "trunk")
    quarto_yml.write_text("book:\n  title: a book that does not say where it is published\n")
    assert repository(quarto_yml) is None


def test_the_folder_is_linked_when_the_book_names_its_repository():
    where = repository()
    if where is None:
        assert folder_link("chapter3") == "`data/chapter3/` in the repository"
    else:
        url, branch = where
        assert folder_link("chapter3") == f"[`data/chapter3/` in the repository]({url}/tree/{branch}/data/chapter3)"


def test_inside_a_render_each_csv_is_written_beside_the_page_and_linked(tmp_path, monkeypatch):
    monkeypatch.setenv("QUARTO_DOCUMENT_PATH", str(tmp_path / "chapters"))
    monkeypatch.setenv("QUARTO_DOCUMENT_FILE", "03-users.qmd")
    table = pd.DataFrame({"users": [300, 15000], "ok": [300, 8293]}, index=pd.Index(["a-300", "f-10k"], name="step"))
    claims = pd.DataFrame({"claim": ["F000-a.1"], "value": [0.5]})
    text = data_links("chapter3", {"claims": claims, "steps": table}).data
    written = tmp_path / "chapters" / "03-users_files" / "data"
    assert (written / "chapter3-steps.csv").read_text() == "step,users,ok\na-300,300,300\nf-10k,15000,8293\n"
    assert (written / "chapter3-claims.csv").read_text() == "claim,value\nF000-a.1,0.5\n"
    assert text.startswith('Get the data: [the claims as CSV](03-users_files/data/chapter3-claims.csv)'
                           '{download="chapter3-claims.csv"} · [the steps as CSV](03-users_files/data/chapter3-steps.csv)')
    assert text.endswith(f" · {folder_link('chapter3')}.")


def test_outside_a_render_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv("QUARTO_DOCUMENT_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    assert "chapter3-steps.csv" in data_links("chapter3", {"steps": pd.DataFrame({"a": [1]})}).data
    assert list(tmp_path.iterdir()) == []


def test_names_that_would_make_odd_files_are_refused():
    with pytest.raises(ValueError, match="lower-case"):
        data_links("chapter3", {"../steps": pd.DataFrame({"a": [1]})})


def test_the_steps_file_has_a_row_per_complete_step_with_its_counts_and_commit():
    from harness.lab import store

    metas = store.complete_steps("chapter1")
    frame = step_records("chapter1").set_index("step")
    assert sorted(frame.index) == sorted(metas)
    one = next(iter(metas))
    assert frame.loc[one, "succeeded"] == metas[one]["requests"]["succeeded"]
    assert frame.loc[one, "git_commit"] == metas[one]["git_commit"]
    assert str(frame["started"].dtype).startswith("datetime64")


def test_a_chapters_verdicts_end_with_its_data_to_take():
    from harness.book.chapters import ch1
    from harness.book.verdict_tables import claim_values, verdict_table

    judged = ch1.judge()
    assert verdict_table(judged, "chapter1").data.rstrip().splitlines()[-1].startswith("Get the data: [the claims as CSV]")
    values = claim_values(judged).set_index("claim")
    assert sorted(values.index) == sorted(j.rule.claim for j in judged)
    first = judged[0]
    assert values.loc[first.rule.claim, "value"] == first.measured.value
    assert values.loc[first.rule.claim, "outcome"] == first.outcome
