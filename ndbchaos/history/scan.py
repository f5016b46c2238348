"""Reading JSON Lines histories a chunk of lines at a time, column by column.

``History.dump`` writes every operation in one shape (keys in one order, no spaces):

    {"process":P,"f":"F","value":V,"type":"T","start":S,"end":E,"node":N,"error":R}

``template`` finds the lines of a chunk that have exactly that shape, with ``V`` an integer of at
most 16 digits or ``null``, ``S``/``E`` decimals of at most 15 digits without exponent (or
integers), ``F``/``N`` strings of at most 32 bytes without escapes, ``R`` ``null`` or an object,
and decodes them with numpy passes over the chunk instead of Python objects: one pass for the
newlines and commas, then per field a gather of its bytes as 64-bit words, the JSON grammar
checked and the digits parsed 8 at a time (SWAR). Such a line is valid JSON by construction
(each of its parts is checked; every byte belongs to one part) and its numbers read exactly as
``json`` reads them (a decimal is an integer below 2**53 divided by a power of ten: the
correctly rounded value); its error (``R``) is decoded with orjson, once per distinct text. Any
other line (a read's id list, a bank transfer, spaces, escapes, an exponent) is read on its own
with orjson (``ChunkLoader``); a long line whose value is a list of plain integers by ``long_op``
and ``int_list``, with numpy (no Python int per id). A chunk with anything wrong in it goes to
the line-by-line reader (``interchange._load_lines``), which names the line. The long lines
are ``idlists``'s, the chunk's columns ``loader``'s.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

try:  # a C JSON parser (a dependency); json when absent
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    from json import loads as _loads

from .jsonl import _parse_error
from .model import CLASS_CODE, NO_INT, ErrorInfo

#: longest string (f, node) the template takes, in bytes; most digits of an id list's integer
MAX_STR = 32
MAX_NUM = 18
#: a line longer than this is never a template line
MAX_TEMPLATE_LINE = 1 << 12
#: a line longer than this whose value is a list of plain integers is read by ``long_op``
LONG_LINE = 1 << 16

_U8 = np.uint64


def _rep(byte: int) -> np.uint64:
    """The byte repeated in all 8 bytes of a word."""
    return _U8(byte * 0x0101010101010101)


_ALL = _U8(0xFFFFFFFFFFFFFFFF)
_ZEROS, _F0, _X06, _H80, _X7F, _X01 = _rep(0x30), _rep(0xF0), _rep(0x06), _rep(0x80), _rep(0x7F), _rep(0x01)
_DOTS, _QUOTES, _BSLASH, _SPACES, _AS = _rep(0x2E), _rep(0x22), _rep(0x5C), _rep(0x20), _rep(0x61)
_P10 = np.array([10 ** k for k in range(18)], dtype=np.int64)
_P10F = np.array([10.0 ** k for k in range(18)])
_E8 = _U8(10 ** 8)


def _word(lit: bytes) -> tuple[np.uint64, np.uint64]:
    """(value, mask) of a literal of at most 8 bytes read as a little-endian uint64."""
    v = int.from_bytes(lit.ljust(8, b"\0"), "little")
    m = int.from_bytes(b"\xff" * len(lit) + b"\0" * (8 - len(lit)), "little")
    return _U8(v), _U8(m)


_NULL, _MASK4 = _word(b"null")
_T_OK, _MASK2 = _word(b"ok")
_T_FAIL, _ = _word(b"fail")
_T_INFO, _ = _word(b"info")
_NULL_TOP = _U8(int.from_bytes(b"null", "little") << 32)  # "null" as the last 4 bytes of a word
_NO_ERROR = ErrorInfo(None, None, None, "")


# -- words: 8 bytes at a time (SWAR) --------------------------------------------------------------

def _top(k: np.ndarray) -> np.ndarray:
    """Masks of the top k bytes of a word (k 0..8, int64)."""
    return _ALL << ((8 - k) << 3).astype(np.uint64)


def _all_digits(x: np.ndarray) -> np.ndarray:
    return ((x & _F0) == _ZEROS) & (((x + _X06) & _F0) == _ZEROS)


def _has_zero(x: np.ndarray) -> np.ndarray:
    return ((x - _X01) & ~x & _H80) != 0


def _zero_bytes(x: np.ndarray) -> np.ndarray:
    """0x80 in each byte of x that is 0 (exact), 0 elsewhere."""
    return ((((x & _X7F) + _X7F) | x) & _H80) ^ _H80


def _eight_digits(x: np.ndarray) -> np.ndarray:
    """The number written by 8 ASCII digits (the first in the lowest byte)."""
    v = ((x & _rep(0x0F)) * _U8(2561)) >> _U8(8)
    v = ((v & _U8(0x00FF00FF00FF00FF)) * _U8(6553601)) >> _U8(16)
    return ((v & _U8(0x0000FFFF0000FFFF)) * _U8(42949672960001)) >> _U8(32)


def _low_byte(m: np.ndarray) -> np.ndarray:
    """Index (0..7) of the lowest nonzero byte of m (m != 0)."""
    return (np.bitwise_count((m & (~m + _U8(1))) - _U8(1)) >> 3).astype(np.int64)


class _Chunk:
    """A chunk of complete lines (ends with a newline) and its views."""

    __slots__ = ("buf", "a", "u64", "_wins")

    def __init__(self, buf: bytes):
        self.buf = buf
        self.a = np.frombuffer(buf, dtype=np.uint8)
        # the little-endian uint64 at every byte offset (unaligned reads)
        self.u64 = np.ndarray((len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
        self._wins: dict = {}

    def win(self, w: int) -> np.ndarray:
        """The w bytes at every offset: ``win(w)[k]`` is ``a[k:k + w]``."""
        v = self._wins.get(w)
        if v is None:
            v = self._wins[w] = as_strided(self.a, shape=(len(self.a) - w + 1, w), strides=(1, 1),
                                           writeable=False)
        return v

    def has(self, pos: np.ndarray, lit: bytes) -> np.ndarray:
        """Whether the bytes at each position are ``lit`` (at most 8 bytes, then one at a time)."""
        u = self.u64
        pos = np.minimum(pos, len(u) - 4)  # (a short line at the end: it fails anyway)
        v, m = _word(lit[:8])
        ok = (u[pos] & m) == v
        for k in range(8, len(lit)):
            ok &= self.a[pos + k] == lit[k]
        return ok


def _number(ch: _Chunk, x: np.ndarray, y: np.ndarray, ok: np.ndarray, dot: bool):
    """The JSON numbers in [x, y): integers of at most 16 digits, with ``dot`` also decimals
    (at most 15 digits, no exponent). Returns (values, ok): int64 (float64 with ``dot``), ok
    False where the text is not such a number. One word of 8 characters, or two."""
    a, u = ch.a, ch.u64
    neg = a[x] == 45
    nd = y - x
    nd -= neg  # characters after the sign
    ok &= (nd >= 1) & (nd <= 16)
    two = np.max(nd, where=ok, initial=0) > 8
    k0 = np.minimum(nd, 8)
    keep = _top(k0)
    x0 = u[y - 8]
    x0 &= keep
    x0 |= _ZEROS & ~keep  # '0' before the number: leading zeros
    if two:
        keep = _top(np.maximum(nd - k0, 0))
        x1 = u[y - 16]
        x1 &= keep
        x1 |= _ZEROS & ~keep
    if dot:
        d0 = _zero_bytes(x0 ^ _DOTS)
        ndot = np.bitwise_count(d0)
        x0 += d0 >> _U8(6)  # the dot becomes a '0' digit
        k = 7 - _low_byte(d0)  # digits after the dot
        if two:
            d1 = _zero_bytes(x1 ^ _DOTS)
            ndot += np.bitwise_count(d1)
            x1 += d1 >> _U8(6)
            k = np.where(d0 != 0, k, 15 - _low_byte(d1))
        has = ndot == 1
        ok &= ndot <= 1
        k *= has
        ipart = nd - has
        ipart -= k
        ok &= ~has | (k >= 1)
    else:
        ipart = nd
    ok &= (ipart >= 1) & _all_digits(x0)
    if two:
        ok &= _all_digits(x1)
    first = a[np.where(ok, y - nd, 0)]
    ok &= (first != 48) | (ipart <= 1)  # no leading zero
    v = _eight_digits(x0)
    if two:
        v += _eight_digits(x1) * _E8
    v = v.view(np.int64)
    if not dot:
        return np.where(neg, -v, v), ok
    if has.any():
        p = _P10[k]
        m = np.where(has, (v // (p * 10)) * p + v % p, v)  # without the dot's '0': below 2**53
        val = m.astype(np.float64)
        val /= _P10F[k]
    else:
        m = v
        val = m.astype(np.float64)
    # "-0" is the integer 0 (0.0), "-0.0" the float -0.0
    np.negative(val, out=val, where=neg & (has | (m != 0)))
    return val, ok


def _codes(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys, index of each key among them), for a column of few distinct values."""
    cand = np.unique(keys[:64])
    if len(cand) > 8:
        uniq, inv = np.unique(keys, return_inverse=True)
        return uniq, inv.reshape(-1)
    code = np.full(len(keys), -1, dtype=np.int64)
    for j, c in enumerate(cand):
        code[keys == c] = j
    miss = code < 0
    if miss.any():
        more, inv = np.unique(keys[miss], return_inverse=True)
        code[miss] = inv.reshape(-1) + len(cand)
        cand = np.concatenate((cand, more))
    return cand, code


def _strings(ch: _Chunk, x: np.ndarray, y: np.ndarray, ok: np.ndarray):
    """The JSON strings whose contents are [x, y) (no escapes): (codes into names, names, ok).
    A string longer than MAX_STR bytes, not valid UTF-8, or holding a quote, a backslash or a
    control character is not ok."""
    length = y - x
    ok &= (length >= 0) & (length <= MAX_STR)
    if ok.any() and length[ok].max() > 8:
        return _long_strings(ch, x, y, ok)
    keep = _top(np.clip(length, 0, 8))
    w = ch.u64[y - 8] & keep  # the contents in the top bytes
    v = w | (_AS & ~keep)
    ok &= ~(((v - _SPACES) & ~v & _H80) != 0) & ~_has_zero(v ^ _QUOTES) & ~_has_zero(v ^ _BSLASH)
    uniq, code = _codes(np.where(ok, w, _U8(0)))
    raw = [int(k).to_bytes(8, "little").lstrip(b"\0") for k in uniq.tolist()]
    return code, _decode(raw, code, ok), ok


def _long_strings(ch: _Chunk, x: np.ndarray, y: np.ndarray, ok: np.ndarray):
    """``_strings`` for contents up to MAX_STR bytes (bytes in rows: slower)."""
    length = np.where(ok, y - x, 0)
    w = int(length.max())
    m = ch.win(w)[np.where(ok, y, w) - w]
    pad = np.arange(w)[None, :] < (w - length)[:, None]
    np.putmask(m, pad, 0)
    ok &= ~(((m < 32) | (m == 34) | (m == 92)) & ~pad).any(axis=1)
    uniq, inv = np.unique(np.ascontiguousarray(m).view(f"S{w}")[:, 0], return_inverse=True)
    code = inv.reshape(-1)
    raw = [bytes(k).lstrip(b"\0") for k in uniq.tolist()]
    return code, _decode(raw, code, ok), ok


def _decode(raw: list, code: np.ndarray, ok: np.ndarray) -> list:
    names = []
    for k, r in enumerate(raw):
        try:
            names.append(r.decode("utf-8"))
        except UnicodeDecodeError:
            names.append(None)
            ok &= code != k
    return names


def _errors(ch: _Chunk, x: np.ndarray, y: np.ndarray, seen: dict):
    """The error objects in [x, y) (each starts with "{"), decoded once per distinct text (the
    texts compared whole, 8 bytes at a time): (errno, engine code, class code, message, ok) per
    row. ``seen`` maps a text to its ErrorInfo (None: not a valid error)."""
    n = len(x)
    length = y - x
    w = int(length.max())
    if w > 512:  # long texts: one at a time
        texts = [bytes(ch.buf[i:j]) for i, j in zip(x.tolist(), y.tolist())]
        uniq, inv = np.unique(np.array(texts, dtype=object), return_inverse=True)
        reps = list(uniq)
    else:
        u = ch.u64
        m = np.empty((n, (w + 7) // 8 + 1), dtype=np.uint64)
        m[:, 0] = length
        for k in range(1, m.shape[1]):  # word k: bytes x + 8(k-1) on, the last one read from y back
            at = x + 8 * (k - 1)
            rest = y - at
            m[:, k] = np.where(rest >= 8, u[np.minimum(at, y - 8)],
                               u[y - 8] >> ((8 - np.clip(rest, 0, 8)) << 3).astype(np.uint64))
        h = m[:, 0].copy()  # a hash of each text, then each text compared whole with its group's first
        for k in range(1, m.shape[1]):
            h *= _U8(0x9E3779B97F4A7C15)
            h ^= m[:, k]
        _, first, inv = np.unique(h, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        if not (m == m[first[inv]]).all():  # two texts of one hash
            _, first, inv = np.unique(m, axis=0, return_index=True, return_inverse=True)
        reps = [bytes(ch.buf[x[i]:y[i]]) for i in first.tolist()]
    inv = inv.reshape(-1)
    infos = []
    for t in reps:
        info = seen.get(t, seen)
        if info is seen:
            try:
                info = _parse_error(_loads(t))
            except (ValueError, TypeError):
                info = None
            seen[t] = info
        infos.append(info)
    good = np.array([i is not None for i in infos])
    infos = [i or _NO_ERROR for i in infos]
    errno = np.array([-1 if i.errno is None else i.errno for i in infos], dtype=np.int32)[inv]
    ecode = np.array([-1 if i.engine_code is None else i.engine_code for i in infos], dtype=np.int32)[inv]
    ecls = np.array([CLASS_CODE.get(i.cls, 0) for i in infos], dtype=np.uint8)[inv]
    return errno, ecode, ecls, [infos[k].message for k in inv.tolist()], good[inv]


def template(ch: _Chunk, starts: np.ndarray, ends: np.ndarray, seen: dict, sep: np.ndarray | None = None,
             first: np.ndarray | None = None, min_share: float = 0.5):
    """Decode the template lines (module docstring) among the lines [starts, ends) of a chunk
    (``seen``: decoded error texts, see ``_errors``). ``sep``: the places of the chunk's commas
    (and newlines), ascending, ``first``: where each line's are in it (found when not given).

    Returns None when fewer than ``min_share`` of the lines are template lines (the caller
    reads the chunk line by line), else ``(mask, fields)``: which lines were decoded, and their
    columns; "f" and "node" are indexes into the lists "f_names" and "node_names" (node -1:
    null), "msg_rows"/"msgs" the error message of each decoded line that has one. Reads only
    the chunk (threads may decode parts of one at the same time)."""
    a, u = ch.a, ch.u64
    n = len(starts)
    if n == 0:
        return None
    ok = (ends - starts <= MAX_TEMPLATE_LINE) & (ends - starts >= 85) & (a[ends - 1] == 125)
    ok &= ch.has(starts, b'{"process":')
    if np.count_nonzero(ok) < min_share * n:
        return None
    if sep is None:
        lo = int(starts[0])
        sep = np.flatnonzero(a[lo:int(ends[-1])] == 44) + lo
        first = np.searchsorted(sep, starts)
    if len(sep) < 7:
        return None
    j = np.minimum(first, len(sep) - 7)
    p = [sep[j + k] for k in range(7)]
    ok &= (first + 6 < len(sep)) & (p[0] >= starts) & (p[6] < ends)  # seven commas in the line
    ok &= ch.has(p[0], b',"f":"') & ch.has(p[1] - 1, b'","value":') & ch.has(p[2], b',"type":"')
    ok &= ch.has(p[3] - 1, b'","start":') & ch.has(p[4], b',"end":') & ch.has(p[5], b',"node":')
    ok &= ch.has(p[6], b',"error":')
    if np.count_nonzero(ok) < min_share * n:
        return None
    lines = np.flatnonzero(ok)
    if len(lines) < n:
        starts, ends = starts[lines], ends[lines]
        p = [q[lines] for q in p]
    ok = np.ones(len(lines), dtype=bool)
    # type: ok / fail / info
    tlen = p[3] - 1 - (p[2] + 9)
    tw = u[p[2] + 9]
    is_fail = (tlen == 4) & ((tw & _MASK4) == _T_FAIL)
    is_info = (tlen == 4) & ((tw & _MASK4) == _T_INFO)
    ok &= ((tlen == 2) & ((tw & _MASK2) == _T_OK)) | is_fail | is_info
    type_ = is_fail.view(np.uint8) + 2 * is_info.view(np.uint8)
    # numbers
    process, ok = _number(ch, starts + 11, p[0], ok, False)
    ok &= (process >= -2**31) & (process < 2**31)
    vnull = (p[2] - p[1] == 13) & (u[p[2] - 8] >> _U8(32) << _U8(32) == _NULL_TOP)
    ival, vok = _number(ch, p[1] + 9, p[2], ~vnull, False)
    ok &= vok | vnull
    ival[vnull] = NO_INT
    start, ok = _number(ch, p[3] + 9, p[4], ok, True)
    end, ok = _number(ch, p[4] + 7, p[5], ok, True)
    ok &= end >= start
    # strings
    fcode, fnames, ok = _strings(ch, p[0] + 6, p[1] - 1, ok)
    nx = p[5] + 8
    nnull = (p[6] - nx == 4) & ((u[nx] & _MASK4) == _NULL)
    nstr = ~nnull & (a[nx] == 34) & (a[p[6] - 1] == 34) & (p[6] - nx >= 2)
    ok &= nnull | nstr
    ncode, nnames, ok = _strings(ch, np.where(nstr, nx + 1, nx), np.where(nstr, p[6] - 1, nx), ok)
    # errors: null, or an object decoded once per distinct text
    rx = p[6] + 9
    rnull = (ends - 1 - rx == 4) & (((u[ends - 8] >> _U8(24)) & _MASK4) == _NULL)  # ...null}
    errno = ecode = ecls = None
    rows = np.empty(0, dtype=np.int64)
    msgs: list = []
    if not rnull.all():
        ok &= rnull | (a[rx] == 123)
        rows = np.flatnonzero(~rnull & ok)
        errno = np.zeros(len(lines), dtype=np.int32)
        ecode = np.zeros(len(lines), dtype=np.int32)
        ecls = np.zeros(len(lines), dtype=np.uint8)
        if len(rows):
            e1, e2, e3, msgs, good = _errors(ch, rx[rows], ends[rows] - 1, seen)
            errno[rows], ecode[rows], ecls[rows] = e1, e2, e3
            if not good.all():
                ok[rows[~good]] = False
    fields = {
        "process": process.astype(np.int32), "f": fcode, "type": type_, "start": start, "end": end,
        "node": np.where(nstr, ncode, -1), "ival": ival, "errno": errno, "ecode": ecode, "ecls": ecls,
    }
    keep = lines[ok]
    mask = np.zeros(n, dtype=bool)
    mask[keep] = True
    if not ok.all():
        fields = {k: (None if v is None else v[ok]) for k, v in fields.items()}
        if len(rows):
            kept = ok[rows]
            msgs = [m for m, k in zip(msgs, kept.tolist()) if k]
            rows = (np.cumsum(ok) - 1)[rows[kept]]
    fields["msg_rows"], fields["msgs"] = rows, msgs
    fields["f_names"], fields["node_names"] = fnames, nnames
    return mask, fields
