"""A download pinned by its sha256: what setup fetches that no package manager checks for it (the Go toolchain, the
PostgreSQL binaries)."""
from __future__ import annotations

import shutil
import urllib.request
from pathlib import Path

from harness import LabError
from harness.lab.integrity import sha256


def download_checked(url: str, digest: str, path: Path) -> Path:
    """`url` saved as `path`, whose sha256 must be `digest` (a file already there with it is kept)."""
    if path.exists() and sha256(path) == digest:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as reply, open(partial, "wb") as out:
            shutil.copyfileobj(reply, out)
    except OSError as err:
        raise LabError(f"cannot download {url}: {err}") from None
    found = sha256(partial)
    if found != digest:
        partial.unlink()
        raise LabError(f"{url} has sha256 {found}, not the pinned {digest}: refusing it")
    partial.rename(path)
    return path



