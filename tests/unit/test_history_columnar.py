"""The columnar history file (docs/history-format.md 1.6): round trip with JSONL, the appender of
worker processes, torn and corrupt files, and ``ndbchaos check`` on it."""

from __future__ import annotations

import json
import os
import pickle
from array import array

import pytest

from ndbchaos.cli import main
from ndbchaos.history import (FINAL_PROCESS, Columns, ErrorInfo, History, HistoryAppender, HistoryFormatError,
                              Recorder)
from ndbchaos.history.columnar import LAZY_INTS, MAGIC, chunk_blocks, end_block, header_block, read_columnar
from ndbchaos.history.columns import _IntsRef

RUN = {"version": 1, "engine": "ndb", "scenario": {"name": "kill_one"}, "marks": {"fault": 1.5, "heal": None},
       "windows": [{"kind": "kill", "start": 1.0, "end": 2.0, "targets": ["ndbd-1"]}]}
BIG_READ = list(range(10, 10 + LAZY_INTS + 50))


def rich_history() -> History:
    """Every kind of field: int, big-int, object, list, packed and empty values; None node;
    errors with null numbers, errno 0, every class; retired process ids; the run header."""
    h = History("ledger", {"rate": 50, "processes": 3, "nested": {"a": [1, 2.5, None]}})
    h.run = RUN
    e_tmp = ErrorInfo(1297, 4010, "temporary", "Got temporary error 4010 \u00e9 'x'")
    e_unk = ErrorInfo(2013, None, "unknown", "Lost connection")
    e_null = ErrorInfo(None, None, None, "")
    e_app = ErrorInfo(0, None, "permanent", "insufficient funds")
    h.add(0, "insert", 1, "ok", 0.1, 0.2, "sql1", None)
    h.add(1, "insert", 2, "info", 0.15, 0.3, None, e_unk)
    h.add(1001, "insert", 3, "fail", 0.2, 0.31, "sql2", e_tmp)  # the process retired and replaced
    h.add(2, "insert", 2**70, "ok", 0.25, 0.33, "sql1", None)
    h.add(2, "insert", -(2**63), "ok", 0.26, 0.34, "sql1", None)  # NO_INT itself is an object value
    h.add(3, "read", [1, 3], "ok", 0.3, 0.4, "sql2", None)
    h.add(3, "read", BIG_READ, "ok", 0.31, 0.41, "sql3", None)
    h.add(3, "read", [], "ok", 0.32, 0.42, "sql3", None)
    h.add(3, "read", None, "fail", 0.33, 0.43, None, e_null)
    h.add(4, "note", {"k": [True, False, None], "s": "x\ny"}, "ok", 0.34, 0.44, "sql1", e_app)
    h.add(4, "note", [True, 1], "ok", 0.35, 0.45, "sql1", None)
    h.add(4, "note", {"big": [2**64, 1.5, {"n": -(2**65)}]}, "ok", 0.35, 0.46, "sql1", None)
    h.add(4, "note", "text", "info", 0.36, 0.36, "sql2", e_unk)
    h.add(FINAL_PROCESS, "read", [1, 2, 3], "ok", 5.0, 5.5, "sql1", None)
    h.add(-7, "note", 1.5, "ok", 0.05, 0.06, "sql1", None)
    return h


def ops(h: History) -> list:
    return [op.to_json() for op in h]


def test_round_trip_every_field_jsonl_and_columnar(tmp_path):
    h = rich_history()
    h.write(tmp_path / "a.jsonl")
    h.write(tmp_path / "a.nch")
    assert (tmp_path / "a.nch").read_bytes()[:8] == MAGIC
    hc = History.read(tmp_path / "a.nch")
    hj = History.read(tmp_path / "a.jsonl")
    assert (hc.workload, hc.params, hc.run) == (h.workload, h.params, RUN)
    assert ops(hc) == ops(hj) == ops(h)
    assert any(op.value == {"big": [2**64, 1.5, {"n": -(2**65)}]} for op in hj)  # not floats
    # columnar -> JSONL gives the same bytes as writing JSONL directly; and back again
    hc.write(tmp_path / "b.jsonl")
    assert (tmp_path / "b.jsonl").read_bytes() == (tmp_path / "a.jsonl").read_bytes()
    hj.write(tmp_path / "b.nch")
    assert ops(History.read(tmp_path / "b.nch")) == ops(h)
    # read_jsonl (the older entry point) reads both formats
    assert ops(History.read_jsonl(tmp_path / "a.nch")) == ops(h)


def test_format_by_name_or_argument(tmp_path):
    h = rich_history()
    h.write(tmp_path / "x.bin", format="columnar")
    assert (tmp_path / "x.bin").read_bytes()[:8] == MAGIC
    h.write(tmp_path / "y.nch", format="jsonl")
    assert (tmp_path / "y.nch").read_bytes()[:1] == b"{"
    assert ops(History.read(tmp_path / "y.nch")) == ops(History.read(tmp_path / "x.bin"))
    with pytest.raises(ValueError, match="unknown history format"):
        h.write(tmp_path / "z", format="parquet")


def test_big_read_stays_in_the_file_until_used(tmp_path):
    rich_history().write(tmp_path / "a.nch")
    h = History.read(tmp_path / "a.nch")
    refs = [v for v in h.cols.objs.values() if type(v) is _IntsRef]
    assert len(refs) == 1 and len(refs[0]) == len(BIG_READ)
    assert h.cols.value(next(k for k, v in h.cols.objs.items() if v is refs[0])) == BIG_READ


def test_sort_in_place_keeps_every_op(tmp_path):
    h = rich_history()
    before = ops(h)
    h.sort()
    assert list(h.order()) == list(range(len(h)))
    assert ops(h) == before


def test_big_read_survives_removal_of_its_file_and_pickle(tmp_path):
    h = rich_history()
    h.write(tmp_path / "a.nch")
    h2 = History.read_parts([tmp_path / "a.nch"])
    os.remove(tmp_path / "a.nch")  # a run's spools are removed once read
    assert ops(h2) == ops(h)
    cols = pickle.loads(pickle.dumps(h2.cols.objs))
    assert BIG_READ in [list(v) for v in cols.values() if isinstance(v, array)]


def test_unsorted_history_is_written_in_completion_order(tmp_path):
    h = rich_history()
    assert list(h.order()) != list(range(len(h)))
    h.write(tmp_path / "a.nch")
    h2 = History.read(tmp_path / "a.nch")
    assert list(h2.order()) == list(range(len(h2)))
    assert ops(h2) == ops(h)


def _spool(path, chunks: int, per: int = 5, start_id: int = 0, node: str = "sql1") -> list:
    w = HistoryAppender(path, "ledger", {"rate": 10})
    expect = []
    i = start_id
    for c in range(chunks):
        rec = Recorder()
        for _ in range(per):
            typ = "info" if i % 4 == 3 else "ok"
            err = ErrorInfo(2013, None, "unknown", "Lost connection") if typ == "info" else None
            rec.record(i % 3, "insert", i, typ, i * 0.01, i * 0.01 + 0.005, node, err)
            expect.append(i)
            i += 1
        assert w.append(rec) == per
    return w, expect


def test_appender_several_chunks_complete_file(tmp_path):
    p = tmp_path / "w0.nch"
    w, ids = _spool(p, 4)
    w.close()
    h = History.read(p)
    assert [op.value for op in h] == ids
    assert h.params == {"rate": 10}
    _, _, _, _, complete = read_columnar(p)
    assert complete


def test_appender_of_a_dead_process_torn_last_chunk(tmp_path):
    p = tmp_path / "w0.nch"
    w, ids = _spool(p, 3)
    w._fh.flush()
    size_before_last = os.path.getsize(p)
    rec = Recorder()
    rec.record(0, "insert", 999, "ok", 9.0, 9.1, "sql1", None)
    w.append(rec)
    w._fh.close()  # the process died: no end block, and its last chunk half written
    data = p.read_bytes()
    p.write_bytes(data[:size_before_last + (len(data) - size_before_last) // 2])
    h = History.read(p, torn="stop")  # a spool: up to its last complete chunk
    assert [op.value for op in h] == ids
    with pytest.raises(HistoryFormatError) as e:  # an interchange file: an error naming where
        History.read(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:offset {size_before_last}: truncated") and "\n" not in msg
    # cut exactly after a complete chunk: no end block
    p.write_bytes(data[:size_before_last])
    assert [op.value for op in History.read(p, torn="stop")] == ids
    with pytest.raises(HistoryFormatError, match=rf":offset {size_before_last}: truncated: the file ends without"):
        History.read(p)


def test_read_parts_merges_spools_with_their_own_names(tmp_path):
    w0, a = _spool(tmp_path / "w0.nch", 2, node="sql1")
    w0.close()
    w1, b = _spool(tmp_path / "w1.nch", 3, start_id=100, node="sql2")
    w1._fh.close()  # died after its chunks: no end block
    h = History.read_parts([tmp_path / "w0.nch", tmp_path / "w1.nch"])
    assert h.workload == "ledger" and len(h) == len(a) + len(b)
    assert list(h.order()) == list(range(len(h)))  # sorted into completion order
    assert [op.end for op in h] == sorted(op.end for op in h)
    assert sorted(op.value for op in h) == sorted(a + b)
    assert {op.node for op in h if op.value >= 100} == {"sql2"}
    assert {op.node for op in h if op.value < 100} == {"sql1"}
    assert all(op.error.errno == 2013 for op in h if op.type == "info")
    (tmp_path / "w3.nch").write_bytes(MAGIC[:3])  # died before its header was out
    (tmp_path / "w4.nch").write_bytes(b"")
    data = (tmp_path / "w0.nch").read_bytes()
    (tmp_path / "w5.nch").write_bytes(data[:len(MAGIC) + 20])  # a torn header block
    h2 = History.read_parts([tmp_path / f"w{k}.nch" for k in (3, 4, 5, 0, 1)])
    assert ops(h2) == ops(h)
    for k in (3, 5):
        with pytest.raises(HistoryFormatError, match="truncated|no complete header"):
            History.read(tmp_path / f"w{k}.nch")
        with pytest.raises(HistoryFormatError, match="no complete header"):
            History.read(tmp_path / f"w{k}.nch", torn="stop")
    other = HistoryAppender(tmp_path / "w2.nch", "bank", {})
    other.close()
    with pytest.raises(HistoryFormatError, match="workload"):
        History.read_parts([tmp_path / "w0.nch", tmp_path / "w2.nch"])


def _bad_op_file(path, poke) -> None:
    c = Columns()
    c.append(1, "insert", 5, "ok", 0.1, 0.2, "sql1", None)
    c.append(1, "insert", 6, "ok", 0.2, 0.3, "sql1", None)
    poke(c)
    with open(path, "wb") as fh:
        fh.write(MAGIC + header_block({"history": 1, "workload": "ledger", "params": {}}))
        for b in chunk_blocks(c):
            fh.write(b)
        fh.write(end_block(len(c)))


@pytest.mark.parametrize("poke, what", [
    (lambda c: c.type.__setitem__(1, 7), "op 1 of this chunk: bad operation: type"),
    (lambda c: c.f.__setitem__(0, 9), "op 0 of this chunk: bad operation: f is not"),
    (lambda c: c.node.__setitem__(1, 4), "op 1 of this chunk: bad operation: node"),
    (lambda c: c.ecls.__setitem__(0, 9), "op 0 of this chunk: bad operation: error class"),
    (lambda c: c.end.__setitem__(1, 0.0), "op 1 of this chunk: bad operation: end 0.0 is before start"),
    (lambda c: c.start.__setitem__(0, float("nan")), "op 0 of this chunk: bad operation: start and end"),
    (lambda c: c.objs.__setitem__(1, "x") or c.ival.__setitem__(1, -(2**63)),
     "op 1 of this chunk: bad operation: ledger insert value must be the integer id"),
])
def test_bad_operation_names_offset_and_op(tmp_path, poke, what):
    p = tmp_path / "bad.nch"
    _bad_op_file(p, poke)
    with pytest.raises(HistoryFormatError) as e:
        History.read(p)
    assert str(e.value).startswith(f"{p}:offset ") and what in str(e.value)


def test_corrupt_truncated_and_garbage_files(tmp_path):
    good = tmp_path / "g.nch"
    rich_history().write(good)
    data = good.read_bytes()
    cases = {
        "magic-only": (MAGIC, "offset 8: truncated: no complete header block"),
        "half-header": (data[:20], "offset 8: truncated"),
        "crc": (data[:100] + bytes([data[100] ^ 0xFF]) + data[101:], "CRC mismatch"),
        "tag": (data[:8] + b"XXXX" + data[12:], "offset 8: corrupt: unknown block tag"),
        "trailing": (data + b"junk", "data after the end block"),
        "no-end": (data[:-(12 + 8 + 4)], "truncated: the file ends without its end block"),
        "garbage": (b"\x93NDBCH\x01\n" + os.urandom(64), "offset 8: "),
    }
    for name, (blob, what) in cases.items():
        p = tmp_path / f"{name}.nch"
        p.write_bytes(blob)
        with pytest.raises(HistoryFormatError) as e:
            History.read(p)
        msg = str(e.value)
        assert msg.startswith(f"{p}:") and what in msg and "\n" not in msg, (name, msg)
    p = tmp_path / "random.bin"
    p.write_bytes(os.urandom(256))
    with pytest.raises(HistoryFormatError, match=rf"^{p}:1: "):
        History.read(p)


def test_header_checks_are_the_jsonl_ones(tmp_path):
    p = tmp_path / "h.nch"
    with open(p, "wb") as fh:
        fh.write(MAGIC + header_block({"history": 2, "workload": "ledger"}) + end_block(0))
    with pytest.raises(HistoryFormatError, match=r":offset 8: unsupported history format version 2"):
        History.read(p)


def _cli(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_check_cli_same_verdict_on_both_formats(tmp_path, capsys):
    h = History("ledger", {})
    n = LAZY_INTS + 200  # the final read is left in the file and read back by the checker
    for i in range(n):
        h.add(i % 4, "insert", i, "ok" if i % 9 else "info", i * 0.001, i * 0.001 + 0.004, f"sql{i % 2}", None
              if i % 9 else ErrorInfo(2013, None, "unknown", "Lost connection"))
    h.add(9, "read", [i for i in range(n) if i != 17], "ok", 30.0, 30.1, "sql0", None)  # 17 lost
    h.run = {"windows": [{"kind": "kill", "start": 0.5, "end": 1.0, "targets": []}]}
    h.write(tmp_path / "run.jsonl")
    h.write(tmp_path / "run.nch")
    rc1, out1, err1 = _cli(["check", str(tmp_path / "run.jsonl"), "--compact"], capsys)
    rc2, out2, err2 = _cli(["check", str(tmp_path / "run.nch"), "--compact"], capsys)
    assert rc1 == rc2 == 1
    assert json.loads(out1) == json.loads(out2)
    assert json.loads(out2)["checks"]["durability"]["lost"] == 1
    assert json.loads(out2)["checks"]["durability"]["details"]["lost_examples"][0]["id"] == 17
    assert json.loads(out2)["windows"][0]["start"] == 0.5  # the run record's windows were used


def test_check_cli_malformed_columnar_prints_one_line_and_exits_2(tmp_path, capsys):
    p = tmp_path / "run.nch"
    w, _ = _spool(p, 2)
    w._fh.close()
    p.write_bytes(p.read_bytes()[:-3])
    rc, out, err = _cli(["check", str(p)], capsys)
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"{p}:offset " in lines[0] and "truncated" in lines[0]
    assert "Traceback" not in err


def test_a_run_judged_live_and_from_its_saved_file_sees_the_same_times(tmp_path):
    """The live history (worker spools merged, a final read added) holds times to the
    microsecond, as its saved JSONL does: latencies computed from either are the same, so a
    percentile on an HdrHistogram bucket's edge cannot move between the live and the offline
    verdict."""
    from ndbchaos.checks import check_run as check

    w = HistoryAppender(tmp_path / "w0.nch", "ledger", {})
    rec = Recorder()
    for i in range(400):
        start = 1.0 + i * 0.01 + 0.4e-6  # sub-microsecond parts that rounding moves
        lat = (9183.6 if i % 2 else 9183.4) * 1e-6  # 9184 us vs 9183 us: two buckets apart
        rec.record(i % 4, "insert", i, "ok", start, start + lat, "sql1", None)
    w.append(rec)
    w.close()
    live = History.read_parts([tmp_path / "w0.nch"])
    live.add(FINAL_PROCESS, "read", list(range(400)), "ok", 9.1234564, 9.2345675, "sql1")
    saved = tmp_path / "run.jsonl"
    live.write_jsonl(saved)
    again = History.read(saved)
    assert [(op.start, op.end) for op in live] == [(op.start, op.end) for op in again]
    assert check(live).to_json()["checks"]["latency"] == check(again).to_json()["checks"]["latency"]
