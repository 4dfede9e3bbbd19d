"""`invoke image`'s machinery: a base image with a JRE (pulled, or built by `debootstrap` from the machine's own
Debian mirror when no registry can be reached), and `build`, which each kind with a container uses for its own image
(the sample server's: harness.lab.services.tomcat.container; postgres's: harness.lab.services.pgcontainer).
"""
from __future__ import annotations

import re
import subprocess
import tempfile
import time
from pathlib import Path

from harness import LabError, say
from harness.lab.backends.docker.client import (
    _require_as_root,
    _run_with_progress,
    check_daemon,
    docker,
    docker_env,
    image_id,
)

DEFAULT_BASE = "eclipse-temurin:17-jre"


DEBIAN_SUITE = "bookworm"


DEBOOTSTRAP_BASE = f"concurrency-lab/debian-jre17:{DEBIAN_SUITE}"


JRE_PACKAGE = "openjdk-17-jre-headless"


APT_SOURCES = Path("/etc/apt")


def base_image(base: str | None = None) -> str:
    """The base every kind's image builds on: `base` (an image name, pulled when absent), or "debootstrap" for a local
    Debian + JRE."""
    check_daemon()
    return ensure_debootstrap_base() if base == "debootstrap" else ensure_base(base or DEFAULT_BASE)


def build(tags: list[str], context: Path, base: str, labels: dict[str, str], dockerfile: Path | None = None) -> str:
    """`docker build` of one kind's image on `base` (the classic builder: no BuildKit here; host network, since the
    private daemon has no bridge); returns its first tag."""
    say(f"building {tags[0]} on {base} …")
    began = time.monotonic()
    argv = ["build", "--network", "host", "--build-arg", f"BASE_IMAGE={base}"]
    argv += [arg for name, value in labels.items() for arg in ("--label", f"{name}={value}")]
    argv += [arg for tag in tags for arg in ("--tag", tag)]
    argv += ["--file", str(dockerfile)] if dockerfile else []
    docker(*argv, str(context), timeout=600, env=docker_env() | {"DOCKER_BUILDKIT": "0"})
    say(f"built {tags[0]} in {time.monotonic() - began:.0f} s ({image_size(tags[0])})")
    for key in labels:  # the earlier builds whose tags moved to this one: untagged, of no use, about 150 MB each
        docker("image", "prune", "--force", "--filter", f"label={key}", timeout=120)
    return tags[0]


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
