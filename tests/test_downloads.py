"""A reader can get the data (harness.book.downloads): the step table as CSV beside the page, the data folder's link."""
import pandas as pd
import pytest

from harness.book.downloads import data_links, folder_link, repository


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


def test_inside_a_render_the_csv_is_written_beside_the_page_and_linked(tmp_path, monkeypatch):
    monkeypatch.setenv("QUARTO_DOCUMENT_PATH", str(tmp_path / "chapters"))
    monkeypatch.setenv("QUARTO_DOCUMENT_FILE", "03-users.qmd")
    table = pd.DataFrame({"users": [300, 15000], "ok": [300, 8293]}, index=pd.Index(["a-300", "f-10k"], name="step"))
    text = data_links("chapter3", table).data
    written = tmp_path / "chapters" / "03-users_files" / "data" / "chapter3-steps.csv"
    assert written.read_text() == "step,users,ok\na-300,300,300\nf-10k,15000,8293\n"
    assert '[this table as CSV](03-users_files/data/chapter3-steps.csv){download="chapter3-steps.csv"}' in text
    assert folder_link("chapter3") in text


def test_outside_a_render_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv("QUARTO_DOCUMENT_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    assert "chapter3-steps.csv" in data_links("chapter3", pd.DataFrame({"a": [1]})).data
    assert list(tmp_path.iterdir()) == []


def test_names_that_would_make_odd_files_are_refused():
    with pytest.raises(ValueError, match="lower-case"):
        data_links("chapter3", pd.DataFrame({"a": [1]}), name="../steps")
