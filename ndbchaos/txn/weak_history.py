"""so and wr of a transactional history for the weak levels (weak.py): the committed
transactions, each process's order, every external read with the one write it returned (or
INIT), and the anomalies that leave a read without such a write."""

from __future__ import annotations

from .anomaly import Anomaly, esc
from .history import FAIL, INFO, OK, TxnHistory

INIT = -1  # the initial transaction: wrote every key's initial value, before every other ran
LEVELS = ("RC", "RA", "CC")

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
#: what each level forbids of what the weak levels' check reports
FORBIDDEN = {"RC": frozenset(NO_WRITER + CYCLES + (NON_MONOTONIC,))}
FORBIDDEN["RA"] = FORBIDDEN["RC"] | {FRACTURED, NON_REPEATABLE}
FORBIDDEN["CC"] = FORBIDDEN["RA"] | {CAUSALITY}


class History:
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


__all__ = ["CAUSALITY", "CYCLES", "FORBIDDEN", "FRACTURED", "History", "INIT", "LEVELS", "NON_MONOTONIC",
           "NON_REPEATABLE", "NOT_LAST", "NOT_OWN", "NO_WRITER"]
