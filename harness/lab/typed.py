"""The one check of typed settings: spec sections and service knobs alike."""
from __future__ import annotations


def typed_values(keys: dict[str, tuple[type, int | None]], values: dict, prefix: str, problems: list[str]) -> dict:
    """The values of known keys that have their key's type and minimum; a problem `<prefix>.<key> must be …` for each
    other (spec sections and service knobs alike)."""
    good = {}
    for key, value in values.items():
        kind, minimum = keys[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # cpus = 2 means 2.0
        # bool is a subclass of int in Python: refuse true where a number is meant.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            problems.append(f"{prefix}.{key} must be {kind.__name__}, got {value!r}")
        elif minimum is not None and value < minimum:
            problems.append(f"{prefix}.{key} must be ≥ {minimum}, got {value}")
        else:
            good[key] = value
    return good
