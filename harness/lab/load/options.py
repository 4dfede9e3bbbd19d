"""A step's `[load]` table: its keys, their defaults, the checks, and the load plan handed to k6.

Executors (k6's names and semantics):
- spikes and closed loops: `per-vu-iterations` (vus × iterations), `shared-iterations` (iterations shared by
  vus), `constant-vus` (vus looping for duration);
- `ramping-vus`: start_vus, then `stages` (a list of {duration, target}) moving the VU count linearly;
- open model: `constant-arrival-rate` (rate iterations per time_unit for duration) and `ramping-arrival-rate`
  (start_rate, then stages whose targets are rates), each with pre_allocated_vus and max_vus.
An iteration is one GET of `path` (today's behaviour) or, with `[[…load.requests]]` tables, a scenario: requests
in order, each with name, method, path (`${var}` parameters), body, headers, think_time, port and
extract = { var = "json.field.path" } feeding later requests, and `background = true` for a request the iteration
does not wait for (k6's http.asyncRequest: a browser's event stream held open while the user goes on). `spike_mode = "batch"` (per-vu-iterations) lets
`batch_vus` k6 VUs carry the `vus` users, each VU opening its share as one `http.batch`, so that thousands of
users are in flight within a second or two instead of k6's VU start-up time.

`load_plan(load)` is the whole k6 configuration of a step as one JSON-able value (the file lab.js reads:
harness.lab.load.plan): the script builds nothing from anything else but the target URL.
"""
from __future__ import annotations

import math
import re

from harness.lab.typed import INT_MAX
from harness.lab.units import duration_ms

LEGACY = ("per-vu-iterations", "constant-vus", "shared-iterations")  # today's: their resolved load is unchanged
EXECUTORS = (*LEGACY, "ramping-vus", "constant-arrival-rate", "ramping-arrival-rate")
TOOLS = ("k6", "ab", "wrk")
SPIKE_MODES = ("vus", "batch")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
LOAD_KEYS: dict[str, tuple] = {  # key → (type, minimum[, maximum]): harness.lab.typed
    "tool": (str, None),  # k6 (default), ab (the articles' other load generator) or wrk (constant-vus cross-check)
    "executor": (str, None),
    "vus": (int, 1),
    "iterations": (int, 1),
    "duration": (str, None),
    "graceful_stop": (str, None),
    "max_duration": (str, None),
    "request_timeout": (str, None),
    "path": (str, None),
    "connection_reuse": (bool, None),
    "stages": (list, None),  # [{duration = "30s", target = 100}, …]: VUs (ramping-vus) or a rate (ramping-arrival-rate)
    "start_vus": (int, 0),
    "graceful_ramp_down": (str, None),
    "rate": (int, 1),  # iterations per time_unit
    "start_rate": (int, 0),
    "time_unit": (str, None),
    "pre_allocated_vus": (int, 1),
    "max_vus": (int, 1),
    "spike_mode": (str, None),  # "vus" (one k6 VU per user, default) or "batch" (http.batch)
    "batch_vus": (int, 1),  # batch mode: k6 VUs carrying the users
    "batch_per_host": (int, 1),  # batch mode: parallel connections per VU (default: its whole share)
    "requests": (list, None),  # a scenario: [[…load.requests]] tables
    "target": (str, None),  # the service the load goes to: "server" (default) or a [services.<name>] (services.graph)
    # k6 processes sharing the test by execution segments (each its own open-files limit); at most 99: their hosts
    # on network = "hosts" are client, client2 … client99 (a host's name has at most 8 characters)
    "processes": (int, 1, 99),
}
LOAD_DEFAULTS = {
    "tool": "k6",
    "executor": "per-vu-iterations",
    "iterations": 1,
    "graceful_stop": "30s",  # k6's default
    "max_duration": "10m",  # k6's default
    "request_timeout": "60s",  # k6's default http timeout
    "path": "/hello",
    "connection_reuse": True,
}
COMMON = {"tool", "executor", "graceful_stop", "request_timeout", "path", "connection_reuse", "requests", "target",
          "processes"}
APPLIES = {  # the keys each executor takes besides COMMON
    "per-vu-iterations": {"vus", "iterations", "max_duration", "spike_mode", "batch_vus", "batch_per_host"},
    "shared-iterations": {"vus", "iterations", "max_duration"},
    "constant-vus": {"vus", "duration"},
    "ramping-vus": {"start_vus", "stages", "graceful_ramp_down"},
    "constant-arrival-rate": {"rate", "time_unit", "duration", "pre_allocated_vus", "max_vus"},
    "ramping-arrival-rate": {"start_rate", "time_unit", "stages", "pre_allocated_vus", "max_vus"},
}
EXECUTOR_DEFAULTS = {
    "ramping-vus": {"start_vus": 1, "graceful_ramp_down": "30s"},  # k6's defaults
    "constant-arrival-rate": {"time_unit": "1s"},
    "ramping-arrival-rate": {"start_rate": 0, "time_unit": "1s"},
}
REQUIRED = {
    "per-vu-iterations": ("vus",), "shared-iterations": ("vus",), "constant-vus": ("vus", "duration"),
    "ramping-vus": ("stages",), "constant-arrival-rate": ("rate", "duration", "pre_allocated_vus"),
    "ramping-arrival-rate": ("stages", "pre_allocated_vus"),
}
K6_LEAST_MS = 1000  # k6 refuses a shorter duration or max_duration (lib/executor: minDuration), once the server is up
DURATION_KEYS = ("duration", "graceful_stop", "max_duration", "request_timeout", "graceful_ramp_down", "time_unit")
# The longest a step's load may be scheduled for, graceful stop included: the longest committed step runs minutes, a
# chapter under an hour, and the runner waits that long for the load tool before calling it stuck; a day is room for
# any real experiment, and what lies beyond (duration = "100000h") is a typo that would hold the machine for years.
MAX_LOAD_MS = 24 * 3600 * 1000
REQUEST_KEYS = {"name", "method", "path", "body", "headers", "think_time", "extract", "port", "background"}
BUILTIN_VARS = ("vu", "iter")  # ${vu}: k6's VU id in the test, ${iter}: its iteration number in the scenario
VAR = re.compile(r"\$\{([^}]*)\}")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FIELD_PATH = re.compile(r"^[^.\s]+(\.[^.\s]+)*$")
URL_PATH = re.compile(r"/[!-~]*")  # printable ASCII from "!" to "~": no space, no control character
SCENARIO = "lab"
# vu and iter tag every sample so the recording can rebuild one row per request (with the `req` metadata).
SYSTEM_TAGS = ["status", "method", "url", "name", "error", "error_code", "scenario", "expected_response", "vu", "iter"]
SUMMARY_TREND_STATS = ["min", "med", "avg", "p(90)", "p(95)", "p(99)", "max", "count"]


def resolve_load(values: dict, where: str, problems: list[str]) -> dict:
    """The typed, merged [load] values of a step → its resolved load (every key its executor uses), appending one
    message per problem. Today's executors resolve exactly as before (LOAD_DEFAULTS, whatever they use)."""
    executor = values.get("executor", LOAD_DEFAULTS["executor"])
    if executor in LEGACY or executor not in EXECUTORS:
        load = {**LOAD_DEFAULTS, **values}
    else:
        load = {k: v for k, v in LOAD_DEFAULTS.items() if k in COMMON} | EXECUTOR_DEFAULTS[executor] | values
        if "pre_allocated_vus" in load:
            load.setdefault("max_vus", load["pre_allocated_vus"])
    if "requests" in values:
        load["requests"] = _requests(values["requests"], load, where, problems)
    _check(load, values, where, problems)
    return load


def _check(load: dict, values: dict, where: str, problems: list[str]) -> None:
    executor = load["executor"]
    if executor not in EXECUTORS:
        problems.append(f"{where}: load.executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
        return
    for key in REQUIRED[executor]:
        named = (f"{where}: load.{key} must", f"[defaults]: load.{key} must")  # a bad value of this step's, named
        if key not in load and not any(p.startswith(named) for p in problems):
            hint = " (the articles used '1s')" if executor == "constant-vus" and key == "duration" else ""
            problems.append(f"{where}: load.vus is missing" if key == "vus"
                            else f"{where}: load.{key} is required with {executor}{hint}")
    for key in sorted(set(load) - COMMON - APPLIES[executor]):
        # a same_as copy or the defaults may carry today's iterations/max_duration defaults: harmless
        if key in values and load[key] != LOAD_DEFAULTS.get(key, object()):
            users = [e for e in EXECUTORS if key in APPLIES[e]]
            problems.append(f"{where}: load.{key} does not apply to {executor} (it is a key of {', '.join(users)})")
    timed = _check_durations(load, where, problems)
    if executor == "shared-iterations" and load["iterations"] < load.get("vus", 0):
        problems.append(f"{where}: shared-iterations needs iterations ≥ vus (got {load['iterations']} < {load['vus']})")
    if "stages" in load and executor in APPLIES and "stages" in APPLIES[executor]:
        timed &= _check_stages(load["stages"], where, problems)
    if timed and all(key in load for key in REQUIRED[executor]) and stop_ms(load) > MAX_LOAD_MS:
        problems.append(f"{where}: the load would be scheduled for {stop_ms(load) / 3600_000:,.1f} h (its duration, "
                        f"stages or max_duration, plus graceful_stop): at most {MAX_LOAD_MS // 3600_000} h")
    if "max_vus" in load and load["max_vus"] < load.get("pre_allocated_vus", 0):
        problems.append(f"{where}: load.max_vus {load['max_vus']} is below load.pre_allocated_vus "
                        f"{load['pre_allocated_vus']}; k6 refuses that")
    _check_tool(load, where, problems)
    _check_spike_mode(load, where, problems)
    if problem := path_problem(load["path"]):
        problems.append(f"{where}: load.path {problem}")
    if "requests" in values and "path" in values:
        problems.append(f"{where}: load.path and load.requests both given: a scenario names its own paths")


def _check_durations(load: dict, where: str, problems: list[str]) -> bool:
    """Each duration key readable, none beyond MAX_LOAD_MS, time_unit and request_timeout above 0; True when all are
    fine."""
    before = len(problems)
    for key in DURATION_KEYS:
        if key in load and isinstance(load[key], str):
            try:
                ms = duration_ms(load[key])
            except ValueError as err:
                problems.append(f"{where}: load.{key}: {err}")
                continue
            if ms <= 0 and key in ("time_unit", "request_timeout"):
                problems.append(f"{where}: load.{key} must be longer than 0, got {load[key]!r}")
            elif ms < K6_LEAST_MS and key in ("duration", "max_duration") and load.get("tool") == "k6":  # (ab, wrk: below)
                problems.append(f"{where}: load.{key} must be at least 1s, got {load[key]!r}")
            elif ms > MAX_LOAD_MS:
                problems.append(f"{where}: load.{key} {load[key]!r} is longer than {MAX_LOAD_MS // 3600_000} h, "
                                f"the most a step's load may take")
    return len(problems) == before


def _check_stages(stages: list, where: str, problems: list[str]) -> bool:
    """Each stage a {duration, target} table; True when all are fine."""
    before = len(problems)
    if not stages:
        problems.append(f"{where}: load.stages is empty: give at least one {{duration, target}} table")
    total_ms = 0
    for n, stage in enumerate(stages, start=1):
        at = f"{where}: load.stages[{n}]"
        if not isinstance(stage, dict):
            problems.append(f"{at} must be a table like {{ duration = \"30s\", target = 100 }}, got {stage!r}")
            continue
        for key in sorted(set(stage) - {"duration", "target"}):
            problems.append(f"{at}: unknown key '{key}' (allowed: duration, target)")
        try:
            total_ms += duration_ms(stage.get("duration", ""))
        except ValueError:
            problems.append(f"{at}: duration {stage.get('duration')!r} is not a duration like '30s', '5m' or '500ms'")
        target = stage.get("target")
        if not isinstance(target, int) or isinstance(target, bool) or not 0 <= target <= INT_MAX:
            problems.append(f"{at}: target must be a whole number from 0 to {INT_MAX:,}, got {target!r}")
    if stages and len(problems) == before and total_ms == 0:
        problems.append(f"{where}: load.stages last 0s in all: k6 would send nothing (give a stage a duration)")
    return len(problems) == before


def _check_tool(load: dict, where: str, problems: list[str]) -> None:
    executor = load["executor"]
    if load.get("processes", 1) > 1 and load["tool"] != "k6":
        problems.append(f"{where}: load.processes splits a test with k6's execution segments: it needs tool = \"k6\"")
    if load["tool"] not in TOOLS:
        problems.append(f"{where}: load.tool must be one of {', '.join(TOOLS)}, got {load['tool']!r}")
    elif load["tool"] == "ab" and executor != "shared-iterations":
        problems.append(f"{where}: ab can only run shared-iterations (ab -n iterations -c vus), not {executor}")
    elif load["tool"] == "ab" and not re.fullmatch(r"\d+s", load["request_timeout"]):
        problems.append(f"{where}: ab takes whole seconds for load.request_timeout, got {load['request_timeout']!r}")
    elif load["tool"] == "ab" and "requests" in load:
        problems.append(f"{where}: ab sends one GET of load.path; load.requests (a scenario) needs tool = \"k6\"")
    elif load["tool"] == "wrk":
        _check_wrk(load, where, problems)


def _check_wrk(load: dict, where: str, problems: list[str]) -> None:
    """wrk: `vus` connections in a closed loop for a whole number of seconds, each sending GET load.path."""
    if load["executor"] != "constant-vus":
        problems.append(f"{where}: wrk can only run constant-vus (wrk -c vus -d duration: a closed loop for a fixed "
                        f"time), not {load['executor']}")
    if "requests" in load:
        problems.append(f"{where}: wrk sends one GET of load.path; load.requests (a scenario) needs tool = \"k6\"")
    for key in ("duration", "request_timeout"):  # wrk's -d and --timeout: whole seconds, like ab's -s
        if key in load and not re.fullmatch(r"[1-9]\d*s", str(load[key])):
            problems.append(f"{where}: wrk takes whole seconds for load.{key} (like \"30s\"), got {load[key]!r}")


def _check_spike_mode(load: dict, where: str, problems: list[str]) -> None:
    mode = load.get("spike_mode", "vus")
    if mode not in SPIKE_MODES:
        problems.append(f"{where}: load.spike_mode must be one of {', '.join(SPIKE_MODES)}, got {mode!r}")
        return
    if mode != "batch":
        for key in ("batch_vus", "batch_per_host"):
            if key in load:
                problems.append(f"{where}: load.{key} applies to spike_mode = \"batch\" only")
        return
    if load.get("batch_vus", 1) > load.get("vus", 1):
        problems.append(f"{where}: load.batch_vus {load['batch_vus']} exceeds load.vus {load.get('vus')}: "
                        "each k6 VU carries at least one user")
    requests = load.get("requests") or [{}]
    if len(requests) > 1 or requests[0].get("extract") or requests[0].get("think_time"):
        problems.append(f"{where}: spike_mode = \"batch\" sends one request per user: a scenario of one request "
                        "without extract or think_time")


def _requests(tables, load: dict, where: str, problems: list[str]) -> list[dict]:
    """[[…load.requests]] tables → normalised requests (every key present), checking each and its ${vars}."""
    if not tables:
        problems.append(f"{where}: load.requests is empty: give at least one request, or leave it out for GET load.path")
        return []
    known = set(BUILTIN_VARS)
    out = []
    for n, table in enumerate(tables, start=1):
        at = f"{where}: load.requests[{n}]"
        if not isinstance(table, dict):
            problems.append(f"{at} must be a table with at least a path, got {table!r}")
            continue
        for key in sorted(set(table) - REQUEST_KEYS):
            problems.append(f"{at}: unknown key '{key}' (allowed: {', '.join(sorted(REQUEST_KEYS))})")
        request = {"name": table.get("name", table.get("path")), "method": table.get("method", "GET"),
                   "path": table.get("path"), "body": table.get("body"), "headers": table.get("headers", {}),
                   "think_time": table.get("think_time", "0s"), "extract": table.get("extract", {}),
                   "port": table.get("port"), "background": table.get("background", False)}
        _check_request(request, at, known, problems)
        if isinstance(request["extract"], dict):
            known |= set(request["extract"])
        out.append(request)
    return out


def _check_request(request: dict, at: str, known: set[str], problems: list[str]) -> None:
    path, method = request["path"], request["method"]
    if problem := path_problem(path):
        problems.append(f"{at}: path {problem}")
    if not isinstance(request["name"], str) or not request["name"]:
        problems.append(f"{at}: name must be a non-empty string, got {request['name']!r}")
    if method not in METHODS:
        problems.append(f"{at}: method must be one of {', '.join(METHODS)}, got {method!r}")
    if request["body"] is not None and not isinstance(request["body"], str):
        problems.append(f"{at}: body must be a string (JSON as text is fine), got {request['body']!r}")
    headers = request["headers"]
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        problems.append(f"{at}: headers must be a table of strings, got {headers!r}")
        headers = {}
    try:
        if duration_ms(request["think_time"]) > MAX_LOAD_MS:
            problems.append(f"{at}: think_time {request['think_time']!r} is longer than a step's load may take")
    except ValueError:
        problems.append(f"{at}: think_time {request['think_time']!r} is not a duration like '1s' or '500ms'")
    port = request["port"]
    if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535):
        problems.append(f"{at}: port must be a port number (1-65535), got {port!r}")
    extract = request["extract"]
    if not isinstance(request["background"], bool):
        problems.append(f"{at}: background must be true or false, got {request['background']!r}")
    elif request["background"] and extract:
        problems.append(f"{at}: a background request's response arrives after later requests went out: it cannot "
                        f"extract values for them")
    if not isinstance(extract, dict):
        problems.append(f"{at}: extract must be a table like {{ id = \"items.0.id\" }}, got {extract!r}")
    else:
        for var, field in extract.items():
            if not NAME.match(var) or var in BUILTIN_VARS:
                problems.append(f"{at}: extract: {var!r} is not a usable variable name (letters, digits, _; "
                                f"not {', '.join(BUILTIN_VARS)})")
            if not isinstance(field, str) or not FIELD_PATH.match(field):
                problems.append(f"{at}: extract.{var} must be a JSON field path like \"data.items.0.id\", got {field!r}")
    texts = [t for t in (path, request["body"], *headers.values()) if isinstance(t, str)]
    for var in sorted({v for t in texts for v in VAR.findall(t)} - known):
        problems.append(f"{at}: ${{{var}}} is set by no earlier request's extract (known: {', '.join(sorted(known))})")


def path_problem(path) -> str:
    """Why `path` cannot be a request's path ("" when it can): '/' and then printable ASCII without spaces, as a
    request line carries it (k6 would send a space as is, and the server answer 400)."""
    if isinstance(path, str) and URL_PATH.fullmatch(path):
        return ""
    return f"must be a URL path: '/' then printable ASCII without spaces (percent-encode the rest), got {path!r}"


# ---- what a resolved load asks for ---------------------------------------------------------------------------

def requests_per_iteration(load: dict) -> int:
    return len(load.get("requests") or [None])


def stages_ms(load: dict) -> int:
    return sum(duration_ms(s["duration"]) for s in load["stages"])


def iterations_asked(load: dict) -> int:
    """Iterations the load starts: fixed for the iteration executors, rate × duration for the open model, one per VU
    for constant-vus (the articles' reading), and 0 for ramping-vus, whose closed loop runs as many as the server lets
    it (not fixed in advance). k6 v1.8.1 (measured): constant-arrival-rate starts one at 0 and one each period before
    the end, ceil(rate × duration); ramping-arrival-rate one each time ∫ rate dt passes a whole number, floor(∫).
    When that is a whole number the last iteration is due exactly at the end, and k6 starts it or not (one more
    for constant, one fewer for ramping): asked is then exact to ±1."""
    executor = load["executor"]
    if executor == "per-vu-iterations":
        return load["vus"] * load["iterations"]
    if executor == "shared-iterations":
        return load["iterations"]
    if executor == "constant-vus":
        return load["vus"]
    if executor == "constant-arrival-rate":  # k6 starts one at 0 and one per period while time < duration
        return math.ceil(load["rate"] * duration_ms(load["duration"]) / duration_ms(load["time_unit"]))
    if executor == "ramping-arrival-rate":
        area, rate = 0.0, load["start_rate"]
        for stage in load["stages"]:
            area += (rate + stage["target"]) / 2 * duration_ms(stage["duration"])
            rate = stage["target"]
        return math.floor(area / duration_ms(load["time_unit"]) + 1e-9)
    return 0


def requests_asked(load: dict) -> int:
    return iterations_asked(load) * requests_per_iteration(load)


def scheduled_ms(load: dict) -> int:
    """How long the executor starts iterations: duration, the stages' sum, or maxDuration."""
    executor = load["executor"]
    if executor in ("constant-vus", "constant-arrival-rate"):
        return duration_ms(load["duration"])
    if executor in ("ramping-vus", "ramping-arrival-rate"):
        return stages_ms(load)
    return duration_ms(load["max_duration"])


def stop_ms(load: dict) -> int:
    """When k6 stops waiting: the scheduled time plus gracefulStop (ramping-vus's gracefulRampDown lies within)."""
    return scheduled_ms(load) + duration_ms(load["graceful_stop"])


def peak_vus(load: dict) -> int:
    """The most users (hence client sockets) the load can have at once."""
    executor = load["executor"]
    if executor == "ramping-vus":
        return max([load["start_vus"], *(s["target"] for s in load["stages"])])
    if executor in ("constant-arrival-rate", "ramping-arrival-rate"):
        return load["max_vus"]
    return load["vus"]


# ---- the load plan: k6's options and the scenario, as one value ---------------------------------------------

def _k6_scenario(load: dict) -> dict:
    executor = load["executor"]
    scenario = {"executor": executor, "gracefulStop": load["graceful_stop"]}
    stages = [{"duration": s["duration"], "target": s["target"]} for s in load.get("stages", [])]
    if executor in ("per-vu-iterations", "shared-iterations"):
        vus = batch_vus(load) if load.get("spike_mode") == "batch" else load["vus"]
        return scenario | {"vus": vus, "iterations": load["iterations"], "maxDuration": load["max_duration"]}
    if executor == "constant-vus":
        return scenario | {"vus": load["vus"], "duration": load["duration"]}
    if executor == "ramping-vus":
        return scenario | {"startVUs": load["start_vus"], "stages": stages, "gracefulRampDown": load["graceful_ramp_down"]}
    arrival = {"timeUnit": load["time_unit"], "preAllocatedVUs": load["pre_allocated_vus"], "maxVUs": load["max_vus"]}
    if executor == "constant-arrival-rate":
        return scenario | arrival | {"rate": load["rate"], "duration": load["duration"]}
    return scenario | arrival | {"startRate": load["start_rate"], "stages": stages}


def batch_vus(load: dict) -> int:
    """Batch mode's k6 VUs: the spec's, else one per 100 users (at most 100 VUs: they start in well under a second)."""
    return load.get("batch_vus") or min(100, math.ceil(load["vus"] / 100))


def batch_size(load: dict) -> int:
    """The most users one batch VU carries (the VUs' shares differ by at most one)."""
    return math.ceil(load["vus"] / batch_vus(load))


def plan_requests(load: dict) -> list[dict]:
    """The scenario as the script runs it (durations in ms); without one, a GET of load.path named by it."""
    requests = load.get("requests") or [{"name": load["path"], "method": "GET", "path": load["path"], "body": None,
                                         "headers": {}, "think_time": "0s", "extract": {}, "port": None,
                                         "background": False}]
    return [{"name": r["name"], "method": r["method"], "path": r["path"], "body": r["body"], "headers": dict(r["headers"]),
             "think_time_ms": duration_ms(r["think_time"]), "extract": dict(r["extract"]), "port": r["port"],
             "background": r.get("background", False)}
            for r in requests]


def load_plan(load: dict) -> dict:
    """Everything k6 runs for a step, JSON-able: `options` (k6's options object, scenario included), `requests`
    (the iteration), `timeout` (per request), `batch` ({users, vus} in batch spike mode, else null)."""
    options = {
        "scenarios": {SCENARIO: _k6_scenario(load)},
        # Bodies are dropped unless a request extracts from one (that request asks for its body: responseType text).
        "discardResponseBodies": True,
        "noConnectionReuse": not load["connection_reuse"],
        "systemTags": list(SYSTEM_TAGS),
        "summaryTrendStats": list(SUMMARY_TREND_STATS),
    }
    batch = None
    if load.get("spike_mode") == "batch":
        size = batch_size(load)
        per_host = load.get("batch_per_host", size)
        options |= {"batch": max(size, per_host), "batchPerHost": per_host}
        batch = {"users": load["vus"], "vus": batch_vus(load)}
    return {"options": options, "requests": plan_requests(load), "timeout": load["request_timeout"], "batch": batch}
