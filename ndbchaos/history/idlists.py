"""Long lines: an op whose value is a list of plain integers (a ledger's final read: a million
ids) read without a Python int per id. ``long_op`` decodes the rest of the line and leaves the
list's body in place; ``int_list`` parses that body with numpy a slice at a time (rows of one
width where every id has the first one's number of digits, else the template's number
decoder)."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .jsonl import PAD
from .scan import MAX_NUM, _Chunk, _loads, _number

_STEP = 1 << 18  # bytes of an id list parsed at a time (small: its temporaries are reused)
_PAD = b" " * PAD  # before an id list's slice: every window of a number stays in the buffer


def _same_width(buf, pos: int, end: int) -> np.ndarray | None:
    """The ints of buf[pos:end] when they all have the first one's number of digits (a ledger
    read lists its ids in order: most slices): rows of a fixed width, no search for the commas.
    None otherwise."""
    first = buf.find(b",", pos, end)
    width = (end if first < 0 else first) - pos
    if not 1 <= width <= MAX_NUM or (end - pos + 1) % (width + 1):
        return None
    k = (end - pos + 1) // (width + 1)
    a = np.frombuffer(buf, dtype=np.uint8)
    rows = as_strided(a[pos:], shape=(k, width + 1), strides=(width + 1, 1), writeable=False)
    if k > 1 and not (rows[:-1, width] == 44).all():
        return None
    d = rows[:, :width] - np.uint8(48)
    if not (d < 10).all() or (width > 1 and not d[:, 0].all()):  # digits only, no leading zero
        return None
    v = d[:, 0].astype(np.int64)
    for j in range(1, width):
        v *= 10
        v += d[:, j]
    return v


def int_list(buf: bytes, lo: int, hi: int, put) -> int | None:
    """Parse the list body buf[lo:hi] (``1,2,3``: JSON integers of at most 16 digits, no spaces),
    handing each int64 array of it to ``put`` in turn; the count, or None if it is not such a
    list (then ``put`` may have been given part of it)."""
    if lo == hi:
        return 0
    total = 0
    pos = lo
    while pos <= hi:
        end = hi
        if hi - pos > _STEP:
            end = buf.rfind(b",", pos, pos + _STEP)
            if end <= pos:
                return None
        v = _same_width(buf, pos, end)
        if v is None:
            ch = _Chunk(_PAD + buf[pos:end] + b",")
            ends = np.flatnonzero(ch.a == 44)
            starts = np.empty(len(ends), dtype=np.int64)
            starts[0] = len(_PAD)
            starts[1:] = ends[:-1] + 1
            v, ok = _number(ch, starts, ends, np.ones(len(ends), dtype=bool), False)
            if not ok.all():
                return None
        put(v)
        total += len(v)
        pos = end + 1
    return total


def long_op(buf: bytes, start: int, end: int):
    """The op of the line buf[start:end], a long one whose value is a list of plain integers,
    without decoding the list into Python ints: ``(op, lo, hi)``, op the line's object with
    ``"value": None`` and buf[lo:hi] the list body (``int_list``); None for any other line."""
    i = buf.find(b'"value":[', start, end)
    if i < 0:
        return None
    lo = i + 9
    hi = buf.find(b"]", lo, end)
    if hi < 0:
        return None
    head, tail = buf[start:i + 8], buf[hi + 1:end]
    # no escapes (every key is spelled as is) and no other "value" (the list body holds only
    # digits, commas and minus signs if int_list takes it)
    if b"\\" in head or b"\\" in tail or b'"value"' in tail or buf.find(b'"value"', start, i) >= 0:
        return None
    try:
        op = _loads(head + b"null" + tail)
    except ValueError:
        return None
    if type(op) is not dict or "value" not in op or op["value"] is not None:
        return None  # the "value" key was not the op's own
    return op, lo, hi
