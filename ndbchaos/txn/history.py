"""Transactional histories: each transaction's micro-operations, outcome, process and its place
in real time; read from Jepsen/Elle's formats or from a run of ours, written back in Jepsen's.

A transaction is a list of micro-operations (mops), as Elle writes them:

    ("append", k, v)   append v to the list at k          (list-append)
    ("r", k, [v, ...]) read the list at k                 (list-append; None on an invocation)
    ("w", k, v)        set the register at k to v          (rw-register)
    ("r", k, v)        read the register at k             (rw-register; None: never written)

Jepsen's history is a sequence of events: ``invoke`` then ``ok`` / ``fail`` / ``info`` per
process; ``ok`` "must logically affect the system", ``fail`` "must have no logical effect",
``info`` "may do either". A process that got ``info`` never invokes again. Events carry an
``index`` (their order) and ``time`` (ns). ``TxnHistory.from_events`` pairs them; real-time
order comes from the event order, as Elle's does: T1 precedes T2 when T1's completion comes
before T2's invocation. Our own runs record each transaction once, with its start and end on
the run clock (``from_history``); their events are ordered by those times.

Readers raise ``TxnFormatError`` with ``file:line`` (or the op's position) for anything they
cannot use; ``ndbchaos check`` turns it into one line and exit 2.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from ..history import History, HistoryFormatError
from ..history.columnar import MAGIC as COLUMNAR_MAGIC
from ..history.interchange import without_gc
from .mops import TxnFormatError, _fast_mops, _mops, _short, _valid_mops

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    _orjson = None

OK, FAIL, INFO = 0, 1, 2
TYPE_NAMES = ("ok", "fail", "info")
_COMPLETION = {"ok": OK, "fail": FAIL, "info": INFO}
#: the micro-operation names each model accepts (Elle's)
MOP_NAMES = {"list-append": ("append", "r"), "rw-register": ("w", "r")}
NO_TIME = -1
#: the model of each transactional workload of ours (a run's header names its workload)
RUN_MODELS = {"list_append": "list-append", "rw_register": "rw-register"}


@dataclass(slots=True)
class Txn:
    """One transaction: its completion (or its invocation, for one that never completed)."""

    id: int  # its position in the TxnHistory: the node of the dependency graph
    index: int  # the history's own index of the completion event (ours: the op's index)
    process: int
    type: int  # OK, FAIL, INFO
    mops: list  # [(f, k, v)]
    inv: int  # position of its invocation in the event order (-1: not known)
    cmp: int  # position of its completion in the event order
    start: float = NO_TIME  # seconds (ns / 1e9 for Jepsen histories); -1 when unknown
    end: float = NO_TIME
    node: str | None = None  # the SQL node it ran on (our runs)

    @property
    def type_name(self) -> str:
        return TYPE_NAMES[self.type]

    def to_json(self) -> dict:
        d = {"index": self.index, "process": self.process, "type": self.type_name,
             "value": [list(m) if m[0] != "r" or not isinstance(m[2], tuple) else [m[0], m[1], list(m[2])]
                       for m in self.mops]}
        if self.end != NO_TIME:
            d["start"], d["end"] = round(self.start, 6), round(self.end, 6)
        if self.node is not None:
            d["node"] = self.node
        return d


class TxnHistory:
    """The transactions of a history, in completion order."""

    def __init__(self, txns: list[Txn], source: str = ""):
        self.txns = txns
        self.source = source
        #: the model a run of ours was recorded for (its workload's), None for Jepsen's formats
        self.model: str | None = None

    def __len__(self) -> int:
        return len(self.txns)

    def __iter__(self) -> Iterator[Txn]:
        return iter(self.txns)

    def counts(self) -> dict[str, int]:
        arrays = getattr(self.txns, "arrays", None)
        if arrays is not None:  # read into arrays (``scan``): counted there
            return dict(zip(TYPE_NAMES, np.bincount(arrays.type, minlength=3).tolist()))
        c = [0, 0, 0]
        for t in self.txns:
            c[t.type] += 1
        return dict(zip(TYPE_NAMES, c))

    # -- building -------------------------------------------------------------------------------
    @classmethod
    def from_events(cls, events: Iterable[dict], source: str = "") -> "TxnHistory":
        """Pair Jepsen events (dicts with ``process``, ``type``, ``value``, optional ``index`` and
        ``time``) into transactions. Events of a process that is not an integer (the nemesis)
        are left out, as Elle leaves them out. An invocation that never completes is ``info``."""
        open_: dict[int, tuple[int, dict]] = {}
        txns: list[Txn] = []
        append = txns.append
        pos = 0
        types = _EVENT_TYPES
        for n, ev in enumerate(events):
            try:  # the common case in one go; anything unusual is named by the checks below
                proc = ev["process"]
                code = types[ev["type"]]
                if type(proc) is not int:
                    raise TypeError
                if code < 0:
                    if proc in open_ or type(ev.get("index") or 0) is not int:
                        raise TypeError  # (named below)
                    if not _valid_mops(ev.get("value")):  # its micro-ops too: a map or set in them is refused
                        _mops(ev["value"], f"{source}:op {_op_no(ev, n)}")
                    open_[proc] = (pos, ev)
                    pos += 1
                    continue
                inv_pos, inv = open_.pop(proc, (-1, None))
                value = ev.get("value")
                if value is None and inv is not None:
                    value = inv.get("value")
                index = ev.get("index", n)
                t_inv = inv.get("time", -1) if inv is not None else -1
                t_end = ev.get("time", -1)
                append(Txn(len(txns), index if type(index) is int else _int(index, n, f"{source}:op {n}"), proc,
                           code, _fast_mops(value) or _mops(value, f"{source}:op {_op_no(ev, n)}"), inv_pos, pos,
                           t_inv / 1e9 if type(t_inv) is int and t_inv >= 0 else _secs(t_inv),
                           t_end / 1e9 if type(t_end) is int and t_end >= 0 else _secs(t_end)))
                pos += 1
            except (KeyError, TypeError, AttributeError):
                if _client_event(ev, n, source, open_):
                    raise TxnFormatError(f"{source}:op {_op_no(ev, n)}: cannot read this op: {_short(ev)}")
        for proc, (inv_pos, inv) in sorted(open_.items(), key=lambda x: x[1][0]):
            where = f"{source}:op {_op_no(inv, '?')}"
            txns.append(Txn(len(txns), _int(inv.get("index"), pos, where), proc, INFO,
                            _mops(inv.get("value"), where, invoke=True), inv_pos, pos,
                            _secs(inv.get("time")), NO_TIME))
            pos += 1
        return cls(txns, source)

    @classmethod
    def from_ops(cls, ops: Iterable, source: str = "") -> "TxnHistory":
        """Transactions recorded once each with their start and end (our runs: objects or dicts
        with ``index``, ``process``, ``type``, ``value``, ``start``, ``end``, ``node``), ordered in
        real time by those times: an invocation sorts before a completion at the same instant,
        so two transactions that touch in time are concurrent, never ordered."""
        rows = []
        for n, op in enumerate(ops):
            get = op.get if isinstance(op, dict) else (lambda k, d=None, o=op: getattr(o, k, d))
            typ = _COMPLETION.get(get("type"))
            where = f"{source}:op {get('index', n)}"
            if typ is None:
                raise TxnFormatError(f"{where}: type {get('type')!r} (expected ok, fail or info)")
            start, end = float(get("start")), float(get("end"))
            rows.append((get("index", n), get("process"), typ, _mops(get("value"), where), start, end,
                         get("node")))
        events = sorted([(r[4], 0, i) for i, r in enumerate(rows)] + [(r[5], 1, i) for i, r in enumerate(rows)])
        inv = [0] * len(rows)
        cmp_ = [0] * len(rows)
        for p, (_t, kind, i) in enumerate(events):
            (cmp_ if kind else inv)[i] = p
        order = sorted(range(len(rows)), key=cmp_.__getitem__)
        txns = []
        for i in order:
            index, proc, typ, mops, start, end, node = rows[i]
            txns.append(Txn(len(txns), index, proc, typ, mops, inv[i], cmp_[i], start, end, node))
        return cls(txns, source)

    @classmethod
    def from_history(cls, history, source: str = "run") -> "TxnHistory":
        """The transactions of one of our runs (a ``ndbchaos.history.History`` of a transactional
        workload: ops with ``f == "txn"``; final reads and other ops are left out); ``source``
        names it in errors (its file)."""
        return cls.from_ops((op for op in history if op.f == "txn"), source)

    # -- reading and writing files ------------------------------------------------------------
    @classmethod
    def read(cls, path: str | Path) -> "TxnHistory":
        """A Jepsen/Elle history file: a JSON array of ops, JSON lines (one op per line), or EDN
        (one vector, or one map per line, ``#jepsen.history.Op{...}`` records included), gzip or
        not; or one of our runs (``.jsonl``/``.nch`` with a run header)."""
        p = Path(path)
        data = _read_bytes(p)
        head = data.lstrip()[:200]
        if not head:
            raise TxnFormatError(f"{p}: empty file: no operations in it")
        if data.startswith(COLUMNAR_MAGIC) or (head.startswith(b"{") and b'"history"' in head.split(b"\n", 1)[0]):
            try:
                run = History.read(str(p))
            except HistoryFormatError as e:
                raise TxnFormatError(str(e)) from None
            model = RUN_MODELS.get(run.workload)
            if model is None:
                raise TxnFormatError(f"{p}: a run of workload {run.workload!r} holds no transactions (a run of "
                                     f"{' or '.join(RUN_MODELS)} does, or a Jepsen/Elle history)")
            out = cls.from_history(run, str(p))
            out.model = model
            return out
        if head[:1] == b"{" and not _looks_edn(head):
            from .scan import scan  # JSON lines of the common shape, straight into arrays
            from .txn_arrays import LazyTxns
            arrays = scan(data)
            if arrays is not None:
                return cls(LazyTxns(arrays), str(p))
        with without_gc():  # millions of small containers: the collector would run for nothing
            if head[:1] in (b"[", b"{") and not _looks_edn(head):
                events = _json_events(data, str(p))
            else:
                events = _edn_events(data, str(p))
            seen = [0]

            def counted():
                for seen[0], ev in enumerate(events, 1):
                    yield ev
            out = cls.from_events(events if isinstance(events, list) else counted(), str(p))
        if not (len(events) if isinstance(events, list) else seen[0]):
            raise TxnFormatError(f"{p}: no operations in it")
        return out

    def events(self) -> list[dict]:
        """Jepsen events (invocations and completions, in order, indexed from 0) for this
        history: what Elle and other checkers read. Times are ns (from seconds where known)."""
        evs: list[tuple[int, int, dict]] = []
        for t in self.txns:
            inv_value = [[f, k, None] if f == "r" else [f, k, v] for f, k, v in t.mops]
            done_value = [[f, k, list(v) if isinstance(v, tuple) else v] for f, k, v in t.mops]
            inv_pos = t.inv if t.inv >= 0 else -1
            evs.append((inv_pos, 0, {"process": t.process, "type": "invoke", "f": "txn", "value": inv_value,
                                     "time": _ns(t.start)}))
            if t.end == NO_TIME and t.type == INFO and t.cmp >= 0 and t.start != NO_TIME:
                evs.append((t.cmp, 1, {"process": t.process, "type": "info", "f": "txn", "value": inv_value,
                                       "time": _ns(t.start)}))
                continue
            evs.append((t.cmp, 1, {"process": t.process, "type": TYPE_NAMES[t.type], "f": "txn",
                                   "value": inv_value if t.type != OK else done_value, "time": _ns(t.end)}))
        evs.sort(key=lambda e: (e[0], e[1]))
        out = []
        for i, (_p, _k, ev) in enumerate(evs):
            ev["index"] = i
            out.append(ev)
        return out

    def write(self, path: str | Path) -> None:
        """Jepsen events to ``path``: JSON lines by default, one JSON array for ``.json``, EDN for
        ``.edn`` (``-`` writes JSON lines to standard output)."""
        events = self.events()
        p = str(path)
        if p == "-":
            import sys
            out = sys.stdout
            for ev in events:
                out.write(json.dumps(ev) + "\n")
            return
        with open(p, "w", encoding="utf-8") as fh:
            if p.endswith(".json"):
                fh.write("[\n" + ",\n".join(json.dumps(ev) for ev in events) + "\n]\n")
            elif p.endswith(".edn"):
                from .edn import dumps_op
                for ev in events:
                    fh.write(dumps_op(ev) + "\n")
            else:
                for ev in events:
                    fh.write(json.dumps(ev) + "\n")


# -- helpers ------------------------------------------------------------------------------------

def _op_no(ev, default):
    """How an error names an event: its index when that is an integer, else its position."""
    index = ev.get("index") if isinstance(ev, dict) else None
    return index if type(index) is int else default


def _int(x, default: int, where: str) -> int:
    if x is None:
        return default
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    raise TxnFormatError(f"{where}: index {_short(x)} is not an integer")


def _secs(t) -> float:
    """ns (Jepsen's ``time``) to seconds; -1 when missing or negative."""
    if isinstance(t, (int, float)) and not isinstance(t, bool) and t >= 0:
        return t / 1e9
    return NO_TIME


def _ns(s: float):
    return -1 if s == NO_TIME else int(round(s * 1e9))


#: an event's type: -1 for an invocation, else its outcome (keywords read from JSON keep a colon)
_EVENT_TYPES = {"invoke": -1, "ok": OK, "fail": FAIL, "info": INFO,
                ":invoke": -1, ":ok": OK, ":fail": FAIL, ":info": INFO}


def _client_event(ev, n: int, source: str, open_: dict) -> bool:
    """For an event the fast path could not take: False for one to leave out (a process that is
    not an integer: the nemesis), else raises the precise error, or True when it has none."""
    if not isinstance(ev, dict):
        raise TxnFormatError(f"{source}:op {n}: not a map: {_short(ev)}")
    proc, typ = ev.get("process"), ev.get("type")
    if not isinstance(typ, (str, type(None))):
        raise TxnFormatError(f"{source}:op {n}: type {_short(typ)} (expected invoke, ok, fail or info)")
    if not isinstance(proc, int) or isinstance(proc, bool):
        if proc is None and typ is None:
            raise TxnFormatError(f"{source}:op {n}: no process and no type: {_short(ev)}")
        return False
    where = f"{source}:op {_op_no(ev, n)}"
    if typ not in _EVENT_TYPES:
        raise TxnFormatError(f"{where}: type {_short(typ)} (expected invoke, ok, fail or info)")
    if _EVENT_TYPES[typ] < 0 and proc in open_:
        raise TxnFormatError(f"{where}: process {proc} invoked again before its "
                             f"op {_op_no(open_[proc][1], '?')} completed")
    _int(ev.get("index"), n, where)
    _mops(ev.get("value"), where)
    return True


def _read_bytes(p: Path) -> bytes:
    try:
        with open(p, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise TxnFormatError(f"{p}: cannot read ({e.strerror or e})") from None
    if data[:2] == b"\x1f\x8b":
        import gzip
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise TxnFormatError(f"{p}: corrupt gzip data ({e})") from None
    return data


def _looks_edn(head: bytes) -> bool:
    return b":type" in head or b":process" in head or b"#jepsen" in head


def _loads(b: bytes):
    return _orjson.loads(b) if _orjson is not None else json.loads(b)


def _json_events(data: bytes, name: str):
    """The events of a JSON array, or of JSON lines (parsed in chunks of lines: one parser call
    per chunk, and no whole-file copy of the objects at once)."""
    stripped = data.lstrip()
    if stripped[:1] == b"[":
        try:
            events = _loads(data)
        except ValueError as e:
            raise TxnFormatError(f"{name}:{_json_error_line(data, e)}: not valid JSON ({e})") from None
        if not isinstance(events, list):
            raise TxnFormatError(f"{name}: not a JSON array of ops")
        return events
    return _json_lines(data, name)


_CHUNK = 1 << 22  # bytes of whole lines per parser call


def _json_lines(data: bytes, name: str):
    """The events of JSON lines: about ``_CHUNK`` bytes of whole lines at a time made one JSON
    array (newlines to commas) for one parser call. A chunk that is not one array that way (a
    blank line in it, or an error) is read line by line (``_lines``), which skips blank lines
    and names the line that is wrong."""
    lineno = 1
    a = 0
    while a < len(data):
        b = data.find(b"\n", a + _CHUNK)
        b = len(data) if b < 0 else b + 1
        chunk = data[a:b]
        body = chunk.rstrip(b"\n")
        events = None
        if body:
            try:
                events = _loads(b"[" + body.replace(b"\n", b",") + b"]")
            except ValueError:
                pass
        yield from (_lines(chunk, lineno, name) if events is None else events)
        lineno += chunk.count(b"\n")
        a = b


def _lines(chunk: bytes, lineno: int, name: str) -> list:
    """The events of the lines of chunk (the first is line ``lineno``), blank ones skipped."""
    lines = chunk.split(b"\n")
    try:
        return _loads(b"[" + b",".join(ln for ln in lines if ln) + b"]")
    except ValueError:
        pass
    for n, line in enumerate(lines, lineno):  # find the line that is wrong
        if not line.strip():
            continue
        try:
            _loads(line)
        except ValueError as e:
            raise TxnFormatError(f"{name}:{n}: not valid JSON ({e})") from None
    raise TxnFormatError(f"{name}: not JSON lines of ops")


def _json_error_line(data: bytes, e: Exception) -> int:
    pos = getattr(e, "pos", None)
    if pos is None:
        import re
        m = re.search(r"line (\d+)", str(e))
        return int(m.group(1)) if m else 1
    return data.count(b"\n", 0, pos) + 1


def _edn_events(data: bytes, name: str) -> list:
    from .edn import EdnError, loads_all, op_from_edn  # the EDN reader, for an EDN file only
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TxnFormatError(f"{name}: not UTF-8 text ({e.reason})") from None
    try:
        forms = loads_all(text)
    except EdnError as e:
        raise TxnFormatError(f"{name}:{e.line}: {e.msg}") from None
    if len(forms) == 1 and isinstance(forms[0], list):
        forms = forms[0]
    return [op_from_edn(f) for f in forms]


__all__ = ["FAIL", "INFO", "MOP_NAMES", "NO_TIME", "OK", "RUN_MODELS", "TYPE_NAMES", "Txn", "TxnFormatError",
           "TxnHistory"]
