"""faultfs: a fault-injecting layer over a bounded disk, for the storage faults of issue-class
"slow disk", "failing I/O" and "lost unsynced writes" (``ndbchaos.faults.storage``).

The layer is a FUSE file system of ours (``faultfs_daemon`` beside this module, a process of its
own, ``DAEMON``: it needs libfuse 3, Debian's ``fuse3``) mounted over the directory a data node's
container binds, and passing every call through to the bounded disk below it (``disks``). It stays
mounted for the cluster's life; the container must be created after it is mounted (a bind captures the
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

from ...errors import NdbChaosError

#: the file-system calls a fault may slow or fail
#: the layer's process, run as ``python -m DAEMON BACKING MOUNT SOCKET`` and found again by this
#: name in its command line
DAEMON = "ndbchaos.runtimes.compose.faultfs_daemon"
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
    try:
        code = subprocess.run([sys.executable, "-c", "import mfusepy"], capture_output=True, text=True,
                              timeout=60).returncode
    except subprocess.TimeoutExpired:
        return "importing mfusepy did not finish within 60 s"
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
        argv = [sys.executable, "-m", DAEMON, str(backing), str(mountpoint), str(sock)]
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
    """Unmount the layer (lazily when a container still holds it) and stop its process; a
    process that does not stop has its FUSE connection aborted (every call waiting on it fails)."""
    sock, pidfile, _ = _paths(root, name)
    conn = connection_id(mountpoint)  # before the unmount: a detached mount is no longer listed
    if _in_mounts(mountpoint):  # not ismount: a layer whose process died fails every stat
        if _fusermount("-u", mountpoint) != 0:
            _fusermount("-u", "-z", mountpoint)
    if _stop(_pids(pidfile, sock)) and conn is not None:
        abort_connection(conn)
    for f in (sock, pidfile):
        f.unlink(missing_ok=True)


def _fusermount(*args) -> int:
    try:
        return subprocess.run(["fusermount3", *map(str, args)], capture_output=True, timeout=30).returncode
    except (OSError, subprocess.TimeoutExpired):
        return -1


def _pids(pidfile: Path, sock: Path) -> list[int]:
    """The layer's process: the one its pid file names (when it is ours), and any other layer
    process serving ``sock`` (a pid file lost or overwritten)."""
    pids = set()
    try:
        pid = int(pidfile.read_text())
        if _is_ours(pid):
            pids.add(pid)
    except (OSError, ValueError):
        pass
    return sorted(pids | {pid for pid, argv in _layer_argvs() if str(sock) in argv})


def _layer_argvs() -> list[tuple[int, list[str]]]:
    """(pid, argv) of every faultfs layer process on this host."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if DAEMON in argv and _alive(int(d.name)):
            out.append((int(d.name), argv))
    return out


def layer_processes(root: Path) -> list[int]:
    """The faultfs layer processes serving a mount point or socket under ``root``."""
    pre = str(root).rstrip("/") + "/"
    return sorted(pid for pid, argv in _layer_argvs() if any(a.startswith(pre) for a in argv))


def stop_layers(root: Path) -> list[int]:
    """Stop every layer process under ``root`` (one left by a run killed midway, its files gone);
    the pids still alive after SIGKILL."""
    return _stop(layer_processes(root))


def _stop(pids: list[int], grace: float = 5.0) -> list[int]:
    """SIGTERM (with ``grace`` seconds to exit; none: straight to SIGKILL), then SIGKILL; the pids
    still alive after that (stuck in the kernel)."""
    for sig, wait_s in ((signal.SIGTERM, grace), (signal.SIGKILL, 3.0)) if grace > 0 else ((signal.SIGKILL, 3.0),):
        pids = [p for p in pids if _alive(p)]
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait_s
        while pids and time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
    return [p for p in pids if _alive(p)]


#: where the kernel shows each FUSE connection (the fusectl file system)
FUSECTL = Path("/sys/fs/fuse/connections")
#: how long releasing a layer waits for its answer before it stops the layer instead
RELEASE_TIMEOUT_S = 3.0


def parse_mountinfo(line: str) -> tuple[str, int, int, str] | None:
    """(mount point, major, minor, file system type) of one line of /proc/PID/mountinfo."""
    f = line.split()
    try:
        sep = f.index("-")
        major, minor = (int(x) for x in f[2].split(":"))
        point = f[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
        return point, major, minor, f[sep + 1]
    except (ValueError, IndexError):
        return None


def connection_id(mountpoint: Path) -> int | None:
    """The FUSE connection of the layer mounted at ``mountpoint`` (its name under ``FUSECTL``: the
    mount's device number), read from the mount table: a stalled mount is never stat'ed."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        m = parse_mountinfo(line)
        if m and m[0] == str(mountpoint) and m[3].startswith("fuse"):
            return (m[1] << 20) | m[2]
    return None


def abort_connection(conn: int) -> bool:
    """Abort a FUSE connection: every call waiting on it, and every later one, fails (ENOTCONN),
    whatever its server does. Mounts fusectl first when it is not. Whether it was aborted."""
    d = FUSECTL / str(conn)
    if not d.exists() and FUSECTL.is_dir():
        try:
            subprocess.run(["mount", "-t", "fusectl", "fusectl", str(FUSECTL)], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return False
    try:
        (d / "abort").write_text("1")
        return True
    except OSError:
        return False


def release(root: Path, name: str, mountpoint: Path, timeout: float = RELEASE_TIMEOUT_S,
            remount: Path | None = None) -> str | None:
    """Free whatever the layer over ``mountpoint`` holds, before anything waits on its node:
    its faults cleared through its socket (every call waiting in a delay is answered at once, a
    cut power back on); a layer that does not answer, or whose calls still wait after that, is
    stopped instead: its process killed, its FUSE connection aborted and its mount lazily detached,
    so every call waiting on it fails (ENOTCONN) and the node's processes can exit. What was done,
    one line (None: it held nothing). With ``remount`` (the disk below it), a stopped layer is
    started again over that disk: a node started after this finds its data directory on its disk."""
    sock, pidfile, _ = _paths(root, name)
    if not sock.exists() and not _pids(pidfile, sock) and not _in_mounts(mountpoint):
        return None  # no layer here any more (stopped before, or never started)
    why = None
    try:
        before = call(sock, {"cmd": "status"}, timeout)
        st = call(sock, Faults().command(), timeout)
        deadline = time.monotonic() + timeout
        while st["waiting"] and time.monotonic() < deadline:
            time.sleep(0.05)
            st = call(sock, {"cmd": "status"}, timeout)
        if not st["waiting"]:
            held = describe(before)
            return f"cleared the faultfs layer of {name} ({held})" if held else None
        why = f"{st['waiting']} call(s) still waiting after its faults were cleared"
    except NdbChaosError as e:
        why = f"it did not answer: {str(e).rsplit(': ', 1)[-1]}"
    conn = connection_id(mountpoint)
    left = _stop(_pids(pidfile, sock), grace=0)  # it does not answer: no clean exit to wait for
    aborted = bool(left) and conn is not None and abort_connection(conn)
    if _in_mounts(mountpoint) and _fusermount("-u", "-z", mountpoint) != 0:
        try:
            subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass  # what stays mounted is said by whoever checks the mounts next (disks.release)
    for f in (sock, pidfile):
        f.unlink(missing_ok=True)
    again = ""
    if remount is not None and not left:
        mount(root, name, remount, mountpoint)
        again = "; a new layer mounted over its disk (restart the node to use it)"
    if left:
        if not aborted:
            raise NdbChaosError(f"the faultfs layer of {name} ({why}) could not be stopped: process "
                                f"{', '.join(map(str, left))} survives SIGKILL and its FUSE connection could not be "
                                "aborted")
        return (f"stopped the faultfs layer of {name} ({why}): its FUSE connection aborted, process "
                f"{', '.join(map(str, left))} still exiting")
    return f"stopped the faultfs layer of {name} ({why}): its waiting calls fail with ENOTCONN{again}"


def describe(st: dict) -> str:
    """What a layer's status says it does to calls, e.g. ``write 600000 ms late, unsynced writes
    kept``; empty when it does nothing."""
    what = [f"{c} {ms:g} ms late" for c, ms in (st.get("delay_ms") or {}).items()]
    what += [f"{c} fails with {f['errno']} (p {f['p']:g})" for c, f in (st.get("fail") or {}).items()]
    what += ["unsynced writes kept"] * bool(st.get("lazy")) + ["power cut"] * bool(st.get("cut"))
    what += [f"{st['waiting']} call(s) waiting"] * bool(st.get("waiting"))
    return ", ".join(what)


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
        return DAEMON.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def call(sock: Path, cmd: dict, timeout: float = CONTROL_TIMEOUT_S) -> dict:
    """One command to a layer, its answer; NdbChaosError when it does not answer or refuses."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
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


__all__ = ["CALLS", "ERRNOS", "Failure", "Faults", "abort_connection", "call", "connection_id", "describe", "drop",
           "mount", "parse_mountinfo", "release", "set_faults", "status", "unavailable", "unmount"]
