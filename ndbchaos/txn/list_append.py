"""List-append inference (Elle, PAPER sections 3-4): version orders from the reads of lists, the
dependency edges they imply, and the anomalies visible without a cycle.

Each read of a list reveals every earlier version of it (``[1 2 3]``: ``[]``, ``[1]``, ``[1 2]``);
values appended are unique per key, so each version has one writer. Per key, the version order
is the longest read's elements; every other read must be a prefix of it (else
``incompatible-order``). Then, over the transactions that may have committed (ok and info):

    wr  the writer of a read's last element -> the reader
    ww  the writer of the element just before an append -> the appender
    rw  every reader of the state ending at that element (or of the empty list) -> the appender

An append that nobody read still comes after the highest element anyone read. Without a cycle:
G1a (a committed read holds a failed transaction's append), G1b (a read ends at another
transaction's non-final append), dirty-update (a committed append built on a failed one),
duplicate-elements, garbage-read (an element nobody appended), internal (a read disagrees with
the transaction's own earlier reads and appends), future-read (a read holds the transaction's own
later append), lost-update (two committed transactions read the same version of a key and both
appended to it).
"""

from __future__ import annotations

from .anomaly import Analysis, Anomaly, Step, esc
from .graph import RW, WR, WW, DepGraph
from .history import FAIL, INFO, OK, TxnHistory

INIT = object()  # the empty list: the version before any append


#: False: every history through the reference below (the differential tests hold the array path,
#: ``list_append_fast``, to it)
FAST = True


def analyze(h: TxnHistory) -> Analysis:
    if FAST:
        from .list_append_fast import analyze as analyze_fast
        a = analyze_fast(h, lambda graph, ix: _finish(h.txns, graph, ix))
        if a is not None:
            return a
    return analyze_reference(h)


def analyze_reference(h: TxnHistory) -> Analysis:
    """The inference one micro-op at a time, over dicts: any history (the reference)."""
    txns = h.txns
    graph = DepGraph(len(txns))
    anomalies: dict[str, list[Anomaly]] = {}

    def add(kind: str, a: Anomaly) -> None:
        anomalies.setdefault(kind, []).append(a)

    # -- indices ----------------------------------------------------------------------------
    writer: dict = {}  # k -> {element: txn id}, every completed transaction's appends
    reads: dict = {}  # k -> set of distinct non-empty committed reads (tuples)
    readers: dict = {}  # k -> {last element read, or INIT: [txn ids]} (committed reads)
    types = [t.type for t in txns]
    twice = []  # transactions that touch a key more than once
    bad_mops = []
    for t in txns:
        tid, typ, mops = t.id, t.type, t.mops
        if len(mops) > 1 and len({m[1] for m in mops}) < len(mops):
            twice.append(t)
        for f, k, v in mops:
            if f == "append":
                w = writer.get(k)
                if w is None:
                    writer[k] = {v: tid}
                elif v in w:
                    return _stopped(graph, "duplicate-appends", Anomaly(
                        "duplicate-appends", [w[v], tid], key=k, values=[v],
                        why=f"{{a}} and {{b}} both appended {esc(v)} to key {esc(k)}: values must be unique per key"))
                else:
                    w[v] = tid
            elif f == "r":
                if typ == OK:  # an info transaction's reads are unknown; a committed nil is []
                    if v is None:
                        v = ()
                    elif type(v) is not tuple:
                        return _stopped(graph, "unexpected-read-value", Anomaly(
                            "unexpected-read-value", [tid], key=k, values=[v],
                            why=f"{{a}} read {esc(v)} from key {esc(k)}: a list-append read must be a list"))
                    rk = readers.get(k)
                    if rk is None:
                        rk = readers[k] = {}
                    last = v[-1] if v else INIT
                    lst = rk.get(last)
                    if lst is None:
                        rk[last] = [tid]
                    else:
                        lst.append(tid)
                    if v:
                        s = reads.get(k)
                        if s is None:
                            reads[k] = {v}
                        else:
                            s.add(v)
            else:
                bad_mops.append(tid)
                break
    if bad_mops:
        return _stopped(graph, "unexpected-txn-micro-op-types", Anomaly(
            "unexpected-txn-micro-op-types", bad_mops[:8],
            why="{a} holds micro-ops other than appends and reads: not a list-append history"))
    failed: dict = {}  # k -> {element: txn id} of failed transactions
    for t in txns:
        if t.type == FAIL:
            for f, k, v in t.mops:
                if f == "append":
                    failed.setdefault(k, {})[v] = t.id
    intermediate: dict = {}  # k -> {element: txn id}: appends followed by another of the same txn
    for t in twice:
        last_of: dict = {}
        for f, k, v in t.mops:
            if f == "append":
                if k in last_of:
                    intermediate.setdefault(k, {})[last_of[k]] = t.id
                last_of[k] = v

    # -- version orders ---------------------------------------------------------------------
    bad_reads: dict = {}  # k -> reads holding an element twice or one nobody appended
    order: dict = {}  # k -> tuple of elements in version order
    for k, vals in reads.items():
        longest = max(vals, key=len)
        for r in vals:
            if longest[:len(r)] != r:
                a, b = sorted((r, longest), key=len)
                add("incompatible-order", Anomaly(
                    "incompatible-order", [], key=k, values=[a, b],
                    why=f"reads of key {esc(k)} saw {esc(a)} and {esc(b)}: neither is a prefix of the other, "
                        "so no single order of appends explains both"))
        order[k] = tuple(dict.fromkeys(longest))
        wk = writer.get(k, {})
        for r in vals:
            if len(set(r)) != len(r) or not wk.keys() >= set(r):
                bad_reads.setdefault(k, set()).add(r)
    for k, w in writer.items():  # a key appended once and never read: [] then [v]
        if k not in order and len(w) == 1:
            order[k] = tuple(w)
    # per key: each element's predecessor (INIT for the first); an append nobody read comes
    # after the highest element anyone read
    before: dict = {}
    top: dict = {}
    for k, seq in order.items():
        before[k] = dict(zip(seq, (INIT,) + seq[:-1]))
        top[k] = seq[-1]

    def previous(k, v):
        b = before.get(k)
        return INIT if b is None else b.get(v, top[k])

    # -- the graph (ok and info transactions) and the anomalies without a cycle ---------------
    src, dst, rel = graph.src.append, graph.dst.append, graph.rel.append
    empty: dict = {}
    for t in txns:
        typ = t.type
        if typ == FAIL:
            continue
        tid = t.id
        for f, k, v in t.mops:
            if f == "append":
                b = before.get(k)
                prev = INIT if b is None else b.get(v, top[k])
                w = writer[k].get(prev)
                if w is not None and w != tid and types[w] != FAIL:
                    src(w)
                    dst(tid)
                    rel(WW)
                rs = readers.get(k)
                if rs is not None:
                    for r in rs.get(prev, ()):
                        if r != tid:
                            src(r)
                            dst(tid)
                            rel(RW)
            elif v and typ == OK:
                last = v[-1]
                w = writer.get(k, empty).get(last)
                if w is not None and w != tid and types[w] != FAIL:
                    src(w)
                    dst(tid)
                    rel(WR)
                if failed:
                    fk = failed.get(k)
                    if fk is not None and not fk.keys().isdisjoint(v):
                        e = next(x for x in v if x in fk)
                        _g1a(add, tid, fk[e], k, v, e)
                if intermediate:
                    im = intermediate.get(k)
                    if im is not None:
                        w = im.get(last)
                        if w is not None and w != tid:
                            _g1b(add, tid, w, k, v, last)
    # transactions that touch a key twice: lost updates, internal and future reads
    lost: dict = {}  # (k, version read first) -> committed txns that then appended to k
    for t in twice:
        if t.type == OK:
            _same_key_twice(t, lost, add)
    for (k, v), ts in lost.items():
        if len(ts) > 1:
            add("lost-update", _lost_update(k, v, ts))
    _dirty_updates(order, writer, txns, add)
    if bad_reads:
        _bad_read_cases(txns, bad_reads, writer, add)

    explain = _explainer(txns, lambda k, v: writer.get(k, empty).get(v),
                         lambda k, prev: readers.get(k, empty).get(prev) or (), previous)
    return Analysis(anomalies, graph, explain)


def _g1a(add, tid: int, w: int, k, v, e) -> None:
    add("G1a", Anomaly("G1a", [tid, w], key=k, values=[e],
                       why=f"{{a}} read key {esc(k)} = {esc(v)}, holding {esc(e)}, which "
                           f"{{b}} appended and that transaction failed (aborted)"))


def _g1b(add, tid: int, w: int, k, v, last) -> None:
    add("G1b", Anomaly("G1b", [tid, w], key=k, values=[last],
                       why=f"{{a}} read key {esc(k)} = {esc(v)}, ending at {esc(last)}, "
                           f"which {{b}} appended but later appended to again: "
                           "an intermediate state"))


def _explainer(txns, writer_of, readers_of, previous):
    """An edge's explanation from the inference's lookups: ``writer_of(k, v)`` the transaction
    that appended v to k (or None), ``readers_of(k, v)`` the committed readers of k whose read
    ends at v (INIT: the empty list), ``previous(k, v)`` the version an append of v followed."""

    def explain(a: int, b: int, rel: int) -> Step:
        tb = txns[b]
        if rel == WR:
            for f, k, v in tb.mops:
                if f == "r" and v and writer_of(k, v[-1]) == a:
                    return Step(a, b, "wr", k, v[-1], text=f"{{b}} observed {{a}}'s append of {esc(v[-1])} "
                                                            f"to key {esc(k)}")
        if rel in (WW, RW):
            for f, k, v in tb.mops:
                if f != "append":
                    continue
                prev = previous(k, v)
                if rel == WW and prev is not INIT and writer_of(k, prev) == a:
                    return Step(a, b, "ww", k, prev, v, text=f"{{b}} appended {esc(v)} after {{a}} appended "
                                                             f"{esc(prev)} to key {esc(k)}")
                if rel == RW and a in readers_of(k, prev):
                    if prev is INIT:
                        return Step(a, b, "rw", k, None, v, text=f"{{a}} observed the initial (empty) state of "
                                                                 f"key {esc(k)}, which {{b}} created by appending "
                                                                 f"{esc(v)}")
                    return Step(a, b, "rw", k, prev, v, text=f"{{a}} did not observe {{b}}'s append of {esc(v)} "
                                                             f"to key {esc(k)}")
        return Step(a, b, {WW: "ww", WR: "wr", RW: "rw"}.get(rel, "?"), text="of an edge the inference made")

    return explain


def _finish(txns, graph, ix) -> Analysis:
    """The array path's analysis (``list_append_fast``): its rare cases written here, by the
    reference's own code, from its index ``ix``."""
    anomalies: dict[str, list[Anomaly]] = {}

    def add(kind: str, a: Anomaly) -> None:
        anomalies.setdefault(kind, []).append(a)

    for i in ix.cases:  # committed reads of a failed or an intermediate append, in history order
        tid, k, v = ix.read(i)
        if ix.has_failed:
            e = next((x for x in v if ix.failed_writer(k, x) is not None), None)
            if e is not None:
                _g1a(add, tid, ix.failed_writer(k, e), k, v, e)
        if ix.has_intermediate:
            w = ix.intermediate_writer(k, v[-1])
            if w is not None and w != tid:
                _g1b(add, tid, w, k, v, v[-1])
    for t in ix.twice_txns:  # those with an internal or a future read
        _same_key_twice(t, {}, add)
    for k, v, ts in ix.lost_updates:
        add("lost-update", _lost_update(k, v, ts))
    order, writer = ix.dirty()
    _dirty_updates(order, writer, txns, add)

    def previous(k, v):
        p = ix.previous(k, v)
        return INIT if p is None else p
    explain = _explainer(txns, ix.writer, lambda k, prev: ix.readers(k, None if prev is INIT else prev), previous)
    return Analysis(anomalies, graph, explain)


def _lost_update(k, v, ts) -> Anomaly:
    seen = "the empty list" if not v else esc(v)
    more = f" (and {len(ts) - 2} more)" if len(ts) > 2 else ""
    return Anomaly("lost-update", ts, key=k, values=[v],
                   why=f"{{a}} and {{b}}{more} all read key {esc(k)} as {seen} and then appended to it: each "
                       "committed without seeing the other's append")


def _same_key_twice(t, lost: dict, add) -> None:
    """For a committed transaction that touches some key twice: the (key, version) it read before
    appending (lost updates are two transactions with the same), Elle's INT (a read must agree with
    the transaction's own earlier reads and appends; after appends alone only a suffix is known),
    and future reads (a read holding an element the transaction appends later)."""
    state: dict = {}  # k -> (whole list known, expected list or suffix)
    seen: dict = {}  # k -> elements read so far
    first_read: dict = {}
    wrote: set = set()
    internal = future = False
    for f, k, v in t.mops:
        if f == "append":
            if k not in wrote:
                wrote.add(k)
                if k in first_read:
                    lost.setdefault((k, first_read[k]), []).append(t.id)
            if not future and v in seen.get(k, ()):
                future = True
                add("future-read", Anomaly("future-read", [t.id], key=k, values=[v],
                                           why=f"{{a}} read key {esc(k)} holding {esc(v)} before it appended "
                                               f"{esc(v)} itself"))
            known, cur = state.get(k, (False, ()))
            state[k] = (known, cur + (v,))
            continue
        if v is None:
            v = ()
        first_read.setdefault(k, v)
        if v:
            seen.setdefault(k, set()).update(v)
        s = state.get(k)
        if s is not None and not internal:
            known, exp = s
            if v != exp if known else (len(v) < len(exp) or v[len(v) - len(exp):] != exp):
                internal = True
                shown = esc(exp) if known else "[..., " + esc(exp)[1:]
                add("internal", Anomaly("internal", [t.id], key=k, values=[exp, v],
                                        why=f"{{a}} read key {esc(k)} = {esc(v)}, but its own earlier reads and "
                                            f"appends say {shown}"))
        state[k] = (True, v)


def _dirty_updates(order, writer, txns, add) -> None:
    """Along each key's version order: a failed append, then a committed one on top of it (an
    info append in between cannot tell, and keeps the span open)."""
    for k, seq in order.items():
        wk = writer.get(k, {})
        t1, span = None, []  # the last definite writer (None: the initial, committed state)
        for e in seq:
            w = wk.get(e)
            if w is None:
                continue  # an element nobody appended: a garbage read, reported apart
            t1_type = OK if t1 is None else txns[t1].type
            t2_type = txns[w].type
            if t2_type == INFO or (t1_type == FAIL and t2_type == FAIL):
                span.append(e)
                continue
            if t1_type == FAIL and t2_type == OK:
                add("dirty-update", Anomaly("dirty-update", [t1, w], key=k, values=span + [e],
                                            why=f"{{b}} committed an append to key {esc(k)} on top of {{a}}'s, "
                                                f"which failed (versions {esc(span + [e])})"))
            t1, span = w, [e]


def _bad_read_cases(txns, bad_reads: dict, writer: dict, add) -> None:
    """The committed reads that hold an element twice, or one that no transaction appended."""
    for t in txns:
        if t.type != OK:
            continue
        for f, k, v in t.mops:
            if f != "r" or not v or v not in bad_reads.get(k, ()):
                continue
            dups = sorted({e for e in v if v.count(e) > 1}, key=repr)
            if dups:
                add("duplicate-elements", Anomaly("duplicate-elements", [t.id], key=k, values=dups,
                                                  why=f"{{a}} read key {esc(k)} = {esc(v)}, which holds "
                                                      f"{esc(dups)} more than once"))
            garbage = [e for e in dict.fromkeys(v) if e not in writer.get(k, ())]
            if garbage:
                add("garbage-read", Anomaly("garbage-read", [t.id], key=k, values=garbage,
                                            why=f"{{a}} read key {esc(k)} = {esc(v)}, but no transaction "
                                                f"appended {esc(garbage)} to it"))


def _stopped(graph, kind: str, a: Anomaly) -> Analysis:
    return Analysis({kind: [a]}, graph, lambda x, y, r: Step(x, y, "?"), stopped=a)


__all__ = ["analyze"]
