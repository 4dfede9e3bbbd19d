"""Validation cannot crash: random TOML-shaped specs and environments end in a Spec or a LabError, never in a traceback.

Hypothesis draws the keys from the real key sets (and junk), and values of every TOML type (tables, lists, huge and
negative numbers, NaN, empty strings, booleans), with plausible values mixed in so that the deeper checks run too:
whole specs, the sections in their places, [services.*] and [placement], each service kind's knobs one at a time, and
data directories and PostgreSQL cluster folders of every sort. Derandomized (a fixed seed per test), so a run in CI
draws what a run here drew.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import LabError
from harness.lab import preflight
from harness.lab.load.options import EXECUTORS, LOAD_KEYS, METHODS, REQUEST_KEYS, SPIKE_MODES, TOOLS
from harness.lab.placement import KEYS as PLACEMENT_KEYS
from harness.lab.services.kinds import KINDS as SERVICE_KINDS
from harness.lab.services.kinds import SERVER_KINDS
from harness.lab.services.tomcat.knobs import SERVER_KEYS
from harness.lab.spec import (CONTAINER_KEYS, LAUNCHES, NETWORKS, RECORDS, SYSTEM_KEYS, Spec,
                              parse_spec)

from conftest import LIMITS

# A busy 2-core machine: no deadline (a slow example is not a failure), a fixed seed, a few hundred examples in all.
PROPERTY = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

WORDS = [*EXECUTORS, *TOOLS, *SPIKE_MODES, *METHODS, *LAUNCHES, *RECORDS, *NETWORKS, *SERVICE_KINDS, "tomcat", "server",
         "load", "proxy", "return", "1.1", "close", "128MB", "pair-room", "db", "api", "0", "0-1", "1,3", "2g", "5m",
         "smoke:waves", "smoke:nope", "t.toml:a", "x.toml:y", "F000-a", "F0-a", "127.0.0.1", "10.0.0.5", "::1",
         "/hello", "/sleep", "/${id}", "hello", "1s", "30s", "0s", "500ms", "1m30s", "100000h", "25h", "1x", "", " ",
         "\x00", "a" * 300]
NUMBERS = st.one_of(st.integers(-3, 70_000), st.integers(-2**80, 2**80), st.sampled_from([2**31 - 1, 2**31, 2**63]),
                    st.floats(allow_nan=True, allow_infinity=True))
SCALARS = st.one_of(st.sampled_from(WORDS), st.text(max_size=12), NUMBERS, st.booleans())
NAMES = st.one_of(st.sampled_from(["junk", "", "Bad Name", "db", "proxy", "api", "server", "k6", "load"]),
                  st.text(max_size=8))
ANYTHING = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
                        max_leaves=6)  # any TOML value: scalars, lists and tables nested a little


def mostly(plausible):
    """Usually a value of the right kind (so the deeper checks run), now and then anything at all."""
    return st.sampled_from((True, True, True, False)).flatmap(lambda plain: plausible if plain else ANYTHING)


def plausible(kind: type, minimum) -> st.SearchStrategy:
    """A value of a key's type near its minimum, or one of the words the lab knows."""
    low = minimum if isinstance(minimum, int) else 0
    return {int: st.integers(low - 1, low + 40) | st.sampled_from([2, 10, 100, 5000, 20_000]),
            float: st.floats(0, 4) | st.integers(0, 3), bool: st.booleans()}.get(kind, st.sampled_from(WORDS))


def table(keys: dict, special: dict | None = None, size: int = 4) -> st.SearchStrategy:
    """A table of some of `keys` (key → (type, minimum)) and now and then a junk key, each with a mostly plausible
    value (`special` gives a key's own strategy)."""
    special = special or {}
    chosen = st.lists(st.sampled_from(sorted(keys)) | NAMES, max_size=size, unique=True)
    return chosen.flatmap(lambda names: st.fixed_dictionaries({
        name: special.get(name, mostly(plausible(*keys[name][:2]) if name in keys else SCALARS)) for name in names}))


STAGES = mostly(st.lists(table({"duration": (str, None), "target": (int, 0)}, size=3), max_size=3))
REQUESTS = mostly(st.lists(table({k: (str, None) for k in REQUEST_KEYS}, {"extract": mostly(table(
    {"id": (str, None)})), "headers": mostly(table({"X-Header": (str, None)})), "port": mostly(st.integers(0, 70_000)),
    "background": mostly(st.booleans())}), max_size=3))
# File names (a jar, an SQL folder, a template): none, a folder, a NUL byte, too long a name, too long a path
FILES = st.sampled_from(["", "app.jar", "/etc", "a\x00.jar", "a" * 300, "/".join(["a" * 200] * 25)])
SERVICE_SPECIAL = {"upstream": mostly(st.sampled_from(["server", "api", "db", "web", "nope"])),
                   **dict.fromkeys(["path", "sql_dir", "template"], FILES)}


def service(kinds) -> st.SearchStrategy:
    """A service of one of `kinds` with some of that kind's knobs; now and then another kind, or no known kind."""
    known = st.sampled_from(sorted(kinds)).flatmap(lambda kind: st.fixed_dictionaries({"kind": st.just(kind)}, optional={
        knob: SERVICE_SPECIAL.get(knob, mostly(plausible(*types[:2]))) for knob, types in SERVICE_KINDS[kind].knobs.items()}))
    return mostly(known | st.tuples(ANYTHING, known).map(lambda drawn: {**drawn[1], "kind": drawn[0]}))


SERVICES = st.fixed_dictionaries({}, optional={  # the sample server's place (tomcat, your jar), others, junk names
    "server": service(SERVER_KINDS), **{name: service(SERVICE_KINDS) for name in ("db", "proxy", "api")},
    "Bad Name": service(SERVICE_KINDS)})
SECTIONS = {
    "server": table(SERVER_KEYS), "system": table(SYSTEM_KEYS), "container": table(CONTAINER_KEYS),
    "load": table(LOAD_KEYS, {"stages": STAGES, "requests": REQUESTS}, size=6),
    "services": SERVICES,
    "placement": st.dictionaries(NAMES, mostly(st.sampled_from(["0", "1", "0-1", "5", "9-2"]) | table(
        {k: (float, 0) if k == "quota" else (str, None) for k in PLACEMENT_KEYS})), max_size=2),
}
FINDINGS = mostly(st.lists(st.sampled_from(["F000-a", "F001-b", "F0-a"]), max_size=2))
TEXT = mostly(st.text(max_size=5))
DEFAULTS = table({name: (dict, None) for name in [*SECTIONS, "findings", "junk"]},
                 {**{name: mostly(s) for name, s in SECTIONS.items()}, "findings": FINDINGS}, size=4)
STEP = st.tuples(mostly(st.sampled_from(["a", "b", "c-1", "Not OK", "", None])), table(
    {name: (dict, None) for name in [*SECTIONS, "findings", "why", "kind", "starts", "same_as", "runs"]},
    {**{name: mostly(s) for name, s in SECTIONS.items()}, "findings": FINDINGS, "why": TEXT,
     "kind": mostly(st.sampled_from(["load", "redeploy"])), "starts": mostly(st.integers(-1, 200)),
     "same_as": mostly(st.sampled_from(["smoke:waves", "smoke:nope", "t.toml:a"])), "runs": mostly(st.integers(-1, 3))},
    size=4)).map(lambda drawn: drawn[1] if drawn[0] is None else {"id": drawn[0], **drawn[1]})  # None: no id
SPECS = table({"title": (str, None), "description": (str, None), "defaults": (dict, None), "step": (list, None)},
              {"defaults": mostly(DEFAULTS), "step": mostly(st.lists(mostly(STEP), max_size=3))})


def parsed(raw: dict) -> Spec | LabError:
    """The spec, or the LabError that lists its problems; anything else raised fails the test."""
    try:
        return parse_spec("t", raw, Path("t.toml"), LIMITS)
    except LabError as err:
        return err


def test_the_strategies_reach_valid_specs_too():
    """The property below means little if every draw were refused at the first key: some draws must pass."""
    found = []

    @PROPERTY
    @given(st.fixed_dictionaries({"defaults": st.fixed_dictionaries({"load": st.fixed_dictionaries(
        {"vus": st.integers(1, 100)})}), "step": st.lists(STEP, min_size=1, max_size=2)}))
    def collect(raw):
        found.append(parsed(raw))

    collect()
    assert any(isinstance(result, Spec) for result in found) and any(isinstance(r, LabError) for r in found)


@PROPERTY
@given(raw=SPECS)
def test_a_random_spec_is_valid_or_a_list_of_problems(raw):
    assert isinstance(parsed(raw), Spec | LabError)


@PROPERTY
@given(defaults=DEFAULTS, steps=st.lists(STEP, min_size=1, max_size=3))
def test_random_tables_in_the_right_places_are_valid_or_a_list_of_problems(defaults, steps):
    result = parsed({"defaults": defaults, "step": steps})
    assert isinstance(result, Spec | LabError)
    for step in result.steps if isinstance(result, Spec) else []:  # a valid step's disk estimate is a size
        kept, running = preflight.step_bytes(step)
        assert kept > 0 and running >= 0


@PROPERTY
@given(load=SECTIONS["load"], system=SECTIONS["system"], services=SECTIONS["services"], placement=SECTIONS["placement"])
def test_random_services_and_placement_are_valid_or_a_list_of_problems(load, system, services, placement):
    raw = {"defaults": {"load": {"vus": 2}},
           "step": [{"id": "a", "load": load, "system": system, "services": services, "placement": placement}]}
    assert isinstance(parsed(raw), Spec | LabError)


@pytest.mark.parametrize("kind", sorted(SERVICE_KINDS))
@settings(PROPERTY, max_examples=100)
@given(data=st.data())
def test_each_kind_resolves_any_knob_value_into_knobs_or_problems(kind, data):
    """One knob of the kind at a time, of its type or anything (the others of their type, or left out): the kind's
    resolve (its own checks included) appends problems, it raises nothing."""
    types = SERVICE_KINDS[kind].knobs
    knob = data.draw(st.sampled_from(sorted(types)))
    others = data.draw(st.fixed_dictionaries({}, optional={k: plausible(*t[:2]) for k, t in types.items() if k != knob}))
    value = data.draw(SERVICE_SPECIAL.get(knob, st.one_of(plausible(*types[knob][:2]), ANYTHING)))
    problems: list[str] = []
    resolved = SERVICE_KINDS[kind].resolve("server" if kind in SERVER_KINDS else "svc", {**others, knob: value},
                                           "step a", problems)
    assert isinstance(resolved, dict) and all(isinstance(p, str) for p in problems)


# ---- environments ------------------------------------------------------------------------------------

def _environment(kind: str, base: Path) -> str:
    """LAB_DATA_DIR of one kind, made under `base`."""
    if kind == "a file":
        (base / "file").write_text("")
        return str(base / "file")
    if kind == "under a file":
        (base / "file2").write_text("")
        return str(base / "file2" / "data")
    if kind == "a missing parent":
        return str(base / "missing" / "deeper" / "data")
    if kind == "a read-only directory":
        return "/proc/sys/data"  # read-only even for root
    if kind == "a read-only directory of ours":
        (base / "ro").mkdir(exist_ok=True)
        (base / "ro").chmod(stat.S_IRUSR | stat.S_IXUSR)  # root writes there all the same: success is fine then
        return str(base / "ro" / "data")
    if kind == "too long a name":
        return str(base / ("x" * 300))
    links = {"a dangling link": "nowhere", "a link loop": "loop", "under a dangling link": "nowhere",
             "a link to a directory": str(base)}
    if kind in links:
        (base / "link").unlink(missing_ok=True)
        (base / "link").symlink_to(base / "link" if links[kind] == "loop" else links[kind])
        return str(base / "link" / "data") if kind == "under a dangling link" else str(base / "link")
    if kind.startswith("text:"):
        return f"{base}/{kind.removeprefix('text:')}"
    return {"empty": "", "blank": "  ", "relative": "relative-data", "a directory": str(base)}[kind]


KINDS = ["empty", "blank", "a file", "under a file", "a missing parent", "a read-only directory",
         "a read-only directory of ours", "too long a name", "relative", "a directory", "a dangling link", "a link loop",
         "under a dangling link", "a link to a directory"]


# A folder name's text: no lone surrogate (no environment holds one), but a byte that is no UTF-8, as Python reads it
FOLDER_NAMES = (st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00/"), max_size=20)
                | st.just("x\udcff"))


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(kind=st.sampled_from(KINDS) | FOLDER_NAMES.map("text:".__add__))
def test_a_data_directory_is_usable_or_refused_clearly(kind, tmp_path_factory):
    """LAB_DATA_DIR of every sort: a usable directory or a LabError naming it; the same folder as LAB_PG_CLUSTERS:
    listed problems (none when usable). Relative paths resolve in a folder of the test's own."""
    base = tmp_path_factory.mktemp("env")
    saved, cwd = {k: os.environ.get(k) for k in ("LAB_DATA_DIR", "LAB_PG_CLUSTERS")}, os.getcwd()
    os.environ["LAB_DATA_DIR"] = os.environ["LAB_PG_CLUSTERS"] = _environment(kind, base)
    os.chdir(base)
    try:
        assert all(isinstance(problem, str) for problem in preflight.cluster_problems())
        try:
            root = preflight.check_data_root()
        except LabError as err:
            assert "LAB_DATA_DIR" in str(err)
        else:
            assert kind in ("relative", "a directory", "a missing parent", "a read-only directory of ours",
                            "a link to a directory") or kind.startswith("text:")
            assert root == Path(os.environ["LAB_DATA_DIR"])
            root.mkdir(parents=True, exist_ok=True)  # accepted means usable: what a run does first with it
            (root / ".probe").write_text("")
    finally:
        os.chdir(cwd)
        if (base / "ro").exists():
            (base / "ro").chmod(0o755)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.mark.parametrize("kind, expected", [
    ("empty", "LAB_DATA_DIR is set but empty"), ("a file", "is a file, not a directory"),
    ("under a file", "cannot be created"), ("a read-only directory", "is not writable"),
    ("too long a name", "cannot be used \\(File name too long\\)"),
    ("a dangling link", "cannot be used: .*/link is a symbolic link to nothing"),
    ("a link loop", "cannot be used: .*/link is a symbolic link to nothing \\(its target is missing, or links loop\\)"),
    ("under a dangling link", "LAB_DATA_DIR=.*/link/data cannot be used: .*/link is a symbolic link to nothing"),
])
def test_each_unusable_data_directory_has_its_reason(kind, expected, tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_DATA_DIR", _environment(kind, tmp_path))
    with pytest.raises(LabError, match=expected):
        preflight.check_data_root()
