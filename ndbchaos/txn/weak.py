"""Read committed, read atomic and causal consistency decided exactly, by their axiomatic
definitions (Biswas & Enea, "On the complexity of checking transactional consistency",
OOPSLA 2019; the anomaly patterns of Plume, Liu et al., OOPSLA 2024).

Elle-class inference needs a version order per key to see a read that missed a write; on the
weak levels the commit order is only constrained, not observed, so it judges fractured and
non-monotonic reads valid. This module decides them completely on histories whose written
values are unique per key (every workload of ours writes unique values):

    h = (T, so, wr)    so: each process's committed transactions in order; wr: for every
                       external read (a key's read before the transaction writes it) the one
                       transaction whose final write of the key it returned, or the initial
                       transaction INIT, which wrote every key before any other ran.

A history satisfies level L when some total commit order co contains so and wr and, for every
read of key x by t3 from t1 and every other transaction t2 that writes x:

    RC   t2 was read by an earlier read of t3 (wr;po)     =>  t2 before t1 in co
    RA   t2 -> t3 in so or wr                             =>  t2 before t1
    CC   t2 -> t3 in (so | wr)+ (t2 is in t3's causal past) =>  t2 before t1

Each premise depends on so and wr only, never on co, so the edges the axioms force are known
up front (saturation in one pass), and the level holds exactly when so, wr and those edges
have no cycle; any topological order is then a witness commit order. Before that, every read
must have such a writer: a value nobody wrote (garbage-read, Plume's thin-air read), an aborted
transaction's (G1a), another transaction's non-final write (G1b, intermediate read), the reader's
own later write (future-read), or, after the reader wrote the key itself, anything but its own
last write (not-my-own-write, not-my-last-write) makes a history invalid at every level.

List-append: every append is a unique write; a read of a list reads from the writer of its last
element (INIT for the empty list). The lists reveal each key's versions: an append of v was
applied to the version ending at the element before v (our appends are read-modify-writes of
one row: ``INSERT ... ON DUPLICATE KEY UPDATE v = CONCAT(v, ...)``), so each append is also an
implicit read of that version, at the append's place in its transaction, which makes the
version order part of wr (and so of co and of causality). Two reads neither a prefix of the
other (incompatible-order) or a list holding an element twice (duplicate-elements) mean no
version order at all: invalid at every level.

Transactions: ok ones committed; failed ones never ran; an info transaction committed when a
committed read returned one of its writes (then only its writes are known), and is otherwise
left out (including it could only add constraints).

Anomalies, with the transactions involved and, for a cycle, each step's reason:

    G0, G1c, G0-process, G1c-process  a cycle of so and wr (INIT is never on one)
    non-monotonic-read    RC: t3 read x from t1 after observing t2, which overwrote t1's x
    fractured-read        RA: t3 observed t2 (t2 ran before t3 in its process, or t3 read
                          another key from t2 later) but read x from t1, older than t2's x
    non-repeatable-read   RA: t3 read x twice and got two transactions' versions
    causality-violation   CC: t2 is in t3's causal past only through a chain of so and wr
    garbage-read, G1a, G1b, future-read, not-my-own-write, not-my-last-write, dirty-update
                          (an append on top of an aborted one), incompatible-order,
                          duplicate-elements: no writer for some read

Cost: building so, wr and the RC and RA edges is linear in the history (times the reads of a
transaction for RC and RA). CC needs each transaction's causal past: a vector clock over a
decomposition of so | wr into chains (a process's transactions, a new process continuing a
finished one's chain when that one is in its causal past); per read of x from t1, the last
writer of x in each chain where the reader's past reaches further than t1's: O(reads x chains)
at worst, which is O(n^2) when nearly every transaction starts a chain of its own. Then one
strongly connected components pass per level (C, scipy). docs/transactions.md has the figures.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections import deque
from heapq import heappop, heappush
from dataclasses import dataclass, field

import numpy as np

from ..history.interchange import without_gc
from .anomaly import Anomaly, Step, esc
from .graph import PROCESS, WR, WW, _nontrivial, classify
from .history import FAIL, INFO, OK, TxnHistory

INIT = -1  # the initial transaction
LEVELS = ("RC", "RA", "CC")
#: each level's model name (models.py)
MODEL = {"RC": "read-committed-biswas-enea", "RA": "read-atomic", "CC": "causal-cerone"}
#: the level a requested model (canonical name) is decided at: read committed is both Adya's
#: PL-2 (Elle-class inference) and Biswas & Enea's RC (here)
ASKED = {"PL-2": "RC", "read-committed-biswas-enea": "RC", "read-atomic": "RA", "causal-cerone": "CC"}
DEFINITION = {
    "RC": "Biswas & Enea (OOPSLA'19) read committed: a read never returns a version older than one "
          "an earlier read of its transaction observed",
    "RA": "read atomic (Cerone et al.; Biswas & Enea): a transaction observes all or none of the "
          "writes of each transaction it reads from or follows in its process",
    "CC": "causal consistency (Cerone et al.; Biswas & Enea): a transaction observes every write in "
          "its causal past (process order and reads, transitively)",
}

NON_MONOTONIC = "non-monotonic-read"
FRACTURED = "fractured-read"
NON_REPEATABLE = "non-repeatable-read"
CAUSALITY = "causality-violation"
NOT_OWN = "not-my-own-write"
NOT_LAST = "not-my-last-write"

#: anomalies that leave some read without a writer: invalid at every level
NO_WRITER = ("garbage-read", "G1a", "G1b", "future-read", NOT_OWN, NOT_LAST, "dirty-update",
             "incompatible-order", "duplicate-elements")
CYCLES = ("G0", "G1c", "G0-process", "G1c-process")
#: what each level forbids of what this module reports
FORBIDDEN = {"RC": frozenset(NO_WRITER + CYCLES + (NON_MONOTONIC,))}
FORBIDDEN["RA"] = FORBIDDEN["RC"] | {FRACTURED, NON_REPEATABLE}
FORBIDDEN["CC"] = FORBIDDEN["RA"] | {CAUSALITY}

# kinds of forced edge: the pattern a cycle through it is named after
K_RC, K_RA_SO, K_RA_WR, K_RA_SAME, K_CC = range(5)
KIND_NAME = {K_RC: NON_MONOTONIC, K_RA_SO: FRACTURED, K_RA_WR: FRACTURED, K_RA_SAME: NON_REPEATABLE,
             K_CC: CAUSALITY}
KIND_LEVEL = {K_RC: "RC", K_RA_SO: "RA", K_RA_WR: "RA", K_RA_SAME: "RA", K_CC: "CC"}
# base edges
E_SO, E_WR, E_IMPLICIT = 10, 11, 12


@dataclass
class WeakResult:
    """The levels decided (level -> True/False, or "unknown" when the history cannot be read as
    the model), the anomalies found (type -> cases, the first ``max_cases`` explained), and
    what it cost."""

    valid: dict
    anomalies: dict[str, list[Anomaly]]
    seconds: float
    stats: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"levels": {MODEL[lv]: v for lv, v in self.valid.items()},
                "found": {k: len(v) for k, v in self.anomalies.items()},
                "stats": self.stats, "seconds": round(self.seconds, 3)}


#: the level whose check finds each anomaly only this module reports (``--anomalies``)
FOUND_AT = {NON_MONOTONIC: "RC", NOT_OWN: "RC", NOT_LAST: "RC", FRACTURED: "RA", NON_REPEATABLE: "RA",
            CAUSALITY: "CC"}


def levels_asked(models, anomalies=()) -> tuple[str, ...]:
    """The levels to decide for these requested models (canonical names) and anomalies: up to
    the strongest one asked, weaker ones included (a stronger level's check holds the weaker's
    edges)."""
    asked = {ASKED[m] for m in models if m in ASKED} | {FOUND_AT[a] for a in anomalies if a in FOUND_AT}
    if not asked:
        return ()
    top = max(LEVELS.index(lv) for lv in asked)
    return LEVELS[:top + 1]


def forbidden(models) -> frozenset[str]:
    """What this module reports that the requested models (canonical names) forbid."""
    asked = [LEVELS.index(ASKED[m]) for m in models if m in ASKED]
    return FORBIDDEN[LEVELS[max(asked)]] if asked else frozenset()


def check(h: TxnHistory, model: str = "rw-register", levels=LEVELS, max_cases: int = 8) -> WeakResult:
    """Decide ``levels`` (a prefix of RC, RA, CC) on ``h``, read as ``model`` (``rw-register``
    or ``list-append``)."""
    t0 = time.monotonic()
    levels = tuple(lv for lv in LEVELS if lv in levels)
    with without_gc():  # hundreds of thousands of small containers, none of them cyclic
        hist = _History(h, model)
        if hist.stopped is not None:
            return WeakResult({lv: "unknown" for lv in levels}, {hist.stopped.type: [hist.stopped]},
                              time.monotonic() - t0)
        return _Saturation(hist, levels, max_cases).run(t0)


# -- the history as so and wr -----------------------------------------------------------------

class _History:
    """so and wr of a history, and the anomalies that leave a read without a writer."""

    def __init__(self, h: TxnHistory, model: str):
        self.h = h
        self.txns = h.txns
        self.model = model
        self.lists = model == "list-append"
        self.stopped: Anomaly | None = None
        self.anomalies: dict[str, list[Anomaly]] = {}
        n = len(self.txns)
        #: per transaction: {key: its final write} (committed ones, after ``_commit``)
        self.wkeys: list[dict] = [{} for _ in range(n)]
        #: per transaction: its external reads in order, (pos, key, writer or INIT, value, implicit)
        self.ext: list[list] = [[] for _ in range(n)]
        self.committed = bytearray(n)
        self.so_pred = [-1] * n
        self.last_of_session: list[int] = []
        self._index()
        if self.stopped is None:
            self._reads()
            self._commit()

    def add(self, kind: str, a: Anomaly) -> None:
        self.anomalies.setdefault(kind, []).append(a)

    def _index(self) -> None:
        """Every write's writer (k -> {v: (txn, position)}); duplicates and foreign micro-ops stop."""
        wop = "append" if self.lists else "w"
        writer: dict = {}
        last: dict = {}  # (txn, key) -> its last write of the key
        for t in self.txns:
            for pos, (f, k, v) in enumerate(t.mops):
                if f == wop:
                    if v is None and not self.lists and t.type != FAIL:
                        self.stopped = Anomaly("duplicate-writes", [t.id], key=k, values=[v],
                                               why=f"{{a}} wrote nil to key {esc(k)}, the initial value: a read "
                                                   "of nil could be of either")
                        return
                    last[(t.id, k)] = v
                    wk = writer.get(k)
                    if wk is None:
                        wk = writer[k] = {}
                    prev = wk.get(v)
                    if prev is None:
                        wk[v] = (t.id, pos)
                    elif prev[0] != t.id:
                        what = "appended" if self.lists else "wrote"
                        kind = "duplicate-appends" if self.lists else "duplicate-writes"
                        self.stopped = Anomaly(kind, [prev[0], t.id], key=k, values=[v],
                                               why=f"{{a}} and {{b}} both {what} {esc(v)} to key {esc(k)}: values "
                                                   "must be unique per key")
                        return
                elif f != "r":
                    self.stopped = Anomaly("unexpected-txn-micro-op-types", [t.id],
                                           why=f"{{a}} holds a micro-op {esc(f)}: not a {self.model} history")
                    return
        self.writer = writer
        self.last = last

    # -- reads ----------------------------------------------------------------------------------
    def _reads(self) -> None:
        self.read_writers: set[int] = set()  # writers of a value some committed read returned
        self.first_bad: dict = {}  # list key -> position of its first element no committed append wrote
        self.pred = self._versions() if self.lists else {}
        for t in self.txns:
            if t.type == OK:
                (self._list_txn if self.lists else self._register_txn)(t)
            elif t.type == INFO and self.lists:
                self._list_txn(t)  # its appends' implicit reads (kept if it committed)

    def _writer_of(self, t, pos: int, k, v, implicit: bool = False):
        """The writer a read of ``v`` (not after the reader's own write of ``k``) reads from, or
        None after reporting why there is none."""
        w = self.writer.get(k, {}).get(v)
        if w is not None:
            wid = w[0]
            if wid != t.id and self.txns[wid].type != FAIL and self.last[(wid, k)] == v:
                return wid
        where = "appended" if self.lists else "wrote"
        what = self._what(t, pos, k, v, implicit)
        if w is None:
            self.add("garbage-read", Anomaly("garbage-read", [t.id], key=k, values=[v],
                                             why=f"{what}, a value no transaction {where}"))
        elif w[0] == t.id:
            self.add("future-read", Anomaly("future-read", [t.id], key=k, values=[v],
                                            why=f"{what}, which it {where} itself only later (op {w[1] + 1} "
                                                f"of its {len(t.mops)})"))
        elif self.txns[w[0]].type == FAIL:
            kind = "dirty-update" if implicit else "G1a"
            self.add(kind, Anomaly(kind, [t.id, w[0]], key=k, values=[v],
                                   why=f"{what}, which {{b}} {where} and that transaction failed (aborted)"))
        else:
            self.add("G1b", Anomaly("G1b", [t.id, w[0]], key=k, values=[v],
                                    why=f"{what}, which {{b}} {where} and then overwrote: an intermediate state"))
        return None

    def _what(self, t, pos: int, k, v, implicit: bool) -> str:
        """The read in words: an explicit one, or an append's read of the version it extended."""
        if not implicit:
            return f"{{a}} read key {esc(k)} = {esc(v)}"
        after = "the initial (empty) list" if v is None else esc(v)
        return f"{{a}} appended {esc(t.mops[pos][2])} to key {esc(k)} right after {after}"

    def _own(self, t, pos: int, k, v, mine: list, implicit: bool = False) -> None:
        """A read after the transaction's own write of ``k`` that did not return its last one."""
        w = self.writer.get(k, {}).get(v)
        what = self._what(t, pos, k, v, implicit)
        if w is not None and w[0] == t.id and w[1] > pos:
            self.add("future-read", Anomaly("future-read", [t.id], key=k, values=[v],
                                            why=f"{what}, which it wrote itself only later"))
        elif v in mine:
            self.add(NOT_LAST, Anomaly(NOT_LAST, [t.id], key=k, values=[v, mine[-1]],
                                       why=f"{what} after it had written {esc(mine[-1])} there: an earlier "
                                           "write of its own, not its last"))
        else:
            self.add(NOT_OWN, Anomaly(NOT_OWN, [t.id], key=k, values=[v, mine[-1]],
                                      why=f"{what} after it had written {esc(mine[-1])} there itself: not its "
                                          "own write"))

    def _register_txn(self, t) -> None:
        own: dict = {}
        ext = self.ext[t.id]
        for pos, (f, k, v) in enumerate(t.mops):
            if f == "w":
                own.setdefault(k, []).append(v)
                continue
            mine = own.get(k)
            if mine:
                if v != mine[-1]:
                    self._own(t, pos, k, v, mine)
                continue
            if v is None:
                ext.append((pos, k, INIT, None, False))
                continue
            w = self._writer_of(t, pos, k, v)
            if w is not None:
                self.read_writers.add(w)
                ext.append((pos, k, w, v, False))

    def _versions(self) -> dict:
        """Per key, each element's predecessor in the version order the committed reads reveal
        (INIT for the first); keys whose reads allow no version order are reported and left out."""
        reads: dict = {}
        for t in self.txns:
            if t.type == OK:
                for f, k, v in t.mops:
                    if f == "r" and v:
                        reads.setdefault(k, set()).add(tuple(v))
        pred: dict = {}
        for k, vals in reads.items():
            longest = max(vals, key=len)
            bad = False
            if len(set(longest)) != len(longest):
                self.add("duplicate-elements", Anomaly("duplicate-elements", [], key=k, values=[longest],
                                                       why=f"a read of key {esc(k)} saw {esc(longest)}: an element "
                                                           "twice, though each was appended once"))
                bad = True
            for r in vals:
                if longest[:len(r)] != r:
                    a, b = sorted((r, longest), key=len)
                    self.add("incompatible-order", Anomaly(
                        "incompatible-order", [], key=k, values=[a, b],
                        why=f"reads of key {esc(k)} saw {esc(a)} and {esc(b)}: neither is a prefix of the other, "
                            "so no single order of appends explains both"))
                    bad = True
                    break
            if not bad:
                pred[k] = {v: (longest[i - 1] if i else INIT) for i, v in enumerate(longest)}
                # reads of a key with a version order are prefixes of its longest: whether a
                # read holds an element nobody committed is whether it reaches the first one
                wk = self.writer.get(k, {})
                first_bad = len(longest)
                for i, v in enumerate(longest):
                    w = wk.get(v)
                    if w is None or self.txns[w[0]].type == FAIL:
                        first_bad = i
                        break
                    self.read_writers.add(w[0])
                self.first_bad[k] = first_bad
        return pred

    def _list_txn(self, t) -> None:
        own: dict = {}
        ext = self.ext[t.id]
        committed_reads = t.type == OK
        for pos, (f, k, v) in enumerate(t.mops):
            if f == "append":
                p = self.pred.get(k, {}).get(v, None)
                if p is not None:  # its version is known: an implicit read of the one before
                    mine = own.get(k)
                    if mine:
                        if p != mine[-1]:
                            self._own(t, pos, k, None if p is INIT else p, mine, implicit=True)
                    elif p is INIT:
                        ext.append((pos, k, INIT, None, True))
                    else:
                        w = self._writer_of(t, pos, k, p, implicit=True)
                        if w is not None:
                            ext.append((pos, k, w, p, True))
                own.setdefault(k, []).append(v)
                continue
            if not committed_reads:
                continue
            lst = tuple(v or ())
            if not self._elements_ok(t, pos, k, lst, own.get(k, ())):
                continue
            mine = own.get(k)
            if mine:
                if not lst or lst[-1] != mine[-1]:
                    self._own(t, pos, k, lst[-1] if lst else None, mine)
                continue
            if not lst:
                ext.append((pos, k, INIT, (), False))
                continue
            w = self._writer_of(t, pos, k, lst[-1])
            if w is not None:
                ext.append((pos, k, w, lst[-1], False))

    def _elements_ok(self, t, pos: int, k, lst: tuple, mine) -> bool:
        """Whether every element of a committed read of ``k`` is a committed append, none of
        them the reader's own to come (else reported)."""
        first_bad = self.first_bad.get(k)
        if first_bad is not None and len(lst) <= first_bad:  # a prefix of the version order
            if not lst:
                return True
            if self.writer[k][lst[-1]][0] != t.id and not any(
                    f == "append" and k2 == k and v in self.pred[k] and v not in mine and v in lst
                    for f, k2, v in t.mops[pos + 1:]):
                return True
        wk = self.writer.get(k, {})
        for e in lst:
            w = wk.get(e)
            if w is None or w[0] == t.id and e not in mine or self.txns[w[0]].type == FAIL:
                self._writer_of(t, pos, k, e)  # reports it
                return False
            self.read_writers.add(w[0])
        return len(set(lst)) == len(lst)

    def _commit(self) -> None:
        """The committed transactions, their writes, and each process's order."""
        wop = "append" if self.lists else "w"
        last: dict = {}  # process -> its last committed transaction so far
        for t in self.txns:
            if t.type == OK or (t.type == INFO and t.id in self.read_writers):
                self.committed[t.id] = 1
                wk = self.wkeys[t.id]
                for f, k, v in t.mops:
                    if f == wop:
                        wk[k] = v
                self.so_pred[t.id] = last.get(t.process, -1)
                last[t.process] = t.id
            else:
                self.ext[t.id] = []
        self.last_of_session = sorted(last.values())


# -- saturation ----------------------------------------------------------------------------------

class _Saturation:
    """The edges each level forces, the cycles they close, and the anomalies named after them."""

    def __init__(self, hist: _History, levels: tuple[str, ...], max_cases: int):
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

    def run(self, t0: float) -> WeakResult:
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
                self._cc(order)
            kinds = [k for k, klv in KIND_LEVEL.items() if klv == lv]
            fresh = self._instances(kinds, done)
            done = len(self.f_src)
            for a in fresh:
                found.setdefault(a.type, []).append(a)
            valid[lv] = not (bad_everywhere or cyclic or any(k in FORBIDDEN[lv] for k in found))
        self.stats["forced_edges"] = len(self.f_src) + len(self.init_hits)
        return WeakResult(valid, found, time.monotonic() - t0, self.stats)

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

    def _cc(self, order: list[int]) -> None:
        """t2 in t3's causal past, t3 read x from t1, t2 writes x: t2 before t1 (beyond RA's).

        Causal pasts as vector clocks over chains of so | wr: each process's transactions, a
        process that begins after another finished continuing that one's chain when the
        finished one's last transaction is in its causal past. A clock's entry for a chain is
        how many of its transactions are in the past. Per chain of t3's past only its last
        writer of x needs an edge: the earlier ones precede that one in so | wr. Transactions
        are visited in an order of so | wr; a clock is dropped once every transaction that
        reads from or follows its owner has been visited."""
        hist = self.hist
        wkeys = hist.wkeys
        txns = hist.txns
        n = self.n
        ends = set(hist.last_of_session)
        chain_of = [-1] * n
        index_in = [0] * n
        chain_len: list[int] = []
        free: list[int] = []  # chains whose process has finished
        rows: list = [None] * n  # clocks still needed (int32 arrays, as long as the chains then)
        waiting = [0] * n  # successors in so | wr not visited yet
        preds: list = [()] * n
        for t in order:
            ps = {w for _pos, _k, w, _v, _imp in hist.ext[t] if w != INIT}
            p = hist.so_pred[t]
            if p >= 0:
                ps.add(p)
            preds[t] = ps
            for w in ps:
                waiting[w] += 1
        writers: dict = {}  # (chain, key) -> (positions in the chain of its writers of key, who)
        chains_of_key: dict = {}
        force = self.force
        live = peak = 0
        for t3 in order:
            p = hist.so_pred[t3]
            row = np.zeros(len(chain_len) + 1, dtype=np.int32)
            for w in preds[t3]:
                other = rows[w]
                np.maximum(row[:len(other)], other, out=row[:len(other)])
            if p >= 0:
                c = chain_of[p]
            else:
                c = -1
                for i in range(len(free) - 1, -1, -1):
                    if row[free[i]] == chain_len[free[i]]:  # its last transaction is in t3's past
                        c = free.pop(i)
                        break
                if c < 0:
                    c = len(chain_len)
                    chain_len.append(0)
            own = index_in[t3] = chain_len[c]
            chain_of[t3] = c
            chain_len[c] += 1
            # the reads of t3: per chain, the last writer of the key in t3's strict past
            ext = hist.ext[t3]
            if ext:
                bounds = row.tolist()
                bounds[c] = own
                past = None  # the chains of t3's past (for reads of initial values)
                direct = {w for _p, _k, w, _v, _i in ext}
                proc = txns[t3].process
                for _pos, k, t1, _v, _imp in ext:
                    chains = chains_of_key.get(k, ())
                    if t1 == INIT:
                        r1 = None
                        if past is None:
                            past = np.flatnonzero(row).tolist()
                        cands = chains if len(chains) <= len(past) else past
                    else:  # only chains of which t3's past holds more than t1's can add an edge
                        r1 = rows[t1]
                        cands = np.flatnonzero(row[:len(r1)] > r1).tolist()
                        if len(row) > len(r1):
                            cands += (np.flatnonzero(row[len(r1):]) + len(r1)).tolist()
                    for ch in cands:
                        bound = bounds[ch] if ch < len(bounds) else 0
                        wl = writers.get((ch, k))
                        if not bound or wl is None:
                            continue
                        idx, who = wl
                        j = bisect_right(idx, bound - 1)
                        if not j:
                            continue
                        t2 = who[j - 1]
                        if t2 == t1 or t2 in direct or txns[t2].process == proc:
                            continue  # read committed's and read atomic's edges cover these
                        if r1 is not None and ch < len(r1) and r1[ch] > idx[j - 1]:
                            continue  # t2 is in t1's causal past already: so and wr order them
                        force(t2, t1, K_CC, t3, k, None)
            row[c] = own + 1
            for k in wkeys[t3]:
                wl = writers.get((c, k))
                if wl is None:
                    wl = writers[(c, k)] = ([], [])
                    chains_of_key.setdefault(k, []).append(c)
                wl[0].append(own)
                wl[1].append(t3)
            if t3 in ends:
                free.append(c)
            for w in preds[t3]:
                waiting[w] -= 1
                if not waiting[w]:
                    rows[w] = None
                    live -= 1
            if waiting[t3]:
                rows[t3] = row
                live += 1
                peak = max(peak, live)
        self.stats["chains"] = len(chain_len)
        self.stats["clocks_held_at_once"] = peak

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


__all__ = ["ASKED", "DEFINITION", "FORBIDDEN", "FOUND_AT", "LEVELS", "MODEL", "WeakResult", "check", "forbidden",
           "levels_asked"]
