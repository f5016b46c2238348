"""The client loop records every attempt with the right outcome, retires processes after an
indeterminate write, reconnects, fails over and retries only when asked (no database needed)."""

import threading
import time

import pytest

from ndbchaos.clock import RunClock
from ndbchaos.history import History, Recorder
from ndbchaos.workload import runner as R
from ndbchaos.workload.ledger import Ledger


class Err(Exception):
    def __init__(self, errno, msg):
        super().__init__(msg)
        self.errno, self.msg = errno, msg


class Script:
    """Per endpoint port, a list of outcomes: None = ok, or (errno, msg) raised by execute/connect."""

    def __init__(self, plan, stop, limit):
        self.plan, self.stop, self.limit, self.calls = plan, stop, limit, []

    def connect(self, port, *a, **kw):
        nxt = self.plan[port][0] if self.plan[port] else None
        self.calls.append(("connect", port, nxt))
        if nxt and nxt[0] == "connect":
            self.plan[port].pop(0)
            raise Err(*nxt[1:])
        return FakeConn(self, port)


class FakeConn:
    def __init__(self, script, port):
        self.script, self.port = script, port

    def cursor(self):
        return self

    def execute(self, sql, params=None):
        s = self.script
        s.calls.append(("execute", self.port, sql.split()[0]))
        if len([c for c in s.calls if c[0] == "execute"]) >= s.limit:
            s.stop.set()
        out = s.plan[self.port].pop(0) if s.plan[self.port] else None
        if out:
            raise Err(*out[1:])

    def close(self):
        pass


def run_loop(monkeypatch, plan, limit, **opts):
    stop = threading.Event()
    script = Script(plan, stop, limit)
    monkeypatch.setattr(R, "connect", script.connect)
    eps = [R.Endpoint("a", 1), R.Endpoint("b", 2)]
    o = R.ClientOptions(engine="galera", backoff_min=0.0, backoff_max=0.0, **opts)
    rec = Recorder()
    live = [-1.0, -1.0]
    R._connection_loop(Ledger(), 0, 4, eps, o, time.monotonic(), stop, rec, live, {"a": 0, "b": 1})
    h = History.merge("ledger", {}, [rec])
    return list(h), script, live


def test_outcomes_and_process_retirement(monkeypatch):
    plan = {1: [None, ("exec", 2013, "Lost connection to MySQL server during query"),
                ("connect", 2003, "Can't connect"), None, ("exec", 1047, "WSREP has not yet prepared node")],
            2: []}
    ops, _, live = run_loop(monkeypatch, plan, limit=5)
    kinds = [(o.type, o.error.errno if o.error else None, o.process) for o in ops]
    # ok; 2013 during an insert -> info, process retired (0 -> 4); connect refused -> fail (never sent);
    # reconnect ok; 1047 -> definite fail
    assert kinds[:5] == [("ok", None, 0), ("info", 2013, 0), ("fail", 2003, 4), ("ok", None, 4), ("fail", 1047, 4)]
    assert ops[1].error.cls == "unknown" and ops[2].error.cls == "temporary"
    assert all(o.node == "a" for o in ops)
    assert live[0] > 0 and live[1] == -1.0
    # without retries every attempt is a new insert with a fresh id
    assert len({o.value for o in ops}) == len(ops)


def test_failover_moves_to_next_endpoint(monkeypatch):
    plan = {1: [("connect", 2003, "refused")], 2: [None, None]}
    ops, _, _ = run_loop(monkeypatch, plan, limit=2, failover=True)
    assert [(o.type, o.node) for o in ops[:3]] == [("fail", "a"), ("ok", "b"), ("ok", "b")]


def test_retry_reissues_the_same_op_only_when_enabled(monkeypatch):
    plan = {1: [("exec", 1213, "Deadlock found"), None], 2: []}
    ops, _, _ = run_loop(monkeypatch, plan, limit=2, retries=1)
    assert [o.type for o in ops[:2]] == ["fail", "ok"]
    assert ops[0].value == ops[1].value  # the same insert, retried
    plan = {1: [("exec", 1213, "Deadlock found"), None], 2: []}
    ops, _, _ = run_loop(monkeypatch, plan, limit=2, retries=0)
    assert ops[0].value != ops[1].value


def test_runner_requires_endpoints():
    from ndbchaos.clock import RunClock
    from ndbchaos.errors import UsageError
    with pytest.raises(UsageError):
        R.WorkloadRunner(Ledger(), [], RunClock())


def test_a_spooling_recorder_streams_its_columns_to_the_worker_file_and_stays_small(tmp_path):
    from ndbchaos.history import ErrorInfo
    from ndbchaos.history.columnar import HistoryAppender
    path = tmp_path / "worker-0.hist"
    out = HistoryAppender(path, "ledger")
    rec = R.SpoolingRecorder(out.append)
    n = 3 * R.SPILL_OPS + 123
    for i in range(n):
        err = ErrorInfo(2013, None, "unknown", "Lost connection") if i % 1000 == 0 else None
        rec.record(i % 7, "insert", i, "info" if err else "ok", i * 1e-3, i * 1e-3 + 5e-4, f"sql{i % 2}", err)
        # never more than one spill's worth held (plus the recorder's own 1024-op buffer)
        assert len(rec.start) <= R.SPILL_OPS
    assert out.count >= 3 * R.SPILL_OPS  # three spills while recording
    rec.spill()
    out.close()
    assert len(rec) == 0
    h = History.read_parts([path], "ledger", {"x": 1})
    assert len(h) == n and h.params == {"x": 1}
    ops = list(h)
    assert [o.value for o in ops] == list(range(n))
    assert ops[1000].type == "info" and ops[1000].error.errno == 2013 and ops[1001].error is None
    assert {o.node for o in ops} == {"sql0", "sql1"}


def test_a_worker_that_died_mid_run_leaves_every_chunk_it_spilled(tmp_path):
    from ndbchaos.history.columnar import HistoryAppender
    path = tmp_path / "worker-0.hist"
    out = HistoryAppender(path, "ledger")
    rec = R.SpoolingRecorder(out.append)
    for i in range(R.SPILL_OPS + 10):
        rec.record(0, "insert", i, "ok", float(i), float(i), "sql1", None)
    out._fh.close()  # the worker is gone: no end block, the last 10 ops never written
    h = History.read_parts([path], "ledger")
    assert len(h) == R.SPILL_OPS


@pytest.mark.parametrize("engine,errno,msg,is_write,sent,wl,expect", [
    # a write in flight when the connection was lost: may have been applied -> info, reconnect
    ("ndb", 2013, "Lost connection to MySQL server during query", True, True, None, ("info", True, False)),
    # never sent (connect refused) -> fail, reconnect, may be retried
    ("galera", 2003, "Can't connect to MySQL server", True, False, None, ("fail", True, True)),
    # NDB temporary error (node failure abort before commit) -> fail, the connection kept
    ("ndb", 1297, "Got temporary error 286 'Node failure caused abort of transaction' from NDBCLUSTER", True, True,
     None, ("fail", False, True)),
    # NDB 4010: of unknown outcome (docs/ndb.md finding 22) -> info, reconnect
    ("ndb", 1297, "Got temporary error 4010 'Node failure caused abort of transaction' from NDBCLUSTER", True, True,
     None, ("info", True, False)),
    # a read that failed is never info
    ("ndb", 2013, "Lost connection to MySQL server during query", False, True, None, ("fail", True, False)),
    # the workload knows better: a transaction that failed before its COMMIT -> fail
    ("ndb", 2013, "Lost connection to MySQL server during query", True, True, "fail", ("fail", True, False)),
    ("galera", 1047, "WSREP has not yet prepared node for application use", True, True, None, ("fail", True, True)),
])
def test_the_client_loop_contract(engine, errno, msg, is_write, sent, wl, expect):
    """One contract for the Python loop and the native driver's (both call runner.failure)."""
    fl = R.failure(engine, errno, msg, is_write, sent, wl)
    assert (fl.type, fl.reconnect, fl.retryable) == expect
    assert fl.retire == (fl.type == "info")


def test_both_drivers_follow_the_same_contract():
    import inspect
    from ndbchaos.workload import native
    assert "failure(" in inspect.getsource(R._connection_loop)
    assert "failure(" in inspect.getsource(native.connection_loop)


def test_each_connection_keeps_its_own_last_success_and_the_runner_takes_the_latest(monkeypatch):
    """A shared slot per SQL node let a connection whose success came first overwrite a later
    one's: the crash mark of a run fell 0.2 ms before its last acknowledged insert (CI, 9.7.2).
    Each connection writes its own row; ``last_ok`` is the latest over the rows."""
    stop = threading.Event()
    script = Script({1: [None, None], 2: []}, stop, 2)
    monkeypatch.setattr(R, "connect", script.connect)
    eps = [R.Endpoint("a", 1), R.Endpoint("b", 2)]
    live = [-1.0] * 8  # 4 connections x 2 SQL nodes
    R._connection_loop(Ledger(), 2, 4, eps, R.ClientOptions(engine="galera", backoff_min=0.0, backoff_max=0.0),
                       time.monotonic(), stop, Recorder(), live, {"a": 0, "b": 1})
    assert [i for i, v in enumerate(live) if v != -1.0] == [4]  # slot 2's row, node a

    runner = R.WorkloadRunner(Ledger(), eps, RunClock(), processes=2, connections=2)
    assert len(runner.live) == 8
    runner.live[0 * 2 + 0] = 733.938229  # slot 0 succeeded last on a ...
    runner.live[3 * 2 + 0] = 733.938030  # ... slot 3 just before it, and wrote later
    runner.live[1 * 2 + 1] = 5.0
    assert runner.last_ok("a") == 733.938229 and runner.last_ok("b") == 5.0


def test_workers_of_a_killed_controller_stop_and_leave_no_spool(tmp_path):
    """SIGKILL of the controller leaves no one to set the stop flag: its load workers notice the
    parent is gone, stop their connections, remove their spool and exit (seen orphaned, still
    connecting, after a run was killed mid-scenario)."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent("""
        import os, sys, time
        from ndbchaos.clock import RunClock
        from ndbchaos.workload import runner as R
        from ndbchaos.workload.ledger import Ledger
        # port 1 refuses: each connection retries with its backoff, as against a lost SQL node
        r = R.WorkloadRunner(Ledger(), [R.Endpoint("a", 1)], RunClock(), processes=2, connections=1)
        r.start()
        deadline = time.monotonic() + 30
        while len(r.worker_pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        print(r._spool_dir, *r.worker_pids(), flush=True)
        time.sleep(3)  # the workers are up and looping
        os.kill(os.getpid(), 9)
    """)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as f, err.open("w") as e:  # files, not pipes: orphaned workers would hold a pipe open
        p = subprocess.run([sys.executable, "-c", script], stdout=f, stderr=e, timeout=60, env=env)
    assert p.returncode == -signal.SIGKILL, err.read_text()[-2000:]
    spool, *pids = out.read_text().split()
    assert len(pids) == 2, out.read_text()
    deadline = time.monotonic() + 10  # the mirror polls every 20 ms; a refused connect backs off under 1 s
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") for pid in pids):
        time.sleep(0.1)
    alive = [pid for pid in pids if os.path.exists(f"/proc/{pid}")]
    for pid in alive:
        os.kill(int(pid), signal.SIGKILL)
    assert not alive, f"workers {alive} outlived their killed controller"
    assert not os.path.exists(spool), f"{spool} left behind"
