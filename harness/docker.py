"""The docker backend: each step's server in a fresh container with the spec's CPU, memory and open-files limits.

Also what it needs on a machine without registry access: `invoke image` (the server image, on a base
image `debootstrap` can build from the machine's own Debian mirror) and `invoke dockerd` (a private
daemon with no bridge network; containers use the host's network, so the load path is the same
loopback as for a local process).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from harness import SERVER_DIR, LabError, say, system
from harness.deploy import JAR, STOP_GRACE_S, RunningServer, StepFailed, listener, server_env
from harness.samplers import Cgroup
from harness.spec import Step

SERVER_IMAGE = "concurrency-lab/sample-server"
SERVER_TAG = f"{SERVER_IMAGE}:latest"  # the tag the backend runs; `invoke image` also tags the git commit
DEFAULT_BASE = "eclipse-temurin:17-jre"
DEBIAN_SUITE = "bookworm"
DEBOOTSTRAP_BASE = f"concurrency-lab/debian-jre17:{DEBIAN_SUITE}"
JRE_PACKAGE = "openjdk-17-jre-headless"
LABEL = "concurrency-lab"  # every container the lab starts carries it, so leftovers can be found
JAR_LABEL = f"{LABEL}.jar-sha256"  # the image remembers which jar it holds
# The private daemon: data root outside the repository so images survive between runs and clones.
DAEMON_DATA_ROOT = Path("/var/lib/concurrency-lab/docker")
DAEMON_LOG = DAEMON_DATA_ROOT.parent / "dockerd.log"
DAEMON_EXEC_ROOT = Path("/run/concurrency-lab-docker")  # short: it holds unix sockets
DAEMON_PIDFILE = Path("/run/concurrency-lab-docker.pid")
DAEMON_SOCKET = Path("/run/concurrency-lab-docker.sock")
DEFAULT_SOCKET = Path("/var/run/docker.sock")
APT_SOURCES = Path("/etc/apt")
START_DAEMON_HINT = "start a private one with `invoke dockerd`, then `export DOCKER_HOST=unix://" + str(DAEMON_SOCKET) + "`"



# ---- the docker client ---------------------------------------------------------------------------

def docker_env() -> dict:
    """The user's environment; the private daemon's socket when DOCKER_HOST is unset and no default daemon exists."""
    env = dict(os.environ)
    if "DOCKER_HOST" not in env and not DEFAULT_SOCKET.exists() and DAEMON_SOCKET.exists():
        env["DOCKER_HOST"] = f"unix://{DAEMON_SOCKET}"
    return env


def docker(*args: str, check: bool = True, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the docker client. It gets its own session: a Ctrl-C must not cut a `docker run` in half,
    or the container could appear after the harness has already cleaned up."""
    proc = subprocess.Popen(["docker", *args], env=env or docker_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except KeyboardInterrupt:
        proc.communicate(timeout=60)
        raise
    except subprocess.TimeoutExpired:
        proc.kill()
        raise LabError(f"`docker {' '.join(args[:2])}` did not answer in {timeout:.0f} s") from None
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check and done.returncode != 0:
        raise LabError(f"`docker {' '.join(args)}` failed: {err.strip() or out.strip()}")
    return done


def daemon_version(env: dict | None = None) -> str | None:
    """The daemon's version when one answers, else None."""
    if not shutil.which("docker"):
        return None
    done = docker("version", "--format", "{{.Server.Version}}", check=False, timeout=15, env=env)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def image_id(tag: str) -> str | None:
    done = docker("image", "inspect", "--format", "{{.Id}}", tag, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def check_daemon() -> None:
    if not shutil.which("docker"):
        raise LabError("the docker backend needs the docker client: install Docker (Debian: `apt-get install docker.io`)")
    if daemon_version() is None:
        where = docker_env().get("DOCKER_HOST", f"unix://{DEFAULT_SOCKET}")
        raise LabError(f"no Docker daemon answers at {where}: {START_DAEMON_HINT}")


def lab_containers() -> list[str]:
    return docker("ps", "--all", "--quiet", "--filter", f"label={LABEL}").stdout.split()


# ---- the backend ---------------------------------------------------------------------------------

def container_name(step: Step) -> str:
    """lab-<chapter>-<step>: one per step, so a leftover of an interrupted run is found and replaced."""
    return re.sub(r"[^a-zA-Z0-9_.-]", "-", f"lab-{step.chapter}-{step.id}")


def run_argv(step: Step, image: str, nofile: int) -> list[str]:
    """`docker run` arguments for a step: its server env, the host's network and the spec's limits.

    `nofile` is the open-files limit when the spec sets none (this machine's hard limit, as a local
    server gets); memory-swap equal to memory means no swap, as on the article's machine.
    """
    limits = step.container
    nofile = limits.get("nofile", nofile)
    argv = ["run", "--detach", "--name", container_name(step),
            "--label", f"{LABEL}=1", "--label", f"{LABEL}.step={step.chapter}/{step.id}",
            "--network", "host", "--ulimit", f"nofile={nofile}:{nofile}"]
    if "cpus" in limits:
        argv += ["--cpus", f"{limits['cpus']:g}"]
    if "memory" in limits:
        argv += ["--memory", limits["memory"], "--memory-swap", limits["memory"]]
    for key, value in server_env(step).items():
        argv += ["--env", f"{key}={value}"]
    return argv + [image]


class DockerBackend:
    """The sample server in a fresh container per step (image from `invoke image`)."""

    name = "docker"

    def __init__(self, image: str = SERVER_TAG):
        self.image = image

    def check(self) -> None:
        check_daemon()
        labels = image_labels(self.image)
        if labels is None:
            raise LabError(f"the server image {self.image} is missing: run `invoke image` "
                           "(`invoke image --base debootstrap` where no registry is reachable)")
        if JAR.exists() and labels.get(JAR_LABEL) != jar_digest():
            raise LabError(f"the server image {self.image} holds another build of the jar than "
                           f"{JAR.relative_to(SERVER_DIR.parent)}: run `invoke image` again")

    def start(self, step: Step, log: Path) -> ContainerServer:
        name = container_name(step)
        docker("rm", "--force", name, check=False)  # a leftover of a run killed hard
        started = time.monotonic()
        try:
            container = docker(*run_argv(step, self.image, system.nofile_limit())).stdout.strip()
            return ContainerServer(step, container, self.image, log, started)
        except BaseException:  # Ctrl-C or a failed start: no container may outlive the step
            docker("rm", "--force", name, check=False)
            raise


class ContainerServer(RunningServer):
    """A server in a container; `pid` is its JVM's pid on the host, so /proc sampling works as for a local one."""

    backend = "docker"

    def __init__(self, step: Step, container: str, image: str, log: Path, started: float):
        super().__init__(step, None, log, started)
        self.container, self.image = container, image
        state = self._inspect("{{.State.Pid}} {{.Image}}").split()
        self.host_pid, self.image_id = int(state[0]), state[1]

    def _inspect(self, template: str) -> str:
        return docker("inspect", "--format", template, self.container).stdout.strip()

    @property
    def pid(self) -> int:
        return self.host_pid

    def alive(self) -> bool:
        try:
            stat = Path(f"/proc/{self.host_pid}/stat").read_text()
        except FileNotFoundError:
            return False
        return self.host_pid > 0 and stat[stat.rindex(")") + 2] != "Z"

    def exit_reason(self) -> str:
        code, oom = self._inspect("{{.State.ExitCode}} {{.State.OOMKilled}}").split()
        if oom == "true":
            return f"killed for exceeding the container's memory limit {self.step.container.get('memory')}"
        # The JVM is PID 1 in the container: a signal shows as 128 + its number.
        return f"killed by signal {int(code) - 128}" if int(code) > 128 else f"exit code {code}"

    def _check_identity(self) -> None:
        """Ours is the process listening on the management port (host network: the host's `ss` sees it),
        and it reports the pid our container's JVM has inside its pid namespace."""
        found = listener(self.step.management_port)
        if found and found[1] != self.host_pid:
            raise StepFailed(f"another server ({found[0]}, pid {found[1]}) answers on {self.management_url}, "
                             f"not the container's (host pid {self.host_pid})")
        inner = namespace_pid(self.host_pid)
        reported = self.info().get("pid")
        if reported != inner:
            raise StepFailed(f"the server on {self.management_url} reports pid {reported}, "
                             f"not the container's JVM (pid {inner} in the container)")

    def step_meta(self) -> dict:
        facts = {"image": self.image, "image_id": self.image_id, "container_id": self.container,
                 "name": container_name(self.step), "requested": dict(self.step.container),
                 "nofile": open_files_limit(self.host_pid)}
        try:
            facts["cgroup"] = Cgroup.of_pid(self.host_pid).limits()
        except (OSError, ValueError) as err:  # recorded rather than failing a measured step
            facts["cgroup"] = {"error": str(err)}
        return {"container": facts}

    def cgroups(self) -> dict:
        try:
            return {"container": Cgroup.of_pid(self.host_pid)}
        except (OSError, ValueError):  # the container is gone: the runner sees the server dead and says so
            return {}

    def stop(self) -> int:
        """docker stop (SIGTERM, SIGKILL after the grace), keep the logs, remove the container."""
        try:
            docker("stop", "--time", str(STOP_GRACE_S), self.container, check=False, timeout=STOP_GRACE_S + 30)
            state = docker("inspect", "--format", "{{.State.ExitCode}}", self.container, check=False)
            self._save_logs()
            return int(state.stdout) if state.returncode == 0 else -1  # -1: the daemon lost it
        finally:
            docker("rm", "--force", self.container, check=False)

    def _save_logs(self) -> None:
        with open(self.log, "wb") as out:
            subprocess.run(["docker", "logs", self.container], env=docker_env(), stdout=out,
                           stderr=subprocess.STDOUT, timeout=60, start_new_session=True)

    def log_tail(self, lines: int = 15) -> str:
        done = docker("logs", "--tail", str(lines), self.container, check=False)
        return (done.stdout + done.stderr).strip() or "(no output)"


def namespace_pid(host_pid: int) -> int:
    """The pid a host process has in its own (innermost) pid namespace: the NSpid line's last field."""
    for line in Path(f"/proc/{host_pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return host_pid


def open_files_limit(pid: int) -> int | None:
    """The soft open-files limit a process runs with, from /proc/<pid>/limits."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    return None


# ---- images --------------------------------------------------------------------------------------

def jar_digest() -> str:
    return hashlib.sha256(JAR.read_bytes()).hexdigest()


def image_labels(tag: str) -> dict | None:
    done = docker("image", "inspect", "--format", "{{json .Config.Labels}}", tag, check=False)
    return (json.loads(done.stdout) or {}) if done.returncode == 0 else None


def build_image(base: str | None = None) -> str:
    """The server image from the jar, on `base` (an image name, or "debootstrap" for a local Debian + JRE)."""
    check_daemon()
    if not JAR.exists():
        raise LabError(f"the server jar {JAR.relative_to(SERVER_DIR.parent)} is missing: run `invoke setup` first")
    base_image = ensure_debootstrap_base() if base == "debootstrap" else ensure_base(base or DEFAULT_BASE)
    version = system.command_output("git", "-C", str(SERVER_DIR), "rev-parse", "--short", "HEAD") or "dev"
    say(f"building {SERVER_TAG} (also :{version}) on {base_image} …")
    began = time.monotonic()
    # The classic builder (no BuildKit here); host network since the private daemon has no bridge.
    build = ["build", "--network", "host", "--build-arg", f"BASE_IMAGE={base_image}", "--label", f"{JAR_LABEL}={jar_digest()}",
             "--tag", SERVER_TAG, "--tag", f"{SERVER_IMAGE}:{version}", str(SERVER_DIR)]
    docker(*build, timeout=600, env=docker_env() | {"DOCKER_BUILDKIT": "0"})
    say(f"built {SERVER_TAG} in {time.monotonic() - began:.0f} s ({image_size(SERVER_TAG)})")
    return SERVER_TAG


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


def _require_as_root(tool: str, package: str, task: str) -> None:
    if not shutil.which(tool):
        raise LabError(f"{tool} is missing: install it (Debian: `apt-get install {package}`)")
    if os.geteuid() != 0:
        raise LabError(f"{task} needs root")


def _run_with_progress(cmd: list[str], log: Path, every_s: float = 15) -> None:
    """A long command with its output in `log`, a progress line every `every_s` seconds."""
    began = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        while proc.poll() is None:
            try:
                proc.wait(timeout=every_s)
            except subprocess.TimeoutExpired:
                last = (log.read_text(errors="replace").strip().splitlines() or [""])[-1]
                say(f"    {time.monotonic() - began:4.0f} s  {last[:100]}")
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise LabError(f"`{' '.join(cmd[:3])} …` failed (exit {proc.returncode}):\n{tail}")


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


# ---- the private daemon --------------------------------------------------------------------------

def start_daemon() -> str:
    """Start the lab's private dockerd unless a daemon already answers; returns the DOCKER_HOST to use."""
    version = daemon_version()
    if version:
        host = docker_env().get("DOCKER_HOST", f"unix://{DEFAULT_SOCKET}")
        say(f"a Docker daemon ({version}) already answers at {host}: using it, nothing started")
        return host
    _require_as_root("dockerd", "docker.io", "starting a private Docker daemon")
    host = f"unix://{DAEMON_SOCKET}"
    for path in (DAEMON_DATA_ROOT, DAEMON_EXEC_ROOT):
        path.mkdir(parents=True, exist_ok=True)
    # No bridge, no iptables: no private-range network is created; containers use --network host.
    cmd = ["dockerd", "--bridge=none", "--iptables=false", "--ip-masq=false", f"--data-root={DAEMON_DATA_ROOT}",
           f"--exec-root={DAEMON_EXEC_ROOT}", f"--pidfile={DAEMON_PIDFILE}", f"--host={host}"]
    say(f"starting a private Docker daemon (data in {DAEMON_DATA_ROOT}, log {DAEMON_LOG}) …")
    with open(DAEMON_LOG, "ab") as log:  # its own session: it outlives this command
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while daemon_version(os.environ | {"DOCKER_HOST": host}) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = "\n".join(DAEMON_LOG.read_text(errors="replace").splitlines()[-10:])
            _kill_and_wait(proc.pid)
            _remove_runtime_files()
            raise LabError(f"the private Docker daemon did not come up (exit {proc.poll()}):\n{tail}")
        time.sleep(0.5)
    say(f"Docker daemon up (pid {proc.pid}); stop it with `invoke dockerd --stop`")
    return host


def stop_daemon() -> None:
    """Stop the private daemon (never another one), unmount what it left, remove its run-time files."""
    pid = int(DAEMON_PIDFILE.read_text()) if DAEMON_PIDFILE.exists() else None
    if pid and Path(f"/proc/{pid}").exists():
        env = os.environ | {"DOCKER_HOST": f"unix://{DAEMON_SOCKET}"}
        leftovers = docker("ps", "--all", "--quiet", "--filter", f"label={LABEL}", check=False, env=env).stdout.split()
        if leftovers:
            docker("rm", "--force", *leftovers, check=False, env=env)
        say(f"stopping the private Docker daemon (pid {pid}) …")
        _kill_and_wait(pid)
    else:
        say("no private Docker daemon is running")
    _remove_runtime_files()


def _remove_runtime_files() -> None:
    """What a stopped daemon leaves: its mounts (netns/default must go before the directory can), exec root, socket."""
    for mount in sorted(_mounts_under(DAEMON_EXEC_ROOT), key=len, reverse=True):
        subprocess.run(["umount", mount], check=False)
    shutil.rmtree(DAEMON_EXEC_ROOT, ignore_errors=True)
    for path in (DAEMON_PIDFILE, DAEMON_SOCKET):
        path.unlink(missing_ok=True)


def _kill_and_wait(pid: int) -> None:
    for sig, wait_s in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if not Path(f"/proc/{pid}").exists():
            return
    raise LabError(f"the private Docker daemon (pid {pid}) does not stop")


def _mounts_under(root: Path) -> list[str]:
    points = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    return [p for p in points if p == str(root) or p.startswith(f"{root}/")]
