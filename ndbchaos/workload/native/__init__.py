"""The native client driver: each connection's loop in C (``ndc.c``: libmariadb connects,
authenticates and prepares; each execution is the loop's own COM_STMT_EXECUTE and one blocking
read of the reply on that socket), the recording in bulk in Python.

Selected by ``ClientOptions.driver = "native"`` (default ``"python"``). Supported workloads
(``supported``): the single-statement oltp events ``oltp_point_select``
(``SELECT c FROM sbtest1 WHERE id=?``), ``oltp_update_non_index`` (``UPDATE sbtest1 SET c=?
WHERE id=?``) and ``oltp_update_index`` (``UPDATE sbtest1 SET k=k+1 WHERE id=?``), with one
statement per event and server-side prepared statements (``ps=True``, the default). Anything
else (other workloads, ``ps=False``, several updates per event, a missing library) runs on the
Python client, after one log line saying why.

What stays as in the Python client loop (``runner._connection_loop``): the same statements with
the same parameter distribution (ids uniform over ``1..table_size`` from a per-connection seeded
generator; the new ``c`` one of the workload's 1024 sysbench strings, drawn uniformly), connect /
read / write timeouts on every statement (whole seconds, as the connector; SO_RCVTIMEO /
SO_SNDTIMEO on the socket), autocommit, the
recorded op (process, f, value = the row id, ok / fail / info, run-clock start and end from
CLOCK_MONOTONIC minus ``mono0``, node, errno / engine code / class / message for failures),
classification of every failure by ``ndbchaos.classify`` (in Python: the C loop returns on each
failure), retirement of a process after an indeterminate write, closing the connection and
failover on the same errors, retries of temporary errors, backoff doubling up to
``backoff_max``, the open-loop rate, and the live array (the C loop stores the end time of each
successful op into its connection's row of the shared ``live`` array, at its node).

How: ``ndc_run`` runs operations until its column buffers (start, end, row id; ``BATCH``
entries) are full, the stop flag is set or an operation failed, with the GIL released (ctypes).
The Python thread then appends the batch to the connection's ``SpoolingRecorder`` column
arrays with a handful of bulk array operations (no Python object per op), records the failure
if there is one through ``Recorder.append``, and calls again.

Built by ``bin/chaos setup`` (``python -m ndbchaos.workload.native build``) into the tools cache
as ``ndbchaos-native-<sha256 of ndc.c>.so``; needs a C compiler and libmariadb-dev.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shutil
import subprocess
import threading
import time
from array import array

import numpy as np

from ... import resources
from ...errors import UsageError
from ...history import ErrorInfo
from ...history.columns import Columns
from ...sqlconn import _secs, error_fields
from ..contract import SPILL_OPS, failure
from ..figures import BOUNDS, N_BUCKETS, ClientFigures, failure_cell
from ..oltp import Oltp

log = logging.getLogger("ndbchaos")

SOURCE = str(resources.NATIVE_SOURCE)
ABI_VERSION = 2  # NDC_VERSION in ndc.c
BATCH = 4096  # ops per ndc_run call at most (the Python thread folds them, then calls again)
BOUNDS_ARRAY = np.array(BOUNDS)

OP_SELECT_ROWS, OP_UPDATE_STR_ID, OP_UPDATE_ID = 0, 1, 2
_OLTP_OPS = {
    "point_select": (OP_SELECT_ROWS, "point_selects", False),
    "update_non_index": (OP_UPDATE_STR_ID, "non_index_updates", True),
    "update_index": (OP_UPDATE_ID, "index_updates", True),
}


class NativeUnavailable(Exception):
    """The native driver cannot run here (or not this workload): the message says why."""


# -- build and load ------------------------------------------------------------------------------

def tools_dir() -> str:
    return str(resources.tools_dir())


def source_hash() -> str:
    with open(SOURCE, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:16]


def library_path() -> str:
    return os.path.join(tools_dir(), f"ndbchaos-native-{source_hash()}.so")


def build_command(out: str) -> list[str]:
    """The compiler command line (flags of libmariadb from mariadb_config or pkg-config)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise NativeUnavailable("no C compiler (cc/gcc) is installed")
    flags = None
    for probe in (["mariadb_config", "--cflags", "--libs"], ["pkg-config", "--cflags", "--libs", "libmariadb"]):
        if shutil.which(probe[0]):
            r = subprocess.run(probe, capture_output=True, text=True)
            if r.returncode == 0 and r.stdout.strip():
                flags = r.stdout.split()
                break
    if flags is None:
        raise NativeUnavailable("libmariadb's development files are not installed (Debian: libmariadb-dev)")
    return [cc, "-O2", "-Wall", "-shared", "-fPIC", "-o", out, SOURCE, *flags]


def build() -> str:
    """Compile ``ndc.c`` into the tools cache unless that build exists; return its path."""
    path = library_path()
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    r = subprocess.run(build_command(tmp), capture_output=True, text=True)
    if r.returncode != 0:
        first = (r.stderr or r.stdout).strip().splitlines()[:1] or ["no output"]
        raise NativeUnavailable(f"compiling {SOURCE} failed: {first[0]}")
    os.replace(tmp, path)
    return path


_lib = None
_lib_lock = threading.Lock()


def load():
    """The loaded library (initialised once per process); NativeUnavailable when it is not built."""
    global _lib
    if _lib is not None:
        return _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        path = library_path()
        if not os.path.exists(path):
            raise NativeUnavailable(f"not built for this source ({os.path.basename(path)} missing; "
                                    "bin/chaos setup builds it)")
        # RTLD_DEEPBIND: the library's libmariadb symbols win over a libmysqlclient that the
        # connector's C extension may have loaded into this process under the same names
        mode = ctypes.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0) | getattr(os, "RTLD_NOW", 2)
        try:
            lib = ctypes.CDLL(path, mode=mode)
        except OSError as e:
            raise NativeUnavailable(f"cannot load {path}: {e}") from None
        lib.ndc_run.argtypes = [ctypes.POINTER(Ndc)]
        lib.ndc_run.restype = ctypes.c_int
        lib.ndc_close.argtypes = [ctypes.POINTER(Ndc)]
        lib.ndc_seed.argtypes = [ctypes.POINTER(Ndc), ctypes.c_uint64]
        lib.ndc_draw.argtypes = [ctypes.POINTER(Ndc)]
        lib.ndc_draw.restype = ctypes.c_int64
        lib.ndc_plugin_retries.restype = ctypes.c_int
        if lib.ndc_version() != ABI_VERSION or lib.ndc_struct_size() != ctypes.sizeof(Ndc):
            raise NativeUnavailable(f"{path} does not match this version of ndbchaos")
        if lib.ndc_init() != 0:
            raise NativeUnavailable("libmariadb failed to initialise")
        _lib = lib
        return lib


class Ndc(ctypes.Structure):
    """``struct ndc`` of ndc.c, field for field."""

    _fields_ = [
        ("host", ctypes.c_char_p), ("user", ctypes.c_char_p), ("password", ctypes.c_char_p),
        ("db", ctypes.c_char_p), ("sql", ctypes.c_char_p),
        ("port", ctypes.c_int32), ("connect_timeout", ctypes.c_int32), ("read_timeout", ctypes.c_int32),
        ("write_timeout", ctypes.c_int32),
        ("op", ctypes.c_int32), ("capacity", ctypes.c_int32),
        ("n", ctypes.c_int64),
        ("pool", ctypes.c_char_p), ("pool_n", ctypes.c_int32), ("pool_len", ctypes.c_int32),
        ("mono0", ctypes.c_double), ("interval", ctypes.c_double),
        ("stop", ctypes.POINTER(ctypes.c_int32)),
        ("start", ctypes.POINTER(ctypes.c_double)), ("end", ctypes.POINTER(ctypes.c_double)),
        ("value", ctypes.POINTER(ctypes.c_int64)),
        ("live", ctypes.POINTER(ctypes.c_double)),
        ("next_t", ctypes.c_double),
        ("rng", ctypes.c_uint64 * 4),
        ("process", ctypes.c_int32), ("retry", ctypes.c_int32), ("close_conn", ctypes.c_int32),
        ("connected", ctypes.c_int32),
        ("count", ctypes.c_int64),
        ("failed", ctypes.c_int32), ("fail_errno", ctypes.c_int32), ("fail_sent", ctypes.c_int32),
        ("fail_retried", ctypes.c_int32),
        ("fail_start", ctypes.c_double), ("fail_end", ctypes.c_double),
        ("fail_value", ctypes.c_int64),
        ("fail_msg", ctypes.c_char * 512),
        ("cur_id", ctypes.c_int64),
        ("cur_c", ctypes.c_int32), ("cur_retried", ctypes.c_int32),
        ("my", ctypes.c_void_p), ("st", ctypes.c_void_p),
        ("w", ctypes.c_void_p),
    ]


# -- what runs natively --------------------------------------------------------------------------

def plan(wl) -> tuple[int, str, bytes, bool, str]:
    """(op code, prepared statement, string pool, is_write, f) of a workload the native loop runs
    statement for statement like the Python one; NativeUnavailable (with the reason) otherwise."""
    if not isinstance(wl, Oltp):
        raise NativeUnavailable(f"workload {wl.name} has no native implementation "
                                "(native: oltp_point_select, oltp_update_non_index, oltp_update_index)")
    mode = wl.params["mode"]
    if mode not in _OLTP_OPS:
        raise NativeUnavailable(f"oltp mode {mode} has no native implementation "
                                "(native: point_select, update_non_index, update_index)")
    if not wl.params["ps"]:
        raise NativeUnavailable("the native driver uses server-side prepared statements only (ps=True)")
    if mode != "point_select" and wl._repeat != 1:
        raise NativeUnavailable("the native driver runs one update per event only")
    op, key, is_write = _OLTP_OPS[mode]
    pool = b""
    if op == OP_UPDATE_STR_ID:
        lens = {len(s) for s in wl._c_str}
        if len(lens) != 1 or not 0 < next(iter(lens)) < 512 or len(wl._c_str) != 1024:
            raise NativeUnavailable("the workload's c strings are not 1024 of one length")
        pool = b"".join(s.encode() for s in wl._c_str)
    return op, wl.S[key].qmark.decode(), pool, is_write, mode


def supported(wl) -> str | None:
    """None when ``wl`` runs natively here, else the reason it does not (one line)."""
    try:
        plan(wl)
        load()
    except NativeUnavailable as e:
        return str(e)
    return None


# -- the recording -------------------------------------------------------------------------------

_COLUMNS = ("process", "f", "type", "start", "end", "node", "ival", "errno", "ecode", "ecls",
            "objs", "msgs", "f_names", "node_names")


def _direct_ok() -> bool:
    return tuple(Columns._STATE) == _COLUMNS


class Folder:
    """Appends batches of successful ops (same process, f and node) to a recorder's columns."""

    def __init__(self, capacity: int):
        self.start = (ctypes.c_double * capacity)()
        self.end = (ctypes.c_double * capacity)()
        self.value = (ctypes.c_int64 * capacity)()
        self._start_b = memoryview(self.start).cast("B")
        self._end_b = memoryview(self.end).cast("B")
        self._value_b = memoryview(self.value).cast("B")
        self.direct = _direct_ok()

    def fold(self, rec, n: int, process: int, f: str, node: str) -> None:
        if not n:
            return
        if not self.direct:  # the column set changed: the generic (slower) bulk path
            rec.extend_columns([process] * n, [f] * n, self.value[:n], ["ok"] * n, self.start[:n],
                               self.end[:n], [node] * n, [None] * n)
            return
        rec.flush()  # anything buffered goes first (keeps insertion order)
        fi, ni = rec.f_code(f), rec.node_code(node)
        zeros = bytes(4 * n)
        rec.process.extend(array("i", (process,)) * n)
        rec.f.frombytes(bytes((fi,)) * n)
        rec.type.frombytes(zeros[:n])
        rec.start.frombytes(self._start_b[:8 * n])
        rec.end.frombytes(self._end_b[:8 * n])
        rec.node.extend(array("h", (ni,)) * n)
        rec.ival.frombytes(self._value_b[:8 * n])
        rec.errno.frombytes(zeros)
        rec.ecode.frombytes(zeros)
        rec.ecls.frombytes(zeros[:n])


class _Err:
    """An error as ``sqlconn.error_fields`` reads it."""

    def __init__(self, errno: int, msg: str):
        self.errno, self.msg = errno, msg


# -- the worker ----------------------------------------------------------------------------------

def connection_loop(wl, slot, n_slots, endpoints, opts, mono0, stop, rec, live, live_idx, figures=None,
                    capacity: int = BATCH) -> int:
    """One connection, as ``runner._connection_loop`` (same arguments) but with the statements
    run by ndc_run; ``stop`` is the worker's threading.Event. The figures (``workload.figures``)
    of a batch of successes are counted when the C loop hands it back."""
    lib = load()
    op, sql, pool, is_write, f = plan(wl)
    stop_flag = ctypes.c_int32(0)

    def watch():  # the C loop reads an int; a blocking wait on a threading.Event is safe
        stop.wait()
        stop_flag.value = 1

    threading.Thread(target=watch, name=f"stop-{slot}", daemon=True).start()
    folder = Folder(capacity)
    s = Ndc()
    keep = [opts.user.encode(), opts.password.encode(), (opts.database or "").encode(), sql.encode(), pool]
    hosts = {ep.host: ep.host.encode() for ep in endpoints}  # kept alive while the C loop holds them
    s.user, s.password, s.db, s.sql = keep[0], keep[1], keep[2] or None, keep[3]
    s.connect_timeout, s.read_timeout, s.write_timeout = (
        _secs(opts.connect_timeout), _secs(opts.read_timeout), _secs(opts.write_timeout))
    s.op, s.capacity, s.n = op, capacity, wl.n
    s.pool, s.pool_n, s.pool_len = pool or None, 1024 if pool else 0, len(pool) // 1024 if pool else 0
    s.mono0 = mono0
    s.interval = 1.0 / opts.rate if opts.rate else 0.0
    s.next_t = time.monotonic()
    s.stop = ctypes.pointer(stop_flag)
    s.start = ctypes.cast(folder.start, ctypes.POINTER(ctypes.c_double))
    s.end = ctypes.cast(folder.end, ctypes.POINTER(ctypes.c_double))
    s.value = ctypes.cast(folder.value, ctypes.POINTER(ctypes.c_int64))
    lib.ndc_seed(ctypes.byref(s), ((opts.seed << 20) ^ slot) & (2**64 - 1))
    shared = isinstance(live, ctypes.Array)
    own_live = ctypes.c_double(-1.0)  # live is not shared memory (a test double): copied per batch
    row = slot * len(endpoints)  # this connection's row of live (WorkloadRunner.live), and of figures
    figures = figures or ClientFigures.local(n_slots, len(endpoints))
    starts = np.frombuffer(folder.start, dtype=np.float64)
    ends = np.frombuffer(folder.end, dtype=np.float64)

    def point_live(node):
        if shared:
            s.live = ctypes.cast(ctypes.addressof(live) + 8 * (row + live_idx[node]), ctypes.POINTER(ctypes.c_double))
        else:
            s.live = ctypes.pointer(own_live)

    ep_i = slot % len(endpoints)
    ep = endpoints[ep_i]
    s.host, s.port = hosts[ep.host], ep.port
    point_live(ep.node)
    s.process = slot
    backoff = opts.backoff_min
    record = opts.record
    retry_left = opts.retries
    run = lib.ndc_run
    ref = ctypes.byref(s)
    spill = getattr(rec, "spill", None)  # the runner's SpoolingRecorder streams to its spool
    try:
        while True:
            n = run(ref)
            if n:
                backoff = opts.backoff_min
                if record:
                    folder.fold(rec, n, s.process, f, ep.node)
                    if spill is not None and len(rec.start) >= SPILL_OPS:
                        spill()
                if not shared:
                    live[row + live_idx[ep.node]] = own_live.value
                _count_batch(figures, row + live_idx[ep.node], ends[:n] - starts[:n])
            if not s.failed:
                if stop_flag.value:
                    break
                continue
            errno, msg = error_fields(_Err(s.fail_errno, s.fail_msg.decode("utf-8", "replace")))
            fl = failure(opts.engine, errno, msg, is_write, bool(s.fail_sent))  # the same contract
            if record:
                rec.append(s.process, f, s.fail_value, fl.type, s.fail_start, s.fail_end, ep.node,
                           ErrorInfo(errno, fl.code, fl.cls, msg))
            figures.errors[failure_cell(row + live_idx[ep.node], fl.type, fl.cls, errno)] += 1
            if fl.retire:
                s.process += n_slots
            if fl.reconnect:
                s.close_conn = 1
                if opts.failover and len(endpoints) > 1:
                    ep_i = (ep_i + 1) % len(endpoints)
                    ep = endpoints[ep_i]
                    s.host, s.port = hosts[ep.host], ep.port
                    point_live(ep.node)
            if not s.fail_retried:
                retry_left = opts.retries
            if fl.retryable and retry_left > 0:
                retry_left -= 1
                s.retry = 1
            stop.wait(backoff)
            backoff = min(backoff * 2, opts.backoff_max)
    finally:
        lib.ndc_close(ref)
        retried = lib.ndc_plugin_retries()
        if retried:  # libmariadb's own state, not the server's answer (ndc.c connect_db)
            log.warning("native driver: %d connect(s) found libmariadb's client plugins not initialized "
                        "and were made again after mysql_library_init", retried)
    return int(s.count)


def _count_batch(figures, cell: int, latencies) -> None:
    """A batch of successes of one (slot, node) cell into its latency buckets and sum."""
    counts = np.bincount(np.searchsorted(BOUNDS_ARRAY, latencies, side="left"), minlength=N_BUCKETS)
    base = cell * N_BUCKETS
    for b in np.flatnonzero(counts).tolist():
        figures.buckets[base + b] += int(counts[b])
    figures.latency_sum[cell] += float(latencies.sum())


def resolve_driver(opts, workload):
    """``opts`` itself when its driver can run ``workload``; else a copy with driver "python",
    after one line saying why. An unknown driver name is a UsageError."""
    import dataclasses
    if opts.driver == "python":
        return opts
    if opts.driver != "native":
        raise UsageError(f"unknown client driver {opts.driver!r} (known: native, python)")
    why = supported(workload)
    if why is None:
        return opts
    log.warning("native client driver not used for %s: %s; running the Python client", workload.name, why)
    return dataclasses.replace(opts, driver="python")
