"""The native driver's own binary-protocol path (each COM_STMT_EXECUTE and its reply, on the
socket libmariadb connected and prepared), against a scripted server (tests/unit/fake_mysqld.py):
the replies it must take in step, and the exact outcome of each way a statement can fail."""

import struct
import threading
import time

import pytest

from ndbchaos.history import History, Recorder
from ndbchaos.workload import get_workload
from ndbchaos.workload import native as N
from ndbchaos.workload import runner as R

from .fake_mysqld import FakeMysqld

READ_TIMEOUT = 1.0  # seconds: the C loop puts it on the socket as SO_RCVTIMEO



def _run(fake, name, until, table_size=100, timeout=10.0):
    """Run one native connection against ``fake`` until ``until(fake)`` holds (or ``timeout``)."""
    stop = threading.Event()
    o = R.ClientOptions(engine="galera", driver="native", read_timeout=READ_TIMEOUT, write_timeout=READ_TIMEOUT,
                        backoff_min=0.01, backoff_max=0.02)
    rec = Recorder()

    def watch():
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end and not until(fake):
            time.sleep(0.005)
        stop.set()

    threading.Thread(target=watch, daemon=True).start()
    wl = get_workload(name, table_size=table_size, create=False)
    count = N.connection_loop(wl, 1, 4, [R.Endpoint("a", fake.port)], o, time.monotonic(), stop, rec, [-1.0] * 4,
                              {"a": 0})
    fake.close()
    return count, list(History.merge("oltp", {}, [rec])), wl


def _executed(n):
    return lambda fake: len(fake.executes) >= n


def _parse(payload: bytes, params: int):
    """(stmt_id, types or None, values as raw bytes) of a COM_STMT_EXECUTE payload."""
    assert payload[0] == 0x17
    stmt_id, flags, iterations = struct.unpack_from("<IBI", payload, 1)
    assert flags == 0 and iterations == 1
    at = 10 + (params + 7) // 8
    assert payload[10:at] == b"\0" * ((params + 7) // 8)  # no NULL parameter
    bound = payload[at]
    at += 1
    types = None
    if bound:
        types = [payload[at + 2 * i] for i in range(params)]
        at += 2 * params
    return stmt_id, types, payload[at:]


@pytest.mark.parametrize("mariadb", [False, True], ids=["mysql", "mariadb-metadata-cache"])
def test_point_select_replies_are_taken_in_step_whatever_their_shape(native_lib, mariadb):
    script = ["row", "empty", "bytewise", "progress", "meta", "empty", "row"]
    fake = FakeMysqld(script, mariadb=mariadb)
    count, ops, _ = _run(fake, "oltp_point_select", _executed(len(script) + 20))
    assert [o.type for o in ops] == ["ok"] * len(ops) and count == len(ops) >= len(script) + 20
    assert fake.connections == 1  # never out of step, never reconnected
    ids = []
    for i, (conn, payload) in enumerate(fake.executes):
        stmt_id, types, values = _parse(payload, 1)
        assert conn == 1 and stmt_id == 5
        assert types == ([8] if i == 0 else None)  # the types once (LONGLONG), then the server keeps them
        (ident,) = struct.unpack("<q", values)
        ids.append(ident)
    assert all(1 <= x <= 100 for x in ids) and len(set(ids)) > 10
    assert [o.value for o in ops] == ids[:len(ops)]


def test_a_server_error_is_recorded_as_sent_and_the_connection_kept(native_lib):
    fake = FakeMysqld(["row", "err", "row"])
    _, ops, _ = _run(fake, "oltp_point_select", _executed(6))
    assert [o.type for o in ops[:3]] == ["ok", "fail", "ok"]
    e = ops[1].error
    assert (e.errno, e.message, e.cls) == (1146, "Table 'ndbchaos.sbtest1' doesn't exist", "permanent")
    assert fake.connections == 1
    types = [_parse(p, 1)[1] for _, p in fake.executes[:3]]
    assert types == [[8], None, [8]]  # after a failure the next execution states the types again


@pytest.mark.parametrize("name,typ", [("oltp_point_select", "fail"), ("oltp_update_non_index", "info")])
def test_no_reply_within_the_read_timeout_is_a_lost_connection(native_lib, name, typ):
    fake = FakeMysqld(["silent"], default="ok" if typ == "info" else "row",
                      params=2 if typ == "info" else 1, columns=0 if typ == "info" else 1)
    _, ops, _ = _run(fake, name, lambda f: f.connections >= 2 and len(f.executes) >= 3)
    first = ops[0]
    assert first.type == typ and first.error.errno == 2013 and first.error.cls == "unknown"
    assert first.error.message == "Lost connection to server during query"
    # the read timeout bounds the wait (SO_RCVTIMEO = read_timeout); the 0.5 s margin is scheduling
    assert READ_TIMEOUT - 0.05 <= first.end - first.start <= READ_TIMEOUT + 0.5
    assert fake.connections >= 2 and all(o.type == "ok" for o in ops[1:])  # a fresh connection
    if typ == "info":  # Jepsen: the process of an indeterminate write is retired
        assert ops[1].process == first.process + 4


def test_a_closed_connection_and_a_result_cut_off_drop_the_connection(native_lib):
    fake = FakeMysqld(["row", "close", "cut", "row"])
    _, ops, _ = _run(fake, "oltp_point_select", lambda f: f.connections >= 3 and len(f.executes) >= 5)
    assert [o.type for o in ops[:4]] == ["ok", "fail", "fail", "ok"]
    lost, cut = ops[1].error, ops[2].error
    assert (lost.errno, lost.message) == (2013, "Lost connection to server during query")
    assert (cut.errno, cut.message) == (1927, "Connection was killed")  # the server's words
    assert fake.connections >= 3  # each failure started a new connection


def test_an_update_sends_a_string_of_the_pool_and_the_id(native_lib):
    fake = FakeMysqld(default="ok", params=2, columns=0)
    count, ops, wl = _run(fake, "oltp_update_non_index", _executed(50))
    assert count == len(ops) >= 50 and all(o.type == "ok" for o in ops)
    pool = {s.encode() for s in wl._c_str}
    for i, (_, payload) in enumerate(fake.executes[:len(ops)]):
        _, types, values = _parse(payload, 2)
        assert types == ([0xfe, 8] if i == 0 else None)  # STRING, LONGLONG
        n = values[0]
        assert n < 251 and values[1:1 + n] in pool
        (ident,) = struct.unpack("<q", values[1 + n:])
        assert ident == ops[i].value and 1 <= ident <= 100
