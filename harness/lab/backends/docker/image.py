"""`invoke image`: the server image, and the postgres kind's, on a base image that `debootstrap` can build from the
machine's own Debian mirror when no registry can be reached.
"""
from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
import time
from pathlib import Path

from harness import SERVER_DIR, LabError, say
from harness.lab import system
from harness.lab.services.sampleserver import JAR, PAIR_ROOM_JAR
from harness.lab.services import pgbinaries
from harness.lab.services.pgcontainer import POSTGRES_DOCKERFILE, POSTGRES_LABEL, POSTGRES_TAG, binaries_digest
from harness.lab.backends.docker.client import (
    LABEL,
    _require_as_root,
    _run_with_progress,
    check_daemon,
    docker,
    docker_env,
    image_id,
)

SERVER_IMAGE = "concurrency-lab/sample-server"


SERVER_TAG = f"{SERVER_IMAGE}:latest"  # the tag the backend runs; `invoke image` also tags the git commit


DEFAULT_BASE = "eclipse-temurin:17-jre"


DEBIAN_SUITE = "bookworm"


DEBOOTSTRAP_BASE = f"concurrency-lab/debian-jre17:{DEBIAN_SUITE}"


JRE_PACKAGE = "openjdk-17-jre-headless"


JAR_LABEL = f"{LABEL}.jar-sha256"  # the image remembers which jar it holds


APT_SOURCES = Path("/etc/apt")


def jar_digest() -> str:
    """One digest of both jars the image holds: a rebuild of either asks for a new image."""
    digest = hashlib.sha256()
    for jar in (JAR, PAIR_ROOM_JAR):
        digest.update(jar.read_bytes() if jar.exists() else b"")
    return digest.hexdigest()


def build_image(base: str | None = None) -> str:
    """The server image from the jar, on `base` (an image name, or "debootstrap" for a local Debian + JRE)."""
    check_daemon()
    for jar in (JAR, PAIR_ROOM_JAR):
        if not jar.exists():
            raise LabError(f"the server jar {jar.relative_to(SERVER_DIR.parent)} is missing: run `invoke setup` first")
    base_image = ensure_debootstrap_base() if base == "debootstrap" else ensure_base(base or DEFAULT_BASE)
    version = system.command_output("git", "-C", str(SERVER_DIR), "rev-parse", "--short", "HEAD") or "dev"
    say(f"building {SERVER_TAG} (also :{version}) on {base_image} …")
    began = time.monotonic()
    # The classic builder (no BuildKit here); host network since the private daemon has no bridge.
    build = ["build", "--network", "host", "--build-arg", f"BASE_IMAGE={base_image}", "--label", f"{JAR_LABEL}={jar_digest()}",
             "--tag", SERVER_TAG, "--tag", f"{SERVER_IMAGE}:{version}", str(SERVER_DIR)]
    docker(*build, timeout=600, env=docker_env() | {"DOCKER_BUILDKIT": "0"})
    say(f"built {SERVER_TAG} in {time.monotonic() - began:.0f} s ({image_size(SERVER_TAG)})")
    build_postgres_image(base_image)
    return SERVER_TAG


def build_postgres_image(base_image: str) -> str:
    """The postgres kind's image: the binaries `invoke setup` unpacked, on the server's base image."""
    home = pgbinaries.home()
    if not (home / "bin" / "postgres").exists():
        raise LabError(f"the PostgreSQL binaries are missing from {home}: run `invoke setup` first")
    say(f"building {POSTGRES_TAG} on {base_image} …")
    began = time.monotonic()
    docker("build", "--network", "host", "--build-arg", f"BASE_IMAGE={base_image}",
           "--label", f"{POSTGRES_LABEL}={binaries_digest()}", "--tag", POSTGRES_TAG,
           "--file", str(POSTGRES_DOCKERFILE), str(home), timeout=600, env=docker_env() | {"DOCKER_BUILDKIT": "0"})
    say(f"built {POSTGRES_TAG} in {time.monotonic() - began:.0f} s ({image_size(POSTGRES_TAG)})")
    return POSTGRES_TAG


def image_size(tag: str) -> str:
    size = int(docker("image", "inspect", "--format", "{{.Size}}", tag).stdout)
    return f"{size / 1e6:.0f} MB"


def ensure_base(image: str) -> str:
    """A base image present here, pulled if a registry is reachable."""
    if image_id(image):
        return image
    say(f"pulling {image} …")
    pulled = docker("pull", image, check=False, timeout=300)
    if pulled.returncode != 0:
        raise LabError(f"the base image {image} is not here and cannot be pulled ({pulled.stderr.strip()[:200]}): "
                       "build a local Debian + JRE base with `invoke image --base debootstrap`")
    return image


def ensure_debootstrap_base() -> str:
    """Debian minbase + the JRE, from this machine's apt mirror, imported as an image; reused when present."""
    if image_id(DEBOOTSTRAP_BASE):
        say(f"base image {DEBOOTSTRAP_BASE} is present: reusing it ({image_size(DEBOOTSTRAP_BASE)})")
        return DEBOOTSTRAP_BASE
    _require_as_root("debootstrap", "debootstrap", "building the base image")
    mirror = debian_mirror(apt_sources(), DEBIAN_SUITE)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lab-rootfs-", dir="/var/tmp") as tmp:
        rootfs = Path(tmp) / "rootfs"
        say(f"debootstrap {DEBIAN_SUITE} minbase + {JRE_PACKAGE} from {mirror} (about a minute) …")
        _run_with_progress(["debootstrap", "--variant=minbase", f"--include={JRE_PACKAGE}", DEBIAN_SUITE, str(rootfs), mirror],
                           Path(tmp) / "debootstrap.log")
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):  # what the image does not need
            for path in (rootfs / cache).glob("*"):
                if path.is_file():
                    path.unlink()
        say(f"importing the root file system as {DEBOOTSTRAP_BASE} …")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["docker", "import", "--change", "ENV LANG=C.UTF-8", "-", DEBOOTSTRAP_BASE],
                                  stdin=tar.stdout, env=docker_env(), capture_output=True, text=True)
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise LabError(f"importing the base image failed: {imported.stderr.strip()}")
    say(f"built {DEBOOTSTRAP_BASE} in {time.monotonic() - began:.0f} s ({image_size(DEBOOTSTRAP_BASE)})")
    return DEBOOTSTRAP_BASE


def apt_sources(root: Path = APT_SOURCES) -> list[str]:
    """The texts apt reads: sources.list and sources.list.d/*.list, *.sources (other names are ignored by apt too)."""
    files = [root / "sources.list", *sorted((root / "sources.list.d").glob("*.list")),
             *sorted((root / "sources.list.d").glob("*.sources"))]
    return [f.read_text() for f in files if f.is_file()]


def debian_mirror(sources: list[str], suite: str) -> str:
    """The URI of the first `deb` source serving `suite`, from one-line or deb822 sources texts."""
    for text in sources:
        for types, uris, suites in _entries(text):
            if "deb" in types and suite in suites and uris:
                return uris[0]
    raise LabError(f"no apt source for Debian {suite} in {APT_SOURCES}/sources.list*: "
                   "debootstrap needs a Debian mirror (add one, or use `invoke image` with a base image from a registry)")


def _entries(text: str):
    """(types, uris, suites) of each entry: `deb [options] URI suite components` lines or deb822 stanzas."""
    # Comment lines go entirely (inside a deb822 stanza they are not a separator); blank lines stay.
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines() if not line.lstrip().startswith("#")]
    for line in lines:
        parts = re.sub(r"\[[^\]]*\]", "", line).split()
        if len(parts) >= 3 and parts[0] in ("deb", "deb-src"):
            yield [parts[0]], [parts[1]], [parts[2]]
    stanza: dict[str, str] = {}
    for line in [*lines, ""]:
        if not line:
            if stanza.get("enabled", "yes").lower() != "no" and "types" in stanza:
                yield stanza["types"].split(), stanza.get("uris", "").split(), stanza.get("suites", "").split()
            stanza = {}
        elif ":" in line:
            key, value = line.split(":", 1)
            stanza[key.strip().lower()] = value.strip()
