"""JSON lines read straight into arrays (ndbchaos.txn.scan) against the general reader (orjson,
then a Txn per event pair: the reference): the same transactions field by field, the same
inference and verdict; and every line the scanner does not take (another shape, a number it
does not read, broken JSON, a process invoked twice, ...) read by the reference, which names
what is wrong exactly as before. The cycle search's reuse of a component's cycles for another of
the same shape is held to searching each one."""

from __future__ import annotations

import importlib
import json
import random
import re
import shutil
import subprocess

import pytest

from ndbchaos.txn import TxnFormatError, TxnHistory
from ndbchaos.txn import scan as scan_mod
from ndbchaos.txn.search import Component
from ndbchaos.txn.txn_arrays import LazyTxns, ranges

from .test_txn_list_append_fast import generated, signature, verdict

check_mod = importlib.import_module("ndbchaos.txn.check")


def adya_shape(h: TxnHistory, spaced: bool = True, t0: int = 1000) -> bytes:
    """h's events written as adya writes them: keys in its order, no spaces but after the
    commas of a read's list (``spaced``)."""
    lines = []
    for ev in h.events():
        d = {"index": ev["index"], "type": ev["type"], "f": "txn", "process": ev["process"],
             "time": t0 * (ev["index"] + 1), "value": ev["value"]}
        line = json.dumps(d, separators=(",", ":"))
        if spaced:
            line = line.replace("],[", "]\0[")
            for _ in range(2):
                line = re.sub(r"(\d),(\d)", r"\1, \2", line)
            line = line.replace("]\0[", "],[")
        lines.append(line)
    return ("\n".join(lines) + "\n").encode()


def read_both(tmp_path, data: bytes, monkeypatch):
    """(what TxnHistory.read gives, what the reference reader gives): a TxnHistory or the
    error's message, each."""
    path = tmp_path / "h.jsonl"
    path.write_bytes(data)
    out = []
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(scan_mod, "scan", lambda data: None)
        try:
            out.append(TxnHistory.read(path))
        except TxnFormatError as e:
            out.append(str(e))
    monkeypatch.undo()
    return out


def same(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return list(a.txns) == list(b.txns) and a.counts() == b.counts()


@pytest.mark.parametrize("seed", range(30))
def test_the_scanner_reads_what_the_reference_reads(seed, tmp_path, monkeypatch):
    h = generated(seed, n=int(random.Random(seed).choice([1, 5, 40, 300])), keys=[2, 6, 30][seed % 3])
    fast, ref = read_both(tmp_path, adya_shape(h, spaced=seed % 2 == 0, t0=[1000, 0, 7][seed % 3]), monkeypatch)
    assert isinstance(fast.txns, LazyTxns), "the scanner took the history"
    assert same(fast, ref)
    assert verdict(fast) == verdict(ref)
    from ndbchaos.txn import list_append
    assert signature(fast, list_append.analyze(fast)) == signature(ref, list_append.analyze(ref))


def test_transactions_built_one_at_a_time_are_those_built_all_at_once(tmp_path, monkeypatch):
    h = generated(5, n=200)
    fast, _ref = read_both(tmp_path, adya_shape(h), monkeypatch)
    one = [fast.txns[i] for i in range(len(fast.txns) - 1, -1, -1)][::-1]
    assert one == list(fast.txns) and fast.txns[-1] == one[-1] and fast.txns[2:5] == one[2:5]


#: lines the scanner must leave to the reference (or read alike): another shape, numbers it does
#: not take, broken JSON, odd events
ODD_LINES = [
    b'{"index": 0, "type": "invoke", "f": "txn", "process": 0, "time": 1, "value": [["r", 1, null]]}',
    b'{"type":"invoke","index":0,"f":"txn","process":0,"time":1,"value":[["r",1,null]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"value":[["r",1,null]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":"nemesis","time":1,"value":null}',
    b'{"index":0,"type":"invoke","f":"txn","process":00,"time":1,"value":[["r",1,null]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1.5,"value":[["r",1,null]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1e3,"value":[["r",1,null]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":-5,"value":[["append",-1,-0]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":12345678901234567,"value":[]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":123456789012345,"value":[]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["w",1,2]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["append","k",2]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["append",1,[2]]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["r",1,[[2]]]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["r",1,[2,]]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["r",1,[2 3]]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["r",1,[2,  3]]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["r",1,[,]]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["r",1,nul]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":nul}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["append",1,2]["r",1,null]]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["append",1,2],]}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["append",1,2]]',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["append",1,2]]}}',
    b'{"index":0,"type":"invok","f":"txn","process":0,"time":1,"value":[]}',
    b'{"index":0,"type":"inf\\u006f","f":"txn","process":0,"time":1,"value":[]}',
    b'{"index":0,"type":"ok","f":"txn","process":0,"time":1,"value":[["r",1,[1,2]],["r",2,[]]]}\r',
    b'{"index":0,"type":"ok","f":"txn","process":0,"time":1,"value":[["r",1,[1,\t2]]]}',
    b'{"index":0,"type":"ok","f":"txn","process":0,"time":1,"value":[["r",1,[1,\x0b2]]]}',
    b'{"index":0,"type":"ok","f":"txn","process":0,"time":1,"value":[["r",1,[1,\x052]]]}',
    b'{"index":0,"type":"ok","f":"txn","process":0,"time":1,"value":[["r",1,[1, 2]], ["r",2,[]]]}',
    b'{"index":0,"type":"ok","f":"txn","process":0,"time":1,"value":[["r",1,[1,-2]]]}',
    b'{"index":0,"type":"ok","f":"txn","process":0,"time":1,"value":[["r",1,[1,--2]]]}',
    b'{"index":0,"type":"ok","f":"txn","process":0,"time":1,"value":[["r",1,[1,2-3]]]}',
    b'',
    b'{"index":0,"type":"fail","f":"txn","process":0,"time":1,"value":null}',
    b'{"index":0,"type":"ok"}',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["r",1,[',
    b'{"index":0,"type":"invoke","f":"txn","process":0,"time":1,"value":[["append",1',
    b'{"index":2,"type":"invoke","f":"txn","process":-3,"time":8,"value":[["r",1,null]]}',
    b'{"index":2,"type":"invoke","f":"txn","process":70000,"time":8,"value":[["r",1,null]]}',
    b'{"index":2,"type":"invoke","f":"txn","process":65535,"time":8,"value":[["r",1,null]]}',
]


@pytest.mark.parametrize("line", range(len(ODD_LINES)))
def test_lines_of_another_shape(line, tmp_path, monkeypatch):
    head = (b'{"index":0,"type":"invoke","f":"txn","process":7,"time":5,"value":[["append",1,1]]}\n'
            b'{"index":1,"type":"ok","f":"txn","process":7,"time":6,"value":[["append",1,1]]}\n')
    tail = b'\n{"index":3,"type":"ok","f":"txn","process":0,"time":9,"value":[["r",1,[1]]]}\n'
    for data in (head + ODD_LINES[line] + tail, ODD_LINES[line] + b"\n", head + ODD_LINES[line]):
        fast, ref = read_both(tmp_path, data, monkeypatch)
        assert same(fast, ref), (fast, ref)


def test_a_process_invoked_twice_is_named_as_before(tmp_path, monkeypatch):
    data = (b'{"index":0,"type":"invoke","f":"txn","process":1,"time":1,"value":[["r",1,null]]}\n'
            b'{"index":1,"type":"invoke","f":"txn","process":1,"time":2,"value":[["r",1,null]]}\n')
    fast, ref = read_both(tmp_path, data, monkeypatch)
    assert isinstance(fast, str) and fast == ref and "invoked again" in fast


@pytest.mark.parametrize("seed", range(60))
def test_random_damage_reads_alike(seed, tmp_path, monkeypatch):
    """Bytes changed, added or dropped at random in a small history: both readers give the same
    transactions, or the same error."""
    rng = random.Random(seed)
    data = bytearray(adya_shape(generated(seed, n=6, keys=3), spaced=bool(seed % 2)))
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data))
        what = rng.choice([b"0", b"7", b"-", b",", b"[", b"]", b" ", b"n", b"\"", b"\n", b"}", b"{", b":", b"a"])
        op = rng.randrange(3)
        if op == 0:
            data[at:at + 1] = what
        elif op == 1:
            data[at:at] = what
        else:
            del data[at]
    fast, ref = read_both(tmp_path, bytes(data), monkeypatch)
    assert same(fast, ref), (fast, ref)


def test_chunks_of_lines_read_as_one(tmp_path, monkeypatch):
    h = generated(9, n=300)
    data = adya_shape(h)
    whole, _ = read_both(tmp_path, data, monkeypatch)
    monkeypatch.setattr(scan_mod, "CHUNK", 200)  # about a line a chunk
    parts = scan_mod.scan(data)
    assert parts is not None and list(LazyTxns(parts)) == list(whole.txns)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_chunks_read_by_threads_as_by_one(workers, tmp_path, monkeypatch):
    """Chunks taken by several threads at once give the transactions one thread gives, and a
    damaged chunk among them the same outcome as the reference's reading."""
    h = generated(11, n=300)
    data = adya_shape(h)
    whole, _ = read_both(tmp_path, data, monkeypatch)
    monkeypatch.setattr(scan_mod, "CHUNK", 300)
    monkeypatch.setattr(scan_mod, "_workers", lambda: workers)
    parts = scan_mod.scan(data)
    assert parts is not None and list(LazyTxns(parts)) == list(whole.txns)
    for seed in range(12):
        rng = random.Random(seed)
        bad = bytearray(data)
        at = rng.randrange(len(bad) // 4, len(bad))
        bad[at:at + 1] = rng.choice([b"x", b"[", b"-", b"\n", b""])
        with monkeypatch.context() as m:
            m.setattr(scan_mod, "CHUNK", 300)
            m.setattr(scan_mod, "_workers", lambda: workers)
            fast, ref = read_both(tmp_path, bytes(bad), m)
        assert same(fast, ref), (seed, fast, ref)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_first_chunk_that_fails_decides(workers, monkeypatch):
    """A chunk not of the shape (None) or one whose reading raised: the first such in the file
    decides, with threads as without, and every chunk before it was read."""
    monkeypatch.setattr(scan_mod, "_workers", lambda: workers)
    parts = [bytes([i]) for i in range(12)]
    for outcomes, want in (({3: None, 7: ValueError("late")}, None), ({3: ValueError("early"), 7: None}, "early")):
        calls = []

        def chunk(part, outcomes=outcomes):
            calls.append(part[0])
            o = outcomes.get(part[0], ("ok",))
            if isinstance(o, Exception):
                raise o
            return o
        monkeypatch.setattr(scan_mod, "_chunk", chunk)
        if want is None:
            assert scan_mod._chunks(parts) is None
        else:
            with pytest.raises(ValueError, match=want):
                scan_mod._chunks(parts)
        assert set(range(4)) <= set(calls)
    monkeypatch.setattr(scan_mod, "_chunk", lambda part: ("ok", part[0]))
    assert scan_mod._chunks(parts) == [("ok", i) for i in range(12)]


def test_ranges():
    assert ranges([5, 0, 9], [2, 0, 3]).tolist() == [5, 6, 9, 10, 11]
    assert ranges([], []).tolist() == []
    assert ranges([3, 1], [0, 1]).tolist() == [1]


def test_components_searched_once_per_shape_find_what_each_search_finds(monkeypatch):
    """The cycles of a component reused for another of the same signature are those a search of
    the other finds: the verdicts agree with every component searched."""
    searched = []
    search = check_mod._cycles
    monkeypatch.setattr(check_mod, "_cycles", lambda *a: searched.append(1) or search(*a))
    histories = [generated(seed + 200, n=400, keys=3) for seed in range(4)]
    events = []  # and pairs of transactions that each miss the other's append, one pair after another
    for i in range(6):
        x, y, p, q = 2 * i, 2 * i + 1, 2 * i, 2 * i + 1
        for proc, typ, value in ((p, "invoke", [["r", x, None], ["append", y, 1]]),
                                 (q, "invoke", [["r", y, None], ["append", x, 1]]),
                                 (p, "ok", [["r", x, []], ["append", y, 1]]),
                                 (q, "ok", [["r", y, []], ["append", x, 1]])):
            events.append({"index": len(events), "process": proc, "type": typ, "value": value})
    histories.append(TxnHistory.from_events(events))
    for h in histories:
        searched.clear()
        reused = verdict(h)
        n_reused = len(searched)
        calls = iter(range(1 << 30))
        with monkeypatch.context() as m:
            m.setattr(Component, "signature", lambda self: next(calls).to_bytes(8, "little"))
            searched.clear()
            assert verdict(h) == reused
    assert n_reused == 1 and len(searched) == 6 and '"G2-item": 6' in reused


ADYA = shutil.which("adya")


@pytest.mark.skipif(ADYA is None, reason="adya is not installed (`cargo install adya`)")
@pytest.mark.parametrize("isolation", ["serializable", "snapshot-isolation", "read-committed", "read-uncommitted"])
def test_adya_histories_read_alike(tmp_path, isolation, monkeypatch):
    path = tmp_path / "a.jsonl"
    r = subprocess.run([ADYA, "run", "sim", "-m", "list-append", "-i", isolation, "-n", "3000", "-p", "8",
                        "--seed", "5", "-o", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    fast, ref = read_both(tmp_path, path.read_bytes(), monkeypatch)
    assert isinstance(fast.txns, LazyTxns)
    assert same(fast, ref)
    reused = verdict(fast)
    assert reused == verdict(ref)
    calls = iter(range(1 << 30))
    monkeypatch.setattr(Component, "signature", lambda self: next(calls).to_bytes(8, "little"))
    assert verdict(fast) == reused


def test_a_check_imports_only_what_it_uses(tmp_path):
    """``ndbchaos check --model list-append`` of a history in adya's shape, with a cycle, in an
    interpreter of its own: neither scipy (components under 1,000,000 edges), numpy.ma (which
    np.unique brings) nor tempfile (a spill file of our own runs' reader) is imported."""
    import subprocess
    import sys
    path = tmp_path / "h.jsonl"
    path.write_bytes(adya_shape(generated(7, n=400, keys=3)))
    code = ("import contextlib, io, sys; from ndbchaos import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = cli.main(['check', '--model', 'list-append', {str(path)!r}, '-q'])\n"
            "print(rc, *[m for m in ('scipy', 'numpy.ma', 'tempfile') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1"], out


def test_unique_ints_is_np_unique():
    from ndbchaos.txn.txn_arrays import unique_ints
    import numpy as np
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 3, 10, 100):
        for span in (1, 3, 1 << 40):
            a = rng.integers(-span, span, n)
            assert unique_ints(a).tolist() == np.unique(a).tolist() and unique_ints(a).dtype == a.dtype


def test_pairs_of_tokens_are_judged_as_the_table_says():
    """A token and the next one read as one 16-bit number give the table's verdict on the pair."""
    import numpy as np
    assert scan_mod._PAIR_OK.reshape(256, 256).T.tolist() == scan_mod._NEXT.tolist()
    rng = np.random.default_rng(8)
    tokens = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 44, 48, 91, 93, 125, 255], dtype=np.uint8)
    for n in (0, 1, 2, 3, 50):
        for _ in range(200):
            t = rng.choice(tokens, n).astype(np.uint8)
            assert scan_mod._follows(t) == bool(scan_mod._NEXT[t[:-1], t[1:]].all())
