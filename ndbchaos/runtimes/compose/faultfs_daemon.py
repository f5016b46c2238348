"""The faultfs process: a FUSE file system that passes every call through to a backing directory
and injects storage faults on command (``ndbchaos.runtimes.compose.faultfs`` starts it, talks to it and stops it;
this module is only ever run as ``python -m ndbchaos.runtimes.compose.faultfs_daemon BACKING MOUNT SOCKET``: it
needs libfuse 3, which the library itself does not).

Faults, set and cleared through the control socket (one JSON object per line, one answer each):

- ``delay_ms``: ``{call: ms}`` for ``write``, ``fsync``, ``read``, ``open``: each such call waits
  that long before it runs (a slow disk; a long enough delay is a stall). A wait ends early when
  the faults change, so a heal is immediate.
- ``fail``: ``{call: {"errno": "EIO", "p": 0.5}}``: each such call fails with that errno with
  probability p (seeded: ``seed``), before it touches the backing file.
- ``lazy``: writes are kept in memory and reach the backing file only at ``fsync``/``fdatasync``
  (or a write through a descriptor opened O_SYNC/O_DSYNC), as a page cache does; reads and sizes
  see them. ``drop`` then loses every write not synced yet: a power loss. Metadata calls (create,
  rename, unlink, truncate) go through at once, as on a file system that journals its metadata
  synchronously. Turning ``lazy`` off writes what is kept back (without an fsync), as a page
  cache's writeback would.
- ``drop`` with ``cut``: the power goes off: what is kept is lost, and every write and sync from
  then on (and every one waiting in a delay, woken at once) fails with EIO and reaches nothing,
  until the next ``set``. A process killed while its sync waits here can exit only once it is
  answered (FUSE waits out a request the daemon has read), so the cut answers it.

Every call is counted (``status``), and so are the ones delayed, failed, kept, synced and dropped:
the evidence that the node really met the fault.
"""

from __future__ import annotations

import errno as errno_mod
import json
import os
import random
import socketserver
import sys
import threading
import time

import mfusepy as fuse

CALLS = ("open", "read", "write", "fsync")
SYNC_FLAGS = os.O_SYNC | os.O_DSYNC


class State:
    """The faults in effect and the counters; one lock for both and for the kept writes."""

    def __init__(self):
        self.lock = threading.Condition()
        self.delay: dict[str, float] = {}
        self.fail: dict[str, tuple[int, float]] = {}
        self.lazy = False
        self.rng = random.Random(0)
        self.generation = 0
        self.counts = dict.fromkeys(CALLS, 0)
        self.delayed = dict.fromkeys(CALLS, 0)
        self.failed = dict.fromkeys(CALLS, 0)
        self.kept_bytes = self.synced_bytes = self.dropped_bytes = self.dropped_files = 0
        self.waiting = 0  # calls in a delay now
        self.cut = False  # the power is off: every write and sync fails, none reaches the disk
        #: path -> [(offset, bytes)] written but not synced, in the order written
        self.pending: dict[str, list[tuple[int, bytes]]] = {}

    def set(self, cmd: dict) -> None:
        delay = {k: float(v) / 1000 for k, v in (cmd.get("delay_ms") or {}).items()}
        fail = {}
        for call, f in (cmd.get("fail") or {}).items():
            code = getattr(errno_mod, str(f.get("errno", "EIO")))
            fail[call] = (code, float(f.get("p", 1.0)))
        for call in (*delay, *fail):
            if call not in CALLS:
                raise ValueError(f"no such call {call!r} (one of {', '.join(CALLS)})")
        with self.lock:
            self.delay, self.fail = delay, fail
            if "seed" in cmd:
                self.rng = random.Random(int(cmd["seed"]))
            self.cut = False
            lazy = bool(cmd.get("lazy", False))
            if self.lazy and not lazy:
                self._writeback()
            self.lazy = lazy
            self.generation += 1
            self.lock.notify_all()

    def _writeback(self) -> None:
        for path, writes in self.pending.items():
            try:
                fd = os.open(path, os.O_WRONLY)
            except OSError:
                continue
            try:
                for off, data in writes:
                    os.pwrite(fd, data, off)
            finally:
                os.close(fd)
        self.pending.clear()

    def drop(self, cut: bool = False) -> dict:
        with self.lock:
            if cut:
                self.cut = True
                self.generation += 1
                self.lock.notify_all()  # a sync waiting in a delay wakes up, and fails
            n = sum(len(d) for w in self.pending.values() for _, d in w)
            files = len(self.pending)
            self.pending.clear()
            self.dropped_bytes += n
            self.dropped_files += files
            return {"dropped_bytes": n, "dropped_files": files}

    def status(self) -> dict:
        with self.lock:
            return {"delay_ms": {k: v * 1000 for k, v in self.delay.items()},
                    "fail": {k: {"errno": errno_mod.errorcode.get(c, str(c)), "p": p}
                             for k, (c, p) in self.fail.items()},
                    "lazy": self.lazy, "counts": dict(self.counts), "delayed": dict(self.delayed),
                    "failed": dict(self.failed), "kept_bytes": self.kept_bytes, "synced_bytes": self.synced_bytes,
                    "pending_bytes": sum(len(d) for w in self.pending.values() for _, d in w),
                    "pending_files": len(self.pending), "dropped_bytes": self.dropped_bytes,
                    "dropped_files": self.dropped_files, "waiting": self.waiting, "cut": self.cut,
                    "pid": os.getpid()}

    def enter(self, call: str) -> None:
        """Count a call; wait out its delay (ended early by a change of faults); fail it by chance."""
        with self.lock:
            self.counts[call] += 1
            if self.cut and call in ("write", "fsync"):
                raise fuse.FuseOSError(errno_mod.EIO)
            delay = self.delay.get(call)
            if delay:
                self.delayed[call] += 1
                self.waiting += 1
                gen, end = self.generation, time.monotonic() + delay
                while self.generation == gen and (left := end - time.monotonic()) > 0:
                    self.lock.wait(left)
                self.waiting -= 1
                if self.cut and call in ("write", "fsync"):
                    raise fuse.FuseOSError(errno_mod.EIO)
            f = self.fail.get(call)
            if f and self.rng.random() < f[1]:
                self.failed[call] += 1
                raise fuse.FuseOSError(f[0])


class FaultFS(fuse.Operations):
    use_ns = True

    def __init__(self, backing: str, state: State):
        self.root = os.path.realpath(backing)
        self.st = state
        self.sync_fds: set[int] = set()

    def _p(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    # metadata: straight through
    def getattr(self, path, fh=None):
        p = self._p(path)
        s = os.lstat(p)
        attrs = {k: getattr(s, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime_ns",
                                             "st_mtime_ns", "st_ctime_ns")}
        attrs = {k.replace("_ns", ""): v for k, v in attrs.items()}
        with self.st.lock:
            w = self.st.pending.get(p)
            if w:
                attrs["st_size"] = max(s.st_size, max(off + len(d) for off, d in w))
        return attrs

    def access(self, path, amode):
        if not os.access(self._p(path), amode):
            raise fuse.FuseOSError(errno_mod.EACCES)
        return 0

    def readdir(self, path, fh):
        return [".", "..", *os.listdir(self._p(path))]

    def readlink(self, path):
        return os.readlink(self._p(path))

    def mkdir(self, path, mode):
        return os.mkdir(self._p(path), mode)

    def rmdir(self, path):
        return os.rmdir(self._p(path))

    def chmod(self, path, mode):
        return os.chmod(self._p(path), mode)

    def chown(self, path, uid, gid):
        return os.lchown(self._p(path), uid, gid)

    def utimens(self, path, times=None):
        return os.utime(self._p(path), ns=times) if times else os.utime(self._p(path))

    def symlink(self, target, source):
        return os.symlink(source, self._p(target))

    def link(self, target, source):
        return os.link(self._p(source), self._p(target))

    def statfs(self, path):
        s = os.statvfs(self._p(path))
        return {k: getattr(s, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
                                           "f_files", "f_flag", "f_frsize", "f_namemax")}

    def unlink(self, path):
        p = self._p(path)
        os.unlink(p)
        with self.st.lock:
            self.st.pending.pop(p, None)
        return 0

    def rename(self, old, new):
        po, pn = self._p(old), self._p(new)
        os.rename(po, pn)
        with self.st.lock:
            self.st.pending.pop(pn, None)
            if po in self.st.pending:
                self.st.pending[pn] = self.st.pending.pop(po)
        return 0

    def truncate(self, path, length, fh=None):
        p = self._p(path)
        with self.st.lock:
            w = self.st.pending.get(p)
            if w:
                kept = [(off, d[:max(0, length - off)]) for off, d in w if off < length]
                self.st.pending[p] = [x for x in kept if x[1]]
                if not self.st.pending[p]:
                    del self.st.pending[p]
        os.truncate(p, length)
        return 0

    # files
    def _open(self, path, flags, mode=None):
        self.st.enter("open")
        flags &= ~getattr(os, "O_DIRECT", 0)  # our buffers are not aligned; durability is ours to model
        fd = os.open(self._p(path), flags, mode) if mode is not None else os.open(self._p(path), flags)
        if flags & SYNC_FLAGS:
            self.sync_fds.add(fd)
        return fd

    def open(self, path, flags):
        return self._open(path, flags)

    def create(self, path, mode, flags):
        return self._open(path, flags | os.O_CREAT, mode)

    def read(self, path, size, offset, fh):
        self.st.enter("read")
        data = bytearray(os.pread(fh, size, offset))
        p = self._p(path)
        with self.st.lock:
            for off, d in self.st.pending.get(p, ()):
                lo, hi = max(off, offset), min(off + len(d), offset + size)
                if lo >= hi:
                    continue
                if hi - offset > len(data):
                    data.extend(bytes(hi - offset - len(data)))
                data[lo - offset:hi - offset] = d[lo - off:hi - off]
        return bytes(data)

    def write(self, path, data, offset, fh):
        self.st.enter("write")
        p = self._p(path)
        with self.st.lock:
            if self.st.lazy and fh not in self.sync_fds:
                self.st.pending.setdefault(p, []).append((offset, bytes(data)))
                self.st.kept_bytes += len(data)
                return len(data)
            if p in self.st.pending:  # a write that goes to disk at once lands after what is kept
                self._sync(path, fh)
        return os.pwrite(fh, data, offset)

    def fallocate(self, path, mode, offset, length, fh):
        if mode:
            raise fuse.FuseOSError(errno_mod.EOPNOTSUPP)
        os.posix_fallocate(fh, offset, length)
        return 0

    def _sync(self, path, fh):
        p = self._p(path)
        with self.st.lock:
            writes = self.st.pending.pop(p, [])
            for off, d in writes:
                os.pwrite(fh, d, off)
            self.st.synced_bytes += sum(len(d) for _, d in writes)

    def fsync(self, path, datasync, fh):
        self.st.enter("fsync")
        self._sync(path, fh)
        if datasync:
            os.fdatasync(fh)
        else:
            os.fsync(fh)
        return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        self.sync_fds.discard(fh)
        os.close(fh)
        return 0


class Control(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def _handler(state: State):
    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            for line in self.rfile:
                try:
                    cmd = json.loads(line)
                    op = cmd.get("cmd")
                    if op == "set":
                        state.set(cmd)
                        out = state.status()
                    elif op == "drop":
                        out = state.drop(cut=bool(cmd.get("cut")))
                    elif op == "status":
                        out = state.status()
                    else:
                        raise ValueError(f"unknown command {op!r}")
                    out = {"ok": True, **out}
                except Exception as e:  # an answer for every line, never a dead control thread
                    out = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                self.wfile.write(json.dumps(out).encode() + b"\n")
                self.wfile.flush()
    return Handler


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m ndbchaos.runtimes.compose.faultfs_daemon BACKING MOUNT SOCKET", file=sys.stderr)
        return 2
    backing, mount, sock = argv
    state = State()
    if os.path.exists(sock):
        os.unlink(sock)
    server = Control(sock, _handler(state))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # allow_other: the container's processes are not the mounting process
    fuse.FUSE(FaultFS(backing, state), mount, foreground=True, allow_other=True, fsname="ndbchaos-faultfs")
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
