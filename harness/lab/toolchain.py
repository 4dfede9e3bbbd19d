"""What `invoke setup` does: Python ≥ 3.11, the system packages the book needs (harness.lab.system_packages: installed
with apt-get as root, else listed before anything else is done), as root the users the JVMs run as (lab-server …),
JDK ≥ 17, the pinned k6 (built with Go: PATH's or the pinned toolchain, harness.lab.gotoolchain), the pinned PostgreSQL
binaries (the postgres kind: harness.lab.services.pgbinaries), what each service kind runs (its `build`: the sample
server's jars and CDS archive, the Netty and WebFlux services' jars) and the book's chart libraries."""
from __future__ import annotations

import os
import shutil
import sys
import time

from harness import ROOT, TOOLS, LabError, say
from harness.lab import gotoolchain, system_packages
from harness.lab.build import run_build
from harness.lab.jdk import java_command, java_major, virtual_threads_java
from harness.lab.load.k6 import K6_MODULE, K6_VERSION, find_k6, local_k6
from harness.lab.services import pgbinaries
from harness.lab.services.kinds import KINDS

MIN_JAVA = system_packages.MIN_JAVA
MIN_PYTHON = (3, 11)


def check_python() -> None:
    if sys.version_info < MIN_PYTHON:
        raise LabError(f"Python {'.'.join(map(str, MIN_PYTHON))}+ is needed, this is {sys.version.split()[0]}")


def check_java() -> str:
    java = java_command()
    major = java_major(java)
    if major < MIN_JAVA:
        raise LabError(f"{java} is Java {major}; the sample server needs JDK {MIN_JAVA} or newer (set JAVA_HOME)")
    return f"{java} (Java {major})"


def ensure_k6() -> str:
    """Use a k6 of the pinned version if there is one; else build it with Go into .tools/bin."""
    try:
        return str(find_k6())
    except LabError:
        pass
    go = gotoolchain.go_for_k6()
    say(f"building k6 {K6_VERSION} with {go} into {local_k6().parent} (about 90 s the first time) …")
    env = os.environ | {"GOBIN": str(local_k6().parent), "CGO_ENABLED": "0"}
    run_build([go, "install", f"{K6_MODULE}@{K6_VERSION}"], env=env)
    return str(find_k6())


def install_chart_libraries() -> None:
    """vega, vega-lite and vega-embed pinned by package-lock.json: the book's charts load them offline."""
    npm = shutil.which("npm")
    if not npm:
        raise LabError("npm is missing: run `invoke setup` as root to install it (or `apt-get install npm` yourself); "
                       "the book's charts need it")
    say("installing the chart libraries (npm ci) …")
    run_build([npm, "ci", "--no-audit", "--no-fund"], cwd=ROOT)


def describe_virtual_threads_java() -> str:
    """Chapter 7's java (21+), or why there is none; setup goes on without it (chapters 1-6 do not need it)."""
    try:
        java, source = virtual_threads_java()
    except LabError as err:
        return f"missing ({err})"
    return f"{java} (Java {java_major(java)}, from {source})"


def setup(docker: bool = False) -> None:
    """Everything the book needs on this machine; `docker`: also the docker backend's packages."""
    started = time.monotonic()
    check_python()
    say(f"system packages: {system_packages.ensure(docker)}")
    say(f"java: {check_java()}")
    say(f"the servers' users: {system_packages.make_server_users()}")
    say(f"k6:   {ensure_k6()}")
    say(f"java for virtual threads: {describe_virtual_threads_java()}")
    say(f"postgres: {pgbinaries.PG_VERSION} in {pgbinaries.install()} (Zonky's binaries from Maven Central, sha256 checked)")
    for kind in KINDS.values():  # each kind builds what it runs (the sample server, the Netty and WebFlux services)
        built = kind.build()
        if built:
            say(built)
    install_chart_libraries()
    say(f"setup done in {time.monotonic() - started:.0f} s; tools in {TOOLS}")
