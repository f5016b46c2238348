"""The native client driver (ndbchaos.workload.native): which workloads it takes, the struct it
shares with ndc.c, the bulk recording (the same columns as Recorder.record), and the failure path
of the C loop against a port where nothing listens (no database needed)."""

import ctypes
import socket
import threading
import time

import pytest

from ndbchaos.errors import UsageError
from ndbchaos.history import History, Recorder
from ndbchaos.workload import get_workload
from ndbchaos.workload import native as N
from ndbchaos.workload import runner as R



def test_plan_takes_the_single_statement_oltp_events_with_the_python_statements():
    for name, op, sql, write in (
            ("oltp_point_select", N.OP_SELECT_ROWS, "SELECT c FROM sbtest1 WHERE id=?", False),
            ("oltp_update_non_index", N.OP_UPDATE_STR_ID, "UPDATE sbtest1 SET c=? WHERE id=?", True),
            ("oltp_update_index", N.OP_UPDATE_ID, "UPDATE sbtest1 SET k=k+1 WHERE id=?", True)):
        wl = get_workload(name, table_size=50)
        got_op, got_sql, pool, is_write, f = N.plan(wl)
        assert (got_op, got_sql, is_write, f) == (op, sql, write, wl.params["mode"])
        if op == N.OP_UPDATE_STR_ID:  # the new c values: the workload's own 1024 strings, in order
            assert pool == b"".join(s.encode() for s in wl._c_str) and len(pool) == 1024 * 119


@pytest.mark.parametrize("name,params,why", [
    ("ledger", {}, "no native implementation"),
    ("oltp_read_write", {}, "oltp mode read_write"),
    ("oltp_point_select", {"ps": False}, "prepared statements only"),
    ("oltp_update_non_index", {"non_index_updates": 2}, "one update per event"),
])
def test_plan_refuses_what_it_would_not_run_like_the_python_client(name, params, why):
    with pytest.raises(N.NativeUnavailable, match=why):
        N.plan(get_workload(name, **params))


def test_resolve_driver_falls_back_with_a_note_and_rejects_unknown_names(caplog):
    wl = get_workload("ledger")
    py = R.ClientOptions()
    assert N.resolve_driver(py, wl) is py
    got = N.resolve_driver(R.ClientOptions(driver="native"), wl)
    assert got.driver == "python" and "native client driver not used for ledger" in caplog.text
    with pytest.raises(UsageError, match="unknown client driver"):
        N.resolve_driver(R.ClientOptions(driver="rust"), wl)


def test_missing_build_is_reported_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("NDBCHAOS_TOOLS", str(tmp_path))
    monkeypatch.setattr(N, "_lib", None)
    with pytest.raises(N.NativeUnavailable, match="not built for this source"):
        N.load()
    assert "\n" not in N.supported(get_workload("oltp_point_select"))


def test_the_struct_matches_the_c_layout_and_ids_are_uniform_over_the_table(native_lib):
    assert native_lib.ndc_struct_size() == ctypes.sizeof(N.Ndc)
    s = N.Ndc()
    s.n = 7
    native_lib.ndc_seed(ctypes.byref(s), 42)
    draws = [native_lib.ndc_draw(ctypes.byref(s)) for _ in range(7000)]
    assert set(draws) == set(range(1, 8))
    assert all(600 < draws.count(i) < 1400 for i in range(1, 8))
    s2 = N.Ndc()
    s2.n = 7
    native_lib.ndc_seed(ctypes.byref(s2), 42)
    assert [native_lib.ndc_draw(ctypes.byref(s2)) for _ in range(100)] == draws[:100]


def test_a_folded_batch_equals_the_same_ops_recorded_one_by_one():
    folder = N.Folder(16)
    n = 10
    for i in range(n):
        folder.start[i], folder.end[i], folder.value[i] = i * 0.5, i * 0.5 + 0.1, 100 + i
    rec = Recorder()
    rec.record(3, "point_select", 1, "fail", 0.0, 0.01, "sql1", None)  # buffered before the batch
    folder.fold(rec, n, 7, "point_select", "sql2")
    ref = Recorder()
    ref.record(3, "point_select", 1, "fail", 0.0, 0.01, "sql1", None)
    for i in range(n):
        ref.record(7, "point_select", 100 + i, "ok", i * 0.5, i * 0.5 + 0.1, "sql2", None)
    a, b = list(History.merge("oltp", {}, [rec])), list(History.merge("oltp", {}, [ref]))
    assert a == b
    slow = N.Folder(16)
    slow.direct = False  # the generic path, taken if the column set ever changes
    for i in range(n):
        slow.start[i], slow.end[i], slow.value[i] = i * 0.5, i * 0.5 + 0.1, 100 + i
    rec2 = Recorder()
    rec2.record(3, "point_select", 1, "fail", 0.0, 0.01, "sql1", None)
    slow.fold(rec2, n, 7, "point_select", "sql2")
    assert list(History.merge("oltp", {}, [rec2])) == b


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _run(name, endpoints, seconds=0.3, **opts):
    stop = threading.Event()
    threading.Timer(seconds, stop.set).start()
    o = R.ClientOptions(engine="galera", driver="native", backoff_min=0.01, backoff_max=0.02, **opts)
    rec = Recorder()
    live = [-1.0] * (4 * len(endpoints))  # a row per connection (4 slots), as WorkloadRunner.live
    idx = {e.node: i for i, e in enumerate(endpoints)}
    count = N.connection_loop(get_workload(name, table_size=100), 1, 4, endpoints, o, time.monotonic(), stop,
                              rec, live, idx)
    return count, list(History.merge("oltp", {}, [rec])), live


@pytest.mark.parametrize("name", ["oltp_point_select", "oltp_update_non_index"])
def test_connect_refused_is_a_recorded_failure_never_an_indeterminate_write(native_lib, name):
    count, ops, live = _run(name, [R.Endpoint("a", _closed_port())])
    assert count == 0 and len(ops) >= 3 and live == [-1.0] * 4
    for o in ops:
        assert o.type == "fail" and o.process == 1 and o.node == "a"  # never sent: not retired
        assert o.error.errno in (2002, 2003) and o.error.cls == "temporary" and o.error.message
        assert 1 <= o.value <= 100 and o.end >= o.start
    assert len({o.value for o in ops}) > 1  # every attempt is a new op (no retries asked)


def test_failover_and_retries_on_refused_connections(native_lib):
    eps = [R.Endpoint("a", _closed_port()), R.Endpoint("b", _closed_port())]
    _, ops, _ = _run("oltp_point_select", eps, failover=True, retries=1)
    assert [o.node for o in ops[:4]] == ["b", "a", "b", "a"]  # slot 1 starts on the second
    # a temporary error is retried once with the same id, then a new op is drawn
    assert ops[0].value == ops[1].value and len({o.value for o in ops}) >= len(ops) // 2


def test_bench_config_rejects_an_unknown_driver():
    from ndbchaos.bench.load import _driver_line
    from ndbchaos.bench.config import BenchConfig
    with pytest.raises(UsageError, match="--driver"):
        _driver_line(BenchConfig(driver="go"), print)


def test_the_bench_runs_native_connections_as_threads_of_one_process():
    from ndbchaos.bench.config import BenchConfig, ab_split, bench_cores, split_threads
    native, python = BenchConfig(driver="native"), BenchConfig(driver="python")
    assert split_threads(4, None, bench_cores(native)) == (1, 4)
    assert ab_split(4, None, bench_cores(native)) == (1, 2)
    assert split_threads(4, None, bench_cores(python)) == split_threads(4)
    assert split_threads(4, 2, bench_cores(native)) == (2, 2)  # --processes still decides
