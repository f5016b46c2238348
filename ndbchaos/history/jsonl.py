"""Line-level pieces of the interchange format: number formatting, a line reader that names
the line of a decoding failure, and the checks of each operation line and workload value shape."""

from __future__ import annotations

import gzip
import io
import json
import math
import zlib
from typing import Any, Callable

from .columns import _Ints, _IntsRef
from .model import CLASS_CODE, FORMAT_VERSION, TYPE_CODE, ErrorInfo, HistoryFormatError


def _num(x: float) -> str:
    r = round(x, 6)
    return repr(r) if math.isfinite(r) else "null"



_INT64_LIMIT = 2.0 ** 63


def _any_big_float(parsed: list) -> bool:
    """Whether any op's value holds a float as large as an integer beyond 64 bits."""
    values = [d.get("value") for d in parsed if type(d) is dict]
    try:
        return any(map(_big_float, [v for v in values if type(v) is not int]))
    except RecursionError:  # a value nested too deep: the reader that names its line refuses it
        return True


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


#: how deep a value, a header or a run record may nest (lists and objects, the outermost one
#: level 1): far beyond what any workload or run record writes, well within what the checkers'
#: and the JSON writer's recursive code can walk (a deeper one is refused when read, naming its
#: line, instead of ending in a RecursionError)
MAX_DEPTH = 64
_FLAT = {int, float, str, bool, type(None)}


def too_deep(v, limit: int = MAX_DEPTH) -> bool:
    """Whether ``v`` nests lists and objects more than ``limit`` levels deep (walked without
    recursion; a list of scalars is looked at in one pass in C)."""
    todo = [(v, 1)]
    while todo:
        x, d = todo.pop()
        t = type(x)
        if t is list or t is tuple:
            items = x
        elif t is dict:
            items = x.values()
        else:
            continue
        if d > limit:
            return True
        if set(map(type, items)) <= _FLAT:
            continue
        todo.extend((y, d + 1) for y in items if type(y) in (list, tuple, dict))
    return False


def brief(x) -> str:
    """A value as an error shows it: its repr, cut at 60 characters (and never a RecursionError)."""
    try:
        r = repr(x)
    except RecursionError:
        return f"a {type(x).__name__} nested too deep to show"
    return r if len(r) <= 60 else r[:57] + "..."


def nesting_line(line) -> bool:
    """Whether a line has enough opening brackets to nest a value too deep (an upper bound of
    its depth: the cheap test before ``too_deep``)."""
    return line.count(b"[") + line.count(b"{") > MAX_DEPTH


def loads_checked(text, where: str):
    """``json.loads`` of a header or a run's line: a value nested too deep (which the parser
    meets as a RecursionError) is a HistoryFormatError naming ``where``; other failures raise
    ValueError as json does."""
    try:
        v = json.loads(text)
    except RecursionError:
        raise HistoryFormatError(f"{where}: a value nested deeper than {MAX_DEPTH} levels") from None
    if too_deep(v):
        raise HistoryFormatError(f"{where}: a value nested deeper than {MAX_DEPTH} levels")
    return v


#: bytes read at a time (whole lines are handed on; a longer line is handed on alone)
CHUNK = 1 << 21
#: bytes before the first line of every chunk handed on (spaces): a reader may look that far
#: back from any line without leaving the buffer
PAD = 64
_SPACES = b" " * PAD


class _Source:
    """Reads a history file in chunks of whole lines (``header``, then ``chunks``), into one
    buffer used again and again, and turns decoding and decompression failures into
    ``path:line:`` errors. A read failure is raised once the complete lines read before it were
    handed on, naming the line it cut."""

    def __init__(self, fh, name: str, size: int | None = None):
        self.name = name
        self.size = size or CHUNK
        self.lineno = 0  # lines handed out so far
        # one read of the underlying stream at a time: data comes up to a failure, not lost with it
        self._into = getattr(fh, "readinto1", None) or getattr(fh, "readinto", None)
        self._read = getattr(fh, "read1", None) or fh.read
        if isinstance(fh, io.TextIOBase):
            self._into = None
        self._buf = bytearray(_SPACES) + bytearray(min(1 << 16, 2 * self.size))  # grows to 2 * size
        self._mv = memoryview(self._buf)
        self._lo = self._hi = PAD  # the data not handed on yet
        self._err: BaseException | None = None
        self._eof = False

    def _fail(self, e: BaseException, n: int | None = None):
        n = self.lineno + 1 if n is None else n
        if isinstance(e, EOFError):
            why = "compressed stream is truncated (at or before this line)"
        elif isinstance(e, UnicodeError):
            why = f"not UTF-8 text ({getattr(e, 'reason', e)})"
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

    def _fill(self) -> None:
        """Move the data not handed on to the buffer's start (after the padding), then read
        until ``size`` bytes are there, or the end, or a failure (kept in _err)."""
        lo, hi = self._lo, self._hi
        if lo > PAD:
            self._buf[PAD:PAD + hi - lo] = bytes(self._mv[lo:hi])
            self._lo, self._hi = lo, hi = PAD, PAD + hi - lo
        want = lo + self.size
        while self._hi < want and not self._eof and self._err is None:
            if self._hi == len(self._buf):  # a new, larger buffer (the old one may be in use)
                new = bytearray(min(2 * len(self._buf), PAD + 2 * self.size))
                new[:self._hi] = self._mv[:self._hi]
                self._buf, self._mv = new, memoryview(new)
            end = min(want, len(self._buf))
            try:
                if self._into is not None:
                    k = self._into(self._mv[self._hi:end])
                else:
                    data = self._read(max(1, (end - self._hi) // 4))  # text: up to 4 bytes a character
                    if type(data) is str:
                        data = data.encode("utf-8", "surrogatepass")
                    k = len(data)
                    self._buf[self._hi:self._hi + k] = data
            except (EOFError, OSError, zlib.error, UnicodeError) as e:
                self._err = e
                break
            if not k:
                self._eof = True
                break
            self._hi += k

    def _line(self, first: bool):
        """The next line, alone, the padding before it (a bytearray): read on past the buffer
        (a line longer than ``size``); None at the end. With ``first`` a last line without its
        newline comes as is, a read failure names line 1."""
        acc = bytearray(_SPACES)
        while True:
            self._fill()
            lo, hi = self._lo, self._hi
            j = self._buf.find(b"\n", lo, hi)
            if j >= 0:
                acc += self._mv[lo:j + 1]
                self._lo = j + 1
                return acc
            if self._err is not None:
                self._fail(self._err, 1 if first else None)
            acc += self._mv[lo:hi]
            self._lo = self._hi = PAD
            if self._eof:
                if len(acc) == PAD:
                    return None
                if not first:
                    acc += b"\n"  # a last line without its newline
                return acc

    def header(self) -> bytes | None:
        """The first line (None for an empty file)."""
        line = self._line(True)
        self.lineno = 1
        return None if line is None else bytes(line[PAD:])

    def chunks(self):
        """``buf``: the following lines, whole, from ``buf[PAD:]`` on (before: spaces); buf ends
        with a newline. A memoryview of the buffer, valid until the next is asked for, or a
        bytearray of one line longer than the buffer. The caller counts its lines (adds them to
        ``lineno``) before asking for the next."""
        while True:
            self._fill()
            lo, hi = self._lo, self._hi
            k = self._buf.rfind(b"\n", lo, hi)
            if k >= 0:
                self._lo = k + 1
                yield self._mv[:k + 1]
            elif hi - lo >= self.size or self._eof or self._err is not None:
                line = self._line(False)  # a long line, a last line without newline, or a failure
                if line is None:
                    return
                yield line


def parse_header(head, where: str) -> tuple[str, dict, dict | None]:
    """Check a decoded header (JSONL line 1, or a columnar file's HEAD block); return
    ``(workload, params, run)``. ``where`` prefixes the error (``PATH:1``, ``PATH:offset 8``)."""
    if not isinstance(head, dict) or "history" not in head or not isinstance(head.get("workload"), str):
        raise HistoryFormatError(
            f'{where}: header must be {{"history": 1, "workload": "<name>", "params": {{...}}}}')
    if head["history"] != FORMAT_VERSION or isinstance(head["history"], bool):
        raise HistoryFormatError(f"{where}: unsupported history format version {brief(head['history'])} "
                                 f"(this reader knows {FORMAT_VERSION})")
    params = head.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise HistoryFormatError(f"{where}: header params must be an object")
    run = head.get("run")
    if run is not None and not isinstance(run, dict):
        raise HistoryFormatError(f"{where}: header run must be an object")
    return head["workload"], params, run


_isfinite = math.isfinite


def _is_num(v) -> bool:
    t = type(v)
    return t is int or (t is float and math.isfinite(v))


def _parse_op(d: dict) -> tuple:
    """Validate one decoded op line; return ``append``'s arguments."""
    if type(d) is not dict:
        raise TypeError("an operation must be a JSON object")
    t = d["type"]
    if type(t) is not str or t not in TYPE_CODE:
        raise ValueError(f"type must be ok, fail or info, not {brief(t)}")
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
        if not (cls_ is None or type(cls_) is str) or cls_ not in CLASS_CODE:
            raise ValueError(f"error class must be temporary, unknown, permanent or null, not {brief(cls_)}")
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
# A validator gets each op's (f, type, value); a long list of plain integers comes packed, as an
# ``_Ints``, or an ``_IntsRef`` when it went to a temporary file (every element is an int). On
# the template lines (``scan``), whose values are all ints or null, it sees one line per (f,
# type, null or not).

def _check_ledger(f: str, type_: str, value: Any) -> None:
    if f == "insert":
        if type(value) is not int:
            raise TypeError(f"ledger insert value must be the integer id, not {type(value).__name__}")
    elif f == "read" and type_ == "ok":
        if type(value) is _Ints or type(value) is _IntsRef:  # a long list of plain integers, parsed packed
            return
        if type(value) is not list:
            raise TypeError("ledger ok read value must be the list of ids present")
        if set(map(type, value)) - {int}:  # one pass in C; then find the culprit
            for x in value:
                if type(x) is not int:
                    raise TypeError(f"ledger read ids must be integers, found {brief(x)}")


def _check_bank(f: str, type_: str, value: Any) -> None:
    if f == "transfer":
        if (type(value) is not dict or not {"from", "to", "amount"} <= value.keys()
                or type(value["from"]) not in (int, str) or type(value["to"]) not in (int, str)
                or not _is_num(value["amount"])):
            raise TypeError('bank transfer value must be {"from": a, "to": b, "amount": x} (accounts as integers '
                            'or strings, the amount a number)')
    elif f == "read" and type_ == "ok":
        if type(value) is not dict or type(value.get("balances")) is not dict:
            raise TypeError('bank ok read value must be {"balances": {"<account>": balance, ...}}')
        for k, v in value["balances"].items():
            if not _is_num(v):
                raise TypeError(f"bank balance of account {brief(k)} must be a number, not {brief(v)}")


#: (a transaction's micro-ops are checked where they are read as transactions, ``txn.mops``: a
#: validator here would walk every one of them a second time)
VALUE_VALIDATORS: dict[str, Callable[[str, str, Any], None]] = {"ledger": _check_ledger, "bank": _check_bank}
