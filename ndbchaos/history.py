"""The history: every client operation of a run, as evidence.

Recording happens on the hot path of every operation. ``Recorder.record`` only appends one tuple
to a buffer; every 1024 operations the buffer is folded into typed column arrays (a few machine
words per op, no dict per op). Values that are not plain integers and error messages are kept
sparsely, by op index; lists of integers (a ledger read) are kept as packed 64-bit arrays.

A ``History`` is the merge of all recorders of a run, ordered by completion time, plus a header.
It is exported as the interchange format (JSON Lines, optionally gzip; docs/history-format.md):

    {"history": 1, "workload": "<name>", "params": {...}}                      first line
    {"process": int, "f": str, "value": any, "type": "ok"|"fail"|"info",
     "start": float, "end": float, "node": str|null,
     "error": null|{"errno": int|null, "engine_code": int|null,
                    "class": "temporary"|"unknown"|"permanent"|null, "message": str}}

Times are seconds on the run's clock (ndbchaos.clock).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import pickle
import struct
import zlib
from array import array
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

OK, FAIL, INFO = 0, 1, 2
TYPES = ("ok", "fail", "info")
TYPE_CODE = {t: i for i, t in enumerate(TYPES)}
CLASSES = (None, "temporary", "unknown", "permanent")
CLASS_CODE = {c: i for i, c in enumerate(CLASSES)}
NO_INT = -(2**63)  # marks "value is not a plain int; see the sparse table"
_INT_MAX = 2**63
FORMAT_VERSION = 1
_FLUSH_AT = 1024  # Recorder buffer size (ops) before folding into columns
_FLUSH_FLAT = 8 * _FLUSH_AT


class HistoryFormatError(ValueError):
    """A history file that cannot be read; the message names the file and line (``path:line: ...``)."""


@dataclass(frozen=True)
class ErrorInfo:
    errno: int | None
    engine_code: int | None
    cls: str | None  # temporary | unknown | permanent | None
    message: str

    def to_json(self) -> dict:
        return {"errno": self.errno, "engine_code": self.engine_code, "class": self.cls, "message": self.message}


@dataclass(frozen=True)
class Op:
    index: int
    process: int
    f: str
    value: Any
    type: str
    start: float
    end: float
    node: str | None
    error: ErrorInfo | None

    def to_json(self) -> dict:
        return {
            "process": self.process, "f": self.f, "value": self.value, "type": self.type,
            "start": round(self.start, 6), "end": round(self.end, 6), "node": self.node,
            "error": self.error.to_json() if self.error else None,
        }


class _Ints(array):
    """A list of integers stored packed (8 bytes each). ``Columns.value`` returns it as a list."""

    __slots__ = ()


def _pack(value: Any) -> Any:
    """Store a list of plain ints packed; anything else as is."""
    if type(value) is list and value:
        try:
            packed = _Ints("q", value)
        except (TypeError, OverflowError):
            return value
        # array("q") accepts bools (an int subclass); keep those lists as they are.
        if (True in value or False in value) and bool in set(map(type, value)):
            return value
        return packed
    return value


class Columns:
    """Typed column storage shared by Recorder and History.

    Columns (one entry per op, in insertion order): ``process`` i32, ``f`` u8 (index into
    ``f_names``), ``type`` u8 (0 ok, 1 fail, 2 info), ``start``/``end`` f64, ``node`` i16 (index
    into ``node_names``, -1 = none), ``ival`` i64 (the value when it is a plain int, else
    ``NO_INT`` and the value is in ``objs[i]``), ``errno``/``ecode`` i32 (0 = no error, -1 =
    null), ``ecls`` u8 (index into ``CLASSES``); ``msgs[i]`` the error message.
    """

    __slots__ = ("process", "f", "type", "start", "end", "node", "ival", "errno", "ecode", "ecls",
                 "objs", "msgs", "f_names", "node_names", "_f_idx", "_node_idx")
    _STATE = ("process", "f", "type", "start", "end", "node", "ival", "errno", "ecode", "ecls",
              "objs", "msgs", "f_names", "node_names")

    def __init__(self, f_names: Iterable[str] = (), node_names: Iterable[str] = ()):
        self.process = array("i")
        self.f = array("B")
        self.type = array("B")
        self.start = array("d")
        self.end = array("d")
        self.node = array("h")
        self.ival = array("q")
        self.errno = array("i")
        self.ecode = array("i")
        self.ecls = array("B")
        self.objs: dict[int, Any] = {}
        self.msgs: dict[int, str] = {}
        self.f_names: list[str] = list(f_names)
        self.node_names: list[str] = list(node_names)
        self._f_idx = {n: i for i, n in enumerate(self.f_names)}
        self._node_idx = {n: i for i, n in enumerate(self.node_names)}

    def __len__(self) -> int:
        return len(self.start)

    def flush(self) -> None:
        """Plain columns hold no buffer; ``Recorder`` overrides this."""

    def f_code(self, f: str) -> int:
        i = self._f_idx.get(f)
        if i is None:
            if len(self.f_names) >= 255:
                raise ValueError("too many distinct operation names (max 255)")
            i = self._f_idx[f] = len(self.f_names)
            self.f_names.append(f)
        return i

    def node_code(self, node: str | None) -> int:
        if node is None:
            return -1
        i = self._node_idx.get(node)
        if i is None:
            if len(self.node_names) >= 32767:
                raise ValueError("too many distinct node names (max 32767)")
            i = self._node_idx[node] = len(self.node_names)
            self.node_names.append(node)
        return i

    def append(self, process: int, f: str, value: Any, type_: str, start: float, end: float,
               node: str | None, error: ErrorInfo | None) -> None:
        fi = self._f_idx.get(f)
        if fi is None:
            fi = self.f_code(f)
        ni = -1 if node is None else self._node_idx.get(node)
        if ni is None:
            ni = self.node_code(node)
        t = TYPE_CODE[type_]
        i = len(self.start)
        try:
            if type(value) is int and NO_INT < value < _INT_MAX:
                self.ival.append(value)
            else:
                self.ival.append(NO_INT)
                if value is not None:  # absent from objs reads back as None
                    self.objs[i] = _pack(value)
            self.process.append(process)
            self.f.append(fi)
            self.type.append(t)
            self.start.append(start)
            self.end.append(end)
            self.node.append(ni)
            if error is None:
                self.errno.append(0)
                self.ecode.append(0)
                self.ecls.append(0)
            else:
                self.errno.append(error.errno if error.errno is not None else -1)
                self.ecode.append(error.engine_code if error.engine_code is not None else -1)
                self.ecls.append(CLASS_CODE.get(error.cls, 0))
                self.msgs[i] = error.message
        except BaseException:
            self._truncate(i)
            raise

    def _truncate(self, n: int) -> None:
        """Drop rows from index n on (undo a partly appended op)."""
        for a in (self.process, self.f, self.type, self.start, self.end, self.node, self.ival,
                  self.errno, self.ecode, self.ecls):
            del a[n:]
        for d in (self.objs, self.msgs):
            for k in [k for k in d if k >= n]:
                del d[k]

    def extend_rows(self, rows: list) -> None:
        """Append many ``(process, f, value, type, start, end, node, error)`` tuples at once."""
        if rows:
            self.extend_flat([x for row in rows for x in row])

    def extend_flat(self, flat: list) -> None:
        """Append ops given as one flat list, 8 fields per op, in ``append``'s argument order.

        All columns are built before any is extended, so a bad op leaves the columns as they
        were (and raises TypeError, ValueError, KeyError or struct.error)."""
        if len(flat) % 8:
            raise ValueError("flat op list length must be a multiple of 8")
        if flat:
            self.extend_columns(flat[0::8], flat[1::8], flat[2::8], flat[3::8],
                                flat[4::8], flat[5::8], flat[6::8], flat[7::8])

    def extend_columns(self, P: list, F: list, V: list, T: list, S: list, E: list, N: list, ER: list) -> None:
        """Append ops given column-wise (equal-length lists in ``append``'s argument order)."""
        n = len(P)
        if not n:
            return
        base = len(self.start)
        fidx = self._f_idx
        c_f = _codes(F, fidx, self.f_code)
        c_type = _codes(T, TYPE_CODE, None)
        nmap = self._node_idx
        if N.count(N[0]) == n:
            c_node = array("h", [-1 if N[0] is None else self.node_code(N[0])]) * n
        else:
            nmap = dict(nmap)
            for name in set(N):
                nmap[name] = self.node_code(name)
            c_node = _packed("h", n, map(nmap.__getitem__, N))
        c_process = _packed("i", n, P)
        c_start = _packed("d", n, S)
        c_end = _packed("d", n, E)
        objs = {}
        iv = [v if type(v) is int else NO_INT for v in V]
        try:
            c_ival = _packed("q", n, iv)
        except struct.error:  # an int beyond 64 bits: keep it as an object
            iv = [v if type(v) is int and NO_INT < v < _INT_MAX else NO_INT for v in V]
            c_ival = _packed("q", n, iv)
        if NO_INT in c_ival:
            for k in [k for k, v in enumerate(iv) if v == NO_INT]:
                v = V[k]
                if v is not None:  # absent from objs reads back as None
                    objs[base + k] = _pack(v)
        msgs = {}
        if ER.count(None) == n:
            c_errno = array("i", bytes(4 * n))
            c_ecode = c_errno
            c_ecls = array("B", bytes(n))
        else:
            c_errno, c_ecode, c_ecls = array("i", bytes(4 * n)), array("i", bytes(4 * n)), array("B", bytes(n))
            for k in [k for k, e in enumerate(ER) if e is not None]:
                e = ER[k]
                c_errno[k] = -1 if e.errno is None else e.errno
                c_ecode[k] = -1 if e.engine_code is None else e.engine_code
                c_ecls[k] = CLASS_CODE.get(e.cls, 0)
                msgs[base + k] = e.message
        self.process.extend(c_process)
        self.f.extend(c_f)
        self.type.extend(c_type)
        self.start.extend(c_start)
        self.end.extend(c_end)
        self.node.extend(c_node)
        self.ival.extend(c_ival)
        self.errno.extend(c_errno)
        self.ecode.extend(c_ecode)
        self.ecls.extend(c_ecls)
        self.objs.update(objs)
        self.msgs.update(msgs)

    def value(self, i: int) -> Any:
        v = self.ival[i]
        if v != NO_INT:
            return v
        o = self.objs.get(i)
        return o.tolist() if type(o) is _Ints else o

    def raw_value(self, i: int) -> Any:
        """Like ``value`` but a packed int list stays an ``array('q')`` (no copy)."""
        v = self.ival[i]
        return self.objs.get(i) if v == NO_INT else v

    def error(self, i: int) -> ErrorInfo | None:
        if i not in self.msgs and self.errno[i] == 0:
            return None
        e, c = self.errno[i], self.ecode[i]
        return ErrorInfo(None if e == -1 else e, None if c == -1 else c, CLASSES[self.ecls[i]], self.msgs.get(i, ""))

    def op(self, i: int, index: int | None = None) -> Op:
        n = self.node[i]
        return Op(i if index is None else index, self.process[i], self.f_names[self.f[i]], self.value(i),
                  TYPES[self.type[i]], self.start[i], self.end[i],
                  None if n < 0 else self.node_names[n], self.error(i))


class Recorder(Columns):
    """Per-thread recorder (not thread safe: one per client thread). ``record`` is the hot path.

    Recorded ops are buffered and folded into the columns every 1024 ops; ``len``, ``value``,
    ``error``, ``op``, ``to_bytes`` and ``History.merge`` flush first. Call ``flush()`` before
    reading the column arrays directly. A malformed op (an unknown type, a process that is not an
    int) is therefore reported when its batch is folded, by the ``record`` or ``flush`` call
    that folds it; the ops of that batch before it are kept, the ones after it dropped.
    """

    __slots__ = ("_buf",)

    def __init__(self, f_names: Iterable[str] = (), node_names: Iterable[str] = ()):
        super().__init__(f_names, node_names)
        self._buf: list = []

    def record(self, process: int, f: str, value: Any, type_: str, start: float, end: float,
               node: str | None, error: ErrorInfo | None) -> None:
        buf = self._buf
        buf += (process, f, value, type_, start, end, node, error)
        if len(buf) >= _FLUSH_FLAT:
            self.flush()

    def flush(self) -> None:
        buf = self._buf
        if buf:
            self._buf = []
            try:
                self.extend_flat(buf)
            except (KeyError, TypeError, ValueError, OverflowError, AttributeError, struct.error):
                # A bad op in the batch: fold one by one so the error is raised for that op.
                for k in range(0, len(buf), 8):
                    Columns.append(self, *buf[k:k + 8])

    def append(self, *args) -> None:  # keep insertion order with buffered ops
        self.flush()
        Columns.append(self, *args)

    def __len__(self) -> int:
        return len(self.start) + len(self._buf) // 8

    def value(self, i: int) -> Any:
        self.flush()
        return Columns.value(self, i)

    def raw_value(self, i: int) -> Any:
        self.flush()
        return Columns.raw_value(self, i)

    def error(self, i: int) -> ErrorInfo | None:
        self.flush()
        return Columns.error(self, i)

    def op(self, i: int, index: int | None = None) -> Op:
        self.flush()
        return Columns.op(self, i, index)

    def to_bytes(self) -> bytes:
        self.flush()
        state = {k: getattr(self, k) for k in Columns._STATE}
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def from_bytes(cls, data: bytes) -> "Recorder":
        state = pickle.loads(data)
        r = cls(state.pop("f_names"), state.pop("node_names"))
        for k, v in state.items():
            setattr(r, k, v)
        return r


class History:
    """All operations of a run, ordered by end time, with a header."""

    def __init__(self, workload: str, params: dict | None = None, cols: Columns | None = None):
        self.workload = workload
        self.params = dict(params or {})
        self.cols = cols if cols is not None else Columns()
        self._order: array | None = None

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
        self.cols.append(process, f, value, type_, start, end, node, error)
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
                import numpy as np
                end = np.frombuffer(c.end, dtype=np.float64) if n else np.empty(0)
                start = np.frombuffer(c.start, dtype=np.float64) if n else np.empty(0)
                idx = np.lexsort((start, end))  # stable: ties keep insertion order
                del end, start  # release the buffer views so the arrays can grow again
                self._order = array("l", idx.astype(np.int64).tobytes()) if array("l").itemsize == 8 \
                    else array("l", idx.tolist())
            else:
                self._order = array("l", sorted(range(n), key=lambda i: (c.end[i], c.start[i])))
        return self._order

    def __iter__(self) -> Iterator[Op]:
        op = self.cols.op
        for k, i in enumerate(self.order()):
            yield op(i, k)

    def header(self) -> dict:
        return {"history": FORMAT_VERSION, "workload": self.workload, "params": self.params}

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
            magic = raw.read(2)
            raw.seek(0)
            if magic == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                    return cls.load(fh, path)
            return cls.load(raw, path)

    @classmethod
    def load(cls, fh, name: str = "<history>") -> "History":
        """Read the interchange format from an open file (text or binary lines)."""
        lines = _Lines(fh, name)
        first = lines.next()
        if first is None or not first.strip():
            raise HistoryFormatError(f"{name}:1: empty file, expected a header line")
        try:
            head = json.loads(lines.text(first, 1))
        except ValueError as e:
            raise HistoryFormatError(f"{name}:1: header is not JSON: {e}") from None
        if not isinstance(head, dict) or "history" not in head or not isinstance(head.get("workload"), str):
            raise HistoryFormatError(
                f'{name}:1: header must be {{"history": 1, "workload": "<name>", "params": {{...}}}}')
        if head["history"] != FORMAT_VERSION or isinstance(head["history"], bool):
            raise HistoryFormatError(f"{name}:1: unsupported history format version {head['history']!r} "
                                     f"(this reader knows {FORMAT_VERSION})")
        params = head.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise HistoryFormatError(f"{name}:1: header params must be an object")
        h = cls(head["workload"], params)
        check_value = VALUE_VALIDATORS.get(head["workload"])
        add = h.cols.append
        while True:
            batch, first_lineno = lines.batch(4096)
            if not batch:
                break
            parsed = None
            try:  # one json.loads per batch: "[" + lines + "]"
                if type(batch[0]) is bytes:
                    parsed = json.loads(b"[" + b",".join(batch) + b"]")
                else:
                    parsed = json.loads("[" + ",".join(batch) + "]")
                if len(parsed) != len(batch):
                    parsed = None
            except ValueError:
                parsed = None
            linenos = None
            if parsed is None:  # find the bad line (or skip blank lines) one by one
                parsed, linenos = [], []
                for k, line in enumerate(batch):
                    text = lines.text(line, first_lineno + k)
                    if not text.strip():
                        continue
                    try:
                        parsed.append(json.loads(text))
                    except ValueError as e:
                        raise HistoryFormatError(f"{name}:{first_lineno + k}: not JSON: {e}") from None
                    linenos.append(first_lineno + k)
            flat: list = []
            try:
                for k, d in enumerate(parsed):
                    row = _parse_op(d)
                    if check_value is not None:
                        check_value(row[1], row[3], row[2])
                    flat += row
                h.cols.extend_flat(flat)
            except (KeyError, TypeError, ValueError, OverflowError, struct.error) as e:
                if len(flat) == 8 * len(parsed):  # every op parsed: a storage limit was hit
                    k = 0
                    try:
                        for k in range(len(parsed)):
                            add(*flat[8 * k: 8 * k + 8])
                    except (KeyError, TypeError, ValueError, OverflowError) as e2:
                        e = e2
                lineno = linenos[k] if linenos is not None else first_lineno + k
                what = f"missing field {e}" if isinstance(e, KeyError) else str(e)
                raise HistoryFormatError(f"{name}:{lineno}: bad operation: {what}") from None
        return h


_STRUCTS: dict = {}


def _packed(code: str, n: int, values) -> array:
    """array(code) of n values through one struct.pack call (much faster than array(code, it))."""
    st = _STRUCTS.get((code, n))
    if st is None:
        st = struct.Struct(f"={n}{code}")
        if n == _FLUSH_AT:
            _STRUCTS[(code, n)] = st
    a = array(code)
    a.frombytes(st.pack(*values))
    return a


def _codes(names: list, index: dict, add) -> array:
    """array('B') of the small-integer codes of names (ops, types); ``add`` registers a new name."""
    n = len(names)
    first = names[0]
    if names.count(first) == n:  # the common case: a whole batch of one kind
        code = index.get(first)
        if code is None:
            if add is None:
                raise KeyError(first)
            code = add(first)
        return array("B", bytes((code,))) * n
    if add is not None:
        for name in set(names):
            if name not in index:
                add(name)
    return array("B", bytes(map(index.__getitem__, names)))


def _num(x: float) -> str:
    r = round(x, 6)
    return repr(r) if math.isfinite(r) else "null"


class _Lines:
    """Line reader that turns decoding and decompression failures into ``path:line:`` errors."""

    def __init__(self, fh, name: str):
        self._it = iter(fh)
        self.name = name
        self.lineno = 0  # lines handed out so far

    def _fail(self, e: BaseException, n: int | None = None):
        n = self.lineno + 1 if n is None else n
        if isinstance(e, EOFError):
            why = "compressed stream is truncated (at or before this line)"
        elif isinstance(e, UnicodeDecodeError):
            why = f"not UTF-8 text ({e.reason})"
        elif isinstance(e, (zlib.error, gzip.BadGzipFile)):
            why = f"corrupt compressed data ({e}) (at or before this line)"
        else:
            why = f"read error ({e})"
        raise HistoryFormatError(f"{self.name}:{n}: {why}") from None

    def text(self, line, lineno: int) -> str:
        if type(line) is bytes:
            try:
                return line.decode("utf-8")
            except UnicodeDecodeError as e:
                self._fail(e, lineno)
        return line

    def next(self):
        try:
            line = next(self._it)
        except StopIteration:
            return None
        except (EOFError, OSError, zlib.error, UnicodeDecodeError) as e:
            self._fail(e)
        self.lineno += 1
        return line

    def batch(self, n: int) -> tuple[list, int]:
        first = self.lineno + 1
        out = []
        try:
            for line in self._it:
                out.append(line)
                self.lineno += 1
                if len(out) >= n:
                    break
        except (EOFError, OSError, zlib.error, UnicodeDecodeError) as e:
            self._fail(e)
        return out, first


_isfinite = math.isfinite


def _is_num(v) -> bool:
    t = type(v)
    return t is int or (t is float and math.isfinite(v))


def _parse_op(d: dict) -> tuple:
    """Validate one decoded op line; return ``append``'s arguments."""
    if type(d) is not dict:
        raise TypeError("an operation must be a JSON object")
    t = d["type"]
    if t not in TYPE_CODE:
        raise ValueError(f"type must be ok, fail or info, not {t!r}")
    process, f = d["process"], d["f"]
    if type(process) is not int or not -2147483648 <= process <= 2147483647:
        raise TypeError("process must be a 32-bit integer")
    if type(f) is not str:
        raise TypeError("f must be a string")
    start, end = d["start"], d["end"]
    ts, te = type(start), type(end)
    if ts is not float:
        if ts is not int:
            raise TypeError("start and end must be finite numbers (seconds)")
        start = float(start)
    if te is not float:
        if te is not int:
            raise TypeError("start and end must be finite numbers (seconds)")
        end = float(end)
    if not (_isfinite(start) and _isfinite(end)):
        raise TypeError("start and end must be finite numbers (seconds)")
    if end < start:
        raise ValueError(f"end {end} is before start {start}")
    node = d.get("node")
    if node is not None and type(node) is not str:
        raise TypeError("node must be a string or null")
    err = d.get("error")
    return process, f, d.get("value"), t, start, end, node, None if err is None else _parse_error(err)


def _parse_error(err) -> ErrorInfo:
    e = None
    if err is not None:
        if type(err) is not dict:
            raise TypeError("error must be an object or null")
        cls_ = err.get("class")
        if cls_ not in CLASS_CODE:
            raise ValueError(f"error class must be temporary, unknown, permanent or null, not {cls_!r}")
        errno, ecode = err.get("errno"), err.get("engine_code")
        for fname, v in (("errno", errno), ("engine_code", ecode)):
            if v is not None and (type(v) is not int or not -2**31 <= v < 2**31):
                raise TypeError(f"error.{fname} must be a 32-bit integer or null")
        msg = err.get("message", "")
        if msg is None:
            msg = ""
        if type(msg) is not str:
            raise TypeError("error.message must be a string")
        e = ErrorInfo(errno, ecode, cls_, msg)
    return e


# -- workload value shapes (checked when a file is loaded, so errors name the line) -----------

def _check_ledger(f: str, type_: str, value: Any) -> None:
    if f == "insert":
        if type(value) is not int:
            raise TypeError(f"ledger insert value must be the integer id, not {type(value).__name__}")
    elif f == "read" and type_ == "ok":
        if type(value) is not list:
            raise TypeError("ledger ok read value must be the list of ids present")
        for x in value:
            if type(x) is not int:
                raise TypeError(f"ledger read ids must be integers, found {x!r}")


def _check_bank(f: str, type_: str, value: Any) -> None:
    if f == "transfer":
        if type(value) is not dict or not {"from", "to", "amount"} <= value.keys():
            raise TypeError('bank transfer value must be {"from": a, "to": b, "amount": x}')
    elif f == "read" and type_ == "ok":
        if type(value) is not dict or type(value.get("balances")) is not dict:
            raise TypeError('bank ok read value must be {"balances": {"<account>": balance, ...}}')
        for k, v in value["balances"].items():
            if not _is_num(v):
                raise TypeError(f"bank balance of account {k} must be a number, not {v!r}")


VALUE_VALIDATORS: dict[str, Callable[[str, str, Any], None]] = {"ledger": _check_ledger, "bank": _check_bank}
