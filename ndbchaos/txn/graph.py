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
to its tail: the first cycle it finds is among the shortest through that edge.
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

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
        n = len(txns)
        typ = np.fromiter(map(attrgetter("type"), txns), dtype=np.int8, count=n)
        all_ids = np.fromiter(map(attrgetter("id"), txns), dtype=np.int64, count=n)
        ok = typ == 0
        if not ok.any():
            return
        cmp_all = np.fromiter(map(attrgetter("cmp"), txns), dtype=np.int64, count=n)
        inv_all = np.fromiter(map(attrgetter("inv"), txns), dtype=np.int64, count=n)
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
        rank[:self.n] = 2 * np.fromiter(map(attrgetter("cmp"), txns), dtype=np.int64, count=self.n)
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


def components(n: int, n_txn: int, src, dst, rels, rank: np.ndarray | None = None) -> list["Component"]:
    """The graph's nontrivial strongly connected components, each with its own edges (those
    between two of its nodes), grouped in one pass. ``rank`` (``DepGraph.ranks``), when given:
    if every edge rises in it, the graph is acyclic and has none, found without the component
    search (nor its import)."""
    if not len(src):
        return []
    if rank is not None and bool((rank[src] < rank[dst]).all()):
        return []
    labels, big, order, bounds = _nontrivial(n, src, dst)
    if not len(big):
        return []
    ls = labels[src]
    inner = (ls == labels[dst]) & np.isin(ls, big)
    e_order = np.argsort(ls[inner], kind="stable")
    es, ed, er = src[inner][e_order], dst[inner][e_order], rels[inner][e_order]
    e_bounds = np.searchsorted(ls[inner][e_order], np.stack([big, big + 1]))
    return [Component(np.sort(order[bounds[0, i]:bounds[1, i]]), es[e_bounds[0, i]:e_bounds[1, i]],
                      ed[e_bounds[0, i]:e_bounds[1, i]], er[e_bounds[0, i]:e_bounds[1, i]], n_txn)
            for i in range(len(big))]


#: components up to this many nodes are searched without first projecting them per shape
SMALL = 64


class Component:
    """One strongly connected component, ready for the cycle search: its nodes (sorted) and the
    edges between them, as adjacency lists."""

    def __init__(self, nodes: np.ndarray, src, dst, rels, n_txn: int):
        self.nodes = nodes
        self.n_txn = n_txn
        self.src, self.dst, self.rels = src, dst, rels
        self.edges = list(zip(src.tolist(), dst.tolist(), rels.tolist()))
        adj: dict[int, list] = {}
        for a, b, r in self.edges:
            if a in adj:
                adj[a].append((b, r))
            else:
                adj[a] = [(b, r)]
        self.adj = adj

    @property
    def txn_count(self) -> int:
        return int((self.nodes < self.n_txn).sum())

    def projected_labels(self, mask: int) -> dict[int, int] | None:
        """Node -> component label in the projection on ``mask`` (only nodes of nontrivial
        components), or None when the projection has no cycle."""
        keep = (self.rels & mask) != 0
        if not keep.any():
            return None
        # the component's nodes are sorted: local ids by binary search
        ls = np.searchsorted(self.nodes, self.src[keep])
        ld = np.searchsorted(self.nodes, self.dst[keep])
        comps = sccs(len(self.nodes), ls, ld)
        if not comps:
            return None
        nodes = self.nodes.tolist()
        return {nodes[i]: c for c, comp in enumerate(comps) for i in comp.tolist()}

    def find(self, shape: Shape, deadline: float) -> list[tuple[int, int]] | None:
        """A cycle of ``shape`` in this component as ``[(node, rel of the step from it), ...]``
        (transaction nodes only, real-time chain hops folded into one step), or None. Raises
        SearchTimeout past ``deadline`` (time.monotonic())."""
        if len(self.nodes) > SMALL:  # prune: a cycle of the shape lies in one projected component
            labels = self.projected_labels(shape.rels)
            if labels is None:
                return None
        else:
            labels = None
        if shape.rw != NONE:
            first = RW
        elif shape.required:
            first = shape.required[0]
        else:
            first = shape.rels
        if labels is None:
            starts = [(a, b) for a, b, r in self.edges if r & first]
        else:
            starts = [(a, b) for a, b, r in self.edges
                      if r & first and labels.get(a) is not None and labels.get(a) == labels.get(b)]
        first_rel = next(r for r in _REL_ORDER if r & first)
        for a, b in starts:
            if time.monotonic() > deadline:
                raise SearchTimeout()
            path = self._bfs(shape, a, b, first_rel, deadline)
            if path is not None:
                return self._fold([(a, first_rel)] + path)
        return None

    def _bfs(self, shape: Shape, u: int, v: int, first_rel: int, deadline: float):
        """Shortest path v -> u such that the cycle u -first_rel-> v -> ... -> u has ``shape``."""
        req = shape.required
        nreq = len(req)
        full = (1 << nreq) - 1

        def step(state, rel):
            # state: (rw count capped at 2, last step was rw, adjacent rw seen, required bits)
            cnt, last_rw, adj, seen = state
            if rel == RW:
                if shape.rw == NONE:
                    return None
                cnt = min(cnt + 1, 2)
                if shape.rw == SINGLE and cnt > 1:
                    return None
                if last_rw:
                    if shape.rw == NONADJACENT:
                        return None
                    adj = True
                last_rw = True
            else:
                last_rw = False
            for i in range(nreq):
                if rel & req[i]:
                    seen |= 1 << i
            return cnt, last_rw, adj, seen

        def accepts(state) -> bool:
            cnt, last_rw, adj, seen = state
            if seen != full:
                return False
            wrap = last_rw and first_rel == RW
            if shape.rw == NONE:
                return cnt == 0
            if shape.rw == SINGLE:
                return cnt == 1
            if shape.rw == NONADJACENT:
                return cnt >= 2 and not wrap
            return cnt >= 2 and (adj or wrap)

        s0 = step((0, False, False, 0), first_rel)
        if s0 is None:
            return None
        start = (v, s0)
        if v == u and accepts(s0):
            return []
        # 0-1 breadth-first: a step into a real-time chain node costs nothing, a step into a
        # transaction one, so the cycle found has as few transactions as any through this edge
        n_txn = self.n_txn
        parent = {start: None}
        dist = {start: 0}
        queue = deque([(0, start)])
        rels_allowed = shape.rels
        adj_of = self.adj
        expanded = 0
        while queue:
            d, key = queue.popleft()
            if d != dist[key]:
                continue  # reached again more cheaply since
            node, state = key
            if node == u and key != start and accepts(state):
                path = []
                k = key
                while parent[k] is not None:
                    pk, r = parent[k]
                    path.append((pk[0], r))
                    k = pk
                return path[::-1]
            expanded += 1
            if not expanded & 1023 and time.monotonic() > deadline:
                raise SearchTimeout()
            for nxt, rmask in adj_of.get(node, ()):
                rmask &= rels_allowed
                if not rmask:
                    continue
                cost = 0 if nxt >= n_txn else 1
                for rel in _REL_ORDER:
                    if not rmask & rel:
                        continue
                    ns = step(state, rel)
                    if ns is None:
                        continue
                    nk = (nxt, ns)
                    nd = d + cost
                    if nd < dist.get(nk, nd + 1):
                        dist[nk] = nd
                        parent[nk] = (key, rel)
                        if cost:
                            queue.append((nd, nk))
                        else:
                            queue.appendleft((nd, nk))
        return None

    def _fold(self, steps: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The cycle between transactions: a transaction's step into the real-time chain is
        already REALTIME and stands for the whole hop to the next transaction, so the chain's
        own nodes are dropped."""
        return [(node, rel) for node, rel in steps if node < self.n_txn]

    def any_cycle(self, deadline: float) -> list[tuple[int, int]] | None:
        """Some cycle (the fallback when the search ran out of time): from the first node, the
        shortest way back to it."""
        for u in self.nodes.tolist():
            if u >= self.n_txn:
                continue
            for v, rmask in self.adj.get(u, ()):
                rel = next(r for r in _REL_ORDER if r & rmask)
                path = self._bfs_any(u, v, deadline)
                if path is not None:
                    return self._fold([(u, rel)] + path)
        return None

    def _bfs_any(self, u: int, v: int, deadline: float):
        parent = {v: None}
        queue = deque([v])
        while queue:
            node = queue.popleft()
            if time.monotonic() > deadline:
                return None
            for nxt, rmask in self.adj.get(node, ()):
                if nxt in parent:
                    continue
                parent[nxt] = (node, next(r for r in _REL_ORDER if r & rmask))
                if nxt == u:
                    path = []
                    k = nxt
                    while parent[k] is not None:
                        pk, r = parent[k]
                        path.append((pk, r))
                        k = pk
                    return path[::-1]
                queue.append(nxt)
        return None


__all__ = ["DATA", "PROCESS", "REALTIME", "REL_NAMES", "RW", "SEARCH_ORDER", "SHAPES", "WR", "WW", "Component",
           "DepGraph", "SearchTimeout", "Shape", "classify", "components", "sccs"]
