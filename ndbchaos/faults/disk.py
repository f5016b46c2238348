"""Storage faults on a node's data directory: ``DiskFull`` fills its file system.

The node's data directory must be on a bounded disk of its own (``ndbchaos.runtimes.compose.disks``: the cluster
started with ``--data-disk SIZE``); filling the host's disk instead is refused (blast radius).

``DiskFull`` writes a ballast file (``.ndbchaos-ballast``, allocated with ``posix_fallocate``, so
its blocks are really taken) into the directory until ``free_mb`` is left. Verified twice: on the
host (statvfs of the disk) and as the node sees it (``df`` in its container, when it runs).
Healed by deleting the ballast, verified the same two ways. A controller killed in between
leaves the ballast on a disk that ``ndbchaos reap`` deletes with the project.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..runtimes.compose import disks
from ..runtimes import docker
from ..errors import NdbChaosError
from .base import Fault, FaultNotEffective

BALLAST = ".ndbchaos-ballast"
#: what a file system keeps for itself beyond the ballast (ext4: a few blocks of metadata); the
#: fill is verified to leave at most free_mb + this
SLACK_MB = 1


class DiskFull(Fault):
    """Fill the data directory's file system of each target, leaving ``free_mb`` MB."""

    kind = "disk_full"

    def __init__(self, cluster, targets, free_mb: int = 0):
        if not isinstance(free_mb, int) or free_mb < 0:
            raise NdbChaosError(f"disk_full: free_mb must be a whole number of MB >= 0, not {free_mb!r}")
        super().__init__(cluster, targets, free_mb=free_mb)
        self.free_mb = free_mb
        self.mounts = {t.name: self._mount(t) for t in self.targets}

    def _mount(self, node) -> Path:
        """The host directory of the node's bounded disk (below its faultfs layer, when it has
        one): its data directory's mount must be a disk of this project."""
        c = self.cluster.container(node)
        src = next((m.get("Source") for m in c.attrs.get("Mounts") or [] if m.get("Destination") == disks.DATA_PATH),
                   None)
        mine = disks.mount_of(self.cluster.project, node.labels.get("com.docker.compose.service", node.name))
        if src is None or Path(src).resolve() != mine.resolve():
            raise NdbChaosError(f"disk_full: {node.name}'s {disks.DATA_PATH} is not on its bounded disk "
                                f"({src or 'an anonymous volume'}); start the cluster with --data-disk SIZE")
        return disks.disk_of(self.cluster.project, node.labels.get("com.docker.compose.service", node.name))

    def _apply(self) -> None:
        for name, mnt in self.mounts.items():
            free, _ = disks.usage(mnt)
            n = max(0, free - self.free_mb * 2**20) // 4096 * 4096
            fd = os.open(mnt / BALLAST, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                if n:
                    os.posix_fallocate(fd, 0, n)
            except OSError:
                # a node writing meanwhile took some of it: as much as is left
                free, _ = disks.usage(mnt)
                left = max(0, free - self.free_mb * 2**20) // 4096 * 4096
                if left:
                    os.posix_fallocate(fd, os.fstat(fd).st_size, left)
            finally:
                os.close(fd)

    def _seen(self, evidence: list[str], want_full: bool) -> None:
        for t in self.targets:
            mnt = self.mounts[t.name]
            free, size = disks.usage(mnt)
            host_mb = free / 2**20
            limit = self.free_mb + SLACK_MB
            if want_full and host_mb > limit:
                raise FaultNotEffective(f"{t.name}: {host_mb:.1f} MB still free on its disk (wanted <= {limit} MB)")
            inside = _df_mb(self.cluster.container(t))
            if want_full and inside is not None and inside > limit:
                raise FaultNotEffective(f"{t.name}: df in the container shows {inside:.1f} MB free (wanted <= {limit})")
            evidence.append(f"{t.name}: {host_mb:.1f} of {size / 2**20:.0f} MB free on its disk"
                            + (f", {inside:.1f} MB as the node sees it" if inside is not None
                               else " (its container is not running: seen from the host only)"))

    def _verify_applied(self) -> str:
        evidence: list[str] = []
        self._seen(evidence, True)
        return "; ".join(evidence)

    def _revert(self) -> None:
        for mnt in self.mounts.values():
            with_ballast = mnt / BALLAST
            if disks.mounted(mnt):
                with_ballast.unlink(missing_ok=True)

    def _verify_healed(self) -> str:
        evidence: list[str] = []
        for t in self.targets:
            if (self.mounts[t.name] / BALLAST).exists():
                raise FaultNotEffective(f"{t.name}: the ballast is still on its disk")
        self._seen(evidence, False)
        return "ballast removed; " + "; ".join(evidence)


def _df_mb(container) -> float | None:
    """Free MB of the data directory as the container sees it; None when it does not run."""
    if docker.container_state(container) != "running":
        return None
    code, out = docker.exec_in(container, ["df", "-P", "-k", disks.DATA_PATH], timeout=10)
    if code != 0:
        return None
    try:
        return int(out.strip().splitlines()[-1].split()[3]) / 1024
    except (IndexError, ValueError):
        return None


__all__ = ["BALLAST", "DiskFull"]
