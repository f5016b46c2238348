"""Saturation for the weak levels (weak.py): the commit-order edges each level's axiom
forces, the cycles they close with so and wr, and the anomalies named after them, explained
step by step."""

from __future__ import annotations

from collections import deque
from heapq import heappop, heappush

import numpy as np

from .anomaly import Anomaly, Step, esc
from .graph import PROCESS, WR, WW, _nontrivial, classify
from .weak_causal import causal_edges
from .weak_history import (CAUSALITY, FORBIDDEN, FRACTURED, INIT, NO_WRITER, NON_MONOTONIC, NON_REPEATABLE,
                           History)

# kinds of forced edge: the pattern a cycle through it is named after
K_RC, K_RA_SO, K_RA_WR, K_RA_SAME, K_CC = range(5)
KIND_NAME = {K_RC: NON_MONOTONIC, K_RA_SO: FRACTURED, K_RA_WR: FRACTURED, K_RA_SAME: NON_REPEATABLE,
             K_CC: CAUSALITY}
KIND_LEVEL = {K_RC: "RC", K_RA_SO: "RA", K_RA_WR: "RA", K_RA_SAME: "RA", K_CC: "CC"}
# base edges
E_SO, E_WR, E_IMPLICIT = 10, 11, 12


class Saturation:
    """The edges each level forces, the cycles they close, and the anomalies named after them."""

    def __init__(self, hist: History, levels: tuple[str, ...], max_cases: int):
        self.hist = hist
        self.levels = levels
        self.max_cases = max_cases
        self.n = len(hist.txns)
        # forced edges: parallel lists (t2, t1, kind, t3, key, beta key)
        self.f_src: list[int] = []
        self.f_dst: list[int] = []
        self.f_info: list[tuple] = []
        self.init_hits: list[tuple] = []  # forced edges into INIT: (t2, kind, t3, key, beta key)
        self.stats: dict = {}
        self._base_adj: dict | None = None

    def force(self, t2: int, t1: int, kind: int, t3: int, k, bk) -> None:
        if t1 == INIT:
            self.init_hits.append((t2, kind, t3, k, bk))
        else:
            self.f_src.append(t2)
            self.f_dst.append(t1)
            self.f_info.append((kind, t3, k, bk))

    def run(self) -> tuple[dict, dict[str, list[Anomaly]], dict]:
        """(each level: valid or not, the anomalies found, what it took)."""
        hist = self.hist
        found: dict[str, list[Anomaly]] = {k: list(v) for k, v in hist.anomalies.items()}
        base_src, base_dst, base_info = self._base()
        self.base = (base_src, base_dst, base_info)
        order = self._topological(base_src, base_dst)
        cyclic = order is None
        self.stats = {"committed": int(sum(hist.committed)), "reads": sum(len(e) for e in hist.ext),
                      "so_wr_edges": len(base_src)}
        valid: dict = {}
        bad_everywhere = any(k in found for k in NO_WRITER)
        if cyclic:
            for a in self._base_cycles(base_src, base_dst, base_info):
                found.setdefault(a.type, []).append(a)
        done = 0
        for lv in self.levels:
            if lv == "RC":
                self._rc()
            elif lv == "RA":
                self._ra()
            elif order is not None:
                causal_edges(hist, order, lambda t2, t1, t3, k: self.force(t2, t1, K_CC, t3, k, None), self.stats)
            kinds = [k for k, klv in KIND_LEVEL.items() if klv == lv]
            fresh = self._instances(kinds, done)
            done = len(self.f_src)
            for a in fresh:
                found.setdefault(a.type, []).append(a)
            valid[lv] = not (bad_everywhere or cyclic or any(k in FORBIDDEN[lv] for k in found))
        self.stats["forced_edges"] = len(self.f_src) + len(self.init_hits)
        return valid, found, self.stats

    # -- so and wr ------------------------------------------------------------------------------
    def _base(self):
        hist = self.hist
        src, dst, info = [], [], []
        for t in range(self.n):
            if not hist.committed[t]:
                continue
            p = hist.so_pred[t]
            if p >= 0:
                src.append(p)
                dst.append(t)
                info.append((E_SO, None, None, None))
            for pos, k, w, v, implicit in hist.ext[t]:
                if w != INIT:
                    src.append(w)
                    dst.append(t)
                    info.append((E_IMPLICIT if implicit else E_WR, k, v, pos))
        return src, dst, info

    def _topological(self, src, dst) -> list[int] | None:
        """The committed transactions in an order of so and wr, or None if they are cyclic: of
        those ready, the earliest in the history first (Kahn's with a heap), so the order stays
        close to the history's and a clock is held only while its readers are near."""
        hist = self.hist
        n = self.n
        out_adj: list[list[int]] = [[] for _ in range(n)]
        indeg = [0] * n
        for a, b in zip(src, dst):
            out_adj[a].append(b)
            indeg[b] += 1
        ready = [t for t in range(n) if hist.committed[t] and indeg[t] == 0]  # (sorted: a heap)
        order = []
        while ready:
            t = heappop(ready)
            order.append(t)
            for b in out_adj[t]:
                indeg[b] -= 1
                if indeg[b] == 0:
                    heappush(ready, b)
        return order if len(order) == self.stats_committed() else None

    def stats_committed(self) -> int:
        return int(sum(self.hist.committed))

    # -- the forced edges of each level ---------------------------------------------------------
    def _rc(self) -> None:
        """t3 read x from t1 after an earlier read of it observed t2, a writer of x: t2 before t1."""
        hist = self.hist
        wkeys = hist.wkeys
        for t3 in range(self.n):
            ext = hist.ext[t3]
            if len(ext) < 2:
                continue
            seen: dict = {}  # writer -> key of the first read of it
            for _pos, k, t1, _v, _imp in ext:
                for t2, bk in seen.items():
                    if t2 != t1 and k in wkeys[t2]:
                        self.force(t2, t1, K_RC, t3, k, bk)
                if t1 != INIT and t1 not in seen:
                    seen[t1] = k

    def _ra(self) -> None:
        """t2 -> t3 in so or wr, t3 read x from t1, t2 writes x: t2 before t1 (beyond RC's)."""
        hist = self.hist
        wkeys = hist.wkeys
        last_writer: dict = {}  # (process, key) -> the process's last committed writer so far
        txns = hist.txns
        for t3 in range(self.n):
            if not hist.committed[t3]:
                continue
            proc = txns[t3].process
            ext = hist.ext[t3]
            if ext:
                first: dict = {}  # writer -> (position of the first read of it, its key)
                keys_of: dict = {}  # writer -> keys read from it
                for pos, k, t1, _v, _imp in ext:
                    if t1 != INIT:
                        first.setdefault(t1, (pos, k))
                        keys_of.setdefault(t1, set()).add(k)
                for pos, k, t1, _v, _imp in ext:
                    t2 = last_writer.get((proc, k))
                    if t2 is not None and t2 != t1:
                        self.force(t2, t1, K_RA_SO, t3, k, None)
                    for t2, (bpos, bk) in first.items():
                        if t2 == t1 or bpos < pos or k not in wkeys[t2]:
                            continue  # (a writer read before: read committed's edge)
                        kind = K_RA_SAME if k in keys_of[t2] else K_RA_WR
                        self.force(t2, t1, kind, t3, k, k if kind == K_RA_SAME else bk)
            for k in wkeys[t3]:
                last_writer[(proc, k)] = t3

    # -- cycles ---------------------------------------------------------------------------------
    def _instances(self, kinds: list[int], upto: int) -> list[Anomaly]:
        """The forced edges of these kinds that lie on a cycle of so, wr and the edges forced so
        far, each an anomaly of its kind's name (the first few explained)."""
        out: list[Anomaly] = []
        base_src, base_dst, _ = self.base
        m = len(self.f_src)
        kindset = set(kinds)
        counts: dict[str, int] = {}  # cases of each name so far
        for t2, kind, t3, k, bk in self.init_hits:  # INIT comes first in every commit order
            if kind in kindset:
                shown = counts.get(KIND_NAME[kind], 0)
                counts[KIND_NAME[kind]] = shown + 1
                out.append(self._init_case(t2, kind, t3, k, bk, shown))
        if not any(self.f_info[i][0] in kindset for i in range(upto, m)):
            return out
        src = np.array(base_src + self.f_src, dtype=np.int64)
        dst = np.array(base_dst + self.f_dst, dtype=np.int64)
        labels, big, _order, _bounds = _nontrivial(self.n, src, dst)
        if not len(big):
            return out
        nontrivial = np.zeros(labels.max() + 1, dtype=bool)
        nontrivial[big] = True
        fs = src[len(base_src):]
        fd = dst[len(base_src):]
        inside = np.flatnonzero((labels[fs] == labels[fd]) & nontrivial[labels[fs]])
        adj = None
        for i in inside.tolist():
            kind = self.f_info[i][0]
            if kind not in kindset:
                continue
            name = KIND_NAME[kind]
            shown = counts.get(name, 0)
            counts[name] = shown + 1
            t2, t1 = self.f_src[i], self.f_dst[i]
            if shown >= self.max_cases:
                out.append(Anomaly(name, [t2, t1]))
                continue
            if adj is None:
                adj = self._adjacency(src, dst, labels, nontrivial)
            path = _bfs(adj, t1, t2)
            steps = [self._forced_step(i)] + [self._edge_step(e) for e in path]
            out.append(self._cycle(name, steps))
        return out

    def _adjacency(self, src, dst, labels, nontrivial) -> dict[int, list[tuple[int, int]]]:
        inner = np.flatnonzero((labels[src] == labels[dst]) & nontrivial[labels[src]])
        adj: dict[int, list[tuple[int, int]]] = {}
        for e in inner.tolist():
            adj.setdefault(int(src[e]), []).append((int(dst[e]), e))
        return adj

    def _base_cycles(self, src, dst, info) -> list[Anomaly]:
        """One cycle of so and wr per strongly connected component: one of wr alone where there
        is one (G0, G1c), else one through process order (G0-process, G1c-process)."""
        s = np.array(src, dtype=np.int64)
        d = np.array(dst, dtype=np.int64)
        out: list[Anomaly] = []
        covered: set[int] = set()  # transactions on a cycle already reported
        for only_wr in (True, False):
            keep = np.array([x[0] != E_SO or not only_wr for x in info], dtype=bool)
            labels, big, _o, _b = _nontrivial(self.n, s[keep], d[keep])
            if not len(big):
                continue
            nontrivial = np.zeros(labels.max() + 1, dtype=bool)
            nontrivial[big] = True
            done = {int(labels[t]) for t in covered}
            adj: dict = {}
            first: dict = {}
            for e in np.flatnonzero(keep).tolist():
                a, b = int(s[e]), int(d[e])
                lab = int(labels[a])
                if lab == labels[b] and nontrivial[lab] and lab not in done:
                    adj.setdefault(a, []).append((b, e))
                    first.setdefault(lab, e)
            for _lab, e in sorted(first.items()):
                path = [e] + _bfs(adj, int(d[e]), int(s[e]))
                steps = [self._edge_step(x) for x in path]
                rels = [{"process": PROCESS, "wr": WR}.get(st.rel, WW) for st in steps]
                a = self._cycle(classify(rels), steps)
                covered.update(a.txns)
                out.append(a)
        return out

    def _cycle(self, name: str, steps: list[Step]) -> Anomaly:
        nodes = [st.a for st in steps]
        via = [st.via for st in steps if st.via is not None and st.via not in nodes]
        return Anomaly(name, nodes + list(dict.fromkeys(via)), steps=steps)

    # -- explanations -----------------------------------------------------------------------------
    def _edge_step(self, e: int) -> Step:
        base_src, base_dst, base_info = self.base
        nb = len(base_src)
        if e >= nb:
            return self._forced_step(e - nb)
        a, b = base_src[e], base_dst[e]
        rel, k, v, _pos = base_info[e]
        if rel == E_SO:
            return Step(a, b, "process", text=f"process {self.hist.txns[a].process} ran {{a}} before {{b}}, and "
                                              "every level keeps a process's order")
        if rel == E_IMPLICIT:
            mine = self.hist.txns[b].mops[_pos][2]
            return Step(a, b, "ww", k, v, mine, text=f"{{b}} appended {esc(mine)} to key {esc(k)} right after "
                                                     f"{{a}}'s {esc(v)}: its append read {{a}}'s version")
        if self.hist.lists:
            return Step(a, b, "wr", k, v, text=f"{{b}} read key {esc(k)} ending with {esc(v)}, which {{a}} appended")
        return Step(a, b, "wr", k, v, text=f"{{b}} read key {esc(k)} = {esc(v)}, which {{a}} wrote")

    def _forced_step(self, i: int) -> Step:
        t2, t1 = self.f_src[i], self.f_dst[i]
        kind, t3, k, bk = self.f_info[i]
        return Step(t2, t1, "ww", k, text=self._why(kind, t2, t3, k, bk, "{a}", "{b}", "{c}"), via=t3)

    def _why(self, kind: int, t2: int, t3: int, k, bk, writer: str, source: str, reader: str) -> str:
        """Why ``writer``'s (t2's) write of k must come before the one ``reader`` (t3) read, from
        ``source``: each a T-name placeholder or words."""
        key = esc(k)
        tail = {K_RC: "read committed", K_RA_SO: "read atomic", K_RA_WR: "read atomic",
                K_RA_SAME: "read atomic", K_CC: "causal consistency"}[kind]
        if kind == K_RC:
            why = (f"{reader} read key {key} from {source} after an earlier read of it (of key {esc(bk)}) observed "
                   f"{writer}, which wrote key {key} too")
        elif kind == K_RA_SO:
            why = (f"{writer} wrote key {key} and ran before {reader} in process {self.hist.txns[t3].process}, "
                   f"and {reader} read key {key} from {source}")
        elif kind == K_RA_WR:
            why = (f"{reader} read key {key} from {source} and also read {writer}'s write of key {esc(bk)}; "
                   f"{writer} wrote key {key} too")
        elif kind == K_RA_SAME:
            why = f"{reader} read key {key} from {source} and, later, from {writer}"
        else:
            why = (f"{writer} wrote key {key} and is in {reader}'s causal past ({self._causal_path(t2, t3)}), "
                   f"and {reader} read key {key} from {source}")
        return f"{why}: {tail} puts {writer}'s write of key {key} before the version {reader} read"

    def _causal_path(self, t2: int, t3: int) -> str:
        """How t2 reaches t3 through so and wr, in words: the transactions between them."""
        if self._base_adj is None:
            self._base_adj = {}
            for e, (a, b) in enumerate(zip(self.base[0], self.base[1])):
                self._base_adj.setdefault(a, []).append((b, e))
        path = _bfs(self._base_adj, t2, t3)
        hops = [f"op {self.hist.txns[self.base[1][e]].index}" for e in path[:-1]]
        return "via " + ", ".join(hops) if hops else "directly"

    def _init_case(self, t2: int, kind: int, t3: int, k, bk, shown: int) -> Anomaly:
        """t3 read k's initial value though t2, which it observed, wrote k: the cycle t2 -> t3
        (how t3 observed t2) -> t2 (t3's read came before t2's write)."""
        name = KIND_NAME[kind]
        if shown >= self.max_cases:
            return Anomaly(name, [t2, t3])
        self._causal_path(t2, t3)  # (builds the adjacency)
        path = _bfs(self._base_adj, t2, t3)
        back = Step(t3, t2, "rw", k, None, self.hist.wkeys[t2].get(k),
                    text=self._why(kind, t2, t3, k, bk, "{b}", "the initial state", "{a}")
                    + ", and the initial state comes before every write")
        steps = [self._edge_step(e) for e in path] + [back]
        return self._cycle(name, steps)


def _bfs(adj: dict[int, list[tuple[int, int]]], start: int, goal: int) -> list[int]:
    """The edges of a shortest path from ``start`` to ``goal`` ([] when they are the same)."""
    if start == goal:
        return []
    prev: dict[int, tuple[int, int]] = {start: (-1, -1)}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for v, e in adj.get(u, ()):
            if v in prev:
                continue
            prev[v] = (u, e)
            if v == goal:
                path = []
                while v != start:
                    u2, e2 = prev[v]
                    path.append(e2)
                    v = u2
                return path[::-1]
            queue.append(v)
    return []


__all__ = ["KIND_LEVEL", "KIND_NAME", "Saturation"]
