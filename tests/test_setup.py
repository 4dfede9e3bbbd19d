"""`invoke setup`'s first steps: which system packages a machine lacks (found by commands, on a PATH made for each
test), apt-get run once for exactly those as root, the message listing them where setup cannot install (run as
`nobody` for real), README's table made from the code's, and the pinned Go toolchain's checks (a module zip made here,
served from a file:// GOPROXY: no network)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from harness import ROOT, LabError
from harness.lab import gotoolchain, system_packages
from harness.lab.system_packages import PACKAGES, Package, missing

JAVA_17 = 'openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)\n'
JAVA_11 = 'openjdk version "11.0.26" 2025-01-21\n'
GO_SAMPLES = {  # `go version` as Debian 12's golang-go, this machine's and a release without a patch number print it
    "go version go1.19.8 linux/amd64": (1, 19, 8),
    "go version go1.26.8 linux/amd64": (1, 26, 8),
    "go version go1.25 linux/amd64": (1, 25, 0),
    "bash: go: command not found": (),
}


def commands(folder: Path, *names: str, script: str = "exit 0") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(f"#!/bin/sh\n{script}\n")
        (folder / name).chmod(0o755)


def java(folder: Path, version_text: str, javac: bool = True) -> None:
    commands(folder, "java", script=f"printf '%s' '{version_text}' >&2")  # builtins only: PATH has no cat
    if javac:
        commands(folder, "javac")


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A machine whose commands are only those put in the returned folder (no sbin fallback, no JAVA_HOME)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(system_packages, "SBIN", ())
    return folder


def names(packages) -> list[str]:
    return [p.name for p in packages]


def test_a_bare_machine_lacks_every_package_but_the_ones_found_by_files(machine):
    has_certificates = Path("/etc/ssl/certs/ca-certificates.crt").exists()
    expected = [p.name for p in PACKAGES if not p.docker and (p.name != "ca-certificates" or not has_certificates)]
    assert names(missing()) == expected
    assert names(missing(docker=True)) == expected + ["docker.io", "debootstrap"]


def test_each_command_counts_not_the_package(machine):
    commands(machine, "ss", "nstat", "ip", "taskset", "setpriv", "unshare", "mountpoint", "node", "npm", "chromium-browser",
             "wrk")
    lacking = names(missing())
    assert "iproute2" in lacking  # tc is missing: chapter 6's hosts need it
    assert "nodejs" not in lacking and "npm" not in lacking  # node with its npm from elsewhere: Debian's npm not wanted
    assert "chromium" not in lacking  # either name will do
    assert "util-linux" not in lacking and "wrk" not in lacking
    commands(machine, "tc")
    assert "iproute2" not in names(missing())


def test_node_without_npm_wants_only_npm(machine):
    commands(machine, "node")
    lacking = names(missing())
    assert "npm" in lacking and "nodejs" not in lacking


@pytest.mark.parametrize("version_text, javac, wanted", [
    (JAVA_17, True, False), (JAVA_11, True, True), (JAVA_17, False, True)])
def test_the_jdk_must_be_17_or_newer_with_javac(machine, version_text, javac, wanted):
    java(machine, version_text, javac)
    assert ("openjdk-17-jdk-headless" in names(missing())) is wanted


def test_a_java_home_is_the_users_choice(machine, monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "some-jdk"))  # judged by setup's java check, never replaced
    assert "openjdk-17-jdk-headless" not in names(missing())


def test_a_package_found_by_a_file():
    certificates = Package("ca-certificates", ("/nonexistent/ca.crt",), "HTTPS")
    assert missing(packages=(certificates,)) == [certificates]
    assert missing(packages=(Package("x", (__file__,), "y"),)) == []


def test_the_message_lists_each_package_with_why_and_the_line_to_copy():
    wanted = [p for p in PACKAGES if p.name in ("apache2-utils", "wrk", "chromium")]
    text = system_packages.missing_message(wanted, apt=True)
    assert text.startswith("3 system package(s) the book needs are missing:\n")
    assert "  apache2-utils  ab: chapter 1 cross-checks k6 with ab, the article's tool\n" in text
    assert "chromium or chromium-browser or google-chrome: the book tests draw" in text
    assert text.endswith("\n  sudo apt-get install -y --no-install-recommends apache2-utils wrk chromium")
    elsewhere = system_packages.missing_message(wanted, apt=False)
    assert "no apt-get" in elsewhere and "apt-get install" not in elsewhere and "  wrk" in elsewhere


@pytest.mark.parametrize("os_release, chromium", [
    ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n', "chromium"),
    ('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\n', "chromium-browser"),
    ('NAME="Linux Mint"\nID=linuxmint\nID_LIKE="ubuntu debian"\n', "chromium-browser")])
def test_packages_go_by_the_distributions_names(tmp_path, os_release, chromium):
    (tmp_path / "os-release").write_text(os_release)
    named = system_packages.named_for([p for p in PACKAGES if p.name in ("wrk", "chromium")], tmp_path / "os-release")
    assert names(named) == ["wrk", chromium] and "chromium" in named[1].why
    assert names(system_packages.named_for(list(PACKAGES[:2]), tmp_path / "absent")) == names(PACKAGES[:2])


@pytest.mark.skipif(os.geteuid() != 0, reason="the root path: setup runs apt-get itself only as root (or with sudo)")
def test_as_root_one_update_then_one_install_of_exactly_what_is_missing(machine, tmp_path, capsys):
    """A stand-in apt-get records its arguments and `installs` each package by creating its commands."""
    for tool in ("env",):
        os.symlink(shutil.which(tool, path=os.defpath), machine / tool)
    provides = {p.name: [c.split("|")[0] for c in p.commands if not c.startswith("/")] for p in PACKAGES}
    log = tmp_path / "apt.log"
    (machine / "apt-get").write_text(f"""#!{sys.executable}
import json, os, sys
with open({str(log)!r}, "a") as f:
    f.write(json.dumps([os.environ.get("DEBIAN_FRONTEND")] + sys.argv[1:]) + "\\n")
provides = {provides!r}
for package in sys.argv[1:] if "install" in sys.argv else []:
    for command in provides.get(package, []):
        body = "printf '%s' '" + {JAVA_17!r} + "' >&2" if command == "java" else "exit 0"
        with open(os.path.join({str(machine)!r}, command), "w") as f:
            f.write("#!/bin/sh\\n" + body + "\\n")
        os.chmod(os.path.join({str(machine)!r}, command), 0o755)
""")
    (machine / "apt-get").chmod(0o755)
    commands(machine, "ab", "git")
    lacking = names(missing())
    said = system_packages.ensure()
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls == [["noninteractive", "-q", "update"],
                     ["noninteractive", "install", "-y", "--no-install-recommends", "-q", *lacking]]
    assert "apache2-utils" not in lacking and "git" not in lacking and "wrk" in lacking and "docker.io" not in lacking
    assert said == f"installed {', '.join(lacking)}"
    shown = capsys.readouterr().out
    assert f"installing {len(lacking)} system package(s) with apt-get:" in shown
    assert "  wrk " in shown and "chapter 6 cross-checks k6 with wrk" in shown
    assert missing() == []
    assert system_packages.ensure().startswith(f"all {len(system_packages.required(False))} there")  # no apt-get run
    assert len(log.read_text().splitlines()) == 2


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser"), reason="runs setup as nobody: needs root")
def test_not_root_setup_stops_first_with_the_list():
    """`invoke setup` as a user who cannot install: exit 2, one message with every missing package, nothing done."""
    from test_e2e_postgres import python_for_nobody

    python, path = python_for_nobody()
    home = Path(tempfile.mkdtemp(prefix="lab-setup-nobody-"))  # pytest's tmp_path is root's alone
    try:
        home.chmod(0o755)
        commands(home / "bin", "ss", "nstat", "taskset", "setpriv", "unshare", "git")
        os.symlink("/usr/bin/apt-get", home / "bin" / "apt-get")
        env = {"PATH": str(home / "bin"), "PYTHONPATH": path, "LANG": "C.UTF-8"}
        done = subprocess.run([shutil.which("runuser"), "-u", "nobody", "--", python, "-m", "invoke", "setup"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""  # stopped before anything: no java line, nothing built
    assert done.stderr.startswith("error: ") and "system package(s) the book needs are missing:" in done.stderr
    for package in ("openjdk-17-jdk-headless", "apache2-utils", "wrk", "nodejs", "npm", "chromium"):
        assert f"\n  {package} " in done.stderr
    assert "run `invoke setup` as root (or with passwordless sudo)" in done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("  sudo apt-get install -y --no-install-recommends openjdk-17-jdk-headless ")
    assert " ab " not in line and "git" not in line.split()  # only what is missing


@pytest.mark.skipif(os.geteuid() != 0, reason="the servers' own users are made only as root")
def test_as_root_setup_makes_the_servers_users_once_and_the_lab_refuses_to_start_a_jvm_without_them(monkeypatch):
    """The JVMs run as system users of their own (process.SERVER_USERS): setup makes each, with its group, no home and
    no login, and says so; a second setup finds them; a machine without one stops before anything starts, naming the
    command that makes it."""
    import grp
    import pwd

    from harness.lab.backends import process

    names = (f"lab-test-{os.getpid()}", f"lab-test-{os.getpid()}-2")
    monkeypatch.setattr(system_packages, "SERVER_USERS", names)
    monkeypatch.setattr(process, "SERVER_USERS", names)
    with pytest.raises(LabError, match=rf"^as root, the lab runs its JVMs as the system user {names[0]}, and this "
                                       rf"machine has no user or group {names[0]}: run `invoke setup`, which makes them$"):
        process.check_server_users()
    with pytest.raises(LabError, match=rf"system users {names[0]}, {names[1]} \(one for each JVM of a step\), and this "
                                       rf"machine has no user or group {names[0]}, {names[1]}: run `invoke setup`"):
        process.check_server_users(2)
    try:
        assert system_packages.make_server_users() == f"{names[0]} (made now), {names[1]} (made now)"
        for name in names:
            user = pwd.getpwnam(name)
            assert user.pw_uid < 1000 and user.pw_shell == "/usr/sbin/nologin" and not os.path.exists(user.pw_dir)
        assert system_packages.make_server_users() == f"{names[0]} (there already), {names[1]} (there already)"
        process.check_server_users(2)
        subprocess.run(["userdel", names[1]], check=True)
        process.check_server_users(1)  # set up before there were more: a step of one JVM still runs
        with pytest.raises(LabError, match=rf"no user or group {names[1]}: run `invoke setup`"):
            process.check_server_users(2)
        subprocess.run(["groupadd", "--system", names[1]], check=True)  # a group left behind: useradd -U refuses it
        assert system_packages.make_server_users() == f"{names[0]} (there already), {names[1]} (made now)"
        assert pwd.getpwnam(names[1]).pw_gid == grp.getgrnam(names[1]).gr_gid
    finally:
        for name in names:
            subprocess.run(["userdel", name], check=False)
            subprocess.run(["groupdel", name], check=False, capture_output=True)


def test_readme_has_the_table_made_from_the_code():
    assert system_packages.markdown_table() in (ROOT / "docs" / "reference.md").read_text()


# ---- the Go toolchain that builds k6 ---------------------------------------------------------------------------

@pytest.mark.parametrize("out, version", GO_SAMPLES.items())
def test_go_versions_are_read_from_go_version(out, version):
    assert gotoolchain.parse_go_version(out) == version


def test_k6_needs_a_go_newer_than_debians():
    assert GO_SAMPLES["go version go1.19.8 linux/amd64"] < gotoolchain.K6_NEEDS_GO <= (1, 25, 12)
    assert gotoolchain.parse_go_version(f"go version {gotoolchain.GO_VERSION}") >= gotoolchain.K6_NEEDS_GO


@pytest.mark.parametrize("goproxy, proxy", [
    ("", "https://proxy.golang.org"), ("https://proxy.golang.org,direct", "https://proxy.golang.org"),
    ("https://goproxy.example/|https://proxy.golang.org", "https://goproxy.example"),
    ("file:///srv/goproxy", "file:///srv/goproxy")])
def test_the_module_proxy_is_goproxys_first(goproxy, proxy):
    assert gotoolchain.module_proxy(goproxy) == proxy


@pytest.mark.parametrize("goproxy", ["off", "direct", "direct,https://proxy.golang.org"])
def test_no_module_proxy_is_said(goproxy):
    with pytest.raises(LabError, match=f"GOPROXY={goproxy} starts with `(off|direct)`, not a module proxy"):
        gotoolchain.module_proxy(goproxy)


def test_the_pinned_toolchain_is_for_this_architecture_only():
    name, digest = gotoolchain.toolchain_zip("x86_64")
    assert name == "v0.0.1-go1.25.12.linux-amd64.zip" and len(digest) == 64 and int(digest, 16) >= 0
    with pytest.raises(LabError, match="no pinned Go toolchain for this machine's architecture 'riscv64'"):
        gotoolchain.toolchain_zip("riscv64")


def module_zip(proxy: Path, says: str, extra: str | None = None) -> str:
    """A toolchain module zip on a file:// proxy whose bin/go prints `says` (no file modes, as the proxy's); its sha256."""
    name, _ = gotoolchain.toolchain_zip("x86_64")
    prefix = f"golang.org/toolchain@{name.removesuffix('.zip')}/"
    path = proxy / "golang.org" / "toolchain" / "@v" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zipped:
        zipped.writestr(prefix + "bin/go", f"#!/bin/sh\necho 'go version {says} linux/amd64'\n")
        zipped.writestr(prefix + "pkg/tool/linux_amd64/compile", "#!/bin/sh\n")
        zipped.writestr(prefix + "VERSION", says + "\n")
        if extra:
            zipped.writestr(extra, "")
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def tools(tmp_path, monkeypatch):
    monkeypatch.setattr(gotoolchain, "TOOLS", tmp_path / "tools")
    return tmp_path / "tools"


def test_the_toolchain_is_unpacked_with_its_commands_executable(tmp_path, tools):
    digest = module_zip(tmp_path / "proxy", "go1.25.12")
    home = gotoolchain.fetch_toolchain("x86_64", f"file://{tmp_path / 'proxy'}", digest)
    assert home == tools / "go" / "go1.25.12"
    assert os.access(home / "bin" / "go", os.X_OK) and os.access(home / "pkg/tool/linux_amd64/compile", os.X_OK)
    assert not os.access(home / "VERSION", os.X_OK)
    assert gotoolchain.go_version(home / "bin" / "go") == (1, 25, 12)


def test_a_toolchain_with_another_digest_is_refused(tmp_path, tools):
    module_zip(tmp_path / "proxy", "go1.25.12")
    with pytest.raises(LabError, match=r"has sha256 [0-9a-f]{64}, not the pinned 0{64}: refusing it"):
        gotoolchain.fetch_toolchain("x86_64", f"file://{tmp_path / 'proxy'}", "0" * 64)
    assert not (tools / "go").exists() and list((tools / "downloads").iterdir()) == []  # no partial file kept


def test_a_toolchain_that_says_another_version_is_refused(tmp_path, tools):
    digest = module_zip(tmp_path / "proxy", "go1.24.0")
    with pytest.raises(LabError, match="unpacks to a go that says it is 1.24.0, not go1.25.12: refusing it"):
        gotoolchain.fetch_toolchain("x86_64", f"file://{tmp_path / 'proxy'}", digest)
    assert list((tools / "go").iterdir()) == []  # nothing half-installed


def test_a_zip_with_a_file_outside_the_module_is_refused(tmp_path, tools):
    digest = module_zip(tmp_path / "proxy", "go1.25.12", extra="elsewhere/bin/go")
    with pytest.raises(LabError, match="'elsewhere/bin/go' is not under golang.org/toolchain@v0.0.1-go1.25.12"):
        gotoolchain.fetch_toolchain("x86_64", f"file://{tmp_path / 'proxy'}", digest)


def test_an_unreachable_proxy_is_said(tmp_path, tools):
    with pytest.raises(LabError, match="cannot download file://.*/nowhere/golang.org/toolchain/@v/v0.0.1-go1.25.12"):
        gotoolchain.fetch_toolchain("x86_64", f"file://{tmp_path / 'nowhere'}")


def test_the_go_on_path_is_used_when_new_enough(machine, tools):
    commands(machine, "go", script="echo 'go version go1.26.8 linux/amd64'")
    assert gotoolchain.go_for_k6() == str(machine / "go")


def test_an_old_go_on_path_gives_way_to_the_fetched_toolchain(machine, tools):
    commands(machine, "go", script="echo 'go version go1.19.8 linux/amd64'")
    commands(tools / "go" / "go1.25.12" / "bin", "go", script="echo 'go version go1.25.12 linux/amd64'")
    assert gotoolchain.go_for_k6() == str(tools / "go" / "go1.25.12" / "bin" / "go")  # fetched once, found since
