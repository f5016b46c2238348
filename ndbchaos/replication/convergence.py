"""After a heal: is every row acknowledged on the source on the replica, exactly once, in its
final value, and how long did that take? A pure check over typed inputs (no Docker).

Inputs:

* ``Expected``: what the source's clients were told: ``acked`` (key -> final value of every
  write acknowledged ok), ``maybe`` (keys whose last write's outcome is unknown, ``info``: they
  may or may not exist, on either side; never counted as lost or extra); from a ledger history
  with ``expected_from_ledger``;
* the source's rows at the end (its final read: key -> value), the reference the replica must
  equal;
* the replica's rows as read one or more times (``Snapshot``: the run-clock time and the rows as
  a list of (key, value), duplicates kept), and ``caught_up_at``: when the replica reported the
  source's last epoch applied (``ndb_apply_status``). The first snapshot taken at or after it is
  the one judged: a row missing there but present in a later one is *late* (the replica said the
  epoch was applied before its rows were visible).

Findings: ``lost`` (acknowledged, not on the replica), ``duplicated`` (a key read more than once
in one snapshot), ``wrong`` (on both, another value than the source's final one), ``extra`` (on
the replica, neither on the source nor a maybe), ``late`` (above), ``source_lost`` (acknowledged
but not on the source either: the source's own durability failure, counted apart so the two are
not confused). ``seconds`` is from ``since`` (the end of the load, or the heal) to ``caught_up_at``.

For the ledger (insert-only, one row per id; its value is the id's slot, ``id // 10**9``) a key's
final value is the one it was inserted with.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable



@dataclass(frozen=True)
class Expected:
    acked: dict[int, object]
    maybe: frozenset[int] = frozenset()
    #: acknowledged keys the source itself may lose: acknowledged within the engine's crash loss
    #: window before a whole-source crash (NDB: a commit is durable at its global checkpoint,
    #: ``engines/ndb/rules.crash_loss_window_s``). One the source lost must be absent from the
    #: replica too (there it is ``extra``); one the source kept is judged as any other.
    crash_may_lose: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Snapshot:
    t: float
    rows: tuple[tuple[int, object], ...]


@dataclass(frozen=True)
class Convergence:
    converged: bool
    seconds: float | None  # from ``since`` to the catch-up (the fence); None: it never caught up
    rows: int  # rows on the replica in the judged snapshot
    lost: tuple[int, ...] = ()
    duplicated: tuple[int, ...] = ()
    wrong: tuple[int, ...] = ()
    extra: tuple[int, ...] = ()
    late: tuple[int, ...] = ()
    source_lost: tuple[int, ...] = ()
    why: tuple[str, ...] = field(default=())
    #: acknowledged keys the source lost within its crash window (gone from the replica too)
    crash_lost: int = 0

    def summary(self) -> str:
        if self.converged:
            crash = (f"; {self.crash_lost} acknowledged inserts lost by the source's crash, within its window, "
                     f"on neither side" if self.crash_lost else "")
            return (f"converged: {self.rows} rows on the replica, fenced {self.seconds:.2f} s after the load "
                    f"stopped{crash}")
        return "NOT converged: " + "; ".join(self.why)


def _few(keys) -> str:
    ks = sorted(keys)
    return ", ".join(str(k) for k in ks[:5]) + (f" ... ({len(ks)})" if len(ks) > 5 else "")


def judge(expected: Expected, source_rows: dict[int, object], snapshots: Iterable[Snapshot],
          caught_up_at: float | None, since: float) -> Convergence:
    snaps = sorted(snapshots, key=lambda s: s.t)
    never = ["the replica never applied the source's last epoch"] if caught_up_at is None else []
    if caught_up_at is None:  # what the replica has is still judged: its last read, nothing later to be late in
        if not snaps:
            return Convergence(False, None, 0, why=tuple(never))
        snaps = snaps[-1:]
    judged = snaps[0] if caught_up_at is None else next((s for s in snaps if s.t >= caught_up_at), None)
    if judged is None:
        return Convergence(False, caught_up_at - since, 0,
                           why=("no replica read at or after the catch-up: nothing to judge",))
    counts = Counter(k for k, _ in judged.rows)
    values = dict(judged.rows)
    later_keys = {k for s in snaps if s.t > judged.t for k, _ in s.rows}
    maybe = expected.maybe
    # an acknowledged key the source lost within its crash window is gone from both, as it should be
    crash_lost = {k for k in expected.crash_may_lose if k not in source_rows}
    missing = [k for k in expected.acked if k not in counts and k not in crash_lost]
    late = tuple(sorted(k for k in missing if k in later_keys))
    lost = tuple(sorted(k for k in missing if k not in later_keys))
    source_lost = tuple(sorted(k for k in expected.acked if k not in source_rows and k not in crash_lost))
    duplicated = tuple(sorted(k for k, n in counts.items() if n > 1))
    wrong = tuple(sorted(k for k, v in values.items() if k in source_rows and source_rows[k] != v))
    extra = tuple(sorted(k for k in counts if k not in source_rows and k not in maybe))
    # on the source, maybe or not, every row there must reach the replica too
    unreplicated = tuple(sorted(k for k in source_rows if k not in counts and k not in expected.acked
                                and k not in later_keys))
    why = never
    for name, keys in (("lost", lost), ("late", late), ("duplicated", duplicated), ("wrong value", wrong),
                       ("extra", extra), ("on the source only (outcome unknown to the client)", unreplicated),
                       ("lost on the source itself", source_lost)):
        if keys:
            why.append(f"{len(keys)} {name}: {_few(keys)}")
    seconds = None if caught_up_at is None else caught_up_at - since
    return Convergence(not why, seconds, len(judged.rows), lost + unreplicated, duplicated, wrong,
                       extra, late, source_lost, tuple(why), len(crash_lost))


def expected_from_ledger(ops, crashes: Iterable[float] = (), window_s: float = 0.0) -> Expected:
    """A ledger history's inserts: ok ones are acknowledged (value: the id's slot), info ones are
    maybes; failed ones did not happen (a maybe still, if an earlier attempt of the same id was
    info). ``ops``: the history's ``Op``s (``History`` iterates them). ``crashes``: run-clock times
    the whole source crashed; an insert acknowledged within ``window_s`` before one of them (its
    completion in ``[t - window_s, t]``) is one the source may lose (``Expected.crash_may_lose``)."""
    if window_s < 0:
        raise ValueError(f"window_s must not be negative, not {window_s}")
    crashes = tuple(crashes)
    acked: dict[int, object] = {}
    maybe: set[int] = set()
    may_lose: set[int] = set()
    for op in ops:
        if op.f != "insert":
            continue
        if op.type == "ok":
            acked[int(op.value)] = ledger_value(int(op.value))
            # times are kept to the microsecond (the history's resolution, as the durability check)
            if any(t - window_s - 1e-6 <= op.end <= t + 1e-6 for t in crashes):
                may_lose.add(int(op.value))
        elif op.type == "info":
            maybe.add(int(op.value))
    return Expected(acked, frozenset(maybe - set(acked)), frozenset(may_lose))


def ledger_value(key: int) -> int:
    """The ledger's row value: the slot its id encodes (``workload/ledger.py``)."""
    return key // 1_000_000_000


def ledger_rows(rows: list[list[str]]) -> tuple[tuple[int, int], ...]:
    """``SELECT id, slot`` rows (strings) as (key, value) pairs."""
    return tuple((int(r[0]), int(r[1])) for r in rows)
