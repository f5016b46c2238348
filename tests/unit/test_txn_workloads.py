"""The transactional workloads without a database: the shared key set (hot keys, unique values,
retirement), each micro-operation's SQL, outcomes (an error before COMMIT is fail, one of COMMIT
is info), and the run's verdict (checks.transactions): the engine's promise, lost appends,
losses the engine's GCP promise allows."""

from __future__ import annotations

import multiprocessing as mp
import random
import threading
import time

import pytest

from ndbchaos.checks import check_history
from ndbchaos.engines.galera import GaleraEngine
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.history import FINAL_PROCESS, History, Recorder
from ndbchaos.workload import get_workload
from ndbchaos.workload import runner as R
from ndbchaos.workload.txn import Aborted


def pool_workload(name="list_append", **params):
    wl = get_workload(name, **params)
    shared = wl.shared_state(mp.get_context("spawn"))
    return wl, shared


def test_the_key_set_is_shared_hot_first_and_retires_full_keys():
    wl, shared = pool_workload(keys=4, max_writes=5)
    other = get_workload("list_append", keys=4, max_writes=5)
    other.attach(shared)  # a second worker process's copy
    rng = random.Random(1)
    writes: dict = {}
    reads = []
    for i in range(400):
        f, mops, is_write = (wl if i % 2 else other).next_op(rng, i % 8)
        assert f == "txn" and 1 <= len(mops) <= 4 and is_write == any(m[0] == "append" for m in mops)
        for mf, k, v in mops:
            if mf == "append":
                writes.setdefault(k, []).append(v)
            else:
                assert v is None
                reads.append(k)
    # every key got values 1, 2, ... at most max_writes of them, never one twice
    for k, vs in writes.items():
        assert vs == list(range(1, len(vs) + 1)) and len(vs) <= 5, (k, vs)
    assert len(writes) > 10  # keys retired for fresh ones
    # hot keys first: the key most read is far more read than the median one
    counts = sorted((reads.count(k) for k in set(reads)), reverse=True)
    assert counts[0] > 3 * counts[len(counts) // 2]
    assert wl.final_reads() == [("txn", [["r", k, None] for k in range(wl.pool.used())])]


class Cursor:
    """Records statements; answers SELECTs from ``rows``; raises ``fail_at``'s error."""

    def __init__(self, rows=None, fail_at=None):
        self.rows, self.fail_at, self.sql, self._last = rows or {}, fail_at, [], None
        self.rolled_back = False
        self._connection = self

    def execute(self, sql, params=()):
        self.sql.append((sql, params))
        if self.fail_at and self.fail_at[0] in sql:
            raise self.fail_at[1]
        self._last = self.rows.get(params[0]) if sql.startswith("SELECT") else None

    def fetchall(self):
        return [] if self._last is None else [(self._last,)]

    def rollback(self):
        self.rolled_back = True


class DbError(Exception):
    def __init__(self, errno, msg):
        super().__init__(msg)
        self.errno, self.msg = errno, msg


def test_a_transaction_reads_appends_and_commits():
    wl = get_workload("list_append", read_lock="update")
    cur = Cursor(rows={1: ",3,7", 2: None})
    out = wl.execute(cur, "txn", [["r", 1, None], ["append", 2, 4], ["r", 9, None]])
    assert out == [["r", 1, [3, 7]], ["append", 2, 4], ["r", 9, []]]
    sqls = [s for s, _ in cur.sql]
    assert sqls[0] == "START TRANSACTION" and sqls[-1] == "COMMIT"
    assert sqls[1] == "SELECT v FROM list_append WHERE k = %s FOR UPDATE"
    assert "ON DUPLICATE KEY UPDATE v = CONCAT(v, %s)" in sqls[2] and cur.sql[2][1] == (2, ",4", ",4")
    reg = get_workload("rw_register", read_lock="share")
    cur = Cursor(rows={1: 5})
    assert reg.execute(cur, "txn", [["r", 1, None], ["w", 1, 6], ["r", 2, None]]) == [["r", 1, 5], ["w", 1, 6],
                                                                                       ["r", 2, None]]
    assert cur.sql[1][0].endswith("LOCK IN SHARE MODE")


def test_an_error_before_commit_is_a_definite_abort_one_of_commit_is_not():
    wl = get_workload("list_append")
    cur = Cursor(fail_at=("INSERT", DbError(1205, "Lock wait timeout exceeded")))
    with pytest.raises(Aborted) as e:
        wl.execute(cur, "txn", [["append", 1, 1]])
    assert e.value.outcome == "fail" and e.value.cause.errno == 1205 and cur.rolled_back
    assert not any(s == "COMMIT" for s, _ in cur.sql)
    cur = Cursor(fail_at=("COMMIT", DbError(2013, "Lost connection to MySQL server during query")))
    with pytest.raises(DbError):
        wl.execute(cur, "txn", [["append", 1, 1]])


def test_the_client_loop_records_fail_before_commit_and_info_at_commit(monkeypatch):
    """The runner takes the workload's word: Aborted (even for a lost connection) is fail; a
    lost connection at COMMIT is info and retires the process."""
    wl, shared = pool_workload(keys=2, max_writes=1000)
    plan = [("INSERT", DbError(2013, "Lost connection to MySQL server during query")),
            ("COMMIT", DbError(2013, "Lost connection to MySQL server during query")), None]
    stop = threading.Event()

    class Conn:
        def cursor(self):
            step = plan.pop(0) if plan else None
            if not plan:
                stop.set()
            c = Cursor(fail_at=step)
            return c

        def close(self):
            pass

    monkeypatch.setattr(R, "connect", lambda *a, **kw: Conn())
    monkeypatch.setattr(wl, "next_op", lambda rng, slot: ("txn", [["append", 0, 1]], True))
    rec = Recorder()
    o = R.ClientOptions(engine="ndb", backoff_min=0.0, backoff_max=0.0)
    R._connection_loop(wl, 0, 4, [R.Endpoint("sql1", 1)], o, time.monotonic(), stop, rec, [-1.0], {"sql1": 0})
    ops = list(History.merge("list_append", {}, [rec]))
    assert [(op.type, op.process) for op in ops[:3]] == [("fail", 0), ("info", 0), ("ok", 4)]
    assert ops[0].error.errno == 2013 and ops[1].error.cls == "unknown"


def test_engines_promise_models_with_their_sources():
    ndb, galera = NdbEngine(), GaleraEngine()
    assert ndb.consistency_models("list_append", {"read_lock": None}).models == ("read-committed",)
    assert ndb.consistency_models("list_append", {"read_lock": "update", "precreate": True}).models == \
        ("strict-serializable",)
    lazy = ndb.consistency_models("list_append", {"read_lock": "update", "precreate": False})
    assert lazy.models == ("read-committed",) and "gap" in lazy.source
    assert galera.consistency_models("list_append", {"read_lock": "update"}).models == ("cursor-stability",)
    assert "Jepsen" in galera.consistency_models("list_append", {}).source


def _run(txns, final, crash=None, models=("read-committed",)):
    h = History("list_append", {"model": "list-append"})
    for i, (proc, typ, mops, start, end) in enumerate(txns):
        h.add(proc, "txn", mops, typ, start, end, "sql1")
    h.add(FINAL_PROCESS, "txn", final, "ok", 50.0, 51.0, "sql1")
    opts = {"consistency_models": list(models)}
    if crash is not None:
        opts.update(gcp_loss_window_s=2.0, cluster_crash_at=crash)
    return check_history(h, None, opts).to_json()["checks"]["transactions"]


def test_a_lost_acknowledged_append_fails_whatever_the_models_allow():
    txns = [(0, "ok", [["append", 1, 1]], 0.0, 1.0), (1, "ok", [["append", 1, 2]], 2.0, 3.0),
            (2, "ok", [["r", 1, [1, 2]]], 4.0, 5.0)]
    good = _run(txns, [["r", 1, [1, 2]]])
    assert good["valid"] is True and good["lost"] == 0 and good["details"]["final_read"] is True
    bad = _run(txns, [["r", 1, [1]]])
    assert bad["valid"] is False and bad["lost"] == 1
    assert bad["details"]["lost_examples"][0]["value"] == 2 and "lost" in bad["summary"]
    # read committed allows the stale final read (a real-time cycle): only the loss fails it
    assert "G-single-item-realtime" in bad["details"]["found"]


def test_losses_within_the_gcp_window_before_a_crash_are_allowed_and_counted():
    txns = [(0, "ok", [["append", 1, 1]], 0.0, 1.0), (1, "ok", [["append", 1, 2]], 8.5, 9.5),
            (2, "ok", [["r", 1, [1, 2]], ["append", 2, 1]], 9.6, 9.8)]
    v = _run(txns, [["r", 1, [1]], ["r", 2, []]], crash=10.0)
    assert v["valid"] is True and v["lost"] == 0
    assert v["details"]["within_gcp"] == 2 and v["details"]["lost_within_gcp"] == 2
    # an append acknowledged before the window is still a loss
    v = _run(txns, [["r", 1, [2]], ["r", 2, [1]]], crash=10.0)
    assert v["valid"] is False and v["lost"] == 1


def test_an_anomaly_the_promise_forbids_fails_one_it_allows_is_reported():
    # two transactions read x empty and both append (a lost update): allowed by read committed
    txns = [(0, "ok", [["r", 1, []], ["append", 1, 1]], 0.0, 1.0),
            (1, "ok", [["r", 1, []], ["append", 1, 2]], 0.0, 1.0)]
    rc = _run(txns, [["r", 1, [1, 2]]])
    assert rc["valid"] is True and "lost-update" in rc["details"]["found"]
    assert any(e["type"] == "lost-update" for e in rc["details"]["examples"])
    ss = _run(txns, [["r", 1, [1, 2]]], models=("strict-serializable",))
    assert ss["valid"] is False and "lost-update" in ss["anomaly_types"]
    # the cycle behind it (T1 appended first, T2 after it without having seen it)
    (ex,) = [e for e in ss["details"]["examples"] if e["type"] == "G-single-item"]
    assert ex["svg"].startswith("<svg") and "a contradiction!" in ex["explanation"]


def test_a_register_run_is_judged_without_a_list_durability_check():
    h = History("rw_register", {"model": "rw-register"})
    h.add(0, "txn", [["w", 1, 1]], "ok", 0.0, 1.0, "sql1")
    h.add(1, "txn", [["r", 1, 1], ["w", 1, 2]], "ok", 2.0, 3.0, "sql1")
    h.add(FINAL_PROCESS, "txn", [["r", 1, 2], ["r", 2, None]], "ok", 50.0, 51.0, "sql1")
    v = check_history(h, None, {"consistency_models": ["read-committed"]}).to_json()["checks"]["transactions"]
    assert v["valid"] is True and v["lost"] == 0 and v["details"]["model"] == "rw-register"
