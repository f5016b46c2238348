"""The client loop records every attempt with the right outcome, retires processes after an
indeterminate write, reconnects, fails over and retries only when asked (no database needed)."""

import threading
import time

import pytest

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
