"""Transactional histories in and out: Jepsen/Elle's JSON array, JSON lines and EDN, our runs,
the export Elle and other checkers read, and one line for every kind of bad input."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from ndbchaos.history import History
from ndbchaos.txn import CheckOptions, TxnFormatError, TxnHistory, check
from ndbchaos.txn import edn
from ndbchaos.txn.history import FAIL, INFO, OK

EVENTS = [
    {"index": 0, "time": 1000, "process": 0, "type": "invoke", "f": "txn", "value": [["append", 1, 1], ["r", 2, None]]},
    {"index": 1, "time": 2000, "process": 1, "type": "invoke", "f": "txn", "value": [["r", 1, None]]},
    {"index": 2, "time": 3000, "process": 0, "type": "ok", "f": "txn", "value": [["append", 1, 1], ["r", 2, []]]},
    {"index": 3, "time": 4000, "process": "nemesis", "type": "info", "f": "kill", "value": None},
    {"index": 4, "time": 5000, "process": 1, "type": "ok", "f": "txn", "value": [["r", 1, [1]]]},
    {"index": 5, "time": 6000, "process": 2, "type": "invoke", "f": "txn", "value": [["append", 2, 1]]},
    {"index": 6, "time": 7000, "process": 2, "type": "fail", "f": "txn", "value": [["append", 2, 1]]},
    {"index": 7, "time": 8000, "process": 3, "type": "invoke", "f": "txn", "value": [["append", 1, 2]]},
]

EDN = """{:index 0 :time 1000 :process 0 :type :invoke :f :txn :value [[:append 1 1] [:r 2 nil]]}
{:index 1, :time 2000, :process 1, :type :invoke, :f :txn, :value [[:r 1 nil]]}
#jepsen.history.Op{:index 2 :time 3000 :process 0 :type :ok :f :txn :value [[:append 1 1] [:r 2 []]]}
{:index 3 :time 4000 :process :nemesis :type :info :f :kill :value nil} ; a comment
{:index 4 :time 5000 :process 1 :type :ok :f :txn :value [[:r 1 [1]]]}
{:index 5 :time 6000 :process 2 :type :invoke :f :txn :value [[:append 2 1]]}
{:index 6 :time 7000 :process 2 :type :fail :f :txn :value [[:append 2 1]] #_ :ignored #_ 7}
{:index 7 :time 8000 :process 3 :type :invoke :f :txn :value [[:append 1 2]]}
"""


def _shape(h: TxnHistory):
    return [(t.index, t.process, t.type, t.mops, t.inv, t.cmp) for t in h.txns]


EXPECTED = [
    (2, 0, OK, [("append", 1, 1), ("r", 2, ())], 0, 2),
    (4, 1, OK, [("r", 1, (1,))], 1, 3),
    (6, 2, FAIL, [("append", 2, 1)], 4, 5),
    (7, 3, INFO, [("append", 1, 2)], 6, 7),  # invoked, never completed: indeterminate
]


def test_json_array_json_lines_and_edn_read_the_same(tmp_path):
    arr = tmp_path / "h.json"
    arr.write_text(json.dumps(EVENTS))
    lines = tmp_path / "h.jsonl"
    lines.write_text("\n".join(json.dumps(e) for e in EVENTS) + "\n")
    gz = tmp_path / "h.jsonl.gz"
    gz.write_bytes(gzip.compress(lines.read_bytes()))
    e = tmp_path / "h.edn"
    e.write_text(EDN)
    vec = tmp_path / "v.edn"
    vec.write_text("[" + EDN + "]")
    for p in (arr, lines, gz, e, vec):
        h = TxnHistory.read(p)
        assert _shape(h) == EXPECTED, p
    h = TxnHistory.read(lines)
    assert h.txns[0].start == pytest.approx(1e-6) and h.txns[0].end == pytest.approx(3e-6)
    assert h.counts() == {"ok": 2, "fail": 1, "info": 1}


def test_elle_cli_style_keywords_in_json(tmp_path):
    evs = [{**e, "type": ":" + e["type"]} for e in EVENTS if e["process"] != "nemesis"]
    for e in evs:
        e["value"] = [[":" + m[0], *m[1:]] for m in e["value"]]
    p = tmp_path / "k.json"
    p.write_text(json.dumps(evs))
    assert _shape(TxnHistory.read(p)) == EXPECTED


@pytest.mark.parametrize("content,where", [
    ('[{"process": 0, "type": "ok", "value": [["append", 1]]}]', ":op 0: micro-op is not [f, k, v]"),
    ('{"process": 0, "type": "ok", "value": []}\n{"process": 0, "type": "ok", "value": [}\n', ":2: not valid JSON"),
    ('[{"process": 0, "type": "done", "value": []}]', "type 'done'"),
    ('[{"index": 0, "process": 0, "type": "invoke", "value": []}, '
     '{"index": 1, "process": 0, "type": "invoke", "value": []}]', ":op 1: process 0 invoked again before its op 0"),
    ('{:index 0 :process 0 :type :ok :value [[:append 1 1]]\n', ":1: '{' is never closed"),
    ('[1, 2]', ":op 0: not a map"),
    ('[{"process": 0, "type": "ok", "index": "x", "value": []}]', "index 'x' is not an integer"),
])
def test_bad_input_is_one_line_naming_the_place(tmp_path, content, where):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(TxnFormatError) as e:
        TxnHistory.read(p)
    assert str(e.value).startswith(str(p)) and where in str(e.value) and "\n" not in str(e.value)


def test_the_cli_exits_2_on_bad_input_and_1_on_anomalies(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"process": 0, "type": "ok", "value": [["append", 1]]}]')
    r = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "check", "--model", "list-append", str(bad)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "micro-op is not [f, k, v]" in r.stderr
    r = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "check", "--model", "list-append",
                        "--consistency-models", "strict-serialisable", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown consistency model(s) strict-serialisable" in r.stderr
    g1c = tmp_path / "g1c.json"
    g1c.write_text(json.dumps([{"process": 0, "type": "ok", "value": [["append", "x", 1], ["r", "y", [1]]]},
                               {"process": 1, "type": "ok", "value": [["append", "x", 2], ["append", "y", 1]]},
                               {"process": 2, "type": "ok", "value": [["r", "x", [1, 2]]]}]))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "check", "--model", "list-append", "--compact",
                        "--consistency-models", "serializable", "--directory", str(out), str(g1c)],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["valid"] is False and verdict["anomaly_types"] == ["G1c"] and verdict["not"] == ["read-committed"]
    assert {"valid", "anomaly_types", "anomalies", "not", "also_not"} <= set(verdict)
    assert "a contradiction!" in (out / "G1c.txt").read_text()
    assert (out / "G1c-0.svg").read_text().startswith("<svg")


def test_export_is_read_back_with_the_same_verdict(tmp_path):
    h = TxnHistory.from_events(EVENTS, "x")
    for name in ("out.jsonl", "out.json", "out.edn"):
        p = tmp_path / name
        h.write(p)
        back = TxnHistory.read(p)
        assert [(t.process, t.type, t.mops) for t in back.txns] == [(t.process, t.type, t.mops) for t in h.txns]
        assert [t.inv < u.cmp for t in back.txns for u in back.txns] == [t.inv < u.cmp for t in h.txns for u in h.txns]
        assert check(back).to_json()["anomaly_types"] == check(h).to_json()["anomaly_types"]


def test_our_runs_become_transactions_in_real_time_order():
    hist = History("list_append", {})
    # two transactions that touch in time (one ends when the other starts) are concurrent
    hist.add(0, "txn", [["append", 1, 10]], "ok", 0.0, 1.0, "sql1")
    hist.add(1, "txn", [["r", 1, [10]]], "ok", 1.0, 2.0, "sql2")
    hist.add(2, "txn", [["r", 1, []]], "ok", 2.5, 3.0, "sql1")
    hist.add(3, "txn", [["append", 1, 11]], "info", 2.6, 9.0, "sql2")
    hist.add(1_000_000, "final", None, "ok", 10.0, 10.5, "sql1")
    h = TxnHistory.from_history(hist)
    assert [t.mops for t in h.txns][0] == [("append", 1, 10)] and len(h) == 4
    a, b, c, d = h.txns
    assert not (a.cmp < b.inv)  # touching: concurrent
    assert a.cmp < c.inv and b.cmp < c.inv
    assert d.type == INFO and d.node == "sql2"
    v = check(h)
    # c began after a committed and read the empty list: a stale read (G-single-realtime)
    assert v.valid is False and "G-single-item-realtime" in v.anomaly_types


def test_edn_reader_covers_what_jepsen_writes():
    forms = edn.loads_all('{:a 1, :b "x\\ny", :c #{1 2}, :d (1 2), :e \\c, :f 1.5M, :g 7N, :h #inst "2020"} [nil true]')
    assert forms[0] == {":a": 1, ":b": "x\ny", ":c": frozenset({1, 2}), ":d": [1, 2], ":e": "c", ":f": 1.5, ":g": 7,
                        ":h": "2020"}
    assert forms[1] == [None, True]
    with pytest.raises(edn.EdnError):
        edn.loads_all("[1 2")
    assert edn.dumps_op({"index": 1, "type": "ok", "value": [["append", 1, 2]]}) == \
        "{:index 1, :type :ok, :value [[:append 1 2]]}"


def test_a_search_that_runs_out_of_time_is_unknown_and_still_shows_a_cycle():
    # a ring of 400 transactions each appending to the next key and reading the previous one
    n = 400
    ops = []
    for i in range(n):
        ops.append({"process": i, "type": "ok", "value": [["append", i, 1], ["r", (i - 1) % n, [1]]]})
    h = TxnHistory.from_events(ops, "ring")
    v = check(h, CheckOptions(consistency_models=("serializable",), cycle_search_timeout_ms=1e-6))
    assert v.valid is False or v.valid == "unknown"
    assert "cycle-search-timeout" in v.found
    assert any(k != "cycle-search-timeout" for k in v.found)  # the fallback cycle


def test_ndbchaos_export_writes_a_run_for_elle_and_refuses_a_run_without_transactions(tmp_path):
    hist = History("list_append", {"model": "list-append"})
    hist.add(0, "txn", [["append", 1, 1], ["r", 2, []]], "ok", 0.0, 1.0, "sql1")
    hist.add(1, "txn", [["r", 1, [1]]], "ok", 2.0, 3.0, "sql2")
    hist.add(2, "txn", [["append", 2, 1]], "info", 2.5, 9.0, "sql2")
    run = tmp_path / "run.jsonl"
    hist.write(str(run))
    out = tmp_path / "h.edn"
    r = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "export", "--format", "elle", str(run), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "3 transactions (2 ok, 0 fail, 1 info)" in r.stderr, r.stderr
    text = out.read_text()
    assert text.splitlines()[0].startswith("{:process 0, :type :invoke, :f :txn, :value [[:append 1 1] [:r 2 nil]]")
    back = TxnHistory.read(out)
    assert [(t.process, t.type) for t in back.txns] == [(0, OK), (1, OK), (2, INFO)]
    ledger = History("ledger", {})
    ledger.add(0, "insert", 1, "ok", 0.0, 1.0, "sql1")
    led = tmp_path / "ledger.jsonl"
    ledger.write(str(led))
    r = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "export", str(led)], capture_output=True, text=True)
    assert r.returncode == 2 and "no transactions in it (workload ledger)" in r.stderr


# -- JSON lines in chunks of bytes ----------------------------------------------------------------

def _events_text(n: int) -> list[str]:
    out = []
    for i in range(n):
        out.append(f'{{"index":{2 * i},"process":{i % 3},"type":"invoke","value":[["append",{i % 4},{i}]]}}')
        out.append(f'{{"index":{2 * i + 1},"process":{i % 3},"type":"ok","value":[["append",{i % 4},{i}]]}}')
    return out


@pytest.mark.parametrize("chunk", [1, 40, 333, 1 << 22])
def test_json_lines_read_in_any_chunks_are_the_same(tmp_path, monkeypatch, chunk):
    """Chunks of whole lines, blank lines among them, give the events of the whole file; a
    wrong line is named by its number whichever chunk holds it."""
    from ndbchaos.txn import history as txn_history
    lines = _events_text(30)
    lines.insert(7, "")
    lines.insert(20, "")
    p = tmp_path / "h.jsonl"
    p.write_text("\n".join(lines) + "\n\n")
    whole = [t.to_json() for t in TxnHistory.read(p)]
    monkeypatch.setattr(txn_history, "_CHUNK", chunk)
    assert [t.to_json() for t in TxnHistory.read(p)] == whole and len(whole) == 30
    lines = [ln for ln in lines if ln]
    lines[41] = lines[41][:-3]
    p.write_text("\r\n".join(lines))
    with pytest.raises(TxnFormatError, match=r"h.jsonl:42: not valid JSON"):
        TxnHistory.read(p)


@pytest.mark.parametrize("value", [
    None, [], [["r", 1, None]], [["append", "k", 1.5]], [[":r", 1, [1, "a", None, True]]], [["r", 1, (1, 2)]],
    [["w", 1, 2]], [["x", 1, 2]], [["r", [1, 2], [3]]], [["r", 1, [[1]]]], [["r", 1, {"a": 1}]], [["r", {}, 1]],
    [["r", 1]], [["r", 1, 2, 3]], ["abc"], [[["r"], 1, 2]], 5, [None], [["append", 1, {1}]], {"r": 1}])
def test_an_invocation_is_checked_as_its_completion_would_be(value):
    from ndbchaos.txn.mops import _fast_mops, _valid_mops
    assert _valid_mops(value) == (_fast_mops(value) is not None)
