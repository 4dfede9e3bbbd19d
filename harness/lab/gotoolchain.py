"""The Go that builds k6 when no k6 of the pinned version is installed: the Go on PATH when it is new enough for k6's
go.mod, else the pinned Go release that the Go module proxy serves as a module (golang.org/toolchain: the zip `go`
itself fetches when a go.mod asks for a newer toolchain), downloaded once into .tools/go/, checked by its sha256 and
by what its `go version` says.

Why not the distribution's Go: k6 v1.8.1's go.mod says `go 1.25.0`; Debian 12's golang-go is 1.19, Ubuntu 24.04's 1.22.
"""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from harness import TOOLS, LabError, say
from harness.lab.downloads import download_checked
from harness.lab.load.k6 import K6_VERSION

K6_NEEDS_GO = (1, 25, 0)  # k6 v1.8.1's go.mod: `go 1.25.0`
GO_VERSION = "go1.25.12"  # the toolchain line of k6 v1.8.1's go.mod
# machine → (Go's name for it, sha256 of golang.org/toolchain@v0.0.1-go1.25.12.<name>.zip as the proxy serves it; the
# zip's go.sum hash h1:AipLNAZSwISqkbKBzTKHeWQG/R608fShRbc3RaxOL38= matched the checksum database's)
TOOLCHAIN_ZIPS = {
    "x86_64": ("linux-amd64", "d9d4a1114c4c1f65e8e226c7b2f2f556e821c1d0c1740a244ef2bc42fb00c5ad"),
}
DEFAULT_PROXY = "https://proxy.golang.org"
EXECUTABLE_DIRS = ("bin", "pkg/tool")  # a module zip keeps no file modes: Go marks these executable after unpacking


def go_for_k6() -> str:
    """A go that can build k6: PATH's when it is new enough, else the pinned toolchain (fetched the first time)."""
    system = shutil.which("go")
    if system and go_version(system) >= K6_NEEDS_GO:
        return system
    local = toolchain_home() / "bin" / "go"
    if not local.is_file():
        why = f"the go on PATH is {dotted(go_version(system)) or 'unreadable'}" if system else "no go on PATH"
        say(f"k6 needs Go {dotted(K6_NEEDS_GO)}+ ({why}): fetching {GO_VERSION} from the Go module proxy "
            f"into {local.parent.parent} …")
        fetch_toolchain()
    return str(local)


def go_version(go: str | Path) -> tuple[int, ...]:
    """(1, 25, 12) from `go version`; () when it does not run or says something else."""
    try:
        out = subprocess.run([str(go), "version"], capture_output=True, text=True, timeout=60,
                             env=os.environ | {"GOTOOLCHAIN": "local"}).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return parse_go_version(out)


def parse_go_version(out: str) -> tuple[int, ...]:
    match = re.search(r"\bgo version go(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(n or 0) for n in match.groups()) if match else ()


def dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def toolchain_home(version: str = GO_VERSION) -> Path:
    return TOOLS / "go" / version


def module_proxy(goproxy: str | None = None) -> str:
    """The first proxy of GOPROXY (Go's syntax: a list split by ',' or '|'; `direct` and `off` are not proxies)."""
    setting = os.environ.get("GOPROXY", "") if goproxy is None else goproxy
    first = next((e.strip() for e in re.split(r"[,|]", setting or DEFAULT_PROXY) if e.strip()), "off")
    if first in ("direct", "off"):
        raise LabError(f"GOPROXY={setting} starts with `{first}`, not a module proxy, and the Go toolchain that builds "
                       f"k6 comes from one: set GOPROXY (e.g. {DEFAULT_PROXY}), or install Go "
                       f"{dotted(K6_NEEDS_GO)}+ or k6 {K6_VERSION} yourself")
    return first.rstrip("/")


def toolchain_zip(machine: str | None = None) -> tuple[str, str]:
    """(the module version's file name, its pinned sha256) for this machine."""
    machine = machine or platform.machine()
    if machine not in TOOLCHAIN_ZIPS:
        raise LabError(f"no pinned Go toolchain for this machine's architecture {machine!r} (there is one for "
                       f"{', '.join(TOOLCHAIN_ZIPS)}): install Go {dotted(K6_NEEDS_GO)}+ or put k6 {K6_VERSION} on PATH")
    goarch, digest = TOOLCHAIN_ZIPS[machine]
    return f"v0.0.1-{GO_VERSION}.{goarch}.zip", digest


def fetch_toolchain(machine: str | None = None, proxy: str | None = None, digest: str | None = None) -> Path:
    """Download the pinned toolchain's zip (once), check its sha256, unpack it and check its `go version`; whole or
    not at all. `digest` replaces the pinned one (tests)."""
    name, pinned = toolchain_zip(machine)
    url = f"{proxy or module_proxy()}/golang.org/toolchain/@v/{name}"
    archive = download_checked(url, digest or pinned, TOOLS / "downloads" / f"golang-toolchain-{name}")
    target = toolchain_home()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        root = unpack_module_zip(archive, Path(tmp), f"golang.org/toolchain@{name.removesuffix('.zip')}/")
        found = go_version(root / "bin" / "go")
        if found != parse_go_version(f"go version {GO_VERSION}"):
            raise LabError(f"{url} unpacks to a go that says it is {dotted(found) or 'nothing readable'}, "
                           f"not {GO_VERSION}: refusing it")
        shutil.rmtree(target, ignore_errors=True)
        os.rename(root, target)
    return target


def unpack_module_zip(archive: Path, into: Path, prefix: str) -> Path:
    """Unpack a module zip, every file of which is under `prefix` (`<module>@<version>/`), into `into`; returns that
    directory, its commands made executable. A name outside it, or with '..', is refused."""
    with zipfile.ZipFile(archive) as zipped:
        wrong = [n for n in zipped.namelist() if not n.startswith(prefix) or ".." in n.split("/")]
        if wrong:
            raise LabError(f"{archive} is not the module zip it should be: {wrong[0]!r} is not under {prefix}")
        zipped.extractall(into)
    root = into / prefix
    for folder in EXECUTABLE_DIRS:
        for path in (root / folder).rglob("*"):
            if path.is_file():
                path.chmod(0o755)
    return root
