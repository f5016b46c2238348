"""List-append inference on arrays: what ``list_append.analyze`` infers, its per-element work done
by numpy (sorts, binary searches and gathers over every micro-op at once) instead of dicts
walked one micro-op at a time.

It takes the histories that need no judgement along the way: keys and elements integers (of 64
bits), only appends and reads, no value appended twice to a key, and committed reads that agree
(each a prefix of its key's longest, no element twice in one nor one nobody appended). For any
other ``analyze`` returns None and the per-transaction reference decides, which names those
cases (duplicate appends, incompatible orders, garbage reads, ...). What is rare and explained
one case at a time stays there too: the anomalies found here (G1a, G1b, dirty updates) are
written by the reference's own code, and the transactions that touch a key twice (internal and
future reads, lost updates) go through it whole. ``tests/unit/test_txn_list_append_fast.py``
holds the two to the same anomalies, edges and verdicts on generated and recorded histories.

Pairs (key, element) are coded as one int64 (``pairs``).
"""

from __future__ import annotations

from itertools import chain, compress

import numpy as np

from .anomaly import Analysis
from .graph import RW, WR, WW, DepGraph
from .history import FAIL, OK, TxnHistory
from .pairs import Coder, ints, lookups
from .txn_arrays import ranges, unique_ints


def analyze(h: TxnHistory, finish) -> Analysis | None:
    """The analysis, or None for a history the reference must read (module docstring).
    ``finish(index, add)``: the reference's own writing of the rare cases (``list_append``)."""
    arrays = getattr(h.txns, "arrays", None)
    got = _from_arrays(arrays) if arrays is not None else _from_objects(h.txns)
    return None if got is None else _analyze(h.txns, finish, *got)


def _from_objects(txns):
    """What the inference reads, copied out of the transactions' micro-ops: per transaction its
    type and how many micro-ops; per micro-op its key and whether it appends; the appended
    values; the committed reads' lengths, elements and values (a function of the read's number)."""
    n = len(txns)
    if not n:
        return None
    types = np.fromiter((t.type for t in txns), dtype=np.int8, count=n)
    lens = np.fromiter((len(t.mops) for t in txns), dtype=np.int64, count=n)
    mops = list(chain.from_iterable(t.mops for t in txns))
    fs = [m[0] for m in mops]
    if not set(fs) <= {"append", "r"}:
        return None
    ks = ints([m[1] for m in mops])
    if ks is None:
        return None
    is_app = np.fromiter(map("append".__eq__, fs), dtype=bool, count=len(fs))
    mt = np.repeat(np.arange(n, dtype=np.int64), lens)  # each micro-op's transaction
    vs = [m[2] for m in mops]
    av = ints(list(compress(vs, is_app.tolist())))
    if av is None:
        return None
    ok_read = ~is_app & (types[mt] == OK)  # committed reads: an info transaction's are unknown
    rsel = ok_read.tolist()
    rv = list(compress(vs, rsel))
    vtypes = set(map(type, rv))
    if not vtypes <= {tuple, type(None)}:
        return None  # a read that is not a list: the reference names it
    if type(None) in vtypes:
        rv = [() if v is None else v for v in rv]
    rlen = np.fromiter(map(len, rv), dtype=np.int64, count=len(rv))
    elems = ints(list(chain.from_iterable(rv)))
    if elems is None:
        return None
    return types, mt, ks, is_app, av, ok_read, rlen, elems, rv.__getitem__


def _from_arrays(a):
    """The same from ``TxnArrays`` (a history read by ``scan``), without a copy per micro-op."""
    n = len(a)
    if not n:
        return None
    types = a.type
    mt = np.repeat(np.arange(n, dtype=np.int64), a.mlen)
    is_app = a.app
    ok_read = ~is_app & (types[mt] == OK)
    read_pos = np.flatnonzero(ok_read)
    rlen = np.maximum(a.rlen[read_pos], 0)  # a committed read of unknown value reads the empty list
    elems = a.elems[ranges(a.roff[read_pos], rlen)]

    def read_value(r: int) -> tuple:
        return a.read_value(int(read_pos[r])) or ()
    return types, mt, a.key, is_app, a.val[is_app], ok_read, rlen, elems, read_value


def _analyze(txns, finish, types, mt, ks, is_app, av, ok_read, rlen, elems, read_value) -> Analysis | None:
    n = len(txns)
    app_pos = np.flatnonzero(is_app)
    a_t, a_k = mt[app_pos], ks[app_pos]
    read_pos = np.flatnonzero(ok_read)
    r_t, r_k = mt[read_pos], ks[read_pos]
    coder = Coder(ks, np.concatenate([av, elems]))
    if not coder.fits:
        return None

    # -- who appended what: every completed transaction's appends, each value once per key
    lookup = lookups(coder, len(ks))
    a_code = coder.code(a_k, av)
    writers = lookup(a_code)
    if writers.repeated():
        return None  # duplicate appends

    def writer_of(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        row, hit = writers.find(c)
        return np.where(hit, a_t[row], -1), row

    # -- version orders: each key's longest committed read, every other read a prefix of it
    n_reads = len(rlen)
    roff = np.zeros(n_reads + 1, dtype=np.int64)
    np.cumsum(rlen, out=roff[1:])
    ne = np.flatnonzero(rlen > 0)
    by_key = ne[lexsort2(-rlen[ne], r_k[ne])]  # per key, longest first (then the earliest)
    first = np.ones(len(by_key), dtype=bool)
    first[1:] = r_k[by_key][1:] != r_k[by_key][:-1]
    longest = by_key[first]  # one read per key read, ascending keys
    o_keys = r_k[longest]
    grp = np.searchsorted(o_keys, r_k)  # each read's key among those read (for the empty ones: any)
    grp[grp == len(o_keys)] = 0
    shift = np.repeat(roff[longest][grp] - roff[:-1] if len(o_keys) else roff[:-1], rlen)
    shift += np.arange(len(elems), dtype=np.int64)  # each element's counterpart in its key's longest
    if not np.array_equal(elems, elems[shift]):
        return None  # two reads of a key that are not prefixes of one another
    del shift
    o_len = rlen[longest]
    o_elem = np.concatenate([elems[roff[i]:roff[i] + rlen[i]] for i in longest.tolist()]) if len(longest) \
        else np.empty(0, dtype=np.int64)
    o_key = np.repeat(o_keys, o_len)
    o_code = coder.code(o_key, o_elem)
    ordered = lookup(o_code)
    if ordered.repeated():
        return None  # an element twice in a read
    o_writer, _ = writer_of(o_code)
    if (o_writer < 0).any():
        return None  # an element nobody appended
    o_start = np.zeros(len(longest), dtype=np.int64)
    np.cumsum(o_len[:-1], out=o_start[1:])
    o_prev = np.empty(len(o_code), dtype=np.int64)  # each element's predecessor in its key's order
    o_prev[1:] = o_code[:-1]
    o_prev[o_start] = coder.code(o_keys, None)
    o_top = o_code[o_start + o_len - 1]

    # -- each append's predecessor: in its key's order, after the highest read, or the empty list
    prev = coder.code(a_k, None)
    if len(o_keys):
        kg = np.minimum(np.searchsorted(o_keys, a_k), len(o_keys) - 1)
        prev = np.where(o_keys[kg] == a_k, o_top[kg], prev)
        row, hit = ordered.find(a_code)
        prev = np.where(hit, o_prev[row], prev)
    live = types[a_t] != FAIL  # a failed transaction's appends order versions but depend on nothing

    src, dst, rel = [], [], []
    # ww: the writer of the element before an append -> the appender
    w, _ = writer_of(prev)
    m = live & (w >= 0) & (w != a_t)
    m[m] = types[w[m]] != FAIL
    src.append(w[m])
    dst.append(a_t[m])
    rel.append(np.full(int(m.sum()), WW, dtype=np.uint8))
    # rw: every committed read of the state the append followed -> the appender
    r_last = np.where(rlen > 0, coder.code(r_k, elems[np.maximum(roff[1:] - 1, 0)] if len(elems)
                                           else np.zeros(n_reads, dtype=np.int64)), coder.code(r_k, None))
    readers = lookup(r_last)
    lo, hi = readers.ranges(prev[live])
    cnt = hi - lo
    ap = np.repeat(np.flatnonzero(live), cnt)
    k = np.arange(int(cnt.sum()), dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    rr = r_t[readers.order[np.repeat(lo, cnt) + k]]
    m = rr != a_t[ap]
    src.append(rr[m])
    dst.append(a_t[ap][m])
    rel.append(np.full(int(m.sum()), RW, dtype=np.uint8))
    # wr: the writer of a read's last element -> the reader
    w, w_row = writer_of(r_last[ne])
    m = (w >= 0) & (w != r_t[ne])
    m[m] = types[w[m]] != FAIL
    src.append(w[m])
    dst.append(r_t[ne][m])
    rel.append(np.full(int(m.sum()), WR, dtype=np.uint8))
    graph = DepGraph(n)
    graph.src.frombytes(np.concatenate(src).astype(np.int64).tobytes())
    graph.dst.frombytes(np.concatenate(dst).astype(np.int64).tobytes())
    graph.rel.frombytes(np.concatenate(rel).tobytes())

    # -- what the reference writes: reads of a failed append (G1a) or of an intermediate one
    # (G1b), keys whose order holds a failed append (dirty updates), transactions touching a key
    # twice
    o_at = np.arange(len(o_code), dtype=np.int64) - np.repeat(o_start, o_len)  # place in its key's order
    o_failed = types[o_writer] == FAIL
    g1a = np.zeros(n_reads, dtype=bool)
    if o_failed.any():  # a read holds a failed append when it reaches past the first in its key's order
        first_failed = np.full(len(o_keys), np.iinfo(np.int64).max)
        np.minimum.at(first_failed, np.searchsorted(o_keys, o_key[o_failed]), o_at[o_failed])
        g1a[ne] = rlen[ne] > first_failed[grp[ne]]
    a_order = lexsort2(a_k, a_t)  # appends by transaction and key, in micro-op order
    again = np.zeros(len(a_t), dtype=bool)  # an append followed by another of its txn to its key
    same = (a_t[a_order][1:] == a_t[a_order][:-1]) & (a_k[a_order][1:] == a_k[a_order][:-1])
    again[a_order[:-1][same]] = True
    g1b = np.zeros(n_reads, dtype=bool)
    g1b[ne] = again[w_row] & (w != r_t[ne]) & (w >= 0)
    a_at = np.full(len(a_code), -1, dtype=np.int64)  # each append's place in its key's order (-1: unread)
    if len(o_code):
        row, hit = ordered.find(a_code)
        a_at[hit] = o_at[row[hit]]
    suspects, lost = _same_key_twice(n, types, mt, ks, is_app, app_pos, a_at, read_pos, rlen)
    dirty_keys = unique_ints(o_key[o_failed])

    rk_list = r_k.tolist()
    owner = r_t.tolist()

    class Index:
        """What the reference's rare cases and the explanations look up."""

        cases = np.flatnonzero(g1a | g1b).tolist()  # reads, in history order
        has_failed = bool((types[a_t] == FAIL).any())
        has_intermediate = bool(again.any())
        twice_txns = txns.take(suspects.tolist()) if hasattr(txns, "take") else [txns[i] for i in suspects.tolist()]
        #: lost updates: [(key, version read, [txn ids])], in the order the reference finds them
        lost_updates = [(rk_list[r], read_value(r), ts) for r, ts in lost]

        @staticmethod
        def read(i: int):
            return owner[i], rk_list[i], read_value(i)

        @staticmethod
        def writer(k, v):
            """The transaction that appended v to k, or None."""
            c = coder.one(k, v)
            if c is None:
                return None
            t, _ = writer_of(c)
            return None if t[0] < 0 else int(t[0])

        @staticmethod
        def failed_writer(k, v):
            t = Index.writer(k, v)
            return t if t is not None and types[t] == FAIL else None

        @staticmethod
        def intermediate_writer(k, v):
            c = coder.one(k, v)
            if c is None:
                return None
            t, row = writer_of(c)
            return int(t[0]) if t[0] >= 0 and again[row[0]] else None

        @staticmethod
        def previous(k, v):
            """The element before v in k's order (None: the empty list), or k's highest element
            for a v nobody read."""
            c = coder.one(k, v)
            if c is None:
                return None
            row, hit = ordered.find(c)
            if hit[0]:
                p = o_prev[row[0]]
            else:
                g = int(np.searchsorted(o_keys, k))
                if g < len(o_keys) and o_keys[g] == k:
                    p = o_top[g]
                else:
                    return None
            return None if p == coder.one(k, None)[0] else int(coder.value(np.array([p]))[0])

        @staticmethod
        def readers(k, last):
            """The committed reads' transactions whose read of k ends at last (None: empty)."""
            c = coder.one(k, last)
            if c is None:
                return []
            lo, hi = readers.ranges(c)
            return r_t[readers.order[lo[0]:hi[0]]].tolist()

        @staticmethod
        def dirty():
            """{k: its order} and {k: {element: writer}} of the keys whose order holds a failed
            append, in the order the reference meets them (its first committed read)."""
            firsts = []
            for kk in dirty_keys.tolist():
                g = int(np.searchsorted(o_keys, kk))
                firsts.append((int(ne[r_k[ne] == kk][0]), kk, g))
            order, writer = {}, {}
            for _f, kk, g in sorted(firsts):
                s, ln = int(o_start[g]), int(o_len[g])
                order[kk] = tuple(o_elem[s:s + ln].tolist())
                writer[kk] = dict(zip(order[kk], o_writer[s:s + ln].tolist()))
            return order, writer

    return finish(graph, Index)


def lexsort2(minor: np.ndarray, major: np.ndarray) -> np.ndarray:
    """``np.lexsort((minor, major))`` (by major, then minor, then place) for integer keys: one
    stable sort of ``major * span + minor`` when that fits in 63 bits (the keys here are nearly
    in order, which the stable sort's runs take at once), else lexsort's two."""
    if not len(major):
        return np.zeros(0, dtype=np.intp)
    lo, span = int(minor.min()), int(minor.max()) - int(minor.min()) + 1
    m_lo, m_span = int(major.min()), int(major.max()) - int(major.min()) + 1
    if span * m_span >= 1 << 62:
        return np.lexsort((minor, major))
    return np.argsort((major.astype(np.int64) - m_lo) * span + (minor.astype(np.int64) - lo), kind="stable")


def _same_key_twice(n, types, mt, ks, is_app, app_pos, a_at, read_pos, rlen):
    """The committed transactions that touch a key more than once: those whose reads disagree
    with their own earlier reads and appends (internal) or hold their own later append (future
    read), for the reference to write; and the lost updates, [(read, [txn ids])] (two or more
    transactions that read the same version of a key, then appended to it).

    Every committed read of a key is a prefix of its order, so a read is its length and an append
    its place in that order: a read of length L holds the append at place i when i < L; after a
    read of length Lq and appends A, a read equals that state when its length is Lq + |A| and
    A's places are Lq, Lq + 1, ...; after appends A alone, it ends with them when A's places are
    its last |A|."""
    none = (np.empty(0, dtype=np.int64), [])
    m = np.flatnonzero(types[mt] == OK)
    if not len(m):
        return none
    m = m[lexsort2(ks[m], mt[m])]  # committed micro-ops by transaction and key, in order
    t, k = mt[m], ks[m]
    start = np.ones(len(m), dtype=bool)
    start[1:] = (t[1:] != t[:-1]) | (k[1:] != k[:-1])
    gid = np.cumsum(start) - 1
    size = np.bincount(gid)
    keep = size[gid] > 1  # (transaction, key) touched more than once
    if not keep.any():
        return none
    m, t, k, gid = m[keep], t[keep], k[keep], gid[keep]
    start = np.ones(len(m), dtype=bool)
    start[1:] = gid[1:] != gid[:-1]
    g0 = np.maximum.accumulate(np.where(start, np.arange(len(m)), 0))  # each one's group's first
    app = is_app[m]
    ridx = np.full(len(is_app), -1, dtype=np.int64)
    ridx[read_pos] = np.arange(len(read_pos))
    aidx = np.full(len(is_app), -1, dtype=np.int64)
    aidx[app_pos] = np.arange(len(app_pos))
    ln = np.where(app, -1, rlen[ridx[m]])  # a read's length
    place = np.where(app, a_at[aidx[m]], -1)  # an append's place
    j = np.arange(len(m), dtype=np.int64)
    # the last read before each micro-op in its group (-1: none), its length
    last = np.maximum.accumulate(np.where(~app, j, -1))
    prev_read = np.full(len(m), -1, dtype=np.int64)
    prev_read[1:] = last[:-1]
    prev_read[prev_read < g0] = -1
    # future read: an append whose place an earlier read of its own reached
    big = int(ln.max()) + 2
    reach = np.maximum.accumulate(ln + gid * big) - gid * big  # longest read so far in the group
    before = np.full(len(m), -1, dtype=np.int64)
    before[1:] = reach[:-1]
    before[start] = -1
    future = app & (place >= 0) & (before > place)
    # internal: a read after an earlier micro-op on its key, against the state they leave
    known = prev_read >= 0
    first_app = np.where(known, prev_read + 1, g0)  # the appends since: [first_app, j)
    count = j - first_app
    lq = np.where(known, ln[np.maximum(prev_read, 0)], 0)
    rd = ~app & ~start
    internal = rd & np.where(known, ln != lq + count, ln < count)
    # each append checked by the next read of its group: its place must be the one that read implies
    nxt = np.minimum.accumulate(np.where(~app, j, len(m))[::-1])[::-1]  # the next read, at or after
    has_next = app & (nxt < len(m))
    nxt_c = np.minimum(nxt, len(m) - 1)
    same_grp = has_next & (gid[nxt_c] == gid)
    i = j - first_app[nxt_c]  # its rank among the appends that read checks
    want = np.where(known[nxt_c], lq[nxt_c] + i, ln[nxt_c] - count[nxt_c] + i)
    bad = same_grp & (place != want)
    internal[nxt_c[bad]] = True
    suspects = unique_ints(t[future | internal])
    # lost updates: per (transaction, key), its first read when that came before its first append
    first_read = np.where(~app, j, len(m))
    first_read = np.minimum.reduceat(first_read, np.flatnonzero(start))
    g_app = np.minimum.reduceat(np.where(app, j, len(m)), np.flatnonzero(start))
    entry = (first_read < g_app) & (g_app < len(m))  # per group: read, then appended
    if not entry.any():
        return suspects, []
    fr = first_read[entry]
    e_key, e_len = k[fr], ln[fr]
    e_t = t[fr]
    e_at = m[g_app[entry]]  # where the reference meets it: the first append, in history order
    order = np.lexsort((e_at, e_len, e_key))
    same = np.ones(len(order), dtype=bool)
    same[1:] = (e_key[order][1:] != e_key[order][:-1]) | (e_len[order][1:] != e_len[order][:-1])
    grp_start = np.flatnonzero(same)
    counts = np.diff(np.append(grp_start, len(order)))
    lost = []
    multi = np.flatnonzero(counts > 1)
    for g in multi[np.argsort(e_at[order][grp_start[multi]], kind="stable")].tolist():
        members = order[grp_start[g]:grp_start[g] + counts[g]]
        members = members[np.argsort(e_at[members], kind="stable")]
        lost.append((int(ridx[m[fr[members[0]]]]), e_t[members].tolist()))
    return suspects, lost


__all__ = ["analyze"]
