"""What `invoke setup` checks and builds: JDK ≥ 17, Python ≥ 3.11, the pinned k6, the pinned PostgreSQL binaries (the
postgres kind: harness.lab.services.pgbinaries), the server jar + CDS archive, chapter 6's Netty service jar."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

from harness import ROOT, SERVER_DIR, TOOLS, LabError, say
from harness.lab.backends.base import CDS_ARCHIVE, CDS_JAR, JAR, PAIR_ROOM_JAR
from harness.lab.jdk import java_command, java_major, virtual_threads_java
from harness.lab.load.k6 import K6_MODULE, K6_VERSION, find_k6, local_k6
from harness.lab.services import pgbinaries
from harness.lab.services.netty import NETTY_DIR, NETTY_JAR
from harness.lab.services.webflux import WEBFLUX_DIR, WEBFLUX_JAR
from harness.lab.services.nginx import nginx_binary

MIN_JAVA = 17
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
    go = shutil.which("go")
    if not go:
        raise LabError(f"k6 {K6_VERSION} is not installed and Go is missing to build it: install Go "
                       f"(e.g. `apt-get install golang`) or put k6 {K6_VERSION} on PATH")
    say(f"building k6 {K6_VERSION} with Go into {local_k6().parent} (about 90 s the first time) …")
    env = os.environ | {"GOBIN": str(local_k6().parent), "CGO_ENABLED": "0"}
    _run([go, "install", f"{K6_MODULE}@{K6_VERSION}"], env=env)
    return str(find_k6())


def build_server(skip_tests: bool = True) -> None:
    """Package the jars with the Maven wrapper (the plain server and chapter 5's pair-room one), then train a Class
    Data Sharing archive on the plain jar for fast starts."""
    args = ["./mvnw", "-B", "-q", "package"] + (["-DskipTests"] if skip_tests else [])
    say("building the sample server (Maven wrapper) …")
    _run(args, cwd=SERVER_DIR)
    build_cds_archive()


def build_netty_server() -> None:
    """Package chapter 6's Netty REST service (netty-server/) with the sample server's Maven wrapper."""
    say("building the Netty service (Maven wrapper) …")
    _run([str(SERVER_DIR / "mvnw"), "-B", "-q", "-f", str(NETTY_DIR / "pom.xml"), "package"], cwd=NETTY_DIR)


def build_webflux_server() -> None:
    """Package chapter 7's event-loop server (webflux-server/) with the sample server's Maven wrapper."""
    say("building the WebFlux service (Maven wrapper) …")
    _run([str(SERVER_DIR / "mvnw"), "-B", "-q", "-f", str(WEBFLUX_DIR / "pom.xml"), "package"], cwd=WEBFLUX_DIR)


def build_cds_archive() -> None:
    """Spring Boot's documented CDS recipe: extract the jar, run once to refresh, dump the archive."""
    shutil.rmtree(CDS_JAR.parent, ignore_errors=True)
    java = java_command()
    _run([java, "-Djarmode=tools", "-jar", str(JAR), "extract", "--destination", str(CDS_JAR.parent)])
    env = os.environ | {"SERVER_PORT": "0", "MANAGEMENT_PORT": "0"}  # never collide with a running server
    _run([java, f"-XX:ArchiveClassesAtExit={CDS_ARCHIVE}", "-Dspring.context.exit=onRefresh", "-jar", str(CDS_JAR)], env=env)
    if not CDS_ARCHIVE.exists():
        raise LabError(f"the CDS training run did not write {CDS_ARCHIVE}")


def install_chart_libraries() -> None:
    """vega, vega-lite and vega-embed pinned by package-lock.json: the book's charts load them offline."""
    npm = shutil.which("npm")
    if not npm:
        raise LabError("npm is missing: install Node.js with npm (e.g. `apt-get install npm`); the book's charts need it")
    say("installing the chart libraries (npm ci) …")
    _run([npm, "ci", "--no-audit", "--no-fund"], cwd=ROOT)


def describe_virtual_threads_java() -> str:
    """Chapter 7's java (21+), or why there is none; setup goes on without it (chapters 1-6 do not need it)."""
    try:
        java, source = virtual_threads_java()
    except LabError as err:
        return f"missing ({err})"
    return f"{java} (Java {java_major(java)}, from {source})"


def setup() -> None:
    started = time.monotonic()
    check_python()
    say(f"java: {check_java()}")
    say(f"k6:   {ensure_k6()}")
    say(f"ab:   {shutil.which('ab') or 'missing (chapter 1 cross-checks with it: apt-get install apache2-utils)'}")
    say(f"nginx: {nginx_binary() or 'missing (only specs with an nginx service need it: apt-get install nginx)'}")
    say(f"wrk:  {shutil.which('wrk') or 'missing (chapter 6 cross-checks k6 with it: apt-get install wrk)'}")
    say(f"java for virtual threads: {describe_virtual_threads_java()}")
    say(f"postgres: {pgbinaries.PG_VERSION} in {pgbinaries.install()} (Zonky's binaries from Maven Central, sha256 checked)")
    build_server()
    say(f"server: {JAR} (+ CDS archive); chapter 5's pair-room API: {PAIR_ROOM_JAR}")
    build_netty_server()
    say(f"netty: {NETTY_JAR}")
    build_webflux_server()
    say(f"webflux: {WEBFLUX_JAR}")
    install_chart_libraries()
    say(f"setup done in {time.monotonic() - started:.0f} s; tools in {TOOLS}")


def _run(cmd: list[str], **kwargs) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-25:])
        raise LabError(f"`{' '.join(cmd)}` failed (exit {done.returncode}):\n{tail}")
