"""What can hold a node of a Compose project so that Docker can no longer stop it, and how to
free it first: the way out (``ndbchaos reap``, ``ndbchaos fault heal``, ``ndbchaos status``) calls
``release`` before it touches a container.

=====================  ====================================================================
faultfs layer          a node's write or sync waiting in a stalled layer (``SlowDisk``) is a
                       FUSE request its server has read: the kernel waits for the answer
                       uninterruptibly, so even SIGKILL leaves the process there and Docker
                       answers "tried to kill container, but did not receive an exit event".
                       Released by clearing the layer's faults through its socket (every
                       waiting call is answered at once); a layer that does not answer is
                       stopped: its process killed, its FUSE connection aborted (fusectl),
                       its mount lazily detached, so every waiting call fails with ENOTCONN.
frozen cgroup          a paused container (``Pause``): thawed through Docker, or through its
                       freezer cgroup directly when Docker does not answer.
=====================  ====================================================================

Our iptables chains and netem qdiscs live in a node's own network namespace: they hold nothing
and go with the container (``fault heal`` removes them from the nodes that run, ``state.heal``).
Nothing here starts a container. Every Docker call is bounded by the client's timeout
(``docker.docker_timeout_s()``), every command by its own.
"""

from __future__ import annotations

from pathlib import Path

from .runtimes.compose import disks, faultfs
from .runtimes import docker
from . import topology as TP
from .errors import NdbChaosError


def release(project: str | None, remount: bool = False) -> tuple[list[str], list[str]]:
    """Free what holds the nodes of ``project`` (or of every project): (what was done, what could
    not be done and why), one line each. ``remount`` (heal, not reap): a layer that had to be
    stopped is started again over its disk."""
    done: list[str] = []
    problems: list[str] = []
    for p in [project] if project else disks.projects():
        lines, errs = release_layers(p, remount)
        prefix = "" if project else f"{p}: "
        done += [prefix + ln for ln in lines]
        problems += [prefix + e for e in errs]
    try:
        containers = docker.project_containers(project)
    except Exception as e:  # Docker itself not answering: said once, the layers are free anyway
        problems.append(f"Docker did not list the containers ({docker.one_line(e)})")
        return done, problems
    for c in containers:
        if c.status == "paused":
            try:
                done.append(thaw(c))
            except NdbChaosError as e:
                problems.append(str(e))
    return done, problems


def release_layers(project: str, remount: bool = False) -> tuple[list[str], list[str]]:
    """Clear (or stop, and with ``remount`` start again) every faultfs layer of ``project``'s disks."""
    done, problems = [], []
    root = disks.project_dir(project)
    for svc in disks.layers(project):
        try:
            line = faultfs.release(root, svc, root / svc, remount=root / f"{svc}.disk" if remount else None)
        except (NdbChaosError, OSError) as e:
            problems.append(str(e))
            continue
        if line:
            done.append(line)
    return done, problems


def pid_of(c) -> int:
    """The host pid of a container's main process as Docker last reported it (0: none)."""
    return int(((c.attrs.get("State") or {}).get("Pid")) or 0)


def thaw(c) -> str:
    """Unpause a container: through Docker, else by its freezer cgroup. One line of what was done."""
    name = (c.labels or {}).get(TP.NODE) or c.name
    try:
        c.unpause()
        return f"thawed {name}"
    except Exception as e:
        why = docker.one_line(e)
    f = freezer_file(pid_of(c))
    if f is None:
        raise NdbChaosError(f"could not thaw {name}: Docker refused ({why}) and its freezer cgroup was not found")
    try:
        f.write_text("THAWED" if f.name == "freezer.state" else "0")
    except OSError as e:
        raise NdbChaosError(f"could not thaw {name}: Docker refused ({why}), {f}: {e.strerror}") from None
    return f"thawed {name} through {f} (Docker refused: {why})"


def freezer_path(cgroup_text: str) -> tuple[str, str] | None:
    """The freezer of a process from its /proc/PID/cgroup: (cgroup path relative to the cgroup
    root, the file that thaws it) for cgroup v1 (``freezer``, ``freezer.state``) or v2 (the
    unified hierarchy, ``cgroup.freeze``); None when it has none."""
    unified = None
    for line in cgroup_text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if "freezer" in controllers.split(","):
            return "freezer" + path, "freezer.state"
        if controllers == "":
            unified = (path.lstrip("/"), "cgroup.freeze")
    return unified


def freezer_file(pid: int, cgroup_root: Path = Path("/sys/fs/cgroup")) -> Path | None:
    if pid <= 0:
        return None
    try:
        fp = freezer_path(Path(f"/proc/{pid}/cgroup").read_text())
    except OSError:
        return None
    if fp is None:
        return None
    f = cgroup_root / fp[0].lstrip("/") / fp[1]
    return f if f.exists() else None


def stuck(pid: int) -> str | None:
    """Why a container's main process cannot be stopped now, or None: a thread of it in
    uninterruptible sleep (``D``), with the kernel function it waits in (``request_wait_answer``:
    a FUSE call its server has not answered)."""
    if pid <= 0:
        return None
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    waits = set()
    for t in tasks:
        try:
            stat = (t / "stat").read_text()
            state = stat.rsplit(")", 1)[1].split()[0]
            wchan = (t / "wchan").read_text().strip() if state == "D" else ""
        except (OSError, IndexError):
            continue
        if state == "D":
            waits.add(wchan or "?")
    if not waits:
        return None
    return f"its process {pid} is in uninterruptible sleep ({', '.join(sorted(waits))})"


__all__ = ["freezer_file", "freezer_path", "release", "release_layers", "stuck", "thaw"]
