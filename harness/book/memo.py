"""A chapter module's own cache, for a slow computation that depends only on its arguments and code (a model's grid of
simulations): its result is kept on disk, keyed by the arguments, the Python and package versions, and the source of
the function's module and of every repository module it imports, directly or through others (found in the modules'
globals); so it is computed again as soon as any of them changes, and not when an unrelated chapter's module does.

    @functools.cache       # once per process, as before
    @memo()                # once per change of the code it runs
    def explorer_grid() -> pd.DataFrame: ...

A module imported inside a function is not among a module's globals: name it, `@memo(code=("harness.models.spike",))`.

What a page reads from data/ is not for this cache: the render cache (harness.book.render_cache) keys whole pages on
their data. Results live in .cache/book-results/ (ignored by git); an entry whose code changed is removed when its
successor is written.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import os
import pickle
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from harness import CACHE, ROOT
from harness.book.render_cache import environment, file_digest

RESULTS = CACHE / "book-results"
ADDRESS = re.compile(r" at 0x[0-9a-f]+")  # in a repr: an object's identity, which differs in every process


def code_digest(function: Callable, code: tuple[str, ...]) -> str:
    """The environment, and the source of the function's module and of the repository's modules it and the modules
    named in `code` import, at any depth."""
    files = sorted(repository_modules([sys.modules[function.__module__], *map(importlib.import_module, code)]))
    sha = hashlib.sha256(repr(sorted(environment().items())).encode())
    for file in files:
        sha.update(f"{file.relative_to(ROOT)}\0{file_digest(file)}\n".encode())
    return sha.hexdigest()


def repository_modules(start: list[ModuleType]) -> set[Path]:
    """The source files of `start` and of every module of the repository reachable through their globals (modules,
    and the modules of the functions and classes imported from them)."""
    seen: dict[str, Path] = {}
    todo = list(start)
    while todo:
        module = todo.pop()
        path = Path(getattr(module, "__file__", None) or "/")
        if module.__name__ in seen or not path.is_relative_to(ROOT):
            continue
        seen[module.__name__] = path
        for value in list(vars(module).values()):
            owner = value if isinstance(value, ModuleType) else sys.modules.get(getattr(value, "__module__", None) or "")
            # A package's submodules are its attributes once imported anywhere: not what the package itself uses.
            if owner is not None and owner.__name__ not in seen and not owner.__name__.startswith(module.__name__ + "."):
                todo.append(owner)
    return set(seen.values())


def arguments_digest(args: tuple, kwargs: dict) -> str:
    text = repr((args, sorted(kwargs.items())))
    if ADDRESS.search(text):
        raise TypeError(f"memo: the arguments {text[:120]} have no stable repr (an object's address): pass plain values")
    return hashlib.sha256(text.encode()).hexdigest()


def memo(code: tuple[str, ...] = (), results: Path | None = None) -> Callable[[Callable], Callable]:
    """Keep the decorated function's results on disk (see the module's docstring). `code`: the modules or packages
    (dotted names) whose code the result depends on besides the function's own module."""
    def decorate(function: Callable) -> Callable:
        name = f"{function.__module__}.{function.__qualname__}"

        @functools.wraps(function)
        def remembered(*args, **kwargs):
            folder = results or RESULTS
            version = code_digest(function, code)[:16]
            path = folder / f"{name}-{version}-{arguments_digest(args, kwargs)[:16]}.pkl"
            if path.is_file():
                with open(path, "rb") as handle:
                    return pickle.load(handle)
            result = function(*args, **kwargs)
            folder.mkdir(parents=True, exist_ok=True)
            for older in folder.glob(f"{name}-*.pkl"):
                if not older.name.startswith(f"{name}-{version}-"):
                    older.unlink(missing_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.partial")  # two renders at once each write their own
            with open(partial, "wb") as handle:
                pickle.dump(result, handle)
            partial.replace(path)
            return result
        return remembered
    return decorate
