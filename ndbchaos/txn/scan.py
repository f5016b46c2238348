"""Jepsen/Elle list-append histories in JSON lines read straight into arrays (``TxnArrays``), with
numpy passes over the bytes instead of a Python object per event and micro-op.

It takes the lines written in one shape, adya's simulator's:

    {"index":I,"type":"invoke|ok|fail|info","f":"txn","process":P,"time":T,"value":V}

with ``V`` ``null`` or a list of ``["append",K,X]``, ``["r",K,null]`` and ``["r",K,[X,...]]``, every
number an integer of at most 15 digits, no spaces but after a comma, one event a line. How: every
run of digits (with its minus sign) becomes one ``0`` and its value is read 8 digits at a time
from the 64-bit word at its place; that leaves a skeleton of fixed texts. Each line's head, a
null value and each micro-op are found by their places (a line's start; after the head; ``["``)
and compared whole, and become one control byte each (a token); the commas and brackets of a
read's list are told apart by what precedes them. The line is of that shape exactly when each
token may follow the one before it (``_NEXT``: the shape is a regular language whose state is
the last token): a token stands for a fixed text, so what passes is valid JSON of that shape,
and the numbers are taken in order, so many to a token (``_NUMS``). Anything else (another key
order, a blank line, a float, a process invoked twice, ...) returns None and
``TxnHistory.read`` reads the file the general way, which names what is wrong.
``tests/unit/test_txn_scan.py`` holds the two to the same transactions, on generated histories,
adya's, lines of other shapes and randomly damaged ones.
"""

from __future__ import annotations

import os

import numpy as np

from ..history.scan import _U8, _eight_digits, _low_byte, _rep
from .history import FAIL, INFO, NO_TIME, OK
from .txn_arrays import TxnArrays, ranges

#: tokens: the event heads (one per type), then the micro-ops' pieces
_HEADS = {b"invoke": 1, b"ok": 2, b"fail": 3, b"info": 4}
_A, _R, _E, _S, _C, _L, _M, _N = 5, 6, 7, 8, 11, 12, 13, 14  # (never 10, the newline)
_ZERO = ord("0")  # a read's element
_PIECES = [(b'{"index":0,"type":"' + name + b'","f":"txn","process":0,"time":0,"value":', bytes([tok]))
           for name, tok in _HEADS.items()]
_TYPE_OF_HEAD = np.array([0, -1, OK, FAIL, INFO], dtype=np.int8)
_NUMS = np.zeros(256, dtype=np.int64)  # numbers each token stands for
_NUMS[1:5], _NUMS[_A], _NUMS[[_R, _E, _S, _ZERO]] = 3, 2, 1
_OB, _CB, _COMMA, _BRACE, _NL = ord("["), ord("]"), ord(","), ord("}"), ord("\n")
_MOPS = (_A, _R, _E, _S)


def _next() -> np.ndarray:
    ok = np.zeros((256, 256), dtype=bool)
    for h in range(1, 5):
        ok[_NL, h] = True
        ok[h, [_N, _OB]] = True
    ok[_N, _BRACE] = True
    ok[_OB, [_CB, *_MOPS]] = True
    for t in (_A, _R, _E, _M):
        ok[t, [_COMMA, _CB]] = True
    ok[_COMMA, list(_MOPS)] = True
    ok[_S, _ZERO] = True
    ok[_ZERO, [_C, _L]] = True
    ok[_C, _ZERO] = True
    ok[_L, _M] = True
    ok[_CB, _BRACE] = True
    ok[_BRACE, _NL] = True
    return ok


_NEXT = _next()
#: the same by a token and the next one read together as a little-endian 16-bit number (the
#: token first): one look-up a pair, straight from the tokens' bytes (``_follows``)
_PAIR_OK = np.ascontiguousarray(_NEXT.T).ravel()
#: bytes of lines scanned at once (whole lines): bounds the passes' temporary arrays
CHUNK = 1 << 20  # (1 MB: 3% faster than 4 MB at 100,000 transactions, the passes nearer the cache)
#: threads that scan chunks at once (``_chunks``), and the fewest chunks worth them
THREADS = 2
THREADED_CHUNKS = 4


def _numbers(buf: bytes, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(the skeleton's bytes, each number's value), or None for a number the shape does not take
    (leading zeros, more than 15 digits). Digits are read 8 at a time from the 64-bit word at
    their place (``_eight_digits``)."""
    isd = np.less(b - np.uint8(48), 10)
    first = np.empty_like(isd)
    first[0] = isd[0]
    np.greater(isd[1:], isd[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    words = np.ndarray((len(b),), dtype="<u8", buffer=buf, strides=(1,))  # (buf: 8 more bytes)
    w = words[starts]
    # a run's length: the lowest byte of its word that is not a digit (8: all are)
    nd = ~_digit_bytes(w)
    lens = np.where(nd == 0, 8, _low_byte(nd | _U8(1 << 63)))
    long_ = np.flatnonzero(lens == 8)
    if len(long_):
        w2 = words[starts[long_] + 8]
        nd2 = ~_digit_bytes(w2)
        lens[long_] += np.where(nd2 == 0, 8, _low_byte(nd2 | _U8(1 << 63)))
        if (lens[long_] >= 16).any():
            return None
    if len(lens) and ((lens > 1) & ((w & _U8(0xFF)) == 48)).any():
        return None
    short = np.minimum(lens, 8)
    vals = _eight_digits(w << ((8 - short) << 3).astype(np.uint64)).astype(np.int64)
    if len(long_):
        ln = lens[long_]
        lo = _eight_digits(words[starts[long_] + ln - 8]).astype(np.int64)
        hi = _eight_digits(w[long_] << ((16 - ln) << 3).astype(np.uint64)).astype(np.int64)
        vals[long_] = hi * 100_000_000 + lo
    keep = np.logical_not(isd)
    keep[starts] = True
    sp = np.flatnonzero(b == 32)
    keep[sp[b[sp - 1] == _COMMA]] = False  # a space after a comma (adya's read lists); no line starts with one
    neg = starts[starts > 0]
    neg = neg[b[neg - 1] == ord("-")]
    keep[neg - 1] = False
    vals[np.searchsorted(starts, neg)] *= -1
    c = b.copy()
    c[starts] = 48
    return np.compress(keep, c), vals  # (a third faster than c[keep])


def _digit_bytes(x: np.ndarray) -> np.ndarray:
    """0xFF in each byte of x that is an ASCII digit, 0 elsewhere."""
    d = x - _rep(0x30)  # (a borrow only spoils bytes above one that is not a digit)
    m = ((d | (d + _rep(0x76))) & _rep(0x80))  # 0x80 where the byte is not 0..9 after the shift
    return ((m >> _U8(7)) * _U8(0xFF)) ^ _U8(0xFFFFFFFFFFFFFFFF)


def _text(x: bytes) -> np.ndarray:
    return np.frombuffer(x, dtype=np.uint8)


_HEAD_TEXT = [_text(text) for text, _tok in _PIECES[:4]]
_HEAD_LEN = np.array([0] + [len(h) for h in _HEAD_TEXT])
_TYPE_AT = len(b'{"index":0,"type":"')
_MOP_TEXT = {_A: _text(b'["append",0,0]'), _R: _text(b'["r",0,null]'), _E: _text(b'["r",0,[]]'),
             _S: _text(b'["r",0,[')}
_MOP_LEN = np.zeros(256, dtype=np.int64)
for _k, _t in _MOP_TEXT.items():
    _MOP_LEN[_k] = len(_t)
_WIDTH = 80  # zero bytes after the skeleton: more than the longest text compared at a place


def _same(words: np.ndarray, at: np.ndarray, text: np.ndarray) -> bool:
    """Whether the bytes at each place are ``text``: 8 at a time, the 64-bit words at each place."""
    for k in range(0, len(text), 8):
        part = text[k:k + 8].tobytes()
        v = _U8(int.from_bytes(part.ljust(8, b"\0"), "little"))
        m = _U8((1 << (8 * len(part))) - 1)
        if not ((words[at + k] & m) == v).all():
            return False
    return True


def _tokens(sk: np.ndarray) -> np.ndarray | None:
    """The skeleton as tokens: each line's head, a null value and each micro-op found by their
    places (a line's start; after the head; ``["``) and compared whole, then one token each; the
    commas and brackets of a read's list told from the others by what precedes them. None for a
    head or micro-op of another shape, or places that overlap."""
    nl = np.flatnonzero(sk == _NL)
    if not len(nl) or nl[-1] != len(sk) - 1:
        return None
    if np.count_nonzero(sk < 32) != len(nl):  # (a control byte but the newline would pass for a token)
        return None
    ls = np.empty(len(nl), dtype=np.int64)
    ls[0] = 0
    ls[1:] = nl[:-1] + 1
    pad = np.concatenate([sk, np.zeros(_WIDTH, dtype=np.uint8)])
    win = np.ndarray((len(pad) - 7,), dtype="<u8", buffer=pad, strides=(1,))  # the word at each place
    c0, c2 = pad[ls + _TYPE_AT], pad[ls + _TYPE_AT + 2]
    kind = np.select([c0 == ord("o"), c0 == ord("f"), (c0 == ord("i")) & (c2 == ord("v")),
                      (c0 == ord("i")) & (c2 == ord("f"))], [2, 3, 1, 4], 0)
    if not kind.all():
        return None
    for k in range(1, 5):
        if not _same(win, ls[kind == k], _HEAD_TEXT[k - 1]):
            return None
    # (a head holds no newline, so each lies within its line)
    hl = ls + _HEAD_LEN[kind]
    null = hl[pad[hl] == ord("n")]
    if not _same(win, null, _text(b"null}")):
        return None
    at = np.flatnonzero(sk == _OB)
    at = at[pad[at + 1] == ord('"')]  # a micro-op's start: ["
    c2, c7, c8 = pad[at + 2], pad[at + 7], pad[at + 8]
    mk = np.select([c2 == ord("a"), c7 == ord("n"), (c7 == _OB) & (c8 == _CB)], [_A, _R, _E], _S)
    for k, text in _MOP_TEXT.items():
        if not _same(win, at[mk == k], text):
            return None
    # each place compared whole becomes its token, the bytes between two places (or after the
    # last) follow it as they are; places must not overlap (no byte covered twice). A line
    # starts with a head, so the first place is at 0, and no two places start at the same byte
    # (a head starts with {, a null with n, a micro-op with [)
    start = np.concatenate([ls, null, at])
    end = np.concatenate([hl, null + 4, at + _MOP_LEN[mk]])
    by = np.argsort(start, kind="stable")
    start, end = start[by], end[by]
    gap = np.empty(len(start), dtype=np.int64)
    gap[:-1] = start[1:] - end[:-1]
    gap[-1] = len(sk) - end[-1]
    if (gap < 0).any():
        return None
    sk[ls] = kind
    sk[null] = _N
    sk[at] = mk
    # each place's first byte (its token), then the bytes from its end to the next place
    take = ranges(end - 1, gap + 1)
    take[np.cumsum(gap + 1) - (gap + 1)] = start
    t = sk[take]
    # a read's list: a comma or a ] after an element, and the ] after that one (the micro-op's)
    after0 = np.zeros(len(t), dtype=bool)
    after0[1:] = t[:-1] == _ZERO
    close = t == _CB
    t[(t == _COMMA) & after0] = _C
    lc = close & after0
    mc = np.zeros(len(t), dtype=bool)
    mc[1:] = lc[:-1] & close[1:]
    t[lc] = _L
    t[mc] = _M
    return t


def _follows(t: np.ndarray) -> bool:
    """Whether each token may follow the one before it (``_NEXT[t[:-1], t[1:]].all()``)."""
    if len(t) < 2:
        return True
    pairs = np.ndarray((len(t) - 1,), dtype="<u2", buffer=t, strides=(1,))  # t[i] + 256 t[i + 1]
    return bool(_PAIR_OK[pairs].all())


def _chunk(buf: memoryview):
    """The events of whole lines (``buf``, and 8 bytes after it that are not read as text): (head
    type, index, process, time, value null), and their micro-ops: (event, append, key, appended
    value, read length or -1), the read elements."""
    b = np.frombuffer(buf, dtype=np.uint8)[:-8]
    got = _numbers(buf, b)
    if got is None:
        return None
    skel, vals = got
    t = _tokens(skel)
    if t is None or not len(t) or not 1 <= t[0] <= 4 or not _follows(t):
        return None
    cnt = _NUMS[t]
    first = np.cumsum(cnt) - cnt
    if int(cnt.sum()) != len(vals):
        return None
    heads = np.flatnonzero((t >= 1) & (t <= 4))
    hn = first[heads]
    ev = (_TYPE_OF_HEAD[t[heads]], vals[hn], vals[hn + 1], vals[hn + 2], t[heads + 1] == _N)
    mpos = np.flatnonzero((t >= _A) & (t <= _S))
    mt = t[mpos]
    mn = first[mpos]
    app = mt == _A
    rlen = np.where(mt == _R, -1, 0)
    lpos = np.flatnonzero(t == _L)
    rlen[mt == _S] = (lpos - mpos[mt == _S] + 1) // 2  # S 0 C 0 ... 0 L
    el = np.flatnonzero(t == _ZERO)
    second = vals[np.minimum(mn + 1, len(vals) - 1)]
    mops = (np.searchsorted(heads, mpos, side="right") - 1, app, vals[mn], np.where(app, second, 0), rlen)
    return ev, mops, vals[first[el]]


def scan(data: bytes) -> TxnArrays | None:
    """The transactions of JSON lines of that shape (module docstring), or None."""
    view = memoryview(data)
    size = len(data)
    parts = []
    a = 0
    while a < size:
        e = data.find(b"\n", a + CHUNK, size)
        e = size if e < 0 else e + 1
        # the chunk and the 8 bytes after it (the next line's, not read as text); the last
        # one copied, with a newline if the file has none at its end, and 8 zero bytes
        parts.append(view[a:e + 8] if e + 8 <= size else
                     data[a:e] + (b"" if data[e - 1] == _NL else b"\n") + bytes(8))
        a = e
    got = _chunks(parts)
    if got is None:
        return None
    evs, mops, elems = [], [], []
    n_ev = 0
    for ev, mo, el in got:
        evs.append(ev)
        mops.append((mo[0] + n_ev,) + mo[1:])
        elems.append(el)
        n_ev += len(ev[0])
    typ, index, proc, time, null = (np.concatenate(x) for x in zip(*evs))
    m_ev, m_app, m_key, m_val, m_rlen = (np.concatenate(x) for x in zip(*mops))
    elems = np.concatenate(elems)
    return _pair(typ, index, proc, time, null, m_ev, m_app, m_key, m_val, m_rlen, elems)


def _workers() -> int:
    try:
        return min(THREADS, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return min(THREADS, os.cpu_count() or 1)


def _chunks(parts: list) -> list | None:
    """``_chunk`` of each part, in order (None if any is None). With ``THREADS`` processors or
    more and at least ``THREADED_CHUNKS`` parts, that many threads take the parts in turn: numpy
    lets go of the interpreter's lock while it passes over the bytes, so the passes of two
    chunks run at once; each result is that of the same call alone."""
    workers = _workers()
    if workers < 2 or len(parts) < THREADED_CHUNKS:
        out = []
        for part in parts:
            got = _chunk(part)
            if got is None:
                return None
            out.append(got)
        return out
    import threading
    out: list = [None] * len(parts)
    failed: dict[int, BaseException | None] = {}  # part -> what it raised (None: not of the shape)
    tickets = iter(range(len(parts)))  # handed out in order, under the lock
    lock = threading.Lock()

    def work() -> None:
        while not failed:
            with lock:
                i = next(tickets, None)
            if i is None:
                return
            try:
                got = _chunk(parts[i])
            except BaseException as e:  # raised below, where the call was made
                got, failed[i] = None, e
            if got is None:
                failed.setdefault(i, None)
                return
            out[i] = got
    helpers = [threading.Thread(target=work, daemon=True) for _ in range(workers - 1)]
    for t in helpers:
        t.start()
    work()
    for t in helpers:
        t.join()
    if failed:  # the first part that failed decides, as without threads (those before it were all read)
        e = failed[min(failed)]
        if e is not None:
            raise e
        return None
    return out


def _pair(typ, index, proc, time, null, m_ev, m_app, m_key, m_val, m_rlen, elems) -> TxnArrays | None:
    """Invocations and completions paired per process, as ``TxnHistory.from_events`` pairs them."""
    n = len(typ)
    inv = typ < 0
    # by process, in file order within one: a stable sort, of 16-bit keys when they fit (radix)
    narrow = n and 0 <= int(proc.min()) and int(proc.max()) < 1 << 16
    order = np.argsort(proc.astype(np.uint16) if narrow else proc, kind="stable")
    same = proc[order][1:] == proc[order][:-1]
    if (same & inv[order][1:] & inv[order][:-1]).any():
        return None  # a process invoked again before its op completed: the general reader names it
    before = np.full(n, -1, dtype=np.int64)  # each completion's invocation
    prev_inv = np.zeros(n - 1, dtype=bool) if n else np.zeros(0, dtype=bool)
    if n > 1:
        prev_inv = same & inv[order][:-1]
        before[order[1:][prev_inv]] = order[:-1][prev_inv]
    open_ = np.zeros(n, dtype=bool)  # invocations nothing completed
    open_[order] = inv[order]
    if n > 1:
        open_[order[:-1][prev_inv]] = False
    done = np.flatnonzero(~inv)
    left = np.flatnonzero(open_)
    inv_of = before[done]
    # the value: the completion's, or its invocation's when the completion's is null
    source = np.where(null[done] & (inv_of >= 0), inv_of, done)
    source = np.concatenate([source, left])
    t_ns = np.where(time >= 0, time / 1e9, float(NO_TIME))
    has_inv = inv_of >= 0
    start = np.concatenate([np.where(has_inv, t_ns[np.maximum(inv_of, 0)], float(NO_TIME)), t_ns[left]])
    end = np.concatenate([t_ns[done], np.full(len(left), float(NO_TIME))])
    m_off = np.searchsorted(m_ev, np.arange(n + 1))
    mlen = m_off[source + 1] - m_off[source]
    mo = ranges(m_off[source], mlen)
    rlen = m_rlen[mo]
    mt_left = np.repeat(np.arange(len(source)) >= len(done), mlen)
    rlen[mt_left & ~m_app[mo]] = -1  # an invocation that never completed: its reads unknown
    r_off = np.cumsum(np.maximum(m_rlen, 0)) - np.maximum(m_rlen, 0)
    eo = ranges(r_off[mo], np.maximum(rlen, 0))
    return TxnArrays(
        type=np.concatenate([typ[done], np.full(len(left), INFO, dtype=np.int8)]),
        index=np.concatenate([index[done], index[left]]),
        process=np.concatenate([proc[done], proc[left]]),
        inv=np.concatenate([inv_of, left]), cmp=np.concatenate([done, n + np.arange(len(left))]),
        start=start, end=end, mlen=mlen, app=m_app[mo], key=m_key[mo], val=m_val[mo], rlen=rlen,
        elems=elems[eo])


__all__ = ["CHUNK", "scan"]
