"""Line-level pieces of the interchange format: number formatting, a line reader that names
the line of a decoding failure, and the checks of each operation line and workload value shape."""

from __future__ import annotations

import gzip
import math
import zlib
from typing import Any, Callable

from .columns import _Ints
from .model import CLASS_CODE, FORMAT_VERSION, TYPE_CODE, ErrorInfo, HistoryFormatError


def _num(x: float) -> str:
    r = round(x, 6)
    return repr(r) if math.isfinite(r) else "null"


#: bytes read at a time (whole lines are handed on; a longer line is handed on alone)
CHUNK = 1 << 22


class _Source:
    """Reads a history file in chunks of whole lines (``header``, then ``chunks``), and turns
    decoding and decompression failures into ``path:line:`` errors. A read failure is raised
    once the complete lines read before it were handed on, naming the line it cut."""

    def __init__(self, fh, name: str, size: int | None = None):
        read1 = getattr(fh, "read1", None)  # one read of the underlying stream: data comes
        self._read = read1 if read1 is not None else fh.read  # up to a failure, not lost with it
        self.name = name
        self.size = size or CHUNK
        self.lineno = 0  # lines handed out so far
        self._pend: list[bytes] = []  # bytes read after the last line handed out (no newline)
        self._rest = b""  # what the header's read brought after the header
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

    def _more(self) -> bytes:
        """Up to ``size`` more bytes; b"" at the end or after a read failure (kept in _err)."""
        if self._eof or self._err is not None:
            return b""
        out, got = [], 0
        while got < self.size:
            try:
                data = self._read(self.size - got)
                if type(data) is str:  # a text stream
                    data = data.encode("utf-8", "surrogatepass")
            except (EOFError, OSError, zlib.error, UnicodeError) as e:
                self._err = e
                break
            if not data:
                self._eof = True
                break
            out.append(data)
            got += len(data)
        return out[0] if len(out) == 1 else b"".join(out)

    def header(self) -> bytes | None:
        """The first line (None for an empty file)."""
        while True:
            data = self._more()
            if not data:
                if self._err is not None:
                    self._fail(self._err, 1)
                line = b"".join(self._pend)
                self._pend = []
                self.lineno = 1
                return line or None
            j = data.find(b"\n")
            if j < 0:
                self._pend.append(data)
                continue
            line = b"".join(self._pend + [data[:j + 1]])
            self._pend = []
            self._rest = data[j + 1:]
            self.lineno = 1
            return line

    def chunks(self):
        """The following lines, whole (each buf ends with a newline). The caller counts them
        (adds them to ``lineno``) before asking for the next."""
        rest, self._rest = self._rest, b""
        while True:
            data = rest or self._more()
            rest = b""
            if not data:  # the end, or a read failure
                buf = b"".join(self._pend)
                self._pend = []
                if self._err is not None:
                    buf = buf[:buf.rfind(b"\n") + 1]  # the line cut by the failure is not read
                elif buf and not buf.endswith(b"\n"):
                    buf += b"\n"  # a last line without its newline
                if buf:
                    yield buf
                if self._err is not None:
                    self._fail(self._err)
                return
            k = data.rfind(b"\n")
            if k < 0:
                self._pend.append(data)
                continue
            if self._pend:
                j = data.find(b"\n") + 1
                first = b"".join(self._pend + [data[:j]])
                self._pend = []
                if len(first) > self.size:  # a long line: on its own
                    yield first
                    body = data[j:k + 1]
                else:
                    body = first + data[j:k + 1]
            else:
                body = data if k + 1 == len(data) else data[:k + 1]
            if body:
                yield body
            if k + 1 < len(data):
                self._pend.append(data[k + 1:])


def parse_header(head, where: str) -> tuple[str, dict, dict | None]:
    """Check a decoded header (JSONL line 1, or a columnar file's HEAD block); return
    ``(workload, params, run)``. ``where`` prefixes the error (``PATH:1``, ``PATH:offset 8``)."""
    if not isinstance(head, dict) or "history" not in head or not isinstance(head.get("workload"), str):
        raise HistoryFormatError(
            f'{where}: header must be {{"history": 1, "workload": "<name>", "params": {{...}}}}')
    if head["history"] != FORMAT_VERSION or isinstance(head["history"], bool):
        raise HistoryFormatError(f"{where}: unsupported history format version {head['history']!r} "
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
# A validator gets each op's (f, type, value); a long list of plain integers comes packed, as an
# ``_Ints`` (every element is an int already). On the template lines (``scan``), whose values
# are all ints or null, it sees one line per (f, type, null or not).

def _check_ledger(f: str, type_: str, value: Any) -> None:
    if f == "insert":
        if type(value) is not int:
            raise TypeError(f"ledger insert value must be the integer id, not {type(value).__name__}")
    elif f == "read" and type_ == "ok":
        if type(value) is _Ints:  # a long list of plain integers, parsed packed
            return
        if type(value) is not list:
            raise TypeError("ledger ok read value must be the list of ids present")
        if set(map(type, value)) - {int}:  # one pass in C; then find the culprit
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
