"""The dependency graph of a transactional history, its strongly connected components, and the
search for cycles of each anomaly's shape.

Nodes are transactions (``Txn.id``). Edges carry a set of relations (bits):

    WW  T1's write was overwritten by T2's (version order)
    WR  T2 read T1's write
    RW  T1 read a version that T2's write overwrote (anti-dependency)
    PROCESS   T2 is the next committed transaction of T1's process
    REALTIME  T1 completed before T2 was invoked

Real-time order is drawn through a chain of extra nodes, one per ok completion in order: T ->
chain(T) -> next chain node ... -> every transaction invoked after it. A path through the chain
is one real-time edge between two transactions, so reachability (and every cycle) is that of the
full real-time order, with O(n) edges instead of the O(n^2) of the order itself (or the O(n p)
of its transitive reduction). Cycles are reported between transactions: a hop through the chain
becomes one REALTIME step.

Strongly connected components are computed in C (scipy.sparse.csgraph); a cycle can only lie
inside one. Each anomaly is a shape of cycle (``SHAPES``): the relations it may use, how many RW
edges it needs and whether two may be adjacent, and which relations it must contain. The search
is a breadth-first search over (node, shape state) from one of the shape's required edges back
to its tail: the first cycle it finds is among the shortest through that edge (``search``).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from .txn_arrays import LazyTxns, column

WW, WR, RW, PROCESS, REALTIME = 1, 2, 4, 8, 16
DATA = WW | WR | RW
REL_NAMES = {WW: "ww", WR: "wr", RW: "rw", PROCESS: "process", REALTIME: "realtime"}
_REL_ORDER = (WW, WR, PROCESS, REALTIME, RW)  # the order a multi-relation edge is tried in

# how many RW edges a shape needs
NONE, SINGLE, NONADJACENT, ADJACENT = 0, 1, 2, 3


@dataclass(frozen=True)
class Shape:
    name: str
    rels: int  # the relations its edges may use
    rw: int  # NONE / SINGLE / NONADJACENT / ADJACENT
    required: tuple[int, ...] = ()  # relations (masks) each of which must appear at least once


def _shapes() -> dict[str, Shape]:
    base = [Shape("G0", WW, NONE), Shape("G1c", WW | WR, NONE, (WR,)),
            Shape("G-single-item", DATA, SINGLE), Shape("G-nonadjacent-item", DATA, NONADJACENT),
            Shape("G2-item", DATA, ADJACENT)]
    out = {s.name: s for s in base}
    for variant, rel in (("process", PROCESS), ("realtime", REALTIME)):
        for s in base:
            out[f"{s.name}-{variant}"] = Shape(f"{s.name}-{variant}", s.rels | rel, s.rw, s.required + (rel,))
    return out


SHAPES = _shapes()

#: the order cycles are searched in: Elle's (anomalies implied by fewer others first), so that a
#: type implied by one already found is not searched again
SEARCH_ORDER = ("G-single-item", "G0", "G-nonadjacent-item", "G-single-item-process", "G1c",
                "G-nonadjacent-item-process", "G-single-item-realtime", "G2-item", "G-nonadjacent-item-realtime",
                "G0-process", "G1c-process", "G2-item-process", "G0-realtime", "G1c-realtime", "G2-item-realtime")


def classify(rels: list[int]) -> str:
    """The anomaly a cycle is, from the relation of each of its steps (in order)."""
    rw = sum(1 for r in rels if r == RW)
    if rw == 1:
        data = "G-single-item"
    elif rw > 1:
        n = len(rels)
        adjacent = any(rels[i] == RW and rels[(i + 1) % n] == RW for i in range(n))
        data = "G2-item" if adjacent else "G-nonadjacent-item"
    elif WR in rels:
        data = "G1c"
    else:
        data = "G0"
    if REALTIME in rels:
        return data + "-realtime"
    if PROCESS in rels:
        return data + "-process"
    return data


class SearchTimeout(Exception):
    pass


class DepGraph:
    """Edges between the transactions of a history (plus the real-time chain's nodes)."""

    def __init__(self, n: int):
        self.n = n  # transaction nodes: 0..n-1
        self.total = n  # with the real-time chain's nodes after them
        self.src = array("q")
        self.dst = array("q")
        self.rel = array("B")
        self.rt_time: list[int] = []  # for each chain node, the completion position it stands for
        self._csr = None

    def link(self, a: int, b: int, rel: int) -> None:
        if a != b:
            self.src.append(a)
            self.dst.append(b)
            self.rel.append(rel)

    def link_all_to(self, sources, b: int, rel: int) -> None:
        for a in sources:
            if a != b:
                self.src.append(a)
                self.dst.append(b)
                self.rel.append(rel)

    # -- process and real-time order ----------------------------------------------------------
    def add_process_order(self, txns) -> None:
        """Each committed transaction to the next committed transaction of its process."""
        if isinstance(txns, LazyTxns):  # integer processes, ids their places: on the arrays
            ok = np.flatnonzero(column(txns, "type") == 0)
            by = np.lexsort((column(txns, "cmp")[ok], column(txns, "process")[ok]))
            order, proc = ok[by], column(txns, "process")[ok][by]
            nxt = proc[1:] == proc[:-1]
            self.src.frombytes(order[:-1][nxt].astype(np.int64).tobytes())
            self.dst.frombytes(order[1:][nxt].astype(np.int64).tobytes())
            self.rel.frombytes(bytes([PROCESS]) * int(nxt.sum()))
            return
        last: dict = {}
        for t in sorted((t for t in txns if t.type == 0), key=lambda t: t.cmp):
            prev = last.get(t.process)
            if prev is not None:
                self.link(prev, t.id, PROCESS)
            last[t.process] = t.id

    def add_realtime_order(self, txns) -> None:
        """T1 -> T2 whenever T1 completed (ok) before T2 was invoked (T2 ok or info), through the
        chain of completion nodes: T1 -> its completion's node -> the next ... -> the last
        completion before T2's invocation -> T2."""
        typ = column(txns, "type")
        all_ids = column(txns, "id")
        ok = typ == 0
        if not ok.any():
            return
        cmp_all = column(txns, "cmp")
        inv_all = column(txns, "inv")
        ids, cmp_ = all_ids[ok], cmp_all[ok]
        order = np.argsort(cmp_, kind="stable")
        ids, times = ids[order], cmp_[order]
        chain = self.total + np.arange(len(ids), dtype=np.int64)
        sel = (typ != 1) & (inv_all >= 0)
        targets, invs = all_ids[sel], inv_all[sel]
        j = np.searchsorted(times, invs, side="left") - 1  # the last completion before each invocation
        keep = j >= 0
        src = np.concatenate([ids, chain[:-1], chain[j[keep]]])
        dst = np.concatenate([chain, chain[1:], targets[keep]])
        self.src.frombytes(src.astype(np.int64).tobytes())
        self.dst.frombytes(dst.astype(np.int64).tobytes())
        self.rel.frombytes(bytes([REALTIME]) * len(src))
        self.rt_time = times.tolist()
        self.total += len(ids)

    # -- structure ----------------------------------------------------------------------------
    def edges(self):
        """Unique edges as numpy arrays (src, dst, rels), relations of parallel edges or-ed."""
        src = np.frombuffer(self.src, dtype=np.int64) if len(self.src) else np.zeros(0, np.int64)
        dst = np.frombuffer(self.dst, dtype=np.int64) if len(self.dst) else np.zeros(0, np.int64)
        rel = np.frombuffer(self.rel, dtype=np.uint8) if len(self.rel) else np.zeros(0, np.uint8)
        if not len(src):
            return src, dst, rel
        key = src * self.total + dst
        order = np.argsort(key, kind="stable")
        key = key[order]
        first = np.ones(len(key), dtype=bool)
        first[1:] = key[1:] != key[:-1]
        starts = np.flatnonzero(first)
        rels = np.bitwise_or.reduceat(rel[order], starts)
        return src[order][starts], dst[order][starts], rels.astype(np.uint8)

    def ranks(self, txns) -> np.ndarray:
        """A rank per node: twice a transaction's completion position, and one more than twice
        the completion position a real-time chain node stands for. Process and real-time edges
        always rise in it; when every edge does, the graph has no cycle (``components``)."""
        rank = np.empty(self.total, dtype=np.int64)
        rank[:self.n] = 2 * column(txns, "cmp")
        rank[self.n:] = 2 * np.asarray(self.rt_time, dtype=np.int64) + 1
        return rank

    def counts(self) -> dict[str, int]:
        rel = np.frombuffer(self.rel, dtype=np.uint8) if len(self.rel) else np.zeros(0, np.uint8)
        return {name: int(((rel & bit) != 0).sum()) for bit, name in REL_NAMES.items()}

    def csr(self):
        if self._csr is None:
            src, dst, rels = self.edges()
            self._csr = (src, dst, rels)
        return self._csr


def _nontrivial(n: int, src, dst):
    """(labels of every node, labels of the components of 2 nodes or more, node ids grouped by
    label, where each such component's nodes start and end in that grouping)."""
    # scipy when a dependency graph is searched: a third of a second to import, which only a
    # transactional history's check needs (the other checkers import this module's package too)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components
    m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    labels = connected_components(m, directed=True, connection="strong")[1]
    big = np.flatnonzero(np.bincount(labels) > 1)
    order = np.argsort(labels, kind="stable")
    return labels, big, order, np.searchsorted(labels[order], np.stack([big, big + 1]))


def sccs(n: int, src, dst) -> list[np.ndarray]:
    """The nontrivial strongly connected components (sorted arrays of node ids, 2 nodes or
    more)."""
    if not len(src):
        return []
    _labels, _big, order, bounds = _nontrivial(n, src, dst)
    return [order[lo:hi] for lo, hi in zip(bounds[0].tolist(), bounds[1].tolist())]


__all__ = ["DATA", "PROCESS", "REALTIME", "REL_NAMES", "RW", "SEARCH_ORDER", "SHAPES", "WR", "WW",
           "DepGraph", "SearchTimeout", "Shape", "classify", "sccs"]
