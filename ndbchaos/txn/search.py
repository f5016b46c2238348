"""The cycle search in the dependency graph (``graph``): its strongly connected components, each
with its own edges, and the search for a cycle of an anomaly's shape in one.

The search is a 0-1 breadth-first search over (node, shape state) pairs from one of the shape's
required edges back to its tail (``Component.find``). A shape state is how many RW edges the path
holds (capped at 2), whether its last step was RW, whether two RW were adjacent, and which
required relations it holds: a small automaton per shape (``_automaton``), its states numbered,
so that a pair is one integer and a step one look-up.
"""

from __future__ import annotations

import time
from collections import deque
from functools import lru_cache

import numpy as np

from .graph import _REL_ORDER, ADJACENT, NONADJACENT, NONE, RW, SINGLE, SearchTimeout, Shape, _nontrivial, sccs
from .txn_arrays import ranges

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
    lo, hi = e_bounds[0].tolist(), e_bounds[1].tolist()
    # each component's nodes (increasing: the stable sort by label keeps the nodes' order), and
    # each node's place among them, for the edges between places (``Component.signature``)
    size = bounds[1] - bounds[0]
    at = ranges(bounds[0], size)
    nodes = order[at]
    place = np.zeros(n, dtype=np.int32)
    place[nodes] = at - np.repeat(bounds[0], size)
    n_hi = np.cumsum(size)
    n_lo, n_hi = (n_hi - size).tolist(), n_hi.tolist()
    is_txn, ps, pd = nodes < n_txn, place[es], place[ed]
    if rank is None:
        fall, down = None, [0] * len(big)
    else:  # the edges that do not rise in rank, and their relations: a cycle has one at least
        fall = rank[es] >= rank[ed]
        down = np.bitwise_or.reduceat(np.where(fall, er, 0).astype(np.uint8), lo).tolist()
    # each component's relations, and whether an edge of it is a loop (``Component.kinds``)
    kinds = zip(np.bitwise_or.reduceat(er, lo).tolist(), (np.add.reduceat(es == ed, lo) > 0).tolist())
    return [Component(nodes[n_lo[i]:n_hi[i]], es[lo[i]:hi[i]], ed[lo[i]:hi[i]], er[lo[i]:hi[i]], n_txn,
                      None if fall is None else fall[lo[i]:hi[i]], down[i],
                      (is_txn[n_lo[i]:n_hi[i]], ps[lo[i]:hi[i]], pd[lo[i]:hi[i]]), kind)
            for i, kind in zip(range(len(big)), kinds)]


#: components up to this many nodes are searched without first projecting them per shape
SMALL = 64


class Component:
    """One strongly connected component, ready for the cycle search: its nodes (sorted) and the
    edges between them, as adjacency lists."""

    def __init__(self, nodes: np.ndarray, src, dst, rels, n_txn: int, fall: np.ndarray | None = None,
                 down: int = 0, places=None, kinds: tuple[int, bool] | None = None):
        self.nodes = nodes
        self.n_txn = n_txn
        self.src, self.dst, self.rels = src, dst, rels
        #: when the nodes' ranks (``DepGraph.ranks``) are known: which edges do not rise in them,
        #: and those edges' relations or-ed. Every cycle has such an edge (``find``)
        self.fall, self.down = fall, down
        #: (which nodes are transactions, the edges' ends as places in ``nodes``, int32), when
        #: ``components`` found them for every component at once
        self._places = places
        self._kinds = kinds
        self._adj = None

    @property
    def kinds(self) -> tuple[int, bool]:
        """(the relations of its edges, or-ed; whether one of its edges is a loop)."""
        if self._kinds is None:
            self._kinds = (int(np.bitwise_or.reduce(self.rels)) if len(self.rels) else 0,
                           bool((self.src == self.dst).any()))
        return self._kinds

    @property
    def edges(self) -> list[tuple[int, int, int]]:
        self._build()
        return self._edges

    @property
    def adj(self) -> dict[int, list]:
        self._build()
        return self._adj

    def _build(self) -> None:
        if self._adj is not None:
            return
        self._edges = list(zip(self.src.tolist(), self.dst.tolist(), self.rels.tolist()))
        adj: dict[int, list] = {}
        for a, b, r in self._edges:
            if a in adj:
                adj[a].append((b, r))
            else:
                adj[a] = [(b, r)]
        self._adj = adj

    def signature(self) -> bytes:
        """The component up to the names of its nodes: which are transactions, and its edges
        between the nodes' places in ``nodes`` (sorted, as the edges are). Two components with
        the same signature hold the same cycles, renamed (the search visits both alike)."""
        if self._places is None:
            is_txn = self.nodes < self.n_txn
            ls = np.searchsorted(self.nodes, self.src).astype(np.int32)
            ld = np.searchsorted(self.nodes, self.dst).astype(np.int32)
        else:
            is_txn, ls, ld = self._places
        return b"".join((len(self.nodes).to_bytes(4, "little"), is_txn.tobytes(), ls.tobytes(), ld.tobytes(),
                         self.rels.tobytes()))

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
        if self.fall is not None and not self.down & shape.rels:
            return None  # every edge the shape may use rises in rank: no cycle
        rels, loop = self.kinds
        if any(not rels & r for r in shape.required):
            return None  # a cycle of the shape steps along each of its required relations
        if shape.rw in (SINGLE, NONADJACENT) and not rels & shape.rels & ~RW and (shape.rw == NONADJACENT or not loop):
            # one RW step, or two or more none adjacent: a cycle of the shape (of two steps or more:
            # no loop) has a step that is not RW
            return None
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
        edges = self.edges
        if shape.rw == SINGLE and self.fall is not None and not self.down & shape.rels & ~RW:
            # every edge the shape may step along but as its one RW step rises in rank, and a
            # cycle has a step that does not: the RW step, so only an RW edge that does not rise
            # starts one (a search from any other finds nothing)
            edges = [e for e, f in zip(edges, self.fall.tolist()) if f]
        if labels is None:
            starts = [(a, b) for a, b, r in edges if r & first]
        else:
            starts = [(a, b) for a, b, r in edges
                      if r & first and labels.get(a) is not None and labels.get(a) == labels.get(b)]
        first_rel = next(r for r in _REL_ORDER if r & first)
        automaton = _automaton(shape, first_rel)  # (once for every edge it starts from)
        for a, b in starts:
            if time.monotonic() > deadline:
                raise SearchTimeout()
            path = self._bfs(shape, automaton, a, b, deadline)
            if path is not None:
                return self._fold([(a, first_rel)] + path)
        return None

    def _bfs(self, shape: Shape, automaton, u: int, v: int, deadline: float):
        """Shortest path v -> u such that the cycle u -first_rel-> v -> ... -> u has ``shape``
        (``automaton``: ``_automaton(shape, first_rel)``)."""
        moves, accepts, s0 = automaton
        if s0 < 0:
            return None
        if v == u and accepts[s0]:
            return []
        ns_ = len(accepts)
        start = v * ns_ + s0
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
            node, state = divmod(key, ns_)
            if node == u and key != start and accepts[state]:
                path = []
                k = key
                while parent[k] is not None:
                    pk, r = parent[k]
                    path.append((pk // ns_, r))
                    k = pk
                return path[::-1]
            expanded += 1
            if not expanded & 1023 and time.monotonic() > deadline:
                raise SearchTimeout()
            step = moves[state]
            for nxt, rmask in adj_of.get(node, ()):
                rmask &= rels_allowed
                if not rmask:
                    continue
                cost = 0 if nxt >= n_txn else 1
                nd = d + cost
                for rel, ns in step[rmask]:
                    nk = nxt * ns_ + ns
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


@lru_cache(maxsize=None)
def _automaton(shape: Shape, first_rel: int):
    """The states a path of ``shape`` goes through, after a first step of ``first_rel``, numbered:
    (for each state, for each mask of relations, the (relation, next state) pairs it allows, in
    ``_REL_ORDER``; whether each state closes a cycle of the shape; the first state, -1 if that
    first step is not allowed). A state: (RW steps capped at 2, last step RW, two RW adjacent,
    required relations seen, as bits)."""
    req = shape.required
    full = (1 << len(req)) - 1

    def step(state, rel):
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
        for i, r in enumerate(req):
            if rel & r:
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
        assert shape.rw == ADJACENT
        return cnt >= 2 and (adj or wrap)

    first = step((0, False, False, 0), first_rel)
    if first is None:
        return (), (), -1
    ids = {first: 0}
    todo = [first]
    edges = []
    while todo:
        st = todo.pop()
        for rel in _REL_ORDER:
            nxt = step(st, rel)
            if nxt is not None and nxt not in ids:
                ids[nxt] = len(ids)
                todo.append(nxt)
            edges.append((ids[st], rel, None if nxt is None else ids[nxt]))
    moves = [[() for _ in range(32)] for _ in ids]
    by = {(a, rel): b for a, rel, b in edges}
    for st, i in ids.items():
        for mask in range(32):
            moves[i][mask] = tuple((rel, by[i, rel]) for rel in _REL_ORDER
                                   if mask & rel and by.get((i, rel)) is not None)
    return moves, [accepts(st) for st in sorted(ids, key=ids.get)], 0


__all__ = ["SMALL", "Component", "components"]
