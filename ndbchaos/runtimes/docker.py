"""Container runtime: Docker through docker-py for fast per-container calls, and the Compose v2
CLI for the lifecycle of a whole cluster (compose files are the user-facing topology).

Everything here acts on containers selected by the ``ndbchaos.project`` label; ``owned()``
refuses anything that does not carry the current run's project id.
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from .. import topology as TP
from ..errors import BlastRadiusError, DockerUnavailable, NdbChaosError
from ..resources import tools_dir
from ..settings import current, inherited


def docker_timeout_s() -> float:
    """The bound of every Docker API call (the docker SDK client's timeout): the settings'
    ``NDBCHAOS_DOCKER_TIMEOUT_S``, 60 s by default; Docker itself gives up on a container that will
    not die after about 15 s. Read from the process' settings (``settings.current()``): the call
    sites are the Docker client of every runtime call, far below anything that holds settings."""
    return current().docker_timeout_s


@functools.lru_cache(maxsize=1)
def docker_client():
    try:
        import docker
    except ImportError as e:  # pragma: no cover - dependency is declared
        raise DockerUnavailable(f"the python package 'docker' is missing: {e}") from None
    try:
        # version="auto" negotiates with older engines (Debian's docker.io speaks API 1.41).
        client = docker.DockerClient(base_url=os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"),
                                     version="auto", timeout=docker_timeout_s())
        client.ping()
    except Exception as e:
        raise DockerUnavailable(
            "no Docker engine answers (" + one_line(e) + "); run `bin/chaos setup` or start dockerd"
        ) from None
    return client


def docker_available() -> tuple[bool, str]:
    try:
        docker_client()
        return True, ""
    except DockerUnavailable as e:
        return False, str(e)


def one_line(e: BaseException) -> str:
    """An error as one line (its last, at most 300 characters)."""
    s = str(e).strip().splitlines()
    return s[-1][:300] if s else type(e).__name__


@functools.lru_cache(maxsize=1)
def compose_cmd() -> list[str]:
    """The Compose v2 command: ``docker compose`` when the plugin is there, else the binary that
    setup built into the tool cache."""
    cached = tools_dir() / "docker-compose"
    if cached.exists():
        return [str(cached)]
    if shutil.which("docker"):
        r = _version(["docker", "compose", "version"])
        if r.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        r = _version(["docker-compose", "version"])
        if r.returncode == 0 and "v2" in r.stdout:
            return ["docker-compose"]
    raise NdbChaosError("Docker Compose v2 is not available; run `bin/chaos setup` to build it")


def _version(cmd: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=docker_timeout_s())
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", "timed out")


def compose(project: str, files: list[Path], env: dict[str, str], *args: str,
            check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    cmd = compose_cmd() + ["-p", project]
    for f in files:
        cmd += ["-f", str(f)]
    cmd += list(args)
    full_env = {**inherited(os.environ), **env}  # our variables only as the caller's env gives them
    try:
        r = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise NdbChaosError(f"`compose {' '.join(args)}` did not finish within {timeout:.0f}s") from None
    if check and r.returncode != 0:
        raise NdbChaosError(f"`compose {' '.join(args[:2])}` failed: {explain_compose_error(r.stderr)}")
    return r


def explain_compose_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    for ln in lines:
        low = ln.lower()
        if "port is already allocated" in low or "address already in use" in low:
            return "a port is already taken: " + ln[-200:]
        if "no such image" in low or "pull access denied" in low or "not found: manifest unknown" in low:
            return "image not present locally (run `bin/chaos setup`): " + ln[-200:]
    return lines[-1][-300:] if lines else "(no output)"


def project_containers(project: str | None = None, all_: bool = True):
    """Containers carrying the framework's project label (of one project, or of any)."""
    flt = {"label": f"{TP.PROJECT}={project}" if project else TP.PROJECT}
    return docker_client().containers.list(all=all_, filters=flt)


def project_networks(project: str | None = None):
    flt = {"label": f"{TP.PROJECT}={project}" if project else TP.PROJECT}
    return docker_client().networks.list(filters=flt)


def owned(container, project: str):
    """Return the container object if it belongs to ``project``; raise otherwise.

    ``container`` may be a name, an id or a docker-py Container.
    """
    c = container
    if isinstance(container, str):
        try:
            c = docker_client().containers.get(container)
        except Exception:
            raise BlastRadiusError(f"refusing to touch {container!r}: no such container") from None
    labels = (c.attrs.get("Config") or {}).get("Labels") or {}
    if labels.get(TP.PROJECT) != project:
        raise BlastRadiusError(
            f"refusing to touch container {c.name!r}: it does not carry {TP.PROJECT}={project}"
        )
    return c


def exec_in(container, cmd: list[str] | str, timeout: float = 30, user: str = "") -> tuple[int, str]:
    """Run a command in a container; return (exit code, combined output). Bounded in time."""
    if isinstance(cmd, str):
        cmd = ["sh", "-c", cmd]
    full = ["timeout", "-k", "2", str(max(1, int(timeout))), *cmd]
    res = container.exec_run(full, user=user, demux=False)
    out = res.output.decode("utf-8", "replace") if isinstance(res.output, (bytes, bytearray)) else str(res.output)
    return res.exit_code, out


def put_file(container, path: str, data: bytes) -> None:
    """Write a file into a container, running or stopped (through the Docker API's archive)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(path.rsplit("/", 1)[1])
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    container.put_archive(path.rsplit("/", 1)[0], buf.getvalue())


def get_file(container, path: str) -> bytes:
    """Read a file from a container, running or stopped; empty if it does not exist."""
    try:
        stream, _ = container.get_archive(path)
    except Exception:
        return b""
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        member = tar.getmembers()[0]
        return tar.extractfile(member).read()


def container_state(container) -> str:
    """running | paused | exited | restarting | created | dead | gone"""
    try:
        container.reload()
    except Exception:
        return "gone"
    return container.status


def published_port(container, private: int) -> int | None:
    container.reload()
    ports = (container.attrs.get("NetworkSettings") or {}).get("Ports") or {}
    for b in ports.get(f"{private}/tcp") or []:
        if b.get("HostIp") in ("127.0.0.1", "") and b.get("HostPort"):
            return int(b["HostPort"])
    return None


def container_ip(container, network_name: str | None = None, project: str | None = None) -> str | None:
    """The container's address on ``network_name``, else on its own project's network (Compose
    names it ``<project>_<name>``), else on the first network it is on. A container another
    project attached to its network as well (a replication link) keeps its own address."""
    nets = (container.attrs.get("NetworkSettings") or {}).get("Networks") or {}
    if network_name is not None:
        return (nets.get(network_name) or {}).get("IPAddress") or None
    own = [name for name in nets if project and name.startswith(f"{project}_")]
    for name in own + [name for name in nets if name not in own]:
        if nets[name].get("IPAddress"):
            return nets[name]["IPAddress"]
    return None


def image_present(name: str) -> bool:
    try:
        docker_client().images.get(name)
        return True
    except Exception:
        return False
