"""``History``: all operations of a run (the merge of its recorders) in completion order, with
its header; writing and reading the interchange format (JSON Lines, optionally gzip)."""

from __future__ import annotations

import gzip
import io
from array import array
from typing import Any, Iterable, Iterator

import numpy as np

from .columnar import MAGIC, is_columnar, read_columnar, write_history
from .columns import Columns
from .interchange import dump_ops, read_ops
from .model import COLUMNAR_SUFFIX, FORMAT_VERSION, ErrorInfo, HistoryFormatError, Op


def _magic_prefix(path) -> bytes | None:
    """The file's bytes when it is shorter than the columnar magic and a prefix of it (a spool
    cut short at its start; b"" for an empty file), else None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(MAGIC))
    except OSError:
        return None
    return head if len(head) < len(MAGIC) and MAGIC.startswith(head) else None


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
        _to_microseconds(out)
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
        dump_ops(fh, self.header(), self.cols, self.order())

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
        """Read the interchange format from an open file (binary or text): ``interchange.read_ops``,
        then in completion order."""
        workload, params, run, cols = read_ops(fh, name)
        h = cls(workload, params, cols)
        h.run = run
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
