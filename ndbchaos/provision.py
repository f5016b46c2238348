"""``ndbchaos setup``: what a scenario run needs on this machine, from the installed package alone.

Steps, in order; each checks first and does only the work that is missing, so a second run with
everything present does nothing but look (images: build.sh says each is present):

    docker    the Docker engine answers (``docker info``); else, as root on Debian/Ubuntu, apt-get
              install docker.io when dockerd is missing, and start dockerd (log: CACHE/dockerd.log)
    compose   Compose v2: ``docker compose``, or TOOLS/docker-compose, else built once from the Go
              module proxy (github.com/docker/compose/v2 at COMPOSE_VERSION) into TOOLS; linked as the
              user's CLI plugin (~/.docker/cli-plugins) when ``docker compose`` lacks it
    native    the native client driver (ndbchaos/workload/native/ndc.c) built into
              TOOLS/ndbchaos-native-<hash>.so; optional: without a compiler or libmariadb-dev (and no
              root to install them) the Python client runs, said in one line
    fuse      FUSE 3 (``fusermount3``, libfuse 3: Debian's fuse3), for the faultfs layer over the data
              nodes' bounded disks (storage faults that slow, fail or lose writes); optional: without
              it, and no root to install it, those faults skip with the reason, said in one line
    images    the package's image recipes (ndbchaos/data/images/build.sh all): tools, galera,
              toxiproxy, and ndb when NDBCHAOS_NDB_DIST names a distribution (checked first: a bad one
              stops here in one line); debootstrap installed as root when an image must be built
    allure    (``--allure``) Allure ALLURE_VERSION through npm into TOOLS/npm, for the HTML report

CACHE is ``NDBCHAOS_CACHE`` or ~/.cache/ndbchaos, TOOLS ``NDBCHAOS_TOOLS`` or CACHE/tools, the
distribution ``NDBCHAOS_NDB_DIST``: the settings' (``ndbchaos.settings``), handed to build.sh.
Progress goes to stderr as ``[ndbchaos] ...`` lines; a missing prerequisite is one line
``[ndbchaos] error: ...`` and exit 1. A checkout's ``bin/chaos setup`` makes its development venv
and then runs this.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import resources
from .errors import NdbChaosError
from .settings import Settings, current
from .workload import native

COMPOSE_VERSION = "v2.40.3"
ALLURE_VERSION = "3.18.0"
COMPOSE_MODULE = "github.com/docker/compose/v2"
DOCKERD_WAIT_S = 60
STEPS = ("docker", "compose", "native", "images", "allure")


class SetupFailed(NdbChaosError):
    """A step that cannot be done here: its one line (empty when the step's own tool said it)."""


class Host:
    """The machine setup acts on: the commands it runs and what it asks about. Unit tests give a
    fake one; nothing else in ``Setup`` touches the system."""

    def run(self, cmd: list[str], *, log: Path | None = None, append: bool = False, env: dict | None = None,
            cwd: Path | None = None, capture: bool = False) -> subprocess.CompletedProcess:
        """Run ``cmd``; its output to ``log`` (appended with ``append``), captured (``capture``),
        or to this process's own stdout and stderr. A missing program is exit status 127."""
        full_env = {**os.environ, **(env or {})}
        try:
            if log is not None:
                log.parent.mkdir(parents=True, exist_ok=True)
                with open(log, "a" if append else "w") as fh:
                    return subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=full_env, cwd=cwd, text=True)
            return subprocess.run(cmd, capture_output=capture, env=full_env, cwd=cwd, text=True)
        except FileNotFoundError:
            return subprocess.CompletedProcess(cmd, 127, "", f"{cmd[0]}: not found")

    def ok(self, cmd: list[str]) -> bool:
        """``cmd`` exits 0 (its output discarded)."""
        try:
            return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        except FileNotFoundError:
            return False

    def which(self, name: str) -> str | None:
        return shutil.which(name)

    def is_root(self) -> bool:
        return os.geteuid() == 0

    def debianish(self) -> bool:
        try:
            text = Path("/etc/os-release").read_text()
        except OSError:
            return False
        return any(line.split("=", 1)[0] in ("ID", "ID_LIKE") and ("debian" in line.lower() or "ubuntu" in line.lower())
                   for line in text.splitlines())

    def executable(self, path: Path) -> bool:
        return path.is_file() and os.access(path, os.X_OK)

    def start(self, cmd: list[str], log: Path) -> subprocess.Popen:
        """A daemon left running after setup (its own session, output to ``log``)."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as fh:
            return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)

    def build_native(self) -> str:
        return native.build()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def _say(line: str) -> None:
    bold = sys.stderr.isatty()
    sys.stderr.write(("\033[1m[ndbchaos]\033[0m " if bold else "[ndbchaos] ") + line + "\n")
    sys.stderr.flush()


class Setup:
    def __init__(self, host: Host | None = None, say=_say, settings: Settings | None = None):
        self.host = host or Host()
        self.say = say
        settings = settings or current()
        self.cache = settings.cache
        self.tools = settings.tools_dir
        self.ndb_dist = settings.ndb_dist

    # -- the steps --------------------------------------------------------------------------
    def run(self, allure: bool = False) -> None:
        start = time.monotonic()
        self.tools.mkdir(parents=True, exist_ok=True)
        self.docker()
        self.compose()
        self.native()
        self.fuse()
        self.images()
        if allure:
            self.allure()
        self.say(f"setup complete in {time.monotonic() - start:.0f}s")

    def docker(self) -> None:
        h = self.host
        if h.ok(["docker", "info"]):
            return
        if not h.which("dockerd"):
            self.apt_install("docker.io")
        if h.ok(["docker", "info"]):
            return self._docker_up()
        if not h.is_root():
            raise SetupFailed("the Docker engine is not running and we are not root to start it")
        log = self.cache / "dockerd.log"
        self.say(f"starting dockerd (log: {log})...")
        h.start(["dockerd"], log)
        for _ in range(DOCKERD_WAIT_S):
            if h.ok(["docker", "info"]):
                break
            h.sleep(1)
        else:
            raise SetupFailed(f"dockerd did not answer within {DOCKERD_WAIT_S} s; see {log}")
        self._docker_up()

    def _docker_up(self) -> None:
        r = self.host.run(["docker", "version", "--format", "{{.Server.Version}}"], capture=True)
        self.say(f"Docker engine {(r.stdout or '').strip()} is up")

    def compose(self) -> None:
        h = self.host
        built = self.tools / "docker-compose"
        if h.executable(built) or h.ok(["docker", "compose", "version"]):
            return self._link_compose_plugin()
        if not h.which("go"):
            raise SetupFailed("Docker Compose v2 is missing and Go is not installed to build it")
        self.say(f"building Docker Compose {COMPOSE_VERSION} from the Go module proxy (about 3 minutes, once)...")
        start = time.monotonic()
        r = h.run(["go", "mod", "download", "-json", f"{COMPOSE_MODULE}@{COMPOSE_VERSION}"], capture=True)
        try:
            src = json.loads(r.stdout or "{}").get("Dir") if r.returncode == 0 else None
        except ValueError:
            src = None
        if not src:
            raise SetupFailed(f"go mod download of docker/compose {COMPOSE_VERSION} failed")
        log = self.cache / "compose-build.log"
        tmp = self.tools / "docker-compose.tmp"
        r = h.run(["go", "build", "-trimpath", "-ldflags",
                   f"-X {COMPOSE_MODULE}/internal.Version={COMPOSE_VERSION}", "-o", str(tmp), "./cmd"],
                  log=log, env={"GOFLAGS": "-mod=mod"}, cwd=Path(src))
        if r.returncode != 0:
            raise SetupFailed(f"building compose failed; see {log}")
        os.replace(tmp, built)
        self._link_compose_plugin()
        self.say(f"built docker-compose in {time.monotonic() - start:.0f}s")

    def _link_compose_plugin(self) -> None:
        """``docker compose`` for the user too: a per-user CLI plugin, nothing system-wide."""
        built = self.tools / "docker-compose"
        if self.host.executable(built) and not self.host.ok(["docker", "compose", "version"]):
            plugins = Path.home() / ".docker" / "cli-plugins"
            plugins.mkdir(parents=True, exist_ok=True)
            link = plugins / "docker-compose"
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(built)

    def native(self) -> None:
        if (self.tools / f"ndbchaos-native-{native.source_hash()}.so").exists():
            return
        h = self.host
        missing = []
        if not (h.which("cc") or h.which("gcc")):
            missing.append("gcc")
        if not h.which("mariadb_config"):
            missing.append("libmariadb-dev")
        if missing:
            try:
                self.apt_install(*missing)
            except SetupFailed:
                self.say(f"native client driver not built ({' '.join(missing)} missing); the Python client is used")
                return
        self.say("building the native client driver (ndbchaos/workload/native/ndc.c)...")
        try:
            h.build_native()
        except native.NativeUnavailable as e:
            self.say(f"native client driver not built ({e}); the Python client is used")

    def fuse(self) -> None:
        if self.host.which("fusermount3"):
            return
        try:
            self.apt_install("fuse3")
        except SetupFailed:
            self.say("FUSE 3 not installed (fuse3): the storage faults of the faultfs layer will skip")

    def images(self) -> None:
        h = self.host
        build = ["bash", str(resources.BUILD)]
        names = ["galera", "tools"]
        env = {"NDBCHAOS_NDB_DIST": self.ndb_dist or ""}  # the recipe's variable, from the settings
        if self.ndb_dist:
            # a distribution that cannot be used stops here (build.sh says why in one line),
            # before anything is built or started
            r = h.run(build + ["--tag", "ndb"], capture=True, env=env)
            if r.returncode != 0:
                said = (r.stderr or "").strip().splitlines()
                raise SetupFailed(said[-1] if said else "NDBCHAOS_NDB_DIST: the ndb image's tag cannot be computed")
            names.append("ndb")
        if not h.which("debootstrap"):
            for name in names:
                r = h.run(build + ["--tag", name], capture=True, env=env)
                tag = (r.stdout or "").strip()
                if r.returncode != 0 or not tag or not h.ok(["docker", "image", "inspect", tag]):
                    self.apt_install("debootstrap")
                    break
        if h.run(build + ["all"], env=env).returncode != 0:
            raise SetupFailed("")  # build.sh has said what failed

    def allure(self) -> None:
        h = self.host
        if h.executable(self.tools / "npm" / "node_modules" / ".bin" / "allure"):
            return
        if not h.which("npm"):
            self.apt_install("npm")
        self.say(f"installing Allure {ALLURE_VERSION} (npm) for the HTML report...")
        prefix = self.tools / "npm"
        prefix.mkdir(parents=True, exist_ok=True)
        log = self.cache / "npm.log"
        r = h.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
                   f"allure@{ALLURE_VERSION}"], log=log)
        if r.returncode != 0:
            raise SetupFailed(f"npm install allure failed; see {log}")

    # -- packages ---------------------------------------------------------------------------
    def apt_install(self, *packages: str) -> None:
        h = self.host
        what = " ".join(packages)
        if not (h.is_root() and h.debianish()):
            raise SetupFailed(f"{what} missing; install it (needs root on Debian/Ubuntu for automatic install)")
        self.say(f"installing {what} (apt-get)...")
        log = self.cache / "apt.log"
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-q", *packages]
        if h.run(install, log=log, env=env).returncode == 0:
            return
        h.run(["apt-get", "update", "-q"], log=log, append=True, env=env)
        if h.run(install, log=log, append=True, env=env).returncode != 0:
            raise SetupFailed(f"apt-get install {what} failed; see {log}")


def setup(allure: bool = False, host: Host | None = None, say=_say) -> int:
    """``ndbchaos setup``: 0 when everything is in place, 1 with one line when a step cannot be done."""
    try:
        Setup(host, say).run(allure=allure)
    except SetupFailed as e:
        if str(e):
            sys.stderr.write(f"[ndbchaos] error: {e}\n")
        return 1
    return 0
