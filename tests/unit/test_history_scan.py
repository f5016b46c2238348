"""The chunked JSON Lines reader (history.scan, idlists, loader) reads exactly what the line-by-line reader reads:
same columns, values, errors and error messages, whatever the lines and the chunk boundaries."""

from __future__ import annotations

import gzip
import io
import json
import random
import re

import numpy as np
import pytest

from ndbchaos.history import ErrorInfo, History, HistoryFormatError, idlists, jsonl, loader
from ndbchaos.history.columns import _IntsRef
from ndbchaos.history.interchange import _load_lines
from ndbchaos.history.jsonl import VALUE_VALIDATORS, _Source, parse_header

E_TMP = ErrorInfo(1297, 4010, "temporary", "Got temporary error 4010 'Node failure' from NDBCLUSTER")
E_UNK = ErrorInfo(2013, None, "unknown", "Lost connection to MySQL server during query")
E_ODD = ErrorInfo(None, -7, None, 'a "quoted", \\ odd message: {x} é\n')


def by_lines(text: bytes, name: str) -> History:
    """The line-by-line reader alone (what every chunk falls back to)."""
    head, _, body = text.partition(b"\n")
    workload, params, _ = parse_header(json.loads(head), f"{name}:1")
    h = History(workload, params)
    if body and not body.endswith(b"\n"):
        body += b"\n"
    if body:
        _load_lines(h.cols, body, 2, _Source(io.BytesIO(b""), name), VALUE_VALIDATORS.get(workload))
    h.sort()  # as History.load does
    return h


def rows(h: History) -> list[tuple]:
    c = h.cols
    out = []
    for i in range(len(c)):
        v = c.value(i)
        out.append((c.process[i], c.f_names[c.f[i]], type(v).__name__, v, c.type[i],
                    np.float64(c.start[i]).view(np.int64), np.float64(c.end[i]).view(np.int64),
                    None if c.node[i] < 0 else c.node_names[c.node[i]], c.error(i)))
    return out


def outcome(read, text: bytes, name: str):
    try:
        return rows(read(text, name))
    except HistoryFormatError as e:
        return f"error: {e}"


def by_chunks(text: bytes, name: str, size: int | None = None) -> History:
    return History.load(io.BytesIO(text), name) if size is None else _load_sized(text, name, size)


def _load_sized(text: bytes, name: str, size: int) -> History:
    saved = jsonl.CHUNK
    jsonl.CHUNK = size
    try:
        return History.load(io.BytesIO(text), name)
    finally:
        jsonl.CHUNK = saved


@pytest.fixture
def small(monkeypatch):
    """Long lines, id-list slices and spilled id lists at small sizes."""
    monkeypatch.setattr(loader, "LONG_LINE", 200)
    monkeypatch.setattr(idlists, "_STEP", 64)
    monkeypatch.setattr(loader, "SPILL_INTS", 5)


def synthetic(rng: random.Random, n: int, workload: str = "ledger", odd: float = 0.3) -> History:
    """n ops, about a share ``odd`` of them not in the template shape."""
    h = History(workload, {"rate": 10})
    fs = ["insert", "read", "transfer", "a-very-long-operation-name", "ünï", ""]
    nodes = ["sql1", "sql2", None, "node-with-a-long-name-x", "n,odd", "ü"]
    t = 0.0
    for i in range(n):
        t += rng.choice([0.0, 1e-7, 0.000123, 0.5, 3.0])
        f = rng.choice(fs) if rng.random() < odd else "insert"
        kind = rng.random() * odd / 0.4 if rng.random() < 0.5 else rng.random()
        if kind < 0.6:
            v = rng.randrange(-10**6, 10**7)
        elif kind < 0.65:
            v = rng.choice([10**17 + 3, -(10**17), 2**63 - 1, 2**64 + 5, -(2**70), 12345678901234567])
        elif kind < 0.7:
            v = None
        elif kind < 0.85:
            v = [rng.randrange(-5, 10**9) for _ in range(rng.choice([0, 1, 3, 40]))]
        elif kind < 0.9:
            v = {"from": 1, "to": 2, "amount": 3}
        else:
            v = rng.choice(["x", 1.5, True, [1, "a"], [2**65]])
        typ = rng.choice(["ok", "ok", "fail", "info"])
        if workload == "ledger" and f == "insert" and type(v) is not int:
            v = rng.randrange(10**6)
        elif workload == "ledger" and f == "read" and typ == "ok" and type(v) is not list:
            v = [rng.randrange(10**6) for _ in range(rng.choice([0, 2, 50]))]
        elif workload == "bank" and f == "transfer":
            v = {"from": 1, "to": 2, "amount": rng.randrange(5)}
        elif workload == "bank" and f == "read" and typ == "ok":
            v = {"balances": {"1": 5, "2": 7.5}}
        err = None if typ == "ok" else rng.choice([E_TMP, E_UNK, E_ODD, None])
        s = t + rng.choice([0.0, 1e-6, 0.1234567, 12.5])
        h.add(rng.randrange(-3, 40), f, v, typ, s, s + rng.choice([0.0, 0.001, 2.0, 1e-5]),
              rng.choice(nodes) if rng.random() < odd else "sql1", err)
    return h


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("size", [None, 700, 4096])
@pytest.mark.parametrize("odd", [0.05, 0.4])
def test_same_as_line_by_line(seed, size, odd, small):
    rng = random.Random(seed)
    h = synthetic(rng, 400, workload=rng.choice(["ledger", "bank", "other"]), odd=odd)
    buf = io.StringIO()
    h.dump(buf)
    text = buf.getvalue().encode()
    assert outcome(lambda t, nm: by_chunks(t, nm, size), text, "h") == outcome(by_lines, text, "h")


def test_template_lines_take_the_fast_path():
    h = History("ledger", {})
    for i in range(3000):
        h.add(i % 7, "insert", i, "ok" if i % 5 else "info", i * 0.01, i * 0.01 + 0.002, f"sql{i % 3}",
              None if i % 5 else E_UNK)
    h.add(99, "read", list(range(0, 3000, 2)), "ok", 40.0, 41.0, "sql1")
    buf = io.StringIO()
    h.dump(buf)
    text = buf.getvalue().encode()
    calls = []
    got = History.load(io.BytesIO(text), "h")
    assert rows(got) == rows(by_lines(text, "h"))
    # no chunk fell back to the line-by-line reader
    chunks = loader.ChunkLoader(History("ledger").cols, None, lambda b, n: calls.append(n) or 0, "h")
    body = text.partition(b"\n")[2]
    assert chunks.feed(b" " * jsonl.PAD + body, 2) == 3001 and calls == []


MUTATIONS = [b"0", b"9", b"-", b".", b",", b'"', b"\\", b":", b"{", b"}", b"[", b"]", b" ", b"e", b"E",
             b"null", b"\xff", b"\xc3\xa9", b"\t", b"\x01", b"1e5", b"00", b"+", b"\r"]


@pytest.mark.parametrize("seed", range(4))
def test_mutated_lines_same_outcome(seed, small):
    """A template line with a byte replaced, removed or added: read as by the line-by-line reader,
    or refused with the same message (file:line)."""
    rng = random.Random(100 + seed)
    h = History("ledger", {})
    h.add(3, "insert", 17, "ok", 1.5, 1.75, "sql1")
    h.add(4, "insert", 18, "info", 1.5, 2.0, None, E_UNK)
    h.add(5, "read", [17, 18, -3], "ok", 2.5, 2.75, "sql2")
    buf = io.StringIO()
    h.dump(buf)
    head, *lines = buf.getvalue().encode().splitlines(keepends=True)
    for _ in range(400):
        k = rng.randrange(len(lines))
        line = lines[k]
        i = rng.randrange(len(line) - 1)
        m = rng.choice(MUTATIONS)
        how = rng.randrange(3)
        new = line[:i] + m + line[i + 1:] if how == 0 else line[:i] + line[i + 1:] if how == 1 \
            else line[:i] + m + line[i:]
        text = head + b"".join(lines[:k] + [new] + lines[k + 1:])
        assert outcome(by_chunks, text, "m.jsonl") == outcome(by_lines, text, "m.jsonl"), new


def test_numbers_read_exactly():
    rng = random.Random(5)
    texts = ["0", "-0", "-0.0", "0.5", "12.25", "1", "123456789012345", "0.000001", "99999999.999999",
             "1234567.1234567", "3.141592653589793", "0.30000000000000004", "1e-06", "1E3", "-2.5e+3",
             "12345678901234567890", "9007199254740993", "007", "1.", ".5", "-", "--1", "1.2.3", "0.1.",
             "1-2", "12345678.12345678", "123456789012345.6"]
    texts += [repr(rng.uniform(0, 10 ** rng.randrange(0, 9))) for _ in range(200)]
    texts += [f"{rng.randrange(10**rng.randrange(1, 16))}.{rng.randrange(10**6):06d}" for _ in range(200)]
    head = b'{"history":1,"workload":"x","params":{}}\n'
    for t in texts:
        line = (b'{"process":1,"f":"w","value":null,"type":"ok","start":%s,"end":1e300,"node":null,'
                b'"error":null}\n' % t.encode())
        text = head + line * 3
        assert outcome(by_chunks, text, "n") == outcome(by_lines, text, "n"), t
        try:
            want = float(json.loads(t))
        except ValueError:
            continue
        got = History.load(io.BytesIO(text)).cols.start[0]
        assert got.hex() == want.hex(), t


def test_long_reads_are_packed_and_spilled(small):
    h = History("ledger", {})
    ids = list(range(-2, 500))
    h.add(1, "insert", 1, "ok", 0.0, 0.1, "sql1")
    h.add(2, "read", ids, "ok", 1.0, 2.0, "sql1")
    h.add(2, "read", [], "ok", 2.0, 3.0, "sql1")
    buf = io.StringIO()
    h.dump(buf)
    got = History.load(io.BytesIO(buf.getvalue().encode()), "h")
    assert type(got.cols.objs[1]) is _IntsRef and got.cols.value(1) == ids and got.cols.value(2) == []
    assert rows(got) == rows(by_lines(buf.getvalue().encode(), "h"))


def test_gzip_text_crlf_blank_and_no_final_newline(tmp_path):
    h = synthetic(random.Random(9), 300, workload="other")
    buf = io.StringIO()
    h.dump(buf)
    text = buf.getvalue()
    want = rows(by_lines(text.encode(), "h"))
    p = tmp_path / "h.jsonl.gz"
    p.write_bytes(gzip.compress(text.encode()))
    assert rows(History.read_jsonl(p)) == want
    assert rows(History.load(io.StringIO(text), "h")) == want
    crlf = text.replace("\n", "\r\n").rstrip("\r\n")
    assert rows(History.load(io.BytesIO(crlf.encode()), "h")) == want
    head, _, body = text.partition("\n")
    blank = head + "\n\n  \n" + body.replace("\n", "\n\n", 3)
    assert rows(History.load(io.BytesIO(blank.encode()), "h")) == want


@pytest.mark.parametrize("size", [None, 300])
def test_errors_name_the_line_across_chunks(size):
    h = History("ledger", {})
    for i in range(200):
        h.add(1, "insert", i, "ok", float(i), i + 0.5, "sql1")
    buf = io.StringIO()
    h.dump(buf)
    lines = buf.getvalue().encode().splitlines(keepends=True)
    lines[150] = lines[150].replace(b'"ok"', b'"okay"')
    with pytest.raises(HistoryFormatError, match=r"^h:151: bad operation: type must be ok"):
        by_chunks(b"".join(lines), "h", size)
    lines[150] = b"{not json\n"
    with pytest.raises(HistoryFormatError, match=r"^h:151: not JSON"):
        by_chunks(b"".join(lines), "h", size)


@pytest.mark.parametrize("seed", range(8))
def test_sort_of_ties_in_place_is_the_full_sort(seed):
    """History.load sorts what it read: only runs of equal end times out of start order move,
    in place; the result is the stable sort by (end, start), sparse values and messages moved."""
    rng = random.Random(seed)
    n = rng.choice([3000, 9000])
    ends = sorted(round(rng.uniform(0, 50), rng.choice([0, 1, 2])) for _ in range(n))
    h1, h2 = History("x"), History("x")
    for i, e in enumerate(ends):
        s = e - rng.choice([0, 0.5, 1, 2])
        for h in (h1, h2):
            h.add(i % 5, "f", [i] if i % 7 == 0 else i, "ok", s, e, "n" if i % 3 else None,
                  E_UNK if i % 11 == 0 else None)
    want = [(o.process, o.value, o.start, o.end, o.node, o.error) for o in h2]
    assert h1._sort_ties()
    assert list(h1.order()) == list(range(n))
    assert [(o.process, o.value, o.start, o.end, o.node, o.error) for o in h1] == want
    h2.add(0, "f", 0, "ok", 0.0, 0.0)  # an end time that goes back: the general sort
    assert not h2._sort_ties()


@pytest.mark.parametrize("seed", range(6))
def test_int_lists_parse_exactly(seed, monkeypatch):
    """An id list body is taken only if json would read the same list of 64-bit ints."""
    monkeypatch.setattr(idlists, "_STEP", 48)
    rng = random.Random(seed)
    for _ in range(300):
        kind = rng.random()
        if kind < 0.4:  # sorted ids, mostly of one width
            base = rng.choice([0, 7, 95, 9990, 10**6 - 20, 10**15 - 3])
            ids = list(range(base, base + rng.randrange(0, 40)))
        else:
            ids = [rng.choice([0, -1, 5, 42, -987654321, 10**16 - 1, 10**17, -(2**63), 2**63 - 1, 2**64])
                   for _ in range(rng.randrange(1, 12))]
        body = ",".join(map(str, ids)).encode()
        if rng.random() < 0.5 and body:  # a byte replaced, removed or added
            i = rng.randrange(len(body))
            m = rng.choice([b"0", b"9", b",", b"-", b" ", b"a", b".", b""])
            body = body[:i] + m + body[i + rng.randrange(2):]
        buf = b" " * 64 + b"[" + body + b"]"
        got: list = []
        n = idlists.int_list(buf, 65, len(buf) - 1, lambda v: got.extend(v.tolist()))
        try:
            want = json.loads(b"[" + body + b"]")
        except ValueError:
            want = None
        if re.fullmatch(rb"(-?(0|[1-9][0-9]{0,15})(,-?(0|[1-9][0-9]{0,15}))*)?", body):
            assert n == len(want) and got == want, body  # plain: always taken
        elif n is not None:  # taken: then it must be exactly what json reads
            assert got == want, body


def test_an_unforeseen_failure_of_the_fast_path_reads_line_by_line(monkeypatch):
    h = synthetic(random.Random(3), 200, workload="other")
    buf = io.StringIO()
    h.dump(buf)
    text = buf.getvalue().encode()

    def broken(*args, **kw):
        raise IndexError("a bug")
    monkeypatch.setattr(loader, "template", broken)
    assert rows(History.load(io.BytesIO(text), "h")) == rows(by_lines(text, "h"))


def test_checking_a_ledger_history_does_not_import_scipy():
    """`ndbchaos check` of a non-transactional history does not pay for the anomaly checker's
    scipy (0.3-0.5 s of a 2 s check of 1M ops): it is imported when a dependency graph is searched."""
    import subprocess
    import sys
    code = "import sys; import ndbchaos.cli, ndbchaos.commands.check, ndbchaos.checks; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False", out
