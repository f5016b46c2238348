"""The history: every client operation of a run, as evidence.

Recording happens on the hot path of every operation, so it is columnar: one ``Recorder`` per
client thread appends to typed arrays (a few machine words per op, no dict per op). Values that
are not plain integers and error messages are kept sparsely, by op index.

A ``History`` is the merge of all recorders of a run, ordered by completion time, plus a header.
It is exported as the interchange format (JSON Lines, optionally gzip):

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
import pickle
from array import array
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

OK, FAIL, INFO = 0, 1, 2
TYPES = ("ok", "fail", "info")
TYPE_CODE = {t: i for i, t in enumerate(TYPES)}
CLASSES = (None, "temporary", "unknown", "permanent")
CLASS_CODE = {c: i for i, c in enumerate(CLASSES)}
NO_INT = -(2**63)  # marks "value is not a plain int; see the sparse table"


class HistoryFormatError(ValueError):
    """A history file that cannot be read; the message names the line."""


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


class Columns:
    """Typed column storage shared by Recorder and History."""

    __slots__ = ("process", "f", "type", "start", "end", "node", "ival", "errno", "ecode", "ecls",
                 "objs", "msgs", "f_names", "node_names", "_f_idx", "_node_idx")

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

    def f_code(self, f: str) -> int:
        i = self._f_idx.get(f)
        if i is None:
            i = self._f_idx[f] = len(self.f_names)
            self.f_names.append(f)
        return i

    def node_code(self, node: str | None) -> int:
        if node is None:
            return -1
        i = self._node_idx.get(node)
        if i is None:
            i = self._node_idx[node] = len(self.node_names)
            self.node_names.append(node)
        return i

    def append(self, process: int, f: str, value: Any, type_: str, start: float, end: float,
               node: str | None, error: ErrorInfo | None) -> None:
        i = len(self.start)
        self.process.append(process)
        self.f.append(self.f_code(f))
        self.type.append(TYPE_CODE[type_])
        self.start.append(start)
        self.end.append(end)
        self.node.append(self.node_code(node))
        if type(value) is int and NO_INT < value < 2**63:
            self.ival.append(value)
        else:
            self.ival.append(NO_INT)
            self.objs[i] = value
        if error is None:
            self.errno.append(0)
            self.ecode.append(0)
            self.ecls.append(0)
        else:
            self.errno.append(error.errno if error.errno is not None else -1)
            self.ecode.append(error.engine_code if error.engine_code is not None else -1)
            self.ecls.append(CLASS_CODE.get(error.cls, 0))
            self.msgs[i] = error.message

    def value(self, i: int) -> Any:
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
    """Per-thread recorder. ``record`` is the hot path."""

    record = Columns.append

    def to_bytes(self) -> bytes:
        state = {k: getattr(self, k) for k in self.__slots__ if not k.startswith("_")}
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
            fmap = [out.f_code(n) for n in p.f_names]
            nmap = [out.node_code(n) for n in p.node_names]
            base = len(out)
            out.process.extend(p.process)
            out.f.extend(array("B", (fmap[x] for x in p.f)))
            out.type.extend(p.type)
            out.start.extend(p.start)
            out.end.extend(p.end)
            out.node.extend(array("h", (nmap[x] if x >= 0 else -1 for x in p.node)))
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
        """Row indices sorted by (end, start)."""
        if self._order is None or len(self._order) != len(self.cols):
            c = self.cols
            self._order = array("l", sorted(range(len(c)), key=lambda i: (c.end[i], c.start[i])))
        return self._order

    def __iter__(self) -> Iterator[Op]:
        for k, i in enumerate(self.order()):
            yield self.cols.op(i, k)

    def header(self) -> dict:
        return {"history": 1, "workload": self.workload, "params": self.params}

    # -- interchange format ---------------------------------------------------------------
    def write_jsonl(self, path) -> None:
        path = str(path)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "wt", encoding="utf-8") as fh:
            self.dump(fh)

    def dump(self, fh: io.TextIOBase) -> None:
        dumps = json.JSONEncoder(separators=(",", ":")).encode
        fh.write(dumps(self.header()) + "\n")
        for op in self:
            fh.write(dumps(op.to_json()) + "\n")

    @classmethod
    def read_jsonl(cls, path) -> "History":
        path = str(path)
        try:
            with open(path, "rb") as raw:
                magic = raw.read(2)
        except OSError as e:
            raise HistoryFormatError(f"{path}: cannot open: {e.strerror}") from None
        opener = gzip.open if magic == b"\x1f\x8b" else open
        try:
            with opener(path, "rt", encoding="utf-8") as fh:
                return cls.load(fh, path)
        except (OSError, EOFError, UnicodeDecodeError) as e:
            raise HistoryFormatError(f"{path}: unreadable: {e}") from None

    @classmethod
    def load(cls, fh, name: str = "<history>") -> "History":
        first = fh.readline()
        if not first.strip():
            raise HistoryFormatError(f"{name}:1: empty file, expected a header line")
        try:
            head = json.loads(first)
        except ValueError as e:
            raise HistoryFormatError(f"{name}:1: header is not JSON: {e}") from None
        if not isinstance(head, dict) or head.get("history") != 1 or not isinstance(head.get("workload"), str):
            raise HistoryFormatError(f'{name}:1: header must be {{"history": 1, "workload": "<name>", "params": {{...}}}}')
        params = head.get("params") or {}
        if not isinstance(params, dict):
            raise HistoryFormatError(f"{name}:1: header params must be an object")
        h = cls(head["workload"], params)
        add = h.cols.append
        for lineno, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except ValueError as e:
                raise HistoryFormatError(f"{name}:{lineno}: not JSON: {e}") from None
            try:
                add(*_parse_op(d))
            except (KeyError, TypeError, ValueError) as e:
                raise HistoryFormatError(f"{name}:{lineno}: bad operation: {e}") from None
        return h


def _parse_op(d: dict) -> tuple:
    if not isinstance(d, dict):
        raise TypeError("an operation must be a JSON object")
    t = d["type"]
    if t not in TYPE_CODE:
        raise ValueError(f"type must be ok, fail or info, not {t!r}")
    process, f = d["process"], d["f"]
    if not isinstance(process, int) or isinstance(process, bool):
        raise TypeError("process must be an integer")
    if not isinstance(f, str):
        raise TypeError("f must be a string")
    start, end = float(d["start"]), float(d["end"])
    if end < start:
        raise ValueError(f"end {end} is before start {start}")
    node = d.get("node")
    if node is not None and not isinstance(node, str):
        raise TypeError("node must be a string or null")
    err = d.get("error")
    e = None
    if err is not None:
        if not isinstance(err, dict):
            raise TypeError("error must be an object or null")
        cls_ = err.get("class")
        if cls_ not in CLASS_CODE:
            raise ValueError(f"error class must be temporary, unknown, permanent or null, not {cls_!r}")
        errno, ecode = err.get("errno"), err.get("engine_code")
        for name, v in (("errno", errno), ("engine_code", ecode)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                raise TypeError(f"error.{name} must be an integer or null")
        e = ErrorInfo(errno, ecode, cls_, str(err.get("message", "")))
    return process, f, d.get("value"), t, start, end, node, e
