"""The whole command line fuzzed (issue 42): every task's options with values a clumsy or hostile user types, under odd
data directories. The property: the task ends with one clear line (`error: …`, exit 2), a plain failure (exit 1), or
success; never a traceback. The tasks run in this process, called as invoke calls them, with nothing that would start
a server or a load: a value that would pass every check (a real chapter with no step named) is left out."""
from __future__ import annotations

from pathlib import Path

import invoke
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import tasks
from harness.book import passes
from harness.lab.spec import chapters, load_spec, ANY_MACHINE

NAMES = sorted(chapters())
STEP_IDS = {s.id for name in NAMES for s in load_spec(name, ANY_MACHINE).steps}
ODD = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", " ", "-1", "0", "1.5", "1e9", "99999999999999999999", "..", "../..", "/", "~", "~/x", ".toml",
                     "..toml", "...toml", "x.toml", "chapter1.toml", "a" * 300, "é", "chapter3@x", "-", "--force",
                     "\t", "nul\x00", "smoke;rm", "/dev/null", "/proc/self", "http://example.org"]),
)
CHAPTERS = st.one_of(ODD, st.sampled_from(NAMES))
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def answer(task, *args, **options) -> tuple[int, str]:
    """(exit code, message) of one task as invoke runs it; any other exception is the defect the property looks for."""
    try:
        task(invoke.Context(), *args, **options)
    except invoke.exceptions.Exit as done:
        return done.code, str(done.message or "")
    return 0, ""


def clear(code: int, message: str) -> bool:
    """One of the three endings: success, a failure (exit 1), or one error whose first line names the problem."""
    return code in (0, 1) or (code == 2 and message.startswith("error: ") and len(message.strip()) > len("error: "))


def not_a_step(step: str) -> bool:
    return step not in STEP_IDS


def a_file(name: str) -> bool:
    """Whether `name` is a file here; a name no file can have (too long, a NUL) is none."""
    try:
        return Path(name).is_file()
    except (OSError, ValueError):
        return False


@FUZZ
@given(chapter=ODD, step=ODD, backend=st.one_of(st.just("local"), ODD), server=st.none() | ODD, path=st.none() | ODD)
def test_run_answers_any_input_clearly(chapter, step, backend, server, path, data_dir):
    assume(chapter not in NAMES and not a_file(chapter))  # a real spec would start its steps
    code, message = answer(tasks.run, chapter, step=[step], backend=backend, server=server, path=path)
    assert code == 2 and clear(code, message), (code, message)


@FUZZ
@given(server=ODD, path=st.just("/") | ODD, profile=st.just("report") | st.sampled_from(NAMES) | ODD)
def test_report_answers_any_input_clearly(server, path, profile, data_dir):
    """No value here names a Spring Boot jar, so every report ends before its first step, in one line."""
    code, message = answer(tasks.report, server, path=path, profile=profile)
    assert code == 2 and clear(code, message), (code, message)


@settings(FUZZ, max_examples=20)  # each reads and checks a whole chapter's spec
@given(chapter=st.sampled_from(NAMES), step=ODD, backend=ODD)
def test_run_of_a_real_chapter_refuses_any_odd_step_or_backend(chapter, step, backend, data_dir):
    assume(not_a_step(step))
    code, message = answer(tasks.run, chapter, step=[step], backend=backend)
    assert code == 2 and clear(code, message), (code, message)


@FUZZ
@given(starts=ODD)
def test_startup_refuses_any_count_that_is_no_whole_number_of_starts(starts):
    try:
        assume(int(starts) < 1)  # a real count would start servers
    except ValueError:
        pass
    code, message = answer(tasks.startup, starts=starts)
    assert code == 2 and clear(code, message), (code, message)


@FUZZ
@given(port=ODD)
def test_serve_refuses_any_port_it_cannot_serve_on(port):
    try:
        assume(not 0 <= int(port) <= 65535)  # a real port would serve until Ctrl-C
    except ValueError:
        pass
    code, message = answer(tasks.serve, port=port)
    assert code == 2 and clear(code, message), (code, message)


@FUZZ
@given(chapter=CHAPTERS, step=st.one_of(ODD, st.sampled_from(sorted(STEP_IDS))), out=st.none() | ODD,
       image=st.none() | ODD)
def test_manifests_answers_any_input_clearly(chapter, step, out, image, tmp_path_factory):
    assume(out is None or ".." not in out)
    where = None if out is None else f"{tmp_path_factory.mktemp('out')}/{out}"  # never outside the test's folder
    code, message = answer(tasks.manifests, chapter, step, out=where, image=image)
    assert clear(code, message), (code, message)


@FUZZ
@given(chapter=CHAPTERS, data=ODD)
def test_compare_answers_any_input_clearly(chapter, data, tmp_path_factory):
    assume(".." not in data)
    code, message = answer(tasks.compare, chapter, data=f"{tmp_path_factory.mktemp('other')}/{data}")
    assert clear(code, message), (code, message)


@FUZZ
@given(chapter=CHAPTERS, label=ODD, why=ODD)
def test_withdraw_refuses_any_pass_that_was_not_kept(chapter, label, why, tmp_path, monkeypatch):
    monkeypatch.setattr(passes, "DATA", tmp_path)  # the book's own history is never written by a test
    code, message = answer(tasks.withdraw, chapter, label, why)
    assert code == 2 and clear(code, message), (code, message)


@settings(FUZZ, max_examples=8)  # each lists every experiment's steps
@given(root=ODD)
def test_list_answers_under_any_data_directory(root, tmp_path_factory, monkeypatch):
    assume(".." not in root and "\x00" not in root)  # no environment variable holds a NUL
    monkeypatch.setenv("LAB_DATA_DIR", f"{tmp_path_factory.mktemp('list')}/{root}")
    code, message = answer(tasks.list_)
    assert clear(code, message), (code, message)


@pytest.mark.parametrize("task, positionals", [(tasks.run, 1), (tasks.report, 1), (tasks.manifests, 2),
                                               (tasks.compare, 1), (tasks.withdraw, 3)])
def test_help_where_a_positional_is_due_shows_the_tasks_help_and_any_other_option_is_refused(task, positionals,
                                                                                           data_dir, capsys):
    """invoke takes `--help` typed after a task that waits for a positional argument as that argument's value
    (pyinvoke/invoke#982): `invoke run --help` would run a chapter named "--help". It shows the task's help; any
    other option in that place is refused by name before anything starts."""
    name = task.name
    assert answer(task, "--help", *["x"] * (positionals - 1)) == (0, "")
    assert capsys.readouterr().out.startswith(f"Usage: inv[oke] [--core-opts] {name} [--options]")
    code, message = answer(task, *["x"] * (positionals - 1), "--dry")
    assert code == 2 and message.startswith("error: '--dry' came where `invoke ") and f"--help {name}`" in message


def test_list_refuses_a_data_directory_no_folder_can_be_at_as_run_does(tmp_path, monkeypatch, capsys):
    """A file, a path under a file, a link to nothing, a loop of links, or nothing: `invoke run` refuses them, and
    `invoke list` says why too, rather than listing every step as never run there. A folder not made yet is listed
    (nothing ran)."""
    (tmp_path / "file").write_text("")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for root, why in (("file", "is a file, not a directory"), ("file/data", "is a file, not a directory"),
                      ("dangling", "is a symbolic link to nothing"), ("loop", "is a symbolic link to nothing")):
        monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / root))
        code, message = answer(tasks.list_)
        assert code == 2 and message.startswith(f"error: LAB_DATA_DIR={tmp_path / root} ") and why in message
        assert answer(tasks.run, "smoke")[0] == 2
    monkeypatch.setenv("LAB_DATA_DIR", " ")  # set but empty: the working directory, to pathlib
    assert answer(tasks.list_) == answer(tasks.run, "smoke") == (2, "error: LAB_DATA_DIR is set but empty (it would "
                                                                   "mean the working directory): unset it for data/, "
                                                                   "or point it at a directory")
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path / "not-yet"))
    assert answer(tasks.list_) == (0, "") and "never run" in capsys.readouterr().out


@pytest.mark.parametrize("data, clusters, said", [
    ("{tmp}/file", "{tmp}/clusters", "LAB_DATA_DIR={tmp}/file is a file, not a directory"),
    ("~nosuchuser/x", "{tmp}/clusters", "LAB_DATA_DIR=~nosuchuser/x starts with ~nosuchuser, and no user"),
    ("{tmp}/data", "{tmp}/file", "LAB_PG_CLUSTERS={tmp}/file is a file, not a directory"),
    ("{tmp}/data", "", "LAB_PG_CLUSTERS is set but empty"),
    ("{tmp}/data", "~nosuchuser/x", "LAB_PG_CLUSTERS=~nosuchuser/x starts with ~nosuchuser, and no user"),
])
def test_clean_clusters_checks_both_folders_before_it_holds_or_removes_anything(data, clusters, said, tmp_path,
                                                                                 monkeypatch):
    """Where `invoke clean --clusters` takes its lock (the data directory) and what it empties (the clusters' folder)
    are checked as `invoke run` checks them: no traceback from a file in the way, no folder named ~nosuchuser made."""
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("LAB_DATA_DIR", data.format(tmp=tmp_path))
    monkeypatch.setenv("LAB_PG_CLUSTERS", clusters.format(tmp=tmp_path))
    monkeypatch.chdir(tmp_path)
    code, message = answer(tasks.clean, clusters=True)
    assert code == 2 and message.startswith(f"error: {said.format(tmp=tmp_path)}"), message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_second_withdrawal_of_one_pass_is_refused_naming_the_first(tmp_path, monkeypatch):
    monkeypatch.setattr(passes, "DATA", tmp_path)  # the book's own history is never written by a test
    (tmp_path / "chapter1").mkdir()
    (tmp_path / "chapter1" / passes.PASSES).write_text("pass,claim\n2026-01-01,F002-a.1\n")
    assert answer(tasks.withdraw, "chapter1", "2026-01-01", "a reason") == (0, "")
    code, message = answer(tasks.withdraw, "chapter1", "2026-01-01", "again")
    assert code == 2 and "the pass '2026-01-01' of chapter1 was withdrawn already (" in message and ": a reason)" in message
    assert len(passes.withdrawn("chapter1")) == 1


@pytest.mark.parametrize("image", ["bad image:$(x)", "x\ny", "x:", "x@sha256:abc", "/x"])
def test_manifests_refuse_an_image_no_registry_could_name(image, data_dir):
    code, message = answer(tasks.manifests, "smoke", "waves", image=image)
    assert code == 2 and message.startswith("error: --image ") and "is not an image reference" in message


@pytest.mark.parametrize("options, said", [({"server": ""}, "--server is empty"),
                                           ({"path": ""}, "--path goes with --server")])
def test_an_empty_server_or_path_is_refused_not_ignored(options, said, data_dir):
    """`--server ''` ran the chapter's own server into its data folder, as though no --server were given."""
    code, message = answer(tasks.run, "smoke", **options)
    assert code == 2 and message.startswith(f"error: {said}") and not data_dir.exists()
