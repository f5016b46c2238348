"""Bounded disks for a Compose project's data nodes: each data node's data directory on a file
system of its own, of a size we choose, so a storage fault can fill it (``ndbchaos.faults.disk``)
without touching the host's disk.

A disk is an ext4 image file (sparse: it takes only what is written), attached to a loop device
and mounted on the host under ``disks_dir()/<project>/<service>``; a compose overlay bind-mounts
that directory over the service's data directory (``/var/lib/mysql``: the anonymous volume of the
compose file is replaced, the mount target being the same). A stopped or killed container keeps
its disk, so its next start is a node restart, as with the volume.

Every disk is named by its project: ``ComposeCluster.down`` releases the project's disks, and
``reap`` (``ndbchaos reap``) releases those of any project with no container left. Releasing is
unmount (lazily when busy), detach, delete. Needs root and loop devices (``/dev/loop-control``).

With ``layer=True`` (the default where FUSE works here: ``faultfs.unavailable``) the disk is
mounted at ``<service>.disk`` and our fault-injecting FUSE layer (``ndbchaos.runtimes.compose.faultfs``) over it at
``<service>``, the directory the container binds: the storage faults that slow, fail or lose a
data node's writes act there, ``DiskFull`` fills the disk below it. Releasing unmounts the layer
and stops its process first.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from . import faultfs
from ...errors import NdbChaosError, UsageError
from ...settings import MAX_MB, MIN_MB, current, size_mb  # noqa: F401  (MIN_MB, MAX_MB: the bounds of a disk)

#: where the data directory of every engine's data node is in its container
DATA_PATH = "/var/lib/mysql"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def disks_dir() -> Path:
    """``NDBCHAOS_DISKS``, else the cache's ``disks`` (the process' settings)."""
    return current().disks_dir


def parse_size_mb(value) -> int:
    """``512``, ``"512M"``, ``"2G"`` -> MB; anything else, or outside MIN_MB..MAX_MB: UsageError
    (``ndbchaos.settings.size_mb``, which checks NDBCHAOS_DATA_DISK too)."""
    try:
        return size_mb(value)
    except ValueError as e:
        raise UsageError(f"disk size {value!r}: {e}") from None


def _run(cmd: list[str], timeout: float = 60) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NdbChaosError(f"{' '.join(cmd)}: {e}") from None
    if p.returncode != 0:
        raise NdbChaosError(f"{' '.join(cmd)} failed (exit {p.returncode}): {(p.stderr or p.stdout).strip()[-300:]}")
    return p.stdout


def unavailable() -> str | None:
    """Why bounded disks cannot be made here, or None."""
    if os.geteuid() != 0:
        return "bounded disks need root (mount, loop devices)"
    if not Path("/dev/loop-control").exists():
        return "no loop devices (/dev/loop-control is missing)"
    for tool in ("mkfs.ext4", "mount", "umount", "losetup"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


def mounted(path: Path) -> bool:
    return os.path.ismount(path)


def project_dir(project: str) -> Path:
    if not _NAME.fullmatch(project):
        raise NdbChaosError(f"not a project id: {project!r}")
    return disks_dir() / project


def make(project: str, services: list[str], size_mb: int, layer: bool | None = None) -> Path:
    """A disk of ``size_mb`` per service, mounted (with the faultfs layer over it: ``layer``, by
    default where FUSE works here); returns the compose overlay that puts each over its service's
    data directory. On failure, whatever was made is released."""
    why = unavailable()
    if why:
        raise NdbChaosError(f"cannot make bounded disks: {why}")
    root = project_dir(project)
    root.mkdir(parents=True, exist_ok=True)
    if layer is None:
        layer = faultfs.unavailable() is None
    try:
        volumes = {}
        for svc in services:
            if not _NAME.fullmatch(svc):
                raise NdbChaosError(f"not a service name: {svc!r}")
            img, mnt = root / f"{svc}.img", root / svc
            with open(img, "wb") as f:
                f.truncate(size_mb * 2**20)
            # no blocks reserved for root (the data node runs as root: it would see them); no
            # lazy inode table initialisation writing behind the fault's back
            _run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(img)],
                 timeout=120)
            disk = root / f"{svc}.disk" if layer else mnt
            disk.mkdir(exist_ok=True)
            _run(["mount", "-o", "loop", str(img), str(disk)])
            (disk / "lost+found").rmdir()  # an empty data directory, as the volume was
            if layer:
                faultfs.mount(root, svc, disk, mnt)
            volumes[svc] = {"volumes": [f"{mnt}:{DATA_PATH}"]}
        overlay = root / "disks.yml"
        overlay.write_text("# bounded disks of this project's data nodes (ndbchaos.runtimes.compose.disks)\n"
                           + yaml.safe_dump({"services": volumes}, sort_keys=True))
        return overlay
    except BaseException:
        release(project)
        raise


def mount_of(project: str, service: str) -> Path:
    """The host directory of a service's disk; NdbChaosError when it has none."""
    mnt = project_dir(project) / service
    if not mounted(mnt):
        raise NdbChaosError(f"{service} of project {project} has no bounded disk "
                            "(start the cluster with a disk size: --data-disk SIZE)")
    return mnt


def disk_of(project: str, service: str) -> Path:
    """The host directory of the bounded disk itself: below the faultfs layer when there is one."""
    mnt = mount_of(project, service)
    disk = mnt.parent / f"{service}.disk"
    return disk if mounted(disk) else mnt


def layer_of(project: str, service: str) -> Path | None:
    """The control socket of the faultfs layer over a service's disk, or None without one."""
    mnt = mount_of(project, service)
    sock = mnt.parent / f"{service}.sock"
    return sock if (mnt.parent / f"{service}.disk").is_dir() and sock.exists() else None


def layers(project: str) -> dict[str, Path]:
    """service -> the control socket of the faultfs layer over each of the project's disks."""
    root = project_dir(project)
    if not root.is_dir():
        return {}
    return {d.name.removesuffix(".disk"): root / f"{d.name.removesuffix('.disk')}.sock"
            for d in sorted(root.iterdir()) if d.name.endswith(".disk") and d.is_dir()}


def layered(project: str) -> bool:
    """Whether the project's disks carry the faultfs layer."""
    return bool(layers(project))


def usage(path: Path) -> tuple[int, int]:
    """(free bytes, size bytes) of the file system at ``path``."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize


def release(project: str) -> list[str]:
    """Unmount and delete every disk of ``project`` (its faultfs layers stopped first, its loop
    devices detached, ballasts and all); what was released. NdbChaosError (one line) naming what
    is still there, after everything else was done."""
    root = project_dir(project)
    if not root.exists() and not _mounts_under(root) and not faultfs.layer_processes(root):
        return []
    out = []
    problems = []
    # the layers first (each over a disk below it), then the disks
    dirs = sorted(subdirs(root), key=lambda p: (p.name.endswith(".disk"), p.name))
    for mnt in dirs:
        if not mnt.name.endswith(".disk") and (root / f"{mnt.name}.disk").is_dir():
            faultfs.unmount(root, mnt.name, mnt)
            continue
        if mounted(mnt):
            try:
                _run(["umount", str(mnt)])
            except NdbChaosError:
                try:
                    _run(["umount", "-l", str(mnt)])  # busy (a container still holds it): detached now, freed later
                except NdbChaosError as e:
                    problems.append(str(e))
        out.append(f"disk {project}/{mnt.name.removesuffix('.disk')}")
    # whatever a run killed midway left without its files: layer processes, mounts
    faultfs.stop_layers(root)
    for m in reversed(_mounts_under(root)):
        subprocess.run(["umount", "-l", m], capture_output=True, timeout=30)
    _detach_loops(root)
    left = _mounts_under(root)
    if left:  # never delete through a mount: a stalled one would hang, a live one lose its data
        problems.append(f"still mounted: {', '.join(left)}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    problems += [f"loop device {d} still attached to {f}" for d, f in _loops(root)]
    problems += [f"faultfs process {p} still running" for p in faultfs.layer_processes(root)]
    if problems:
        raise NdbChaosError(f"disks of {project}: " + "; ".join(problems))
    return out


def subdirs(root: Path) -> list[Path]:
    """The directories in ``root``, told from the directory listing alone: a stalled layer's mount
    point is never stat'ed (a stat would wait on it)."""
    try:
        with os.scandir(root) as it:
            return sorted(Path(e.path) for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _mounts_under(root: Path) -> list[str]:
    """Mount points at or below ``root``, from the mount table (never stat'ed), outermost first."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    pre = str(root).rstrip("/") + "/"
    pts = {m[0] for m in map(faultfs.parse_mountinfo, lines) if m and (m[0] == str(root) or m[0].startswith(pre))}
    return sorted(pts, key=lambda p: (p.count("/"), p))


def _loops(root: Path) -> list[tuple[str, str]]:
    """(loop device, backing file) of each loop device attached to an image under ``root``."""
    try:
        out = _run(["losetup", "-n", "-O", "NAME,BACK-FILE", "-l"])
    except NdbChaosError:
        return []
    found = []
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].strip().removesuffix(" (deleted)").startswith(str(root) + "/"):
            found.append((parts[0], parts[1].strip()))
    return found


def _detach_loops(root: Path) -> None:
    """Loop devices still attached to an image of ``root`` (a lazy unmount leaves them to the
    kernel, which detaches them when the last user goes; autoclear does it): detach them."""
    for dev, _ in _loops(root):
        try:
            subprocess.run(["losetup", "-d", dev], capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            pass


def projects() -> list[str]:
    """Projects that have disks."""
    d = disks_dir()
    return sorted(p.name for p in d.iterdir() if p.is_dir()) if d.is_dir() else []


__all__ = ["DATA_PATH", "disk_of", "disks_dir", "layer_of", "layered", "layers", "make", "mount_of", "mounted",
           "parse_size_mb", "projects", "release", "subdirs", "unavailable", "usage"]
