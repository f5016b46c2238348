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

Strongly connected components are Tarjan's, numbered as scipy.sparse.csgraph numbers them
(``strong_labels``; scipy's own above ``SCIPY_EDGES``); a cycle can only lie inside one. Each
anomaly is a shape of cycle (``SHAPES``): the relations it may use, how many RW edges it needs
and whether two may be adjacent, and which relations it must contain. The search is a
breadth-first search over (node, shape state) from one of the shape's required edges back to its
tail: the first cycle it finds is among the shortest through that edge (``search``).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from .txn_arrays import LazyTxns, column, unique_ints

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


def strong_labels(n: int, src, dst) -> np.ndarray:
    """The strongly connected component of each of the ``n`` nodes (edges ``src[i] -> dst[i]``,
    in any order, repeats and self-loops allowed), numbered in the order the components are
    completed by a depth-first search that starts from each unvisited node in increasing order
    and tries a node's successors in decreasing order: Tarjan's algorithm, iteratively. These are
    the numbers scipy.sparse.csgraph.connected_components(directed, strong) gives (its search,
    Pearce's, visits the nodes in that order), held to it in tests/unit/test_txn_scc.py. In
    plain Python: 0.07 s for the 155,000 nodes and 308,000 edges of a read committed history of
    100,000 transactions, where importing scipy took 0.12-0.24 s (``SCIPY_EDGES``)."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    key = src * n + dst
    if len(key) > 1 and not bool((key[1:] > key[:-1]).all()):  # DepGraph.edges: sorted, unique already
        key = unique_ints(key)
        src, dst = np.divmod(key, n)
    ptr = np.searchsorted(src, np.arange(n + 1)).tolist()  # successors of v: succ[ptr[v]:ptr[v + 1]]
    succ = dst.tolist()
    done = n  # the low link of a node whose component is complete: above every visit number
    index = [-1] * n
    low = [done] * n
    label = [0] * n
    cursor = ptr[1:]  # per node, the successors still to try: succ[ptr[v]:cursor[v]], the last first
    stack: list[int] = []  # visited nodes whose component is not complete
    visits = 0
    comps = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        if ptr[root] == ptr[root + 1]:  # no successor: a component of its own, complete at once
            index[root] = visits
            visits += 1
            label[root] = comps
            comps += 1
            continue
        index[root] = low[root] = visits
        visits += 1
        stack.append(root)
        path = [root]
        while path:
            v = path[-1]
            first = ptr[v]
            j = cursor[v]
            lv = low[v]
            while j > first:
                j -= 1
                w = succ[j]
                if index[w] < 0:
                    if ptr[w] == ptr[w + 1]:  # (as above: visited and complete, no descent)
                        index[w] = visits
                        visits += 1
                        label[w] = comps
                        comps += 1
                        continue
                    cursor[v] = j  # descend
                    low[v] = lv
                    index[w] = low[w] = visits
                    visits += 1
                    stack.append(w)
                    path.append(w)
                    break
                if low[w] < lv:  # on the stack (a complete component's nodes have low == done)
                    lv = low[w]
            else:  # every successor tried: v is finished
                cursor[v] = first
                path.pop()
                if lv == index[v]:  # v is its component's root: the component is complete
                    while True:
                        w = stack.pop()
                        low[w] = done
                        label[w] = comps
                        if w == v:
                            break
                    comps += 1
                else:
                    low[v] = lv
                    if lv < low[path[-1]]:  # (v has a parent: a root's low is its own index)
                        low[path[-1]] = lv
    return np.array(label, dtype=np.int64)


#: edges from which scipy's components (the same labels, ``strong_labels``) take less time than
#: ours, its import included: 0.29 s against 0.90 s at 3.1 million edges (1,000,000 transactions,
#: read committed), where ours take 0.07 s at 308,000 (100,000) and importing scipy 0.12-0.24 s
SCIPY_EDGES = 1_000_000


def _nontrivial(n: int, src, dst):
    """(labels of every node, labels of the components of 2 nodes or more, node ids grouped by
    label, where each such component's nodes start and end in that grouping)."""
    if len(src) >= SCIPY_EDGES:
        from scipy.sparse import csr_matrix  # (imported only here: a third of a second)
        from scipy.sparse.csgraph import connected_components
        m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
        labels = connected_components(m, directed=True, connection="strong")[1]
    else:
        labels = strong_labels(n, src, dst)
    big = np.flatnonzero(np.bincount(labels, minlength=1) > 1)
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
