"""Typed column storage of operations (``Columns``), shared by ``Recorder`` and ``History``, and
the packing helpers that fill it in bulk."""

from __future__ import annotations

import os
import struct
from array import array
from typing import Any, Iterable

from .model import _FLUSH_AT, _INT_MAX, CLASS_CODE, CLASSES, NO_INT, TYPE_CODE, TYPES, ErrorInfo, HistoryFormatError, Op


class _Ints(array):
    """A list of integers stored packed (8 bytes each). ``Columns.value`` returns it as a list."""

    __slots__ = ()


class _OpenFile:
    """A columnar file kept open (read-only) for the id lists left in it: they stay readable
    when the file is removed (a run's spools are deleted once read). Closed with its last user."""

    __slots__ = ("fd", "path")

    def __init__(self, path: str):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)

    def read_into(self, buf: memoryview, offset: int) -> None:
        got, n = 0, len(buf)
        while got < n:
            if hasattr(os, "preadv"):
                k = os.preadv(self.fd, [buf[got:]], offset + got)
            else:  # pragma: no cover - not Linux
                data = os.pread(self.fd, n - got, offset + got)
                buf[got:got + len(data)] = data
                k = len(data)
            if k <= 0:
                raise HistoryFormatError(f"{self.path}:offset {offset}: cannot read an id list back "
                                         "(the file was truncated since it was read)")
            got += k

    def __del__(self):
        try:
            os.close(self.fd)
        except (OSError, AttributeError, TypeError):
            pass


class _IntsRef:
    """A packed int list left in its columnar file (a large ledger read): read back on each use
    (``load``, ``numpy``), so a history of many big reads does not hold them all in memory.
    Pickled as the list itself."""

    __slots__ = ("file", "offset", "count")

    def __init__(self, file: _OpenFile, offset: int, count: int):
        self.file, self.offset, self.count = file, offset, count

    def __len__(self) -> int:
        return self.count

    def numpy(self):
        """The ids as an int64 numpy array, read straight into it (no second copy)."""
        import numpy as np
        a = np.empty(self.count, dtype="<i8")
        self.file.read_into(memoryview(a).cast("B"), self.offset)
        return a.astype(np.int64, copy=False)

    def load(self) -> _Ints:
        a = _Ints("q")
        a.frombytes(memoryview(self.numpy()).cast("B"))
        return a

    def __reduce__(self):
        return _Ints, ("q", self.load().tobytes())


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
        if type(o) is _IntsRef:
            o = o.load()
        return o.tolist() if type(o) is _Ints else o

    def raw_value(self, i: int) -> Any:
        """Like ``value`` but a packed int list stays an ``array('q')`` (no copy)."""
        v = self.ival[i]
        if v != NO_INT:
            return v
        o = self.objs.get(i)
        return o.load() if type(o) is _IntsRef else o

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
