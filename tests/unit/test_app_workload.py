"""A project's own workload (ndbchaos.workload.app), with the example project's (examples/app):
its declaration checked, registered by decorator, entry point, reference or class, rebuilt by
reference in a fresh interpreter as a worker process does, run by the client loop (idempotent
retries), and judged like the built-in workloads. No database: fake cursors and hand-made
histories."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from ndbchaos import workload as W
from ndbchaos.checks import check_history
from ndbchaos.cli import main
from ndbchaos.errors import UsageError
from ndbchaos.history import ErrorInfo, History, Recorder
from ndbchaos.workload import app as A
from ndbchaos.workload import runner as R

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "app"
LOST = ErrorInfo(2013, None, "unknown", "Lost connection to MySQL server during query")
APP_REFUSAL = ErrorInfo(0, None, "permanent", "item 3: 0 left, 2 ordered")


@pytest.fixture
def orders(monkeypatch):
    """The example project's workload class (its package importable as if installed)."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from orders_app.chaos import Orders
    yield Orders
    W.WORKLOADS.pop("orders", None)


# -- the declaration --------------------------------------------------------------------------

def _cls(**attrs):
    body = {"name": "toy", "operations": (A.Operation("put", "write", key="k"),), "schema": lambda self, t: [],
            "put": lambda self, cur, v: None, "final_keys": lambda self, cur: [], **attrs}
    return type("Toy", (A.AppWorkload,), body)


@pytest.mark.parametrize("attrs, message", [
    ({"name": "two words"}, "its name must be an identifier"),
    ({"operations": ()}, "declares no operations"),
    ({"operations": (A.Operation("put", "update"),)}, "kind 'update'"),
    ({"operations": (A.Operation("put", "write", weight=0),)}, "weight must be a positive number"),
    ({"operations": (A.Operation("put", "read", key="k"),)}, "a key is declared by a write"),
    ({"operations": (A.Operation("get", "read"),)}, "operation get has no method get(self, cur, value)"),
    ({"operations": (A.Operation("final_keys", "read"),)}, "operation name 'final_keys'"),
    ({"operations": (A.Operation("put", "write"), A.Operation("put", "write"))}, "operation put is declared twice"),
    ({"final_keys": A.AppWorkload.final_keys}, "final_keys(self, cur) is needed"),
    ({"defaults": {"declared": 1}}, "the parameter name 'declared' is the framework's"),
    ({"schema": A.AppWorkload.schema}, "has no schema()"),
])
def test_a_slip_in_the_declaration_is_one_line(attrs, message):
    with pytest.raises(UsageError) as e:
        _cls(**attrs)()
    assert message in str(e.value) and "\n" not in str(e.value)


def test_the_mix_the_keys_and_what_is_recorded(orders):
    wl = orders()
    rng = random.Random(1)
    ops = [wl.next_op(rng, 3) for _ in range(4000)]
    counts = {f: sum(1 for o in ops if o[0] == f) for f in ("place_order", "stock_level", "audit")}
    assert 3400 < counts["place_order"] < 3800 and 300 < counts["stock_level"] < 500 and counts["audit"] < 60
    keys = [v["order_id"] for f, v, w in ops if f == "place_order"]
    assert len(set(keys)) == len(keys) and min(keys) > 4 * A.KEY_SPAN  # slot 3: its own range
    assert all(w is (f == "place_order") for f, _, w in ops)
    assert wl.final_reads() == [("final_state", None), ("final_keys", None)]
    assert wl.redo_indeterminate("place_order") == 3 and wl.redo_indeterminate("stock_level") == 0
    name, params, ref = wl.spec()
    assert (name, ref) == ("orders", "orders_app.chaos:Orders") and params == orders.defaults
    decl = wl.header_params()["declared"]
    assert decl["ref"] == ref and decl["final_keys"] and decl["final_state"]
    assert [o["name"] for o in decl["operations"] if o["key"]] == ["place_order"]


def test_a_keyed_operation_needs_its_key_in_the_argument():
    cls = _cls(generate=lambda self, op, rng, slot: {"id": 1})
    with pytest.raises(UsageError, match="argument must be a dict with an integer 'k'"):
        cls()._check_arguments()


# -- registration -----------------------------------------------------------------------------

def test_registered_by_decorator_name_reference_or_class(orders):
    assert W.workload_class(orders) is orders and W.get_workload("orders").name == "orders"
    W.WORKLOADS.pop("orders")
    assert W.workload_class("orders_app.chaos:Orders") is orders
    other = type("Orders", (orders,), {"__module__": "elsewhere"})
    with pytest.raises(UsageError, match="workload name 'orders' is taken by orders_app.chaos:Orders"):
        A.register_workload(other)
    with pytest.raises(UsageError, match="cannot be imported here"):
        W.workload_class("no_such_module:Thing")


def test_found_through_the_entry_point_group(orders, monkeypatch):
    W.WORKLOADS.pop("orders", None)
    eps = [EntryPoint("orders", "orders_app.chaos:Orders", W.ENTRY_POINTS),
           EntryPoint("mislabelled", "orders_app.chaos:Orders", W.ENTRY_POINTS)]
    monkeypatch.setattr(W, "_entry_points", lambda: eps)
    assert W.get_workload("orders", items=3).params["items"] == 3
    with pytest.raises(UsageError, match="whose name is 'orders': the two must be the same"):
        W.workload_class("mislabelled")
    with pytest.raises(UsageError) as e:
        W.workload_class("nothing")
    assert "mislabelled" in str(e.value) and "ledger" in str(e.value)


def test_a_worker_process_rebuilds_it_from_its_spec(orders):
    """A spawned worker starts with no registry: the spec's reference imports the class again."""
    spec = orders().spec()
    code = ("import sys, json; from ndbchaos.workload import get_workload, workload_class\n"
            "spec = json.loads(sys.argv[1]); workload_class(spec[2])\n"
            "wl = get_workload(spec[0], **spec[1]); print(wl.name, wl.params['items'])")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE), str(REPO)])}
    r = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], capture_output=True, text=True, env=env,
                       cwd=EXAMPLE, timeout=60)
    assert r.returncode == 0 and r.stdout.split() == ["orders", "20"], r.stderr


# -- transactions and the client loop --------------------------------------------------------

class Cursor:
    """Statements recorded; the one named in ``fail`` raises a lost connection."""

    def __init__(self, fail=None):
        self.sql, self.fail = [], fail

    def execute(self, sql, params=None):
        self.sql.append(sql.split()[0])
        if self.fail and sql.startswith(self.fail):
            raise ConnectionError("Lost connection to MySQL server during query")


def test_transaction_outcomes():
    cur = Cursor(fail="UPDATE")
    with pytest.raises(A.Aborted) as e:  # before COMMIT: rolled back, a definite failure
        with A.transaction(cur):
            cur.execute("UPDATE t")
    assert e.value.outcome == "fail" and isinstance(e.value.cause, ConnectionError)
    assert cur.sql == ["START", "UPDATE", "ROLLBACK"]
    cur = Cursor(fail="COMMIT")
    with pytest.raises(ConnectionError):  # COMMIT's own error: left to the runner (unknown outcome)
        with A.transaction(cur):
            cur.execute("UPDATE t")
    assert cur.sql == ["START", "UPDATE", "COMMIT"]
    cur = Cursor()
    with pytest.raises(A.Rejected):
        with A.transaction(cur):
            raise A.Rejected("out of stock")
    assert cur.sql == ["START", "ROLLBACK"]


class Put(A.AppWorkload):
    name = "put_toy"
    operations = (A.Operation("put", "write", key="k", idempotent=True), A.Operation("bump", "write"))

    def schema(self, table_engine):
        return []

    def generate(self, op, rng, slot):
        return {"k": self.next_key(slot)}

    def put(self, cur, value):
        cur.execute("INSERT INTO t")

    def bump(self, cur, value):
        cur.execute("UPDATE t")

    def final_keys(self, cur):
        return []


class Conn:
    """Every statement's outcome from ``plan`` (None: ok, else an errno); stops after ``limit``."""

    def __init__(self, plan, stop, limit, seen):
        self.plan, self.stop, self.limit, self.seen = plan, stop, limit, seen

    def cursor(self):
        return self

    def execute(self, sql, params=None):
        self.seen.append(sql)
        if len(self.seen) >= self.limit:
            self.stop.set()
        out = self.plan.pop(0) if self.plan else None
        if out:
            class E(Exception):
                errno, msg = out, "Lost connection to MySQL server during query"
            raise E(E.msg)

    def close(self):
        pass


@pytest.mark.parametrize("op, redone", [("put", True), ("bump", False)])
def test_an_idempotent_operation_of_unknown_outcome_is_done_again(monkeypatch, op, redone):
    stop, seen = threading.Event(), []
    monkeypatch.setattr(R, "connect", lambda *a, **k: Conn([None, 2013, None], stop, 3, seen))
    wl = Put()
    monkeypatch.setattr(wl, "next_op", lambda rng, slot, _n=iter(range(1, 99)): (op, {"k": next(_n)}, True))
    rec = Recorder()
    o = R.ClientOptions(engine="galera", backoff_min=0.0, backoff_max=0.0)
    R._connection_loop(wl, 0, 4, [R.Endpoint("a", 1)], o, time.monotonic(), stop, rec, [-1.0], {"a": 0})
    ops = list(History.merge("put_toy", {}, [rec]))
    got = [(o.f, o.value["k"], o.type, o.process) for o in ops]
    assert got[:2] == [(op, 1, "ok", 0), (op, 2, "info", 0)]
    # the retired process (0 -> 4) does the same operation again, or a new one
    assert got[2] == (op, 2 if redone else 3, "ok", 4)


# -- the verdict -------------------------------------------------------------------------------

def _run(orders, lost=(), bad_final=False, extra=()):
    wl = orders()
    h = History("orders", {**wl.header_params(), "engine": "galera"})
    t = 0.0
    for k in range(1, 61):
        t += 0.05
        value = {"order_id": A.KEY_SPAN + k, "item": k % 20, "qty": 1}
        typ, err = ("info", LOST) if k == 30 else ("ok", None)
        h.add(0, "place_order", value if err else {**value, "result": 10}, typ, t, t + 0.01, "sql1", err)
        h.add(1, "stock_level", {"item": 1} if k % 7 else 999_999, "ok", t, t + 0.01, "sql2")
    h.add(2, "place_order", {"order_id": 2 * A.KEY_SPAN + 1, "item": 3, "qty": 2}, "fail", 3.1, 3.2, "sql2",
          APP_REFUSAL)
    for op in extra:
        h.add(*op)
    ids = [A.KEY_SPAN + k for k in range(1, 61) if k != 30 and A.KEY_SPAN + k not in lost]
    ordered = {str(i): 3 for i in range(20)}
    stock = {str(i): 1_000_000 - 3 - (1 if bad_final and i == 5 else 0) for i in range(20)}
    h.add(-1, "final_state", {"stock": stock, "ordered": ordered}, "ok", 4.0, 4.1, "sql1")
    h.add(-1, "final_keys", ids, "ok", 4.2, 4.3, "sql1")
    return h


def test_judged_like_the_built_in_workloads(orders):
    v = check_history(_run(orders)).to_json()
    assert v["valid"] is True, v["summary"]
    assert set(v["checks"]) == {"availability", "latency", "errors", "durability", "invariant"}
    d = v["checks"]["durability"]
    assert d["lost"] == 0 and d["indeterminate"] == 1 and d["details"]["operations"] == ["place_order"]
    assert v["checks"]["invariant"]["details"]["final_state"] is True
    assert v["checks"]["errors"]["valid"] is True  # the shop's refusal is not the database's error


def test_a_lost_order_and_a_broken_invariant_fail_it(orders):
    v = check_history(_run(orders, lost={A.KEY_SPAN + 7}, bad_final=True)).to_json()
    assert v["valid"] is False
    assert v["checks"]["durability"]["lost"] == 1
    inv = v["checks"]["invariant"]
    assert inv["valid"] is False and "item 5: 999996 in stock + 3 ordered" in inv["summary"]


def test_an_audit_that_breaks_the_invariant_during_the_run(orders):
    bad = {"stock": {str(i): 5 for i in range(20)}, "ordered": {}}
    v = check_history(_run(orders, extra=[(3, "audit", bad, "ok", 2.0, 2.1, "sql2")])).to_json()
    assert v["checks"]["invariant"]["valid"] is False and v["checks"]["invariant"]["bad"] == 1


def test_ndbchaos_check_judges_the_saved_run_again(orders, tmp_path, capsys):
    p = tmp_path / "orders.jsonl"
    _run(orders).write_jsonl(p)
    assert main(["check", str(p), "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["checks"]["invariant"]["valid"] is True


def test_without_the_projects_code_the_invariant_is_unknown_and_durability_still_judged(orders, tmp_path):
    h = _run(orders, lost={A.KEY_SPAN + 7})
    h.params["declared"]["ref"] = "gone_app.chaos:Orders"
    W.WORKLOADS.pop("orders", None)
    v = check_history(h).to_json()
    inv = v["checks"]["invariant"]
    assert inv["valid"] == "unknown" and "cannot be imported" in inv["summary"]
    assert v["checks"]["durability"]["lost"] == 1 and v["valid"] is False
