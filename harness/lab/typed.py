"""The one check of typed settings: spec sections and service knobs alike."""
from __future__ import annotations

import math

# Every whole number a spec sets ends up in a JVM's int setting (Tomcat, HikariCP, Netty), a k6 option or a kernel
# setting: above Java's int range it could only fail later, inside the process that reads it, or overflow there.
INT_MAX = 2**31 - 1
NAMES = {int: "int", float: "float", bool: "bool", str: "str", list: "list", dict: "table"}


def typed_values(keys: dict[str, tuple], values: dict, prefix: str, problems: list[str]) -> dict:
    """The values of known keys that have their key's type and range; a problem `<prefix>.<key> must be …` for each
    other (spec sections and service knobs alike). A key's entry is (type, minimum) or (type, minimum, maximum); None
    as minimum: any value of the type; a whole number's maximum is at most INT_MAX, a float must be finite."""
    good = {}
    for key, value in values.items():
        kind, minimum, *rest = keys[key]
        maximum = rest[0] if rest else (INT_MAX if kind in (int, float) else None)
        if kind is float and isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**1000:
            value = float(value)  # cpus = 2 means 2.0 (beyond 2**1000 it would not fit a float: refused as an int)
        # bool is a subclass of int in Python: refuse true where a number is meant.
        if not isinstance(value, kind) or (kind in (int, float) and isinstance(value, bool)):
            problems.append(f"{prefix}.{key} must be {NAMES.get(kind, kind.__name__)}, got {shown(value)}")
        elif kind is float and not math.isfinite(value):
            problems.append(f"{prefix}.{key} must be a finite number, got {value!r}")
        elif minimum is not None and value < minimum:
            problems.append(f"{prefix}.{key} must be ≥ {minimum}, got {value}")
        elif maximum is not None and value > maximum:
            problems.append(f"{prefix}.{key} must be ≤ {maximum:,}, got {shown(value)}")
        else:
            good[key] = value
    return good


def table_value(value, where: str, problems: list[str]) -> dict:
    """A TOML table, else a problem and an empty one."""
    if not isinstance(value, dict):
        problems.append(f"{where} must be a table ([…] or {{ key = value, … }}), got {value!r}")
        return {}
    return value


def table_list(value, name: str, form: str, problems: list[str]) -> list[dict]:
    """A list of tables (`form`, e.g. [[step]]): the tables in it; a problem for it, or for each other item."""
    if not isinstance(value, list):
        problems.append(f"{name} must be {form} tables, got {shown(value)}")
        return []
    problems += [f"{name} #{n} must be a {form} table, got {shown(v)}" for n, v in enumerate(value, 1) if not isinstance(v, dict)]
    return [v for v in value if isinstance(v, dict)]


def text_value(table: dict, key: str, default: str, where: str, problems: list[str]) -> str:
    """table[key] (or the default) when a string, else a problem and the default."""
    if not isinstance(value := table.get(key, default), str):
        problems.append(f"{where}: {key} must be a string, got {value!r}")
        return default
    return value


def shown(value, limit: int = 60) -> str:
    """A value as a message quotes it (repr), cut short when long (a number of 400 digits)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 1]}…"
