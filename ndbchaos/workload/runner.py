"""The workload runner: N worker processes x M connections, spread over the SQL nodes.

Each connection is a thread in a worker process with its own ``Recorder`` (no locks on the hot
path). All processes stamp operations with CLOCK_MONOTONIC relative to the run clock's origin, so
their histories merge without any clock exchange. Clients behave like applications: connect, read
and write timeouts on every statement, reconnect with capped exponential backoff, optional
failover to the next SQL node, optional retries of temporary errors (off by default so the raw
impact is measured), closed loop or open loop at a fixed rate.

Live progress (last successful op per SQL node, counts) is shared through lock-free arrays so a
scenario can wait for "clients on node X succeed again" without stopping the load; so are the
load's figures for the metrics endpoint (``ndbchaos.workload.figures``: latency buckets of the
successes, failures by type and class, per connection and SQL node).

Operations stream to disk: each connection's recorder hands its columns to its worker's spool
file (``ndbchaos.history.columnar.HistoryAppender``) every ``SPILL_OPS`` operations and starts
afresh, so neither a worker nor the parent holds the history of an hour-long run; the parent reads
the spools into one History when the load stops (a worker that died leaves every chunk it wrote).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import queue
import random
import shutil
import tempfile
import threading
import time
from bisect import bisect_left

from ..classify import classify
from ..clock import RunClock
from ..errors import NdbChaosError, UsageError
from ..history import FINAL_PROCESS, Columns, ErrorInfo, History, Recorder
from ..history.columnar import HistoryAppender
from ..sqlconn import connect, error_fields
from ..waiting import wait_until
from . import get_workload, workload_class
from .figures import BOUNDS, N_BUCKETS, ClientFigures, failure_cell
from .contract import SPILL_OPS, ClientOptions, Endpoint, Failure, failure  # noqa: F401  (re-exported)
from .native import connection_loop as native_connection_loop
from .native import resolve_driver

log = logging.getLogger("ndbchaos")

class SpoolingRecorder(Recorder):
    """A connection's recorder that hands its columns to ``spill`` (the worker's spool file) once
    it holds ``SPILL_OPS`` operations, then starts empty. ``record`` stays the Recorder's."""

    __slots__ = ("_spill",)

    def __init__(self, spill):
        super().__init__()
        self._spill = spill

    def flush(self) -> None:
        if self._buf:  # (the spool's own flush of these columns finds nothing to fold)
            super().flush()
            if len(self.start) >= SPILL_OPS:
                self.spill()

    def spill(self) -> None:
        """Write what is held and start empty."""
        Recorder.flush(self)
        if len(self.start):
            self._spill(self)
            Columns.__init__(self)


# -- worker process --------------------------------------------------------------------------

def _connection_loop(wl, slot, n_slots, endpoints, opts: ClientOptions, mono0, stop, rec, live, live_idx,
                     figures: ClientFigures | None = None):
    rng = random.Random((opts.seed << 20) ^ slot)
    ep_i = slot % len(endpoints)
    row = slot * len(endpoints)  # this connection's row of live (WorkloadRunner.live), and of figures
    figures = figures or ClientFigures.local(n_slots, len(endpoints))
    buckets, latency_sum, errors = figures.buckets, figures.latency_sum, figures.errors
    process = slot
    conn = cur = None
    backoff = opts.backoff_min
    record = rec.record if opts.record else None
    interval = 1.0 / opts.rate if opts.rate else None
    next_t = time.monotonic()
    retry_left = 0
    pending = None
    count = 0
    while not stop.is_set():
        if interval is not None:
            now = time.monotonic()
            if next_t > now:
                time.sleep(next_t - now)
            next_t += interval
        if pending is None:
            f, value, is_write = wl.next_op(rng, slot)
            retry_left = opts.retries
            redone = 0
        else:
            f, value, is_write = pending
            pending = None
        ep = endpoints[ep_i]
        t0 = time.monotonic()
        sent = False
        try:
            if conn is None:
                conn = connect(ep.port, opts.user, opts.password, opts.database, host=ep.host,
                               connect_timeout=opts.connect_timeout, read_timeout=opts.read_timeout,
                               write_timeout=opts.write_timeout)
                cur = conn.cursor()
            sent = True
            result = wl.execute(cur, f, value)
            t1 = time.monotonic()
            count += 1
            if record:
                record(process, f, result if result is not None else value, "ok", t0 - mono0, t1 - mono0, ep.node, None)
            cell = row + live_idx[ep.node]
            live[cell] = t1 - mono0
            dt = t1 - t0
            buckets[cell * N_BUCKETS + bisect_left(BOUNDS, dt)] += 1
            latency_sum[cell] += dt
            backoff = opts.backoff_min
        except Exception as e:  # every client error becomes a recorded op
            t1 = time.monotonic()
            # a workload may know better than the error's class: a transaction that failed
            # before its COMMIT was sent did not take effect (``outcome = "fail"``, ``cause``)
            errno, msg = error_fields(getattr(e, "cause", e))
            fl = failure(opts.engine, errno, msg, is_write, sent, getattr(e, "outcome", None))
            if record:
                record(process, f, value, fl.type, t0 - mono0, t1 - mono0, ep.node,
                       ErrorInfo(errno, fl.code, fl.cls, msg))
            errors[failure_cell(row + live_idx[ep.node], fl.type, fl.cls, errno)] += 1
            if fl.retire:
                process += n_slots
            if fl.reconnect:
                try:
                    if conn is not None:
                        conn.close()
                except Exception:
                    pass
                conn = cur = None
                if opts.failover and len(endpoints) > 1:
                    ep_i = (ep_i + 1) % len(endpoints)
            if fl.retryable and retry_left > 0:
                retry_left -= 1
                pending = (f, value, is_write)
            elif fl.type == "info" and redone < wl.redo_indeterminate(f):  # idempotent: done again, same value
                redone += 1
                pending = (f, value, is_write)
            stop.wait(backoff)
            backoff = min(backoff * 2, opts.backoff_max)
    try:
        if conn is not None:
            conn.close()
    except Exception:
        pass
    return count


def worker_main(worker, conns, n_slots, endpoints, spec, opts, mono0, stop, results, live, live_idx, spool,
                shared=None, figures=None):
    name, params = spec[:2]
    if len(spec) > 2:  # a project's workload: its class imported here again (module:qualname)
        workload_class(spec[2])
    recs, threads, counts = [], [], []
    # The loops test their stop flag once per operation: on a multiprocessing Event that is a lock
    # and a semaphore round trip (~2 us), on a threading Event an attribute read. Mirror it, by
    # polling: a process blocked in mp Event.wait() is a registered sleeper, and if it dies
    # (a crash in the C connector, a kill) the parent's Event.set() waits for it forever.
    # The same poll notices a controller that is gone (SIGKILL leaves no one to set the flag): the
    # worker then stops its connections and leaves nothing (its spool is the dead run's).
    mp_stop, stop, orphaned = stop, threading.Event(), threading.Event()
    parent = os.getppid()

    def mirror():
        while not mp_stop.is_set():
            if os.getppid() != parent:
                orphaned.set()
                break
            time.sleep(0.02)
        stop.set()

    threading.Thread(target=mirror, name="stop-mirror", daemon=True).start()
    out = HistoryAppender(spool, name)
    lock = threading.Lock()

    def spill(cols):
        with lock:
            out.append(cols)

    loop = _connection_loop
    if opts.driver == "native":  # same arguments, same recording (WorkloadRunner.start checked it)
        loop = native_connection_loop
    for k in range(conns):
        slot = worker * conns + k
        wl = get_workload(name, **params)
        if shared is not None:
            wl.attach(shared)
        rec = SpoolingRecorder(spill)
        recs.append(rec)

        def run(wl=wl, slot=slot, rec=rec):
            counts.append(loop(wl, slot, n_slots, endpoints, opts, mono0, stop, rec, live, live_idx, figures))

        th = threading.Thread(target=run, name=f"conn-{slot}", daemon=True)
        threads.append(th)
        th.start()
    for th in threads:
        th.join()
    if orphaned.is_set():
        out.close()
        with contextlib.suppress(OSError):
            os.unlink(spool)
            os.rmdir(os.path.dirname(spool))  # the last worker out removes the run's spool folder
        os._exit(0)  # no parent reads the results queue: its feeder thread must not be waited for
    for rec in recs:
        rec.spill()
    out.close()
    results.put((worker, spool, sum(counts)))


# -- parent ----------------------------------------------------------------------------------

class WorkloadRunner:
    def __init__(self, workload, endpoints: list[Endpoint], clock: RunClock, processes: int = 2,
                 connections: int = 2, options: ClientOptions | None = None):
        if not endpoints:
            raise UsageError("the workload needs at least one SQL endpoint")
        self.workload = workload
        self.endpoints = endpoints
        self.clock = clock
        self.processes = processes
        self.connections = connections
        self.opts = options or ClientOptions()
        self._ctx = mp.get_context("spawn")
        self._stop = self._ctx.Event()
        self._results = self._ctx.Queue()
        self._live_idx = {e.node: i for i, e in enumerate(endpoints)}
        # the run-clock time of each connection's last success per SQL node, one row per
        # connection (slot): a shared slot per node would let a connection whose success came
        # first overwrite a later one's (measured: the crash mark 0.2 ms before the last ack)
        self.live = self._ctx.Array("d", [-1.0] * (processes * connections * len(endpoints)), lock=False)
        # the load's figures for the metrics endpoint, in the same rows (ndbchaos.workload.figures)
        self.figures = ClientFigures(self._ctx, processes * connections, [e.node for e in endpoints])
        self._procs: list = []
        self._shared = workload.shared_state(self._ctx)  # e.g. the transactional key set
        self._spool_dir: str | None = None  # the workers' spool files (removed once read)
        self.started_at = self.stopped_at = None
        self.op_count = 0

    @property
    def n_slots(self) -> int:
        return self.processes * self.connections

    def setup(self, endpoint: Endpoint | None = None, table_engine: str = "InnoDB", attempts: int = 20) -> None:
        ep = endpoint or self.endpoints[0]
        last = None
        for _ in range(attempts):
            try:
                conn = connect(ep.port, self.opts.user, self.opts.password, self.opts.database, host=ep.host,
                               connect_timeout=self.opts.connect_timeout, read_timeout=60, write_timeout=60)
                try:
                    self.workload.load(conn, table_engine)
                finally:
                    conn.close()
                return
            except Exception as e:
                last = e
                time.sleep(0.5)
        raise NdbChaosError(f"workload setup on {ep.node} failed: {error_fields(last)[1]}")

    def start(self) -> None:
        if self.opts.driver != "python":  # the native driver, or the Python one where it cannot run
            self.opts = resolve_driver(self.opts, self.workload)
        self.started_at = self.clock.now()
        self._spool_dir = tempfile.mkdtemp(prefix="ndbchaos-spool-")
        for w in range(self.processes):
            p = self._ctx.Process(
                target=worker_main, name=f"ndbchaos-worker-{w}", daemon=True,
                args=(w, self.connections, self.n_slots, self.endpoints, self.workload.spec(), self.opts,
                      self.clock.mono0, self._stop, self._results, self.live, self._live_idx,
                      os.path.join(self._spool_dir, f"worker-{w}.hist"), self._shared, self.figures))
            p.start()
            self._procs.append(p)

    def worker_pids(self) -> list[int]:
        """Process ids of the workers still running."""
        return [p.pid for p in self._procs if p.pid is not None and p.is_alive()]

    def last_ok(self, node: str) -> float:
        """Run-clock time of the last successful op on ``node`` (-1 if none yet)."""
        i, n = self._live_idx[node], len(self.endpoints)
        return max(self.live[slot * n + i] for slot in range(self.n_slots))

    def wait_ok(self, node: str, after: float, timeout: float) -> float | None:
        """Wait until an op on ``node`` succeeds after run time ``after``; return that time."""
        found = wait_until(lambda: (t,) if (t := self.last_ok(node)) > after else None, timeout, poll=0.05)
        return found[0] if found else None

    def stop(self, timeout: float | None = None) -> History:
        """Stop the load and return the merged history (without final reads)."""
        self._stop.set()
        self.stopped_at = self.clock.now()
        # Workers finish the op in flight; a statement is bounded by the read timeout.
        timeout = timeout or (self.opts.read_timeout + self.opts.connect_timeout + 10)
        deadline = time.monotonic() + timeout
        got = 0
        while got < len(self._procs) and time.monotonic() < deadline:
            try:
                _w, _spool, count = self._results.get(timeout=0.5)
            except queue.Empty:
                if not any(p.is_alive() for p in self._procs) and self._results.empty():
                    break
                continue
            got += 1
            self.op_count += count
        for p in self._procs:
            p.join(timeout=2)
            if p.is_alive():
                p.terminate()
                p.join(timeout=2)
        if got < len(self._procs):
            log.warning("%d of %d workers did not report; their spools are read up to their last complete chunk",
                        len(self._procs) - got, len(self._procs))
        params = dict(self.workload.header_params())
        params.update({
            "processes": self.processes, "connections_per_process": self.connections,
            "concurrency": self.n_slots, "rate": self.opts.rate, "engine": self.opts.engine,
            "nodes": [e.node for e in self.endpoints], "retries": self.opts.retries,
            "failover": self.opts.failover, "clock": self.clock.to_dict(),
            "load_start": self.started_at, "load_stop": self.stopped_at,
        })
        try:
            spools = sorted(os.path.join(self._spool_dir, f) for f in os.listdir(self._spool_dir))
            return History.read_parts(spools, self.workload.name, params) if spools \
                else History(self.workload.name, params)
        finally:
            self._remove_spools()

    def _remove_spools(self) -> None:
        if self._spool_dir is not None:
            shutil.rmtree(self._spool_dir, ignore_errors=True)
            self._spool_dir = None

    def final_reads(self, history: History, endpoints: list[Endpoint] | None = None, attempts: int = 40) -> None:
        """Run the workload's final reads on the first endpoint that answers; record them."""
        eps = endpoints or self.endpoints
        for f, value in self.workload.final_reads():
            done = False
            for i in range(attempts):
                ep = eps[i % len(eps)]
                t0 = self.clock.now()
                try:
                    conn = connect(ep.port, self.opts.user, self.opts.password, self.opts.database, host=ep.host,
                                   connect_timeout=self.opts.connect_timeout, read_timeout=60, write_timeout=60)
                    try:
                        cur = conn.cursor()
                        res = self.workload.execute(cur, f, value)
                    finally:
                        conn.close()
                    history.add(FINAL_PROCESS, f, res, "ok", t0, self.clock.now(), ep.node)
                    done = True
                    break
                except Exception as e:
                    errno, msg = error_fields(e)
                    cls, code = classify(self.opts.engine, errno, msg)
                    history.add(FINAL_PROCESS, f, value, "fail", t0, self.clock.now(), ep.node,
                                ErrorInfo(errno, code, cls, msg))
                    time.sleep(0.5)
            if not done:
                log.warning("final %s never succeeded", f)

    def kill(self) -> None:
        """Stop workers without collecting (teardown on error paths)."""
        self._stop.set()
        for p in self._procs:
            if p.is_alive():
                p.terminate()
        for p in self._procs:
            p.join(timeout=2)
        self._remove_spools()
