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
strongly connected components pass per level (Tarjan's, ``graph.strong_labels``).
docs/transactions.md has the figures.

Modules: ``weak_history`` reads so, wr and the reads without a writer; ``weak_saturation`` forces
each level's edges and names the cycles they close; ``weak_causal`` computes causal pasts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..history.interchange import without_gc
from .anomaly import Anomaly
from .history import TxnHistory
from .weak_history import (CAUSALITY, FORBIDDEN, FRACTURED, INIT, LEVELS, NO_WRITER, NON_MONOTONIC,
                           NON_REPEATABLE, NOT_LAST, NOT_OWN, History)

#: each level's model name (models.py)
MODEL = {"RC": "read-committed-biswas-enea", "RA": "read-atomic", "CC": "causal-cerone"}
#: the level a requested model (canonical name) is decided at. ``read-committed`` stays Adya's PL-2
#: (Elle-class inference), the model engines promise under that name (Jepsen's and Elle's reading):
#: Biswas & Enea's RC is stronger (session order in the commit order, monotonic reads within a
#: transaction) and a healthy Galera cluster's list appends break it, so it is decided only when
#: asked for by its own name or under read atomic or causal consistency
ASKED = {"read-committed-biswas-enea": "RC", "read-atomic": "RA", "causal-cerone": "CC"}
DEFINITION = {
    "RC": "Biswas & Enea (OOPSLA'19) read committed: a read never returns a version older than one "
          "an earlier read of its transaction observed",
    "RA": "read atomic (Cerone et al.; Biswas & Enea): a transaction observes all or none of the "
          "writes of each transaction it reads from or follows in its process",
    "CC": "causal consistency (Cerone et al.; Biswas & Enea): a transaction observes every write in "
          "its causal past (process order and reads, transitively)",
}


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


#: the level whose check finds each anomaly only the weak levels' check reports (``--anomalies``)
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
    """What the weak levels' check reports that the requested models (canonical names) forbid."""
    asked = [LEVELS.index(ASKED[m]) for m in models if m in ASKED]
    return FORBIDDEN[LEVELS[max(asked)]] if asked else frozenset()


def check(h: TxnHistory, model: str = "rw-register", levels=LEVELS, max_cases: int = 8) -> WeakResult:
    """Decide ``levels`` (a prefix of RC, RA, CC) on ``h``, read as ``model`` (``rw-register``
    or ``list-append``)."""
    t0 = time.monotonic()
    levels = tuple(lv for lv in LEVELS if lv in levels)
    with without_gc():  # hundreds of thousands of small containers, none of them cyclic
        hist = History(h, model)
        if hist.stopped is not None:
            return WeakResult({lv: "unknown" for lv in levels}, {hist.stopped.type: [hist.stopped]},
                              time.monotonic() - t0)
        from .weak_saturation import Saturation  # imported when a level is asked
        valid, found, stats = Saturation(hist, levels, max_cases).run()
    return WeakResult(valid, found, time.monotonic() - t0, stats)


__all__ = ["ASKED", "CAUSALITY", "DEFINITION", "FORBIDDEN", "FOUND_AT", "FRACTURED", "INIT", "LEVELS", "MODEL",
           "NON_MONOTONIC", "NON_REPEATABLE", "NOT_LAST", "NOT_OWN", "NO_WRITER", "WeakResult", "check",
           "forbidden", "levels_asked"]
