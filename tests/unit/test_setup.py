"""``ndbchaos setup``'s steps against a fake machine (every command mocked): what each step does
when something is missing, that a second run does nothing, and that a missing prerequisite is
one line and exit 1."""

import json
import os
import subprocess
import sys

import pytest

from ndbchaos import provision as P
from ndbchaos import resources
from ndbchaos.settings import Settings
from ndbchaos.workload import native


class FakeHost(P.Host):
    """A machine with a state: what is installed, whether dockerd runs, which images exist."""

    def __init__(self, tmp_path, root=True, debian=True, installed=(), docker=False, images=(), tags_fail=""):
        self.tmp, self.root, self.debian = tmp_path, root, debian
        self.installed = set(installed)  # programs on PATH
        self.docker = docker
        self.images = set(images)
        self.tags_fail = tags_fail  # build.sh --tag ndb's one line, when the distribution is bad
        self.calls: list[list[str]] = []  # commands that change something (probes are not listed)
        self.apt_fails = 0  # apt-get install fails this many times

    # what setup asks
    def which(self, name):
        return f"/usr/bin/{name}" if name in self.installed else None

    def is_root(self):
        return self.root

    def debianish(self):
        return self.debian

    def sleep(self, seconds):
        pass

    def ok(self, cmd):
        if cmd[:2] == ["docker", "info"]:
            return self.docker
        if cmd[:3] == ["docker", "compose", "version"]:
            return "compose-plugin" in self.installed
        if cmd[:3] == ["docker", "image", "inspect"]:
            return cmd[3] in self.images
        raise AssertionError(f"unexpected probe {cmd}")

    # what setup does
    def start(self, cmd, log):
        self.calls.append(cmd)
        assert cmd == ["dockerd"] and "dockerd" in self.installed
        self.docker = True

    def build_native(self):
        self.calls.append(["build-native"])
        if not {"gcc", "mariadb_config"} <= self.installed:
            raise native.NativeUnavailable("no C compiler (cc/gcc) is installed")
        path = P.resources.tools_dir() / f"ndbchaos-native-{native.source_hash()}.so"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("so")
        return str(path)

    def run(self, cmd, *, log=None, append=False, env=None, cwd=None, capture=False):
        done = subprocess.CompletedProcess(cmd, 0, "", "")
        if cmd[:2] == ["docker", "version"]:
            return subprocess.CompletedProcess(cmd, 0, "28.5.1\n", "")
        if cmd[0] == "bash" and cmd[1] == str(resources.BUILD):
            if cmd[2] == "--tag":
                if cmd[3] == "ndb" and self.tags_fail:
                    return subprocess.CompletedProcess(cmd, 1, "", self.tags_fail + "\n")
                return subprocess.CompletedProcess(cmd, 0, f"ndbchaos/{cmd[3]}:abc\n", "")
            self.calls.append(["build.sh", *cmd[2:]])
            if "debootstrap" not in self.installed and not {"ndbchaos/galera:abc", "ndbchaos/tools:abc"} <= self.images:
                return subprocess.CompletedProcess(cmd, 1, "", "")
            self.images |= {"ndbchaos/galera:abc", "ndbchaos/tools:abc", "ndbchaos/toxiproxy:abc"}
            return done
        self.calls.append(cmd)
        if cmd[:2] == ["apt-get", "install"]:
            assert env == {"DEBIAN_FRONTEND": "noninteractive"} and log is not None
            if self.apt_fails:
                self.apt_fails -= 1
                return subprocess.CompletedProcess(cmd, 100, "", "")
            pkgs = cmd[4:]
            names = {"docker.io": {"docker", "dockerd"}, "libmariadb-dev": {"mariadb_config"}, "fuse3": {"fusermount3"}}
            for p in pkgs:
                self.installed |= names.get(p, {p})
            return done
        if cmd[:2] == ["apt-get", "update"]:
            return done
        if cmd[:3] == ["go", "mod", "download"]:
            src = self.tmp / "gomod" / "compose"
            src.mkdir(parents=True, exist_ok=True)
            return subprocess.CompletedProcess(cmd, 0, json.dumps({"Dir": str(src)}), "")
        if cmd[:2] == ["go", "build"]:
            assert env == {"GOFLAGS": "-mod=mod"} and cwd is not None
            out = cmd[cmd.index("-o") + 1]
            with open(out, "w") as fh:
                fh.write("compose")
            os.chmod(out, 0o755)
            return done
        if cmd[:2] == ["npm", "install"]:
            prefix = cmd[cmd.index("--prefix") + 1]
            b = f"{prefix}/node_modules/.bin"
            os.makedirs(b, exist_ok=True)
            with open(f"{b}/allure", "w") as fh:
                fh.write("#!/bin/sh\n")
            os.chmod(f"{b}/allure", 0o755)
            return done
        raise AssertionError(f"unexpected command {cmd}")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("NDBCHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NDBCHAOS_TOOLS", raising=False)
    monkeypatch.delenv("NDBCHAOS_NDB_DIST", raising=False)
    return tmp_path


def _setup(host, allure=True):
    lines = []
    s = P.Setup(host, say=lines.append)
    s.run(allure=allure)
    return lines


def test_a_bare_debian_machine_then_a_second_run_that_does_nothing(home):
    host = FakeHost(home, installed={"go"})
    lines = _setup(host)
    cache, tools = home / "cache", home / "cache" / "tools"
    assert lines[:4] == ["installing docker.io (apt-get)...", f"starting dockerd (log: {cache}/dockerd.log)...",
                         "Docker engine 28.5.1 is up",
                         f"building Docker Compose {P.COMPOSE_VERSION} from the Go module proxy "
                         "(about 3 minutes, once)..."]
    assert lines[4].startswith("built docker-compose in ")
    assert lines[5:11] == ["installing gcc libmariadb-dev (apt-get)...",
                           "building the native client driver (ndbchaos/workload/native/ndc.c)...",
                           "installing fuse3 (apt-get)...", "installing debootstrap (apt-get)...",
                           "installing npm (apt-get)...",
                           f"installing Allure {P.ALLURE_VERSION} (npm) for the HTML report..."]
    assert lines[-1].startswith("setup complete in ")
    assert (tools / "docker-compose").is_file()
    assert (home / "home" / ".docker" / "cli-plugins" / "docker-compose").resolve() == tools / "docker-compose"
    assert ["build.sh", "all"] in host.calls and ["dockerd"] in host.calls
    assert (tools / "npm" / "node_modules" / ".bin" / "allure").is_file()

    host.calls.clear()
    again = _setup(host)
    assert host.calls == [["build.sh", "all"]]  # build.sh itself says each image is present
    assert len(again) == 1 and again[0].startswith("setup complete in ")


def test_everything_present_does_nothing(home):
    tools = home / "cache" / "tools"
    (tools / "npm" / "node_modules" / ".bin").mkdir(parents=True)
    (tools / "npm" / "node_modules" / ".bin" / "allure").write_text("")
    (tools / "npm" / "node_modules" / ".bin" / "allure").chmod(0o755)
    (tools / f"ndbchaos-native-{native.source_hash()}.so").write_text("")
    host = FakeHost(home, root=False, docker=True, installed={"compose-plugin", "debootstrap", "fusermount3"})
    lines = _setup(host)
    assert host.calls == [["build.sh", "all"]] and len(lines) == 1


def test_allure_only_when_asked(home):
    host = FakeHost(home, docker=True, installed={"compose-plugin", "debootstrap", "gcc", "mariadb_config"})
    lines = _setup(host, allure=False)
    assert not [c for c in host.calls if c[0] == "npm"] and not any("Allure" in x for x in lines)


@pytest.mark.parametrize("host_kw, line", [
    ({"root": False}, "the Docker engine is not running and we are not root to start it"),
    ({"root": False, "installed": set()}, "docker.io missing; install it (needs root on Debian/Ubuntu for automatic "
                                          "install)"),
    ({"debian": False, "installed": set()}, "docker.io missing; install it (needs root on Debian/Ubuntu for automatic "
                                            "install)"),
    ({"docker": True}, "Docker Compose v2 is missing and Go is not installed to build it"),
])
def test_a_missing_prerequisite_is_one_line(home, capsys, host_kw, line):
    kw = {"installed": {"dockerd", "docker"}, **host_kw}
    host = FakeHost(home, **kw)
    assert P.setup(host=host, say=lambda s: None) == 1
    err = capsys.readouterr().err
    assert err == f"[ndbchaos] error: {line}\n"


def test_dockerd_that_never_answers(home, capsys):
    host = FakeHost(home, installed={"dockerd", "docker"})
    host.start = lambda cmd, log: host.calls.append(cmd)  # started, but never answers
    assert P.setup(host=host, say=lambda s: None) == 1
    assert capsys.readouterr().err == (f"[ndbchaos] error: dockerd did not answer within {P.DOCKERD_WAIT_S} s; "
                                       f"see {home}/cache/dockerd.log\n")


def test_apt_retries_after_an_update_then_says_where_the_log_is(home, capsys):
    host = FakeHost(home, installed={"go"})
    host.apt_fails = 2
    assert P.setup(host=host, say=lambda s: None) == 1
    assert [c[:2] for c in host.calls] == [["apt-get", "install"], ["apt-get", "update"], ["apt-get", "install"]]
    assert capsys.readouterr().err == f"[ndbchaos] error: apt-get install docker.io failed; see {home}/cache/apt.log\n"


def test_native_driver_is_optional(home):
    host = FakeHost(home, root=False, docker=True, installed={"compose-plugin", "debootstrap"})
    lines = _setup(host, allure=False)
    assert "native client driver not built (gcc libmariadb-dev missing); the Python client is used" in lines
    assert lines[-1].startswith("setup complete")


def test_fuse_is_optional(home):
    host = FakeHost(home, docker=True, installed={"compose-plugin", "debootstrap", "gcc", "mariadb_config"})
    host.apt_fails = 2  # install, then install again after an update: both fail
    lines = _setup(host, allure=False)
    assert "FUSE 3 not installed (fuse3): the storage faults of the faultfs layer will skip" in lines
    assert lines[-1].startswith("setup complete")


def test_a_bad_ndb_distribution_stops_before_any_build(home, capsys):
    host = FakeHost(home, docker=True, installed={"compose-plugin", "debootstrap", "gcc", "mariadb_config"},
                    tags_fail="NDBCHAOS_NDB_DIST=/nope.tar.xz: no such file or directory")
    s = P.Setup(host, say=lambda s: None, settings=Settings(ndb_dist="/nope.tar.xz"))
    with pytest.raises(P.SetupFailed) as e:
        s.run()
    assert str(e.value) == "NDBCHAOS_NDB_DIST=/nope.tar.xz: no such file or directory"
    assert not [c for c in host.calls if c[0] == "build.sh"]


def test_the_images_come_from_the_package(home):
    host = FakeHost(home, docker=True, installed={"compose-plugin", "gcc", "mariadb_config"},
                    images={"ndbchaos/galera:abc", "ndbchaos/tools:abc"})
    _setup(host, allure=False)
    assert ["apt-get", "install", "-y", "-q", "debootstrap"] not in host.calls  # every image there already
    assert str(resources.BUILD).endswith("ndbchaos/data/images/build.sh")


def test_cli(tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "ndbchaos.cli", *args], capture_output=True, text=True,
                              cwd=tmp_path)
    r = cli("setup", "--bogus")
    assert r.returncode == 2 and r.stderr == "ndbchaos setup: unrecognized arguments: --bogus\n"
    r = cli("setup", "--help")
    assert r.returncode == 0 and "--allure" in r.stdout and "NDBCHAOS_NDB_DIST" in r.stdout


def test_the_real_host_runs_commands(tmp_path):
    h = P.Host()
    assert h.ok(["true"]) and not h.ok(["false"]) and not h.ok(["ndbchaos-no-such-program"])
    assert h.run(["ndbchaos-no-such-program"], capture=True).returncode == 127
    r = h.run(["sh", "-c", "echo out; echo err >&2"], log=tmp_path / "logs" / "x.log")
    assert r.returncode == 0 and (tmp_path / "logs" / "x.log").read_text() == "out\nerr\n"
    assert h.run(["echo", "hi"], capture=True).stdout == "hi\n"


def test_bin_chaos_setup_is_the_venv_then_ndbchaos_setup():
    script = resources.PACKAGE_DIR.parent / "bin" / "chaos"
    if not script.exists():
        pytest.skip("not a checkout")
    text = script.read_text()
    body = text[text.index("setup() {"):text.index("lint() {")]
    assert "step_venv" in body and '"$venv/bin/ndbchaos" setup --allure' in body
    assert "build.sh" not in text and "step_docker" not in text and "COMPOSE_VERSION" not in text
