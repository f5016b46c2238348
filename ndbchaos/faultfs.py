"""faultfs: a fault-injecting layer over a bounded disk, for the storage faults of issue-class
"slow disk", "failing I/O" and "lost unsynced writes" (``ndbchaos.faults.storage``).

The layer is a FUSE file system of ours (``ndbchaos.faultfs_daemon``, a process of its own: it
needs libfuse 3, Debian's ``fuse3``) mounted over the directory a data node's container binds, and
passing every call through to the bounded disk below it (``ndbchaos.disks``). It stays mounted
for the cluster's life; the container must be created after it is mounted (a bind captures the
mount), so it is started with the disks, before the cluster, and stopped with them.

This module starts, commands and stops it; it never imports FUSE.

``Faults`` is what a fault sets (a delay per call, failures per call, keeping unsynced writes);
``status`` is what the layer answers (what it counted: the evidence that the node met the fault).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .errors import NdbChaosError

#: the file-system calls a fault may slow or fail
CALLS = ("open", "read", "write", "fsync")
ERRNOS = ("EIO", "ENOSPC", "EROFS", "EDQUOT")
#: how long a start may take to show the mount and answer (a Python process importing libfuse)
START_TIMEOUT_S = 20.0
#: a control call's timeout: the layer answers from memory, never waiting on the disk
CONTROL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Failure:
    errno: str = "EIO"
    p: float = 1.0

    def __post_init__(self):
        if self.errno not in ERRNOS:
            raise NdbChaosError(f"faultfs: errno {self.errno!r} is not one of {', '.join(ERRNOS)}")
        if not 0 < self.p <= 1:
            raise NdbChaosError(f"faultfs: a failure's probability must be in (0, 1], not {self.p!r}")


@dataclass(frozen=True)
class Faults:
    """What the layer does to calls; ``Faults()`` is none (healed)."""

    delay_ms: dict[str, float] = field(default_factory=dict)
    fail: dict[str, Failure] = field(default_factory=dict)
    lazy: bool = False
    seed: int = 0

    def __post_init__(self):
        for call in (*self.delay_ms, *self.fail):
            if call not in CALLS:
                raise NdbChaosError(f"faultfs: no call {call!r} to slow or fail (one of {', '.join(CALLS)})")
        for call, ms in self.delay_ms.items():
            if not isinstance(ms, (int, float)) or ms < 0:
                raise NdbChaosError(f"faultfs: the delay of {call} must be a number of ms >= 0, not {ms!r}")

    def command(self) -> dict:
        return {"cmd": "set", "delay_ms": dict(self.delay_ms), "lazy": self.lazy, "seed": self.seed,
                "fail": {c: {"errno": f.errno, "p": f.p} for c, f in self.fail.items()}}


@lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why a faultfs layer cannot be mounted here, or None (asked once per process)."""
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (Debian: fuse3)"
    code = subprocess.run([sys.executable, "-c", "import mfusepy"], capture_output=True, text=True).returncode
    if code != 0:
        return "mfusepy cannot load libfuse 3 (Debian: libfuse3-3, fuse3)"
    return None


def _paths(root: Path, name: str) -> tuple[Path, Path, Path]:
    return root / f"{name}.sock", root / f"{name}.faultfs.pid", root / f"{name}.faultfs.log"


def mount(root: Path, name: str, backing: Path, mountpoint: Path) -> None:
    """Start the layer over ``backing`` at ``mountpoint`` (its socket, pid and log under ``root``,
    named ``name``); returns once it is mounted and answers."""
    sock, pidfile, log = _paths(root, name)
    mountpoint.mkdir(exist_ok=True)
    with open(log, "ab") as out:
        argv = [sys.executable, "-m", "ndbchaos.faultfs_daemon", str(backing), str(mountpoint), str(sock)]
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    pidfile.write_text(str(p.pid))
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise NdbChaosError(f"faultfs over {backing} exited ({p.returncode}): {_tail(log)}")
        if os.path.ismount(mountpoint) and sock.exists():
            try:
                status(sock)
                return
            except NdbChaosError:
                pass
        time.sleep(0.1)
    raise NdbChaosError(f"faultfs over {backing} did not mount within {START_TIMEOUT_S:.0f} s: {_tail(log)}")


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace").strip().splitlines()[-1][-300:]
    except (OSError, IndexError):
        return "no output"


def unmount(root: Path, name: str, mountpoint: Path) -> None:
    """Unmount the layer (lazily when a container still holds it) and stop its process."""
    sock, pidfile, _ = _paths(root, name)
    if _in_mounts(mountpoint):  # not ismount: a layer whose process died fails every stat
        r = subprocess.run(["fusermount3", "-u", str(mountpoint)], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], capture_output=True, timeout=30)
    try:
        pid = int(pidfile.read_text())
    except (OSError, ValueError):
        pid = None
    if pid and _is_ours(pid):
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            if not _alive(pid):
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
    for f in (sock, pidfile):
        f.unlink(missing_ok=True)


def _in_mounts(path: Path) -> bool:
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return False
    target = str(path).replace(" ", "\\040")
    return any(len(f := line.split()) > 1 and f[1] == target for line in lines)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of ours counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _is_ours(pid: int) -> bool:
    try:
        return b"ndbchaos.faultfs_daemon" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def call(sock: Path, cmd: dict) -> dict:
    """One command to a layer, its answer; NdbChaosError when it does not answer or refuses."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(CONTROL_TIMEOUT_S)
            s.connect(str(sock))
            s.sendall(json.dumps(cmd).encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
    except OSError as e:
        raise NdbChaosError(f"faultfs at {sock}: {e}") from None
    try:
        out = json.loads(buf)
    except ValueError:
        raise NdbChaosError(f"faultfs at {sock}: no answer") from None
    if not out.get("ok"):
        raise NdbChaosError(f"faultfs at {sock}: {out.get('error')}")
    return out


def status(sock: Path) -> dict:
    return call(sock, {"cmd": "status"})


def set_faults(sock: Path, faults: Faults) -> dict:
    return call(sock, faults.command())


def drop(sock: Path, cut: bool = False) -> dict:
    """Lose every write not synced yet; what was lost: dropped_bytes, dropped_files. With ``cut``
    the power stays off: every later write and sync (and each waiting in a delay) fails with EIO
    until the next ``set_faults``."""
    return call(sock, {"cmd": "drop", "cut": cut})


__all__ = ["CALLS", "ERRNOS", "Failure", "Faults", "call", "drop", "mount", "set_faults", "status",
           "unavailable", "unmount"]
