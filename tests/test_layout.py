"""The package's shape (docs/architecture.md): no import cycles, a chapter's modules never import another chapter's, the
read side (harness.book) and the write side (harness.lab) meet only in data (the book reads it through
harness.lab.store), models know nothing of either but the spec they predict from (and its units), the lab's layers
import only downward, and no module grows past 450 lines."""
from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

from harness import ROOT

PACKAGE = ROOT / "harness"
MAX_LINES = 450  # "about 400"
CHAPTER = re.compile(r"^harness\.book\.chapters\.(ch\d+)(?:_|\.|$)")  # chN_x.py, the chN package and its modules
FACE = re.compile(r"^harness\.book\.chapters\.ch\d+$")  # a chapter's face: what other pages may read


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Each harness module → the harness modules it imports (at any depth in its code), those it imports through
    importlib included (`dynamic_imports`)."""
    found = static_imports()
    for module, targets in dynamic_imports().items():
        found[module] |= targets - {module}
    return found


# Modules whose importlib calls run on demand, not when they are imported, and what they may import so: the chapter
# faces (`invoke compare` and the answer page reach one by its name). memo imports the code a cached value names,
# which is any module: it is left out.
ON_DEMAND = {"harness.book.chapters": re.compile(r"^harness\.book\.chapters\.ch[1-9]\d*$")}  # not ch0: it reads them
DYNAMIC_ONLY_AT_CALL = {"harness.book.memo"}


@functools.cache
def dynamic_imports() -> dict[str, set[str]]:
    """What each module that calls importlib.import_module imports through it: traced while the module is imported
    in a fresh interpreter (harness.lab.services.kinds finds every kind so), or ON_DEMAND's pattern for calls that
    run later. A caller that is neither fails the test that reads this."""
    callers = sorted(module_name(p) for p in PACKAGE.rglob("*.py") if "import_module(" in p.read_text())
    traced = callers_traced([c for c in callers if c not in ON_DEMAND and c not in DYNAMIC_ONLY_AT_CALL])
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    found = {c: {m for m in modules if ON_DEMAND[c].match(m)} for c in callers if c in ON_DEMAND}
    return found | {c: set(traced.get(c, ())) for c in callers if c in traced} | \
        {c: set() for c in callers if c not in found and c not in traced and c not in DYNAMIC_ONLY_AT_CALL}


TRACER = """
import importlib, json, sys
found = {}
real = importlib.import_module
def traced(name, package=None):
    module = real(name, package)
    found.setdefault(sys._getframe(1).f_globals.get("__name__"), []).append(module.__name__)
    return module
importlib.import_module = traced
for name in sys.argv[1:]:
    real(name)
print(json.dumps(found))
"""


def callers_traced(callers: list[str]) -> dict[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", TRACER, *callers], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    return {k: v for k, v in json.loads(done.stdout).items() if k in callers}


def static_imports() -> dict[str, set[str]]:
    """Each harness module → the harness modules its import statements name (at any depth in its code)."""
    found = {}
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    for path in PACKAGE.rglob("*.py"):
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness"):
                for alias in node.names:  # `from harness.lab import store` imports the module harness.lab.store
                    child = f"{node.module}.{alias.name}"
                    targets.add(child if child in modules else node.module)
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.startswith("harness")}
        found[module_name(path)] = targets - {module_name(path)}
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first search (each reported once, from where it was entered)."""
    seen, stack, found = set(), [], []

    def visit(node: str) -> None:
        if node in stack:
            found.append(stack[stack.index(node):] + [node])
            return
        if node in seen:
            return
        seen.add(node)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            visit(target)
        stack.pop()

    for node in sorted(graph):
        visit(node)
    return found


def test_every_importlib_call_is_followed():
    """The structure tests see importlib's imports too: every module that calls it either imports something through
    it when imported (the kinds) or is listed with what it may import later (ON_DEMAND)."""
    dynamic = dynamic_imports()
    assert dynamic.get("harness.lab.services.kinds", set()) >= {"harness.lab.services.tomcat", "harness.lab.services.nginx"}
    unfollowed = [m for m, targets in dynamic.items() if not targets]
    assert not unfollowed, f"importlib calls neither traced at import nor listed in ON_DEMAND: {unfollowed}"


def test_no_import_cycles():
    assert not cycles(imports()), "\n".join(" → ".join(c) for c in cycles(imports()))


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_a_chapter_imports_no_other_chapter():
    """A chapter's modules import the shared ones and their own chapter's; the answer page (ch0) reads the others
    through their faces only (harness.book.chapters.chN: judge(), limits())."""
    wrong = [f"{module} imports {target}" for module, targets in imports().items() for target in targets
             if (m := CHAPTER.match(module)) and (t := CHAPTER.match(target)) and m.group(1) != t.group(1)
             and not (m.group(1) == "ch0" and FACE.match(target))]
    assert not wrong, wrong


def test_sides_meet_only_in_data():
    """The lab never imports the book, a chapter or a model (`invoke run` hands it a plan: harness.plan); models
    import neither side's modules but the spec they predict (and its units)."""
    graph = imports()
    lab_to_book = [f"{m} → {t}" for m, ts in graph.items() for t in ts
                   if m.startswith("harness.lab") and t.startswith(("harness.book", "harness.models"))]
    models_out = [f"{m} → {t}" for m, ts in graph.items() for t in ts if m.startswith("harness.models")
                  and (t.startswith("harness.book") or (t.startswith("harness.lab") and t not in ("harness.lab.spec", "harness.lab.units")))]
    assert not lab_to_book and not models_out, lab_to_book + models_out


# The lab's layers, bottom first; a module imports only from its own layer and those below. What is in none runs steps
# and reads them (the runner, the load tools, the fingerprint …): it may import any.
LAB_LAYERS = [
    # what everything stands on: processes and containers, samplers, the data store, the machine, small parsers
    ("backends", "store", "samplers", "kernel", "typed", "units", "system", "netns", "placement", "interrupts", "build",
     "jdk", "downloads", "histogram", "integrity", "compact"),
    ("services", "load.options"),  # the kinds of service and the load's options: what a spec is written in
    ("spec", "limits", "load.plan"),  # a spec read and checked against the machine's limits and k6's environment
]


def lab_layer(module: str) -> int:
    name = module.removeprefix("harness.lab.")
    return next((n for n, layer in enumerate(LAB_LAYERS) if any(name == p or name.startswith(p + ".") for p in layer)),
                len(LAB_LAYERS))


def test_the_lab_imports_only_downward():
    """Inside the lab no import points up a layer (a kind reading the spec, a backend reading a kind, the limits reading
    the load): each layer is read without those above it."""
    up = [f"{m} → {t}" for m, ts in imports().items() if m.startswith("harness.lab.") for t in ts
          if t.startswith("harness.lab.") and lab_layer(t) > lab_layer(m)]
    assert not up, up


def test_no_module_is_too_long():
    long = {module_name(p): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"



EPHEMERAL = range(32768, 61000)  # Linux's default ip_local_port_range: clients (k6, the proxy, psql) draw from it
PORTISH = re.compile(r"port|running_db\(|drive\(", re.IGNORECASE)  # the lines of an e2e test that name a port


def test_no_listening_port_lies_in_the_ephemeral_range():
    """A service told to listen on an ephemeral port fails whenever some client's connection holds that port as its
    local end (CI lost a run to it), so every step of every experiment and every e2e test listens below the range."""
    from harness.lab.services.kinds import KINDS
    from harness.lab.spec import chapters, load_spec

    inside = {(chapter, port) for chapter in chapters() for step in load_spec(chapter).steps
              for knobs in step.services.values() for port in KINDS[knobs["kind"]].ports(knobs).values()
              if port in EPHEMERAL}
    for path in sorted((ROOT / "tests").glob("test_e2e*.py")):
        inside |= {(path.name, int(n)) for line in path.read_text().splitlines() if PORTISH.search(line)
                   for n in re.findall(r"\b\d{5}\b", line) if int(n) in EPHEMERAL}
    assert inside == set(), f"listening ports in {EPHEMERAL.start}-{EPHEMERAL.stop - 1}: {sorted(inside)}"
