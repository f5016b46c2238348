"""The history: recording, merging, ordering, and the JSON Lines interchange format."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from ndbchaos.history import (ErrorInfo, History, HistoryFormatError, Op, Recorder, _FLUSH_AT)

E_TMP = ErrorInfo(1297, 4010, "temporary", "Got temporary error 4010 'Node failure' from NDBCLUSTER")
E_UNK = ErrorInfo(2013, None, "unknown", "Lost connection to MySQL server during query")


def ops_of(h: History) -> list[tuple]:
    return [(o.process, o.f, o.value, o.type, o.start, o.end, o.node, o.error) for o in h]


def test_recorder_buffers_and_flushes_in_order():
    r = Recorder()
    n = 3 * _FLUSH_AT + 17
    for i in range(n):
        if i % 5 == 0:
            r.record(i % 7, "read", [i, i + 1], "ok", i * 0.001, i * 0.001 + 0.0005, "sql2", None)
        elif i % 11 == 0:
            r.record(i % 7, "insert", i, "info", i * 0.001, i * 0.001 + 0.0005, None, E_UNK)
        else:
            r.record(i % 7, "insert", i, "ok", i * 0.001, i * 0.001 + 0.0005, "sql1", None)
    assert len(r) == n
    assert r.value(0) == [0, 1]  # a packed int list reads back as a list
    assert r.value(1) == 1
    assert r.error(11) == E_UNK and r.error(1) is None
    op = r.op(11)
    assert (op.f, op.type, op.node) == ("insert", "info", None)
    r2 = Recorder.from_bytes(r.to_bytes())
    assert len(r2) == n and r2.value(5) == [5, 6] and r2.error(11) == E_UNK


def test_recorder_mixed_values_and_big_ints():
    r = Recorder()
    vals = [1, None, {"from": 1, "to": 2, "amount": 3}, 2**70, -5, [1, "x"], [], "s", True, [True, 2], 2**63 - 1]
    for k, v in enumerate(vals):
        r.record(0, "op", v, "ok", float(k), float(k) + 1, "n", None)
    assert [r.value(k) for k in range(len(vals))] == vals
    assert type(r.value(8)) is bool and type(r.value(9)[0]) is bool


def test_recorder_bad_op_raises_and_keeps_columns_consistent():
    r = Recorder()
    r.record(0, "insert", 1, "ok", 0.0, 1.0, "n", None)
    r.record(0, "insert", 2, "maybe", 0.0, 1.0, "n", None)  # buffered: not checked yet
    with pytest.raises(KeyError):
        r.flush()
    assert len(r) == 1 and len(r.end) == len(r.ival) == len(r.errno) == 1


def test_merge_orders_by_end_and_remaps_names():
    a, b = Recorder(), Recorder()
    a.record(1, "insert", 10, "ok", 0.0, 3.0, "sql1", None)
    a.record(1, "read", [10], "ok", 3.0, 3.5, "sql1", None)
    b.record(2, "transfer", {"x": 1}, "fail", 0.5, 1.0, "sql2", E_TMP)
    b.record(2, "insert", 11, "ok", 1.0, 3.0, "sql1", None)  # same end as a's first op, later start
    h = History.merge("ledger", {"k": 1}, [a, b])
    got = [(o.process, o.f, o.end) for o in h]
    assert got == [(2, "transfer", 1.0), (1, "insert", 3.0), (2, "insert", 3.0), (1, "read", 3.5)]
    assert [o.index for o in h] == [0, 1, 2, 3]
    assert next(iter(h)).error == E_TMP


def test_order_large_history_uses_the_same_rule():
    h = History("x")
    import random
    rng = random.Random(3)
    rows = [(rng.randint(0, 50) / 10, rng.randint(0, 50) / 10) for _ in range(5000)]
    for k, (s, e) in enumerate(rows):
        h.add(k, "f", k, "ok", min(s, e), max(s, e))
    expect = sorted(range(len(rows)), key=lambda i: (max(rows[i]), min(rows[i])))
    assert list(h.order()) == expect
    h.add(9999, "f", 1, "ok", 0.0, 0.0)  # order is recomputed after add
    assert h.order()[0] == 5000


def test_jsonl_round_trip_plain_and_gzip(tmp_path):
    h = History("ledger", {"rate": 50, "nested": {"a": [1, 2]}})
    h.add(1, "insert", 7, "ok", 0.1234567, 0.2, "sql1")
    h.add(2, "insert", 8, "info", 0.1, 0.3, "sql2", E_UNK)
    h.add(3, "read", [7, 8], "ok", 0.4, 0.5, "sql1")
    h.add(4, "read", None, "fail", 0.4, 0.6, None, ErrorInfo(None, None, None, "weird"))
    for name in ("h.jsonl", "h.jsonl.gz"):
        p = tmp_path / name
        h.write_jsonl(p)
        h2 = History.read_jsonl(p)
        assert (h2.workload, h2.params) == (h.workload, h.params)
        assert ops_of(h2) == [(p_, f, v, t, round(s, 6), round(e, 6), n, err)
                              for p_, f, v, t, s, e, n, err in ops_of(h)]
    # gzip is detected by magic bytes, not by name
    raw = (tmp_path / "h.jsonl.gz").read_bytes()
    (tmp_path / "plain-name.jsonl").write_bytes(raw)
    assert len(History.read_jsonl(tmp_path / "plain-name.jsonl")) == 4


def test_dump_lines_are_the_documented_json():
    h = History("ledger", {})
    h.add(1, "insert", 7, "info", 1.0, 2.5, "sql1", E_UNK)
    buf = io.StringIO()
    h.dump(buf)
    head, line = buf.getvalue().splitlines()
    assert json.loads(head) == {"history": 1, "workload": "ledger", "params": {}}
    assert json.loads(line) == {"process": 1, "f": "insert", "value": 7, "type": "info", "start": 1.0, "end": 2.5,
                                "node": "sql1", "error": {"errno": 2013, "engine_code": None, "class": "unknown",
                                                          "message": "Lost connection to MySQL server during query"}}
    assert Op(0, 1, "insert", 7, "info", 1.0, 2.5, "sql1", E_UNK).to_json() == json.loads(line)


HEADER = '{"history": 1, "workload": "ledger", "params": {}}\n'
GOOD = '{"process": 1, "f": "insert", "value": 1, "type": "ok", "start": 0.1, "end": 0.2, "node": "a", "error": null}\n'


def _write(tmp_path, text: str, gz: bool = False, name: str = "h.jsonl"):
    p = tmp_path / name
    if gz:
        p.write_bytes(gzip.compress(text.encode()))
    else:
        p.write_text(text)
    return p


@pytest.mark.parametrize("text, where, what", [
    ("", ":1:", "empty"),
    ("not json\n" + GOOD, ":1:", "header is not JSON"),
    ('{"workload": "ledger"}\n', ":1:", "header must be"),
    ('{"history": 2, "workload": "ledger"}\n', ":1:", "unsupported history format version 2"),
    ('{"history": 1, "workload": "ledger", "params": [1]}\n', ":1:", "params must be an object"),
    (HEADER + GOOD + GOOD + "{oops\n" + GOOD, ":4:", "not JSON"),
    (HEADER + GOOD + GOOD.replace('"ok"', '"maybe"'), ":3:", "type must be ok, fail or info"),
    (HEADER + GOOD.replace('"end": 0.2', '"end": 0.05'), ":2:", "end 0.05 is before start 0.1"),
    (HEADER + GOOD.replace('"process": 1, ', ''), ":2:", "missing field 'process'"),
    (HEADER + GOOD.replace('"start": 0.1', '"start": "0.1"'), ":2:", "finite numbers"),
    (HEADER + GOOD.replace('"start": 0.1', '"start": NaN'), ":2:", "finite numbers"),
    (HEADER + GOOD.replace('"node": "a"', '"node": 3'), ":2:", "node must be"),
    (HEADER + GOOD.replace('"error": null', '"error": {"class": "bad"}'), ":2:", "error class"),
    (HEADER + GOOD.replace('"value": 1', '"value": "x"'), ":2:", "ledger insert value must be the integer id"),
    (HEADER + GOOD + '{"process": 1, "f": "read", "value": 5, "type": "ok", "start": 1, "end": 2}\n', ":3:",
     "ledger ok read value must be the list"),
    (HEADER + GOOD + "[1, 2]\n", ":3:", "must be a JSON object"),
    (HEADER + GOOD + "\n\n" + GOOD + "1, 2\n", ":6:", "not JSON"),
])
def test_malformed_files_name_the_line(tmp_path, text, where, what):
    p = _write(tmp_path, text)
    with pytest.raises(HistoryFormatError) as ei:
        History.read_jsonl(p)
    msg = str(ei.value)
    assert msg.startswith(str(p) + where), msg
    assert what in msg, msg


def test_blank_lines_are_skipped(tmp_path):
    p = _write(tmp_path, HEADER + GOOD + "\n   \n" + GOOD)
    assert len(History.read_jsonl(p)) == 2


def test_truncated_gzip_names_the_line(tmp_path):
    body = HEADER + GOOD * 3000
    data = gzip.compress(body.encode())
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(HistoryFormatError) as ei:
        History.read_jsonl(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}:"), msg
    line = int(msg.split(":")[1])
    assert 2 <= line <= 3001
    assert "truncated" in msg or "not JSON" in msg


def test_corrupt_gzip_and_binary_and_missing(tmp_path):
    data = bytearray(gzip.compress((HEADER + GOOD * 100).encode()))
    data[30:40] = b"\xff" * 10
    p = tmp_path / "c.gz"
    p.write_bytes(bytes(data))
    with pytest.raises(HistoryFormatError, match=r"c\.gz:\d+: "):
        History.read_jsonl(p)
    b = tmp_path / "b.jsonl"
    b.write_bytes(HEADER.encode() + b"\xff\xfe\n")
    with pytest.raises(HistoryFormatError, match=r"b\.jsonl:2: not UTF-8"):
        History.read_jsonl(b)
    with pytest.raises(HistoryFormatError, match="cannot open"):
        History.read_jsonl(tmp_path / "missing.jsonl")


def test_errno_zero_is_kept():
    """The bank workload records application failures with errno 0."""
    h = History.load(io.StringIO(HEADER.replace("ledger", "bank") + '{"process": 1, "f": "transfer", '
                                 '"value": {"from": 1, "to": 2, "amount": 3}, "type": "fail", "start": 1, "end": 2, '
                                 '"node": "a", "error": {"errno": 0, "engine_code": null, "class": "permanent", '
                                 '"message": "account 1 has 0"}}\n'))
    (op,) = list(h)
    assert op.error == ErrorInfo(0, None, "permanent", "account 1 has 0")


def test_packed_read_survives_pickle_merge_and_dump():
    r = Recorder()
    r.record(1, "read", list(range(5000)), "ok", 0.0, 1.0, None, None)
    r2 = Recorder.from_bytes(r.to_bytes())
    h = History.merge("ledger", {}, [r2, Recorder()])
    (op,) = list(h)
    assert op.value == list(range(5000)) and op.node is None
    buf = io.StringIO()
    h.dump(buf)
    assert json.loads(buf.getvalue().splitlines()[1])["value"][-1] == 4999


def test_history_over_an_unflushed_recorder():
    r = Recorder()
    for i in range(10):
        r.record(1, "insert", i, "ok", float(i), float(i) + 0.5, "a", None)
    h = History("ledger", {}, r)
    assert len(h) == 10 and [o.value for o in h] == list(range(10))
