"""Line-level pieces of the interchange format: number formatting, a line reader that names
the line of a decoding failure, and the checks of each operation line and workload value shape."""

from __future__ import annotations

import gzip
import io
import math
from itertools import islice
import zlib
from typing import Any, Callable

from .model import CLASS_CODE, FORMAT_VERSION, TYPE_CODE, ErrorInfo, HistoryFormatError


def _num(x: float) -> str:
    r = round(x, 6)
    return repr(r) if math.isfinite(r) else "null"


class _Lines:
    """Line reader that turns decoding and decompression failures into ``path:line:`` errors."""

    def __init__(self, fh, name: str):
        self._it = iter(fh)
        #: an uncompressed binary file: lines are read in bulk (``batch``)
        self._plain = isinstance(fh, io.BufferedReader)
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
        if self._plain:  # no decompression or decoding error can come mid-batch: take n at once
            try:
                out = list(islice(self._it, n))
            except OSError as e:
                self._fail(e, first)
            self.lineno += len(out)
            return out, first
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

def _check_ledger(f: str, type_: str, value: Any) -> None:
    if f == "insert":
        if type(value) is not int:
            raise TypeError(f"ledger insert value must be the integer id, not {type(value).__name__}")
    elif f == "read" and type_ == "ok":
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
