"""A demanding user's probe of the lab's inputs and environment (issue 27's table), run by hand, not by pytest:

    python tests/probe_inputs.py            # prints a table: case, outcome, and the totals

Each case is one `invoke run` (or `invoke list`) of a small spec in a temporary data directory, with one bad value or
condition. A case ends in a *clear error* (exit 2, a message, no traceback), *success*, or a *traceback* (a defect).
After each case the probe looks for what the run may have left: a process of the lab, a listening port of the probe's
range, a half-written step directory. Nothing here starts a server for long: a case that passes validation runs the
smallest step (a 1-user request to a 10 ms endpoint).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OK_STEP = {"id": "s", "server": {"SERVER_PORT": 8470, "MANAGEMENT_PORT": 8471, "SLEEP_MS": 10},
           "load": {"vus": 1}}


def inline(value) -> str:
    """A value as TOML writes it inline (tables as { k = v, … })."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {inline(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(inline(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else json.dumps(value)


def toml(spec: dict) -> str:
    """The probe's specs: [[step]] tables whose values are inline."""
    return "".join("[[step]]\n" + "".join(f"{k} = {inline(v)}\n" for k, v in step.items()) for step in spec["step"])


def spec_cases() -> list[tuple[str, str]]:
    """(name, spec text): one bad thing each."""
    def with_step(**changes):
        step = json.loads(json.dumps(OK_STEP))
        for path, value in changes.items():
            *keys, last = path.split("__")
            target = step
            for key in keys:
                target = target.setdefault(key, {})
            target[last] = value
        return toml({"step": [step]})

    cases = []
    for value in (0, -5, "two", 2.5, True, 10**12, None):
        if value is not None:
            cases.append((f"load.vus = {value!r}", with_step(load__vus=value)))
    for key, values in {"load__duration": ["100000h", "-1s", "x", 5], "load__executor": ["nope", 1],
                        "load__iterations": [0, "x"], "load__request_timeout": ["0s", "later"],
                        "server__TOMCAT_MAX_THREADS": [0, "x", 1.5], "server__SERVER_PORT": [70000, 0, "x"],
                        "server__TOMCAT_ACCEPT_COUNT": [100000], "server__SERVER_ADDRESS": ["10.0.0.1", "x"],
                        "server__UNKNOWN": [1], "system__sample_interval_ms": [1, 10**9], "system__record": ["x"],
                        "system__network": ["wires"], "system__link_delay_ms": [5], "load__processes": [0, 1000],
                        "container__cpus": [0, 64], "container__memory": ["1k", "lots"], "runs": [0, 101, "3"],
                        "kind": ["nope"], "starts": [3], "findings": ["F000-a", ["nope"]], "same_as": ["x", "nope:step"],
                        "placement__server": ["99", {"cpus": "0", "quota": 5}],
                        "services__db__kind": ["postgres"], "services__db__port": [8470],
                        "services__x__kind": ["haproxy", 1], "services__edge__kind": ["nginx"],
                        "load__target": ["nowhere"], "load__path": [5]}.items():
        for value in values:
            cases.append((f"{key.replace('__', '.')} = {value!r}", with_step(**{key: value})))
    raw = [("step = \"x\"", 'step = "x"\n'), ("defaults = 3", "defaults = 3\n[[step]]\nid = \"s\"\n"),
           ("load = \"x\"", '[[step]]\nid = "s"\nload = "x"\n'), ("server = 5", '[[step]]\nid = "s"\nserver = 5\n'),
           ("a step without id", '[[step]]\nload = { vus = 1 }\n'), ("no step", 'title = "t"\n'),
           ("two steps, one id", '[[step]]\nid = "s"\n[[step]]\nid = "s"\n'), ("not TOML", "[[step\n"),
           ("a duplicate key", '[[step]]\nid = "s"\nid = "t"\n'), ("an id with a dot", '[[step]]\nid = "s.2"\n'),
           ("binary junk", "\x00\x01\x02"), ("an empty file", "")]
    return cases + raw


def env_cases(tmp: Path) -> list[tuple[str, dict, list[str]]]:
    """(name, environment changes, invoke arguments)."""
    good = tmp / "good.toml"
    good.write_text(toml({"step": [OK_STEP]}))
    afile = tmp / "afile"
    afile.write_text("x")
    readonly = tmp / "readonly"
    readonly.mkdir()
    readonly.chmod(0o555)
    return [("LAB_DATA_DIR is empty", {"LAB_DATA_DIR": ""}, ["run", str(good)]),
            ("LAB_DATA_DIR is a file", {"LAB_DATA_DIR": str(afile)}, ["run", str(good)]),
            ("LAB_DATA_DIR under a file", {"LAB_DATA_DIR": str(afile / "x")}, ["run", str(good)]),
            ("JAVA_HOME missing", {"JAVA_HOME": str(tmp / "nojdk")}, ["run", str(good)]),
            ("JAVA_HOME empty dir", {"JAVA_HOME": str(readonly)}, ["run", str(good)]),
            ("LAB_PG_CLUSTERS is a file", {"LAB_PG_CLUSTERS": str(afile)}, ["run", "chapter5", "--step", "pool-2"]),
            ("an unknown chapter", {}, ["run", "nope"]), ("an unknown step", {}, ["run", str(good), "--step", "x"]),
            ("an unknown backend", {}, ["run", str(good), "--backend", "x"]),
            ("--path without --server", {}, ["run", str(good), "--path", "/x"]),
            ("--server not a jar", {}, ["run", str(good), "--server", str(afile)]),
            ("--server missing", {}, ["run", str(good), "--server", str(tmp / "none.jar")]),
            ("compare an unknown chapter", {}, ["compare", "nope"]),
            ("compare without data", {}, ["compare", "chapter1", "--data", str(tmp / "nodata")]),
            ("list", {}, ["list"]), ("a spec that runs", {}, ["run", str(good)])]


def run(args: list[str], env: dict, data: Path) -> tuple[int, str]:
    full = os.environ | {"LAB_DATA_DIR": str(data)} | env
    done = subprocess.run([sys.executable, "-m", "invoke", *args], cwd=ROOT, env=full, capture_output=True, text=True,
                          timeout=300)
    return done.returncode, done.stdout + done.stderr


def classify(code: int, out: str) -> str:
    if "Traceback" in out:
        return "traceback"
    if code == 0:
        return "success"
    return "clear error" if code in (1, 2) and "error" in out.lower() or "failed" in out.lower() else f"exit {code}"


def leftovers(data: Path) -> list[str]:
    left = [str(p) for p in data.rglob(".*partial-*")] if data.exists() else []
    ports = subprocess.run(["ss", "-Hltn", "( sport = :8470 or sport = :8471 )"], capture_output=True, text=True).stdout
    return left + (["a listener on 8470/8471"] if ports.strip() else [])


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for n, (name, text) in enumerate(spec_cases()):
            spec = tmp / f"case{n}.toml"
            spec.write_text(text)
            data = tmp / f"data{n}"
            code, out = run(["run", str(spec)], {}, data)
            rows.append((name, classify(code, out), leftovers(data), out.strip().splitlines()[-1:] if out.strip() else []))
        for n, (name, env, args) in enumerate(env_cases(tmp)):
            data = tmp / f"env{n}"
            code, out = run(args, env, data)
            rows.append((name, classify(code, out), leftovers(data), out.strip().splitlines()[-1:] if out.strip() else []))
    for name, outcome, left, last in rows:
        print(f"{outcome:<12} {name:<40} {'LEFT: ' + ', '.join(left) if left else ''} {last[0][:110] if last else ''}")
    counts = {k: sum(1 for r in rows if r[1] == k) for k in ("clear error", "success", "traceback")}
    print(f"\n{len(rows)} cases: {counts['clear error']} clear errors, {counts['success']} ran, "
          f"{counts['traceback']} tracebacks, {sum(1 for r in rows if r[2])} left something behind")


if __name__ == "__main__":
    main()
