"""``History``: all operations of a run (the merge of its recorders) in completion order, with
its header; writing and reading the interchange format (JSON Lines, optionally gzip)."""

from __future__ import annotations

import gc
import gzip
import io
import json
import struct
from array import array
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

import numpy as np

from .columns import Columns, _Ints, _IntsRef
from .columnar import MAGIC
from .jsonl import VALUE_VALIDATORS, _Source, _num, _parse_error, _parse_op, parse_header
from .scan import ChunkLoader
from .model import COLUMNAR_SUFFIX, FORMAT_VERSION, NO_INT, TYPE_CODE, ErrorInfo, HistoryFormatError, Op


try:  # a C JSON parser, several times faster than json on long histories
    import orjson as _orjson
    _LOADS: tuple = (_orjson.loads, json.loads)
except ImportError:  # pragma: no cover - orjson is a dependency
    _LOADS = (json.loads,)


_NUM_TYPES = {int, float}


def _magic_prefix(path) -> bytes | None:
    """The file's bytes when it is shorter than the columnar magic and a prefix of it (a spool
    cut short at its start; b"" for an empty file), else None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(MAGIC))
    except OSError:
        return None
    return head if len(head) < len(MAGIC) and MAGIC.startswith(head) else None
_INT64_LIMIT = 2.0 ** 63


def _any_big_float(parsed: list) -> bool:
    """Whether any op's value holds a float as large as an integer beyond 64 bits."""
    values = [d.get("value") for d in parsed if type(d) is dict]
    return any(map(_big_float, [v for v in values if type(v) is not int]))


def _big_float(v) -> bool:
    """Whether a decoded value holds a float as large as an integer beyond 64 bits (which orjson
    decodes to a float, json to an int)."""
    t = type(v)
    if t is float:
        return abs(v) >= _INT64_LIMIT
    if t is list:
        return bool(v) and set(map(type, v)) != {int} and any(map(_big_float, v))
    if t is dict:
        return any(map(_big_float, v.values()))
    return False


def _fast_batch(cols: Columns, parsed: list, check_value) -> bool:
    """Append a batch of decoded op lines column-wise, checking them with a few passes over
    each column instead of per op. Returns False, appending nothing, at anything unusual (a
    missing field, a wrong type, a bad value): the caller then takes the op-by-op path, which
    names the line and the reason."""
    try:
        P = [d["process"] for d in parsed]
        F = [d["f"] for d in parsed]
        T = [d["type"] for d in parsed]
        S = [d["start"] for d in parsed]
        E = [d["end"] for d in parsed]
        V = [d.get("value") for d in parsed]
        N = [d.get("node") for d in parsed]
        ER = [d.get("error") for d in parsed]
    except (KeyError, TypeError, AttributeError):
        return False
    if (set(map(type, P)) != {int} or set(map(type, F)) != {str} or not set(T) <= TYPE_CODE.keys()
            or not set(map(type, S)) | set(map(type, E)) <= _NUM_TYPES
            or not set(map(type, N)) <= {str, type(None)}):
        return False
    try:
        p = np.array(P, dtype=np.int64)
        s, e = np.array(S, dtype=np.float64), np.array(E, dtype=np.float64)
    except (OverflowError, ValueError):
        return False
    if (p.min() < -2**31 or p.max() >= 2**31 or not np.isfinite(s).all() or not np.isfinite(e).all()
            or (e < s).any()):
        return False
    if ER.count(None) != len(ER):
        try:
            ER = [None if x is None else _parse_error(x) for x in ER]
        except (TypeError, ValueError):
            return False
    if check_value is not None:
        # every value that is not a plain int, and one op per (f, type) whose value is one
        seen = set()
        try:
            for f_, t_, v in zip(F, T, V):
                if type(v) is int:
                    if (f_, t_) in seen:
                        continue
                    seen.add((f_, t_))
                check_value(f_, t_, v)
        except (TypeError, ValueError):
            return False
    try:
        cols.extend_columns(P, F, V, T, S, E, N, ER)
    except (KeyError, TypeError, ValueError, OverflowError, struct.error):
        return False
    return True


def _in_order(start: np.ndarray, end: np.ndarray) -> bool:
    """Whether rows are already sorted by (end, start), checked in slices (little memory)."""
    step = 1 << 20
    for lo in range(0, len(end) - 1, step):
        e0, e1 = end[lo:lo + step], end[lo + 1:lo + step + 1]
        e0 = e0[:len(e1)]
        if (e1 < e0).any():
            return False
        tie = e1 == e0
        if tie.any():
            s0, s1 = start[lo:lo + len(e1)], start[lo + 1:lo + 1 + len(e1)]
            if (s1[tie] < s0[tie]).any():
                return False
    return True


class History:
    """All operations of a run, ordered by end time, with a header."""

    def __init__(self, workload: str, params: dict | None = None, cols: Columns | None = None):
        self.workload = workload
        self.params = dict(params or {})
        self.cols = cols if cols is not None else Columns()
        self._order: array | None = None
        #: the rest of a scenario's run record (engine, topology, expectation, fault windows,
        #: phases, marks, status samples, engine events, check options), or None for a bare
        #: history; saved in the header's "run" field (docs/history-format.md)
        self.run: dict | None = None

    # -- building -------------------------------------------------------------------------
    @classmethod
    def merge(cls, workload: str, params: dict, parts: Iterable[Columns]) -> "History":
        out = Columns()
        for p in parts:
            p.flush()
            fmap = [out.f_code(n) for n in p.f_names]
            nmap = [out.node_code(n) for n in p.node_names]
            base = len(out)
            out.process.extend(p.process)
            out.f.extend(p.f if fmap == list(range(len(fmap))) else array("B", map(fmap.__getitem__, p.f)))
            out.type.extend(p.type)
            out.start.extend(p.start)
            out.end.extend(p.end)
            if nmap == list(range(len(nmap))):
                out.node.extend(p.node)
            else:
                nm = nmap + [-1]  # index -1 -> -1
                out.node.extend(array("h", map(nm.__getitem__, p.node)))
            out.ival.extend(p.ival)
            out.errno.extend(p.errno)
            out.ecode.extend(p.ecode)
            out.ecls.extend(p.ecls)
            for k, v in p.objs.items():
                out.objs[base + k] = v
            for k, v in p.msgs.items():
                out.msgs[base + k] = v
        return cls(workload, params, out)

    def add(self, process: int, f: str, value: Any, type_: str, start: float, end: float,
            node: str | None = None, error: ErrorInfo | None = None) -> None:
        # times to the microsecond, the record's precision (see ``_to_microseconds``)
        self.cols.append(process, f, value, type_, round(start, 6), round(end, 6), node, error)
        self._order = None

    # -- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.cols)

    def order(self) -> array:
        """Row indices sorted by (end, start), ties in insertion order."""
        self.cols.flush()
        if self._order is None or len(self._order) != len(self.cols):
            c = self.cols
            n = len(c)
            if n > 2048:
                end = np.frombuffer(c.end, dtype=np.float64) if n else np.empty(0)
                start = np.frombuffer(c.start, dtype=np.float64) if n else np.empty(0)
                if _in_order(start, end):  # a history read back from a file: no sort needed
                    idx = np.arange(n, dtype=np.int64)
                else:
                    idx = np.lexsort((start, end))  # stable: ties keep insertion order
                del end, start  # release the buffer views so the arrays can grow again
                if array("l").itemsize == 8:
                    self._order = array("l")
                    self._order.frombytes(memoryview(idx.astype(np.int64, copy=False)).cast("B"))
                else:
                    self._order = array("l", idx.tolist())
                del idx
            else:
                self._order = array("l", sorted(range(n), key=lambda i: (c.end[i], c.start[i])))
        return self._order

    def sort(self) -> None:
        """Reorder the columns into completion order (``order()`` becomes 0..n-1), one column
        at a time. The checkers then view the columns instead of copying them: do it on a large
        merged history (``read_parts`` does) before checking it."""
        if self._sort_ties():
            return
        order = self.order()
        idx = np.frombuffer(order, dtype=np.int64 if order.itemsize == 8 else np.int32)
        n = len(idx)
        if n == 0 or (idx[0] == 0 and idx[-1] == n - 1 and bool((idx[1:] > idx[:-1]).all())):
            return
        c = self.cols
        for name in ("process", "f", "type", "start", "end", "node", "ival", "errno", "ecode", "ecls"):
            old = getattr(c, name)
            new = array(old.typecode)
            new.frombytes(memoryview(np.frombuffer(old, dtype=old.typecode)[idx]).cast("B"))
            setattr(c, name, new)
            del old
        if c.objs or c.msgs:
            inv = np.empty(n, dtype=np.int64)
            inv[idx] = np.arange(n, dtype=np.int64)
            c.objs = {int(inv[k]): v for k, v in c.objs.items()}
            c.msgs = {int(inv[k]): v for k, v in c.msgs.items()}
            del inv
        del idx
        self._order = None

    def _sort_ties(self) -> bool:
        """``sort`` in place when the end times already ascend and only runs of equal end times
        are out of start order (a JSONL file: its times are rounded): only those runs move.
        False, nothing done, when the end times do not ascend."""
        c = self.cols
        c.flush()
        n = len(c)
        if n <= 2048:
            return False
        end = np.frombuffer(c.end, dtype=np.float64)
        start = np.frombuffer(c.start, dtype=np.float64)
        step = 1 << 20
        bad = []
        for lo in range(0, n - 1, step):  # in slices: small temporaries
            e0, e1 = end[lo:lo + step], end[lo + 1:lo + step + 1]
            e0 = e0[:len(e1)]
            if (e1 < e0).any():
                return False
            s0, s1 = start[lo:lo + len(e1)], start[lo + 1:lo + 1 + len(e1)]
            bad.append(np.flatnonzero((e1 == e0) & (s1 < s0)) + lo)
        bad = np.concatenate(bad) if bad else np.empty(0, dtype=np.int64)
        if len(bad):
            # the runs of equal end times holding a pair out of order, each sorted by start
            tie = np.unique(end[bad])
            lo, hi = np.searchsorted(end, tie, "left"), np.searchsorted(end, tie, "right")
            rows = np.concatenate([np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist())])
            run = np.repeat(np.arange(len(tie)), hi - lo)
            src = rows[np.lexsort((start[rows], run))]  # stable: ties keep insertion order
            del end, start
            for name in ("process", "f", "type", "start", "end", "node", "ival", "errno", "ecode", "ecls"):
                col = getattr(c, name)
                v = np.frombuffer(col, dtype=col.typecode)
                v[rows] = v[src]
                del v
            moved = {o: k for o, k in zip(src.tolist(), rows.tolist()) if o != k}
            for d in (c.objs, c.msgs):
                if d:
                    back = {k: d.pop(o) for o, k in moved.items() if o in d}
                    d.update(back)
        self._order = None
        return True

    def between(self, t0: float, t1: float) -> "History":
        """The operations that ended in ``[t0, t1)``, as a History of their own (same workload
        and params, no run record; insertion order kept), built column by column."""
        c = self.cols
        c.flush()
        n = len(c)
        end = np.frombuffer(c.end, dtype=np.float64) if n else np.empty(0)
        idx = np.nonzero((end >= t0) & (end < t1))[0]
        del end  # release the buffer view so the column can grow again
        out = Columns(c.f_names, c.node_names)
        if len(idx):
            for name in ("process", "f", "type", "start", "end", "node", "ival", "errno", "ecode", "ecls"):
                src = getattr(c, name)
                getattr(out, name).frombytes(memoryview(np.frombuffer(src, dtype=src.typecode)[idx]).cast("B"))
            for attr in ("objs", "msgs"):
                src, dst = getattr(c, attr), getattr(out, attr)
                if src:
                    keys = np.fromiter(src.keys(), dtype=np.int64, count=len(src))
                    at = np.searchsorted(idx, keys)
                    hit = (at < len(idx)) & (idx[np.minimum(at, len(idx) - 1)] == keys)
                    for k, pos in zip(keys[hit].tolist(), at[hit].tolist()):
                        dst[pos] = src[k]
        return History(self.workload, self.params, out)

    def __iter__(self) -> Iterator[Op]:
        op = self.cols.op
        for k, i in enumerate(self.order()):
            yield op(i, k)

    def header(self) -> dict:
        head = {"history": FORMAT_VERSION, "workload": self.workload, "params": self.params}
        if self.run is not None:
            head["run"] = self.run
        return head

    # -- files -----------------------------------------------------------------------------
    def write(self, path, format: str | None = None) -> None:
        """Write the history: ``format`` "columnar" or "jsonl"; None picks by the file name
        (``COLUMNAR_SUFFIX`` -> columnar, ``.gz`` -> gzip JSONL, anything else JSONL)."""
        path = str(path)
        if format is None:
            format = "columnar" if path.endswith(COLUMNAR_SUFFIX) else "jsonl"
        if format == "columnar":
            from .columnar import write_history
            order = self.order()
            idx = np.frombuffer(order, dtype=np.int64 if order.itemsize == 8 else np.int32)
            identity = len(idx) == 0 or (idx[0] == 0 and idx[-1] == len(idx) - 1
                                         and bool((idx[1:] > idx[:-1]).all()))
            write_history(path, self.header(), self.cols, None if identity else idx)
        elif format == "jsonl":
            self.write_jsonl(path)
        else:
            raise ValueError(f"unknown history format {format!r} (columnar or jsonl)")

    @classmethod
    def read(cls, path, torn: str = "error") -> "History":
        """Read a history file in either format, detected by its first bytes (columnar magic,
        gzip, else JSON Lines). ``torn="stop"``: a columnar file cut short (a spool whose writer
        died) is read up to its last complete chunk instead of being an error."""
        from .columnar import is_columnar, read_columnar
        if torn not in ("error", "stop"):
            raise ValueError('torn must be "error" or "stop"')
        cut = _magic_prefix(path)  # None: not one; b"": an empty file
        if is_columnar(path) or cut or (cut == b"" and torn == "stop"):
            workload, params, run, cols, _ = read_columnar(path, torn=torn)
            if workload is None:
                raise HistoryFormatError(f"{path}: no complete header: the writer died before writing it")
            h = cls(workload, params, cols)
            h.run = run
            return h
        return cls.read_jsonl(path)

    @classmethod
    def read_parts(cls, paths: Iterable, workload: str | None = None, params: dict | None = None,
                   torn: str = "stop") -> "History":
        """One History from several columnar files (the spools of a run's worker processes),
        read straight into one set of columns. ``workload``/``params`` default to the first
        file's header; every file must name the same workload. Spools cut short are read up to
        their last complete chunk (``torn="stop"``) unless ``torn="error"``. The result is
        sorted into completion order (``sort``)."""
        from .columnar import read_columnar
        cols = Columns()
        first = None
        for p in paths:
            w, pr, run, _, _ = read_columnar(p, into=cols, torn=torn)
            if w is None:  # a spool whose writer died before its header was out: no ops
                continue
            if first is None:
                first = (w, pr, run)
            elif w != first[0]:
                raise HistoryFormatError(f"{p}: workload {w!r} differs from the first file's {first[0]!r}")
        if first is None and workload is None:
            raise ValueError("read_parts needs at least one file or a workload")
        _to_microseconds(cols)
        h = cls(workload if workload is not None else first[0],
                params if params is not None else (first[1] if first else {}), cols)
        h.sort()
        return h

    # -- interchange format ---------------------------------------------------------------
    def write_jsonl(self, path, compresslevel: int = 6) -> None:
        """Write the history; gzip when the path ends with ``.gz``."""
        path = str(path)
        if path.endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8", compresslevel=compresslevel) as fh:
                self.dump(fh)
        else:
            with open(path, "w", encoding="utf-8") as fh:
                self.dump(fh)

    def dump(self, fh: io.TextIOBase) -> None:
        enc = json.JSONEncoder(separators=(",", ":")).encode
        fh.write(enc(self.header()) + "\n")
        c = self.cols
        c.flush()
        fjs = [enc(n) for n in c.f_names]
        njs = [enc(n) for n in c.node_names] + ["null"]  # node -1 -> null
        tjs = ['"ok"', '"fail"', '"info"']
        process, f, type_, start, end, node, ival = c.process, c.f, c.type, c.start, c.end, c.node, c.ival
        errno, objs, msgs = c.errno, c.objs, c.msgs
        out = []
        for i in self.order():
            v = ival[i]
            if v != NO_INT:
                vs = str(v)
            else:
                o = objs.get(i)
                if type(o) is _IntsRef:
                    o = o.load()
                vs = enc(o.tolist() if type(o) is _Ints else o)
            if errno[i] == 0 and i not in msgs:
                es = "null"
            else:
                es = enc(c.error(i).to_json())
            out.append(f'{{"process":{process[i]},"f":{fjs[f[i]]},"value":{vs},"type":{tjs[type_[i]]},'
                       f'"start":{_num(start[i])},"end":{_num(end[i])},"node":{njs[node[i]]},"error":{es}}}\n')
            if len(out) >= 4096:
                fh.write("".join(out))
                out.clear()
        fh.write("".join(out))

    @classmethod
    def read_jsonl(cls, path) -> "History":
        """Read a history file, plain or gzip (detected by its magic bytes, not its name)."""
        path = str(path)
        try:
            raw = open(path, "rb")
        except OSError as e:
            raise HistoryFormatError(f"{path}: cannot open: {e.strerror or e}") from None
        with raw:
            magic = raw.read(len(MAGIC))
            raw.seek(0)
            if magic == MAGIC:  # the columnar format
                return cls.read(path)
            if magic[:2] == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                    return cls.load(fh, path)
            return cls.load(raw, path)

    @classmethod
    def load(cls, fh, name: str = "<history>") -> "History":
        """Read the interchange format from an open file (binary or text). The op lines are read
        a chunk at a time (``scan``): those in the shape ``dump`` writes column by column, the
        others with orjson; a chunk with anything wrong in it line by line, naming the line."""
        src = _Source(fh, name)
        first = src.header()
        if first is None or not first.strip():
            raise HistoryFormatError(f"{name}:1: empty file, expected a header line")
        try:
            head = json.loads(src.text(first, 1))
        except ValueError as e:
            raise HistoryFormatError(f"{name}:1: header is not JSON: {e}") from None
        workload, params, run = parse_header(head, f"{name}:1")
        h = cls(workload, params)
        h.run = run
        check_value = VALUE_VALIDATORS.get(head["workload"])

        def by_line(buf: bytes, first_lineno: int) -> int:
            return _load_lines(h.cols, buf, first_lineno, src, check_value)
        loader = ChunkLoader(h.cols, check_value, by_line, name)
        with without_gc():  # few containers are built; the collector would only scan them
            for buf in src.chunks():
                src.lineno += loader.feed(buf, src.lineno + 1)
                del buf  # the source reads into it again
        # Lines are written in completion order, but of times rounded to the microsecond: ties
        # may come out of order. In order, the checkers view the columns instead of copying them.
        h.sort()
        return h


def _to_microseconds(cols: Columns) -> None:
    """Round start and end times to the microsecond in place: the precision a saved record keeps
    (``History.dump``), so a run judged live and judged again from its file sees the same times.
    Unrounded, an op's latency could fall one microsecond apart and cross an HdrHistogram bucket
    (a live p99 of 9.191 ms read back as 9.183 ms)."""
    cols.flush()
    for a in (cols.start, cols.end):
        if len(a):
            v = np.frombuffer(a, dtype=np.float64)
            np.round(v, 6, out=v)
            del v  # release the view: the array may grow again


@contextmanager
def without_gc(freeze: bool = False):
    """The cyclic garbage collector off while a history's objects are built (they hold no cycles;
    its passes over millions of new containers would be most of the reading time), back as it was
    afterwards. ``freeze``: what was built is moved out of the collector's sight (``gc.freeze``)
    instead of scanned once more later; only for a process that ends after its check (the CLI),
    since anything frozen is never collected again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if freeze:
                gc.freeze()
            gc.enable()


def _load_lines(cols: Columns, buf: bytes, first_lineno: int, src: _Source, check_value) -> int:
    """Append a chunk of op lines (buf, ending with a newline) in batches of 4096 lines: one
    orjson parse per batch (json for a batch orjson cannot take exactly), then ``_fast_batch``;
    op by op when that fails, naming the first bad line. Returns the number of lines."""
    name = src.name
    add = cols.append
    lines = buf.split(b"\n")
    lines.pop()  # after the last newline
    for off in range(0, len(lines), 4096):
        batch = lines[off:off + 4096]
        first = first_lineno + off
        parsed = None
        joined = b"[" + b",".join(batch) + b"]"
        for loads in _LOADS:  # one parse per batch: orjson, else (big ints, NaN ...) json
            try:
                parsed = loads(joined)
            except ValueError:
                continue
            if loads is not json.loads and _any_big_float(parsed):
                parsed = None
                continue  # orjson turns integers beyond 64 bits into floats: json keeps them
            if len(parsed) != len(batch):
                parsed = None
            break
        del joined
        linenos = None
        if parsed is None:  # find the bad line (or skip blank lines) one by one
            parsed, linenos = [], []
            for k, line in enumerate(batch):
                text = src.text(line, first + k)
                if not text.strip():
                    continue
                try:
                    parsed.append(json.loads(text))
                except ValueError as e:
                    raise HistoryFormatError(f"{name}:{first + k}: not JSON: {e}") from None
                linenos.append(first + k)
        if linenos is None and _fast_batch(cols, parsed, check_value):
            continue
        flat: list = []
        try:
            for k, d in enumerate(parsed):
                row = _parse_op(d)
                if check_value is not None:
                    check_value(row[1], row[3], row[2])
                flat += row
            cols.extend_flat(flat)
        except (KeyError, TypeError, ValueError, OverflowError, struct.error) as e:
            err = e
            if len(flat) == 8 * len(parsed):  # every op parsed: a storage limit was hit
                k = 0
                try:
                    for k in range(len(parsed)):
                        add(*flat[8 * k: 8 * k + 8])
                except (KeyError, TypeError, ValueError, OverflowError) as e2:
                    err = e2
            lineno = linenos[k] if linenos is not None else first + k
            what = f"missing field {err}" if isinstance(err, KeyError) else str(err)
            raise HistoryFormatError(f"{name}:{lineno}: bad operation: {what}") from None
    return len(lines)
