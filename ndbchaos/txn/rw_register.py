"""Read-write register inference (Elle, PAPER section 5.2): registers are overwritten, so only
reads of a unique value tie a reader to its writer (wr). Version orders are partial, merged from
sources the user vouches for, each dropped if it would make some key's order cyclic (then
reported as ``cyclic-versions``):

    always               the initial state (nil) precedes every value
    wfr_keys             within a committed transaction, a write follows its own read of the key
    sequential_keys      each process sees a key's versions in order (process order)
    linearizable_keys    a key's versions follow real time

Every version edge v1 -> v2 of key k gives ww (writers of v1 -> writers of v2) and rw (readers of
v1 -> writers of v2), over external reads (a transaction's first access to k, when it is a read)
and external writes (its last write to k). Writes of info transactions count as writes: a read of
a unique value proves its writer committed (Elle indexes only ok writers; this finds more edges,
never fewer). Without a cycle: G1a, G1b, internal, lost-update, and garbage-read (a value nobody
wrote).
"""

from __future__ import annotations

import numpy as np

from .anomaly import Analysis, Anomaly, Step, esc
from .graph import RW, WR, WW, DepGraph, sccs
from .history import FAIL, OK, TxnHistory

NIL = None


def _ext(mops):
    """(external reads, external writes): a key's first access if it is a read, its last write."""
    reads: dict = {}
    writes: dict = {}
    touched: set = set()
    for f, k, v in mops:
        if f == "r":
            if k not in touched:
                reads[k] = v
        else:
            writes[k] = v
        touched.add(k)
    return reads, writes


def analyze(h: TxnHistory, wfr_keys: bool = False, sequential_keys: bool = False,
            linearizable_keys: bool = False) -> Analysis:
    txns = h.txns
    graph = DepGraph(len(txns))
    anomalies: dict[str, list[Anomaly]] = {}

    def add(kind: str, a: Anomaly) -> None:
        anomalies.setdefault(kind, []).append(a)

    writer: dict = {}  # k -> {v: txn id}, every write of every completed transaction
    intermediate: dict = {}
    bad = []
    for t in txns:
        last: dict = {}
        for f, k, v in t.mops:
            if f == "w":
                w = writer.setdefault(k, {})
                if v in w and w[v] != t.id:
                    return _stopped(graph, Anomaly("duplicate-writes", [w[v], t.id], key=k, values=[v],
                                                   why=f"{{a}} and {{b}} both wrote {esc(v)} to key {esc(k)}: "
                                                       "values must be unique per key"))
                w[v] = t.id
                if k in last:
                    intermediate.setdefault(k, {})[last[k]] = t.id
                last[k] = v
            elif f != "r":
                bad.append(t.id)
                break
    if bad:
        return _stopped(graph, Anomaly("unexpected-txn-micro-op-types", bad[:8],
                                       why="{a} holds micro-ops other than writes and reads: "
                                           "not an rw-register history"))
    ext = [_ext(t.mops) if t.type != FAIL else ({}, {}) for t in txns]
    ext_writers: dict = {}  # k -> {v: [txn ids]} (ok and info)
    ext_readers: dict = {}  # k -> {v: [txn ids]} (ok)
    for t, (reads, writes) in zip(txns, ext):
        if t.type == FAIL:
            continue
        for k, v in writes.items():
            ext_writers.setdefault(k, {}).setdefault(v, []).append(t.id)
        if t.type == OK:
            for k, v in reads.items():
                ext_readers.setdefault(k, {}).setdefault(v, []).append(t.id)

    # -- anomalies without a cycle ------------------------------------------------------------
    lost: dict = {}
    for t in txns:
        if t.type != OK:
            continue
        state: dict = {}
        first_read: dict = {}
        wrote: set = set()
        internal_done = False
        for f, k, v in t.mops:
            if f == "r":
                if k in state and state[k] != v and not internal_done:
                    add("internal", Anomaly("internal", [t.id], key=k, values=[state[k], v],
                                            why=f"{{a}} read key {esc(k)} = {esc(v)} after its own earlier "
                                                f"read or write made it {esc(state[k])}"))
                    internal_done = True
                state[k] = v
                first_read.setdefault(k, v)
                if v is None:
                    continue
                w = writer.get(k, {}).get(v)
                if w is None:
                    add("garbage-read", Anomaly("garbage-read", [t.id], key=k, values=[v],
                                                why=f"{{a}} read key {esc(k)} = {esc(v)}, a value no "
                                                    "transaction wrote"))
                elif w != t.id and txns[w].type == FAIL:
                    add("G1a", Anomaly("G1a", [t.id, w], key=k, values=[v],
                                       why=f"{{a}} read key {esc(k)} = {esc(v)}, which {{b}} wrote and that "
                                           "transaction failed (aborted)"))
                im = intermediate.get(k, {}).get(v)
                if im is not None and im != t.id:
                    add("G1b", Anomaly("G1b", [t.id, im], key=k, values=[v],
                                       why=f"{{a}} read key {esc(k)} = {esc(v)}, which {{b}} wrote and then "
                                           "overwrote: an intermediate state"))
            else:
                state[k] = v
                if k not in wrote:
                    wrote.add(k)
                    if k in first_read:
                        lost.setdefault((k, first_read[k]), []).append(t.id)
    for (k, v), ts in lost.items():
        if len(ts) > 1:
            more = f" (and {len(ts) - 2} more)" if len(ts) > 2 else ""
            add("lost-update", Anomaly("lost-update", ts, key=k, values=[v],
                                       why=f"{{a}} and {{b}}{more} all read key {esc(k)} = {esc(v)} and then wrote "
                                           "it: each committed without seeing the other's write"))

    # -- wr: the (unique) writer of a value -> its external readers ---------------------------
    for k, by_v in ext_readers.items():
        wk = ext_writers.get(k, {})
        for v, rs in by_v.items():
            if v is None:
                continue
            ws = wk.get(v)
            if ws:
                for r in rs:
                    graph.link(ws[0], r, WR)

    # -- version orders -----------------------------------------------------------------------
    sources = [("initial-state", _initial)]
    if wfr_keys:
        sources.append(("wfr-keys", _wfr))
    if sequential_keys:
        sources.append(("sequential-keys", _sequential))
    if linearizable_keys:
        sources.append(("linearizable-keys", _linearizable))
    versions: dict = {}  # k -> {v1: set(v2)}
    used = []
    for name, source in sources:
        extra = source(txns, ext)
        merged = _merge(versions, extra)
        cycles = _cyclic(merged)
        if cycles:
            for k, vals in cycles:
                add("cyclic-versions", Anomaly("cyclic-versions", [], key=k, values=vals,
                                               why=f"the version order of key {esc(k)} from "
                                                   f"{', '.join(used + [name])} is cyclic over {esc(vals)}"))
            continue
        versions = merged
        used.append(name)
    for k, out in versions.items():
        wk = ext_writers.get(k, {})
        rk = ext_readers.get(k, {})
        for v1, v2s in out.items():
            w1 = wk.get(v1, ())
            r1 = rk.get(v1, ())
            for v2 in v2s:
                w2 = wk.get(v2)
                if not w2:
                    continue
                for b in w2:
                    if w1:
                        graph.link_all_to(w1, b, WW)
                    if r1:
                        graph.link_all_to(r1, b, RW)

    def explain(a: int, b: int, rel: int) -> Step:
        ra, wa = ext[a]
        rb, wb = ext[b]
        if rel == WR:
            for k, v in wa.items():
                if k in rb and rb[k] == v:
                    return Step(a, b, "wr", k, v, text=f"{{a}} wrote key {esc(k)} = {esc(v)}, which was read by {{b}}")
        src = wa if rel == WW else ra
        for k, v1 in src.items():
            v2 = wb.get(k, NIL)
            if v2 is not NIL and v2 in versions.get(k, {}).get(v1, ()):
                what = "set key" if rel == WW else "read key"
                verb = "to" if rel == WW else "="
                return Step(a, b, "ww" if rel == WW else "rw", k, v1, v2,
                            text=f"{{a}} {what} {esc(k)} {verb} {esc(v1)}, and {{b}} set it to {esc(v2)}, which "
                                 "came later in the version order")
        return Step(a, b, {WW: "ww", WR: "wr", RW: "rw"}.get(rel, "?"), text="of an edge the inference made")

    return Analysis(anomalies, graph, explain)


# -- version order sources: each returns {k: {v1: set(v2)}} -------------------------------------

def _initial(txns, ext) -> dict:
    out: dict = {}
    for t, (reads, writes) in zip(txns, ext):
        if t.type == FAIL:
            continue
        for k, v in writes.items():
            if v is not None:
                out.setdefault(k, {}).setdefault(NIL, set()).add(v)
        if t.type == OK:
            for k, v in reads.items():
                if v is not None:
                    out.setdefault(k, {}).setdefault(NIL, set()).add(v)
    return out


def _wfr(txns, ext) -> dict:
    out: dict = {}
    for t, (reads, writes) in zip(txns, ext):
        if t.type != OK:
            continue
        for k, v in reads.items():
            if v is not None and k in writes and writes[k] != v:
                out.setdefault(k, {}).setdefault(v, set()).add(writes[k])
    return out


MISSING = object()  # a transaction that did not interact with a key (None is the initial version)


def _last_first(t, e, k):
    """The version a transaction left a key in (its write, else what it read) and the one it
    first saw (what it read, unless that was the initial nil, else its write); info transactions
    only by their writes. A read of nil is the initial version: a process that later reads nil
    again after a write has seen the order go backwards."""
    reads, writes = e
    if t.type == OK:
        left = writes[k] if writes.get(k) is not None else reads.get(k)
        first = reads[k] if reads.get(k) is not None else writes.get(k)
        return left, first
    w = writes.get(k, MISSING)
    return w, w


def _sequential(txns, ext) -> dict:
    """Each process's consecutive accesses to a key, in its order."""
    out: dict = {}
    last: dict = {}  # (process, k) -> version it left the key in
    for t in sorted((t for t in txns if t.type != FAIL), key=lambda t: t.cmp):
        e = ext[t.id]
        for k in set(e[0]) | set(e[1]):
            left, first = _last_first(t, e, k)
            prev = last.get((t.process, k), MISSING)
            if prev is not MISSING and first is not MISSING and prev != first:
                out.setdefault(k, {}).setdefault(prev, set()).add(first)
            if left is not MISSING:
                last[(t.process, k)] = left
    return out


def _linearizable(txns, ext) -> dict:
    """A key's accesses in real time: each committed access precedes the next ones that began
    after it completed (a transitive reduction per key, as for the real-time graph)."""
    out: dict = {}
    by_key: dict = {}
    for t in txns:
        if t.type == FAIL:
            continue
        e = ext[t.id]
        for k in set(e[0]) | set(e[1]):
            by_key.setdefault(k, []).append(t)
    for k, ts in by_key.items():
        events = []
        for t in ts:
            if t.inv >= 0:
                events.append((t.inv, 0, t))
            if t.type == OK:
                events.append((t.cmp, 1, t))
        events.sort(key=lambda x: (x[0], x[1]))
        frontier: set = set()
        preds: dict = {}
        for _pos, kind, t in events:
            if kind == 0:
                preds[t.id] = set(frontier)
                _left, first = _last_first(t, ext[t.id], k)
                if first is MISSING:
                    continue
                for a in frontier:
                    left, _ = _last_first(txns[a], ext[a], k)
                    if left is not MISSING and left != first:
                        out.setdefault(k, {}).setdefault(left, set()).add(first)
            else:
                frontier -= preds.get(t.id, set())
                frontier.add(t.id)
    return out


def _merge(a: dict, b: dict) -> dict:
    out = {k: {v: set(s) for v, s in d.items()} for k, d in a.items()}
    for k, d in b.items():
        ok = out.setdefault(k, {})
        for v, s in d.items():
            ok.setdefault(v, set()).update(s)
    return out


def _cyclic(versions: dict) -> list:
    """(key, values) of every cycle in a key's version order."""
    out = []
    for k, d in versions.items():
        if len(d) < 2:
            continue
        ids: dict = {}
        src, dst = [], []
        for v1, v2s in d.items():
            i = ids.setdefault(v1, len(ids))
            for v2 in v2s:
                src.append(i)
                dst.append(ids.setdefault(v2, len(ids)))
        names = list(ids)
        for comp in sccs(len(ids), np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)):
            out.append((k, [names[i] for i in sorted(comp.tolist())]))
    return out


def _stopped(graph, a: Anomaly) -> Analysis:
    return Analysis({a.type: [a]}, graph, lambda x, y, r: Step(x, y, "?"), stopped=a)


__all__ = ["analyze"]
