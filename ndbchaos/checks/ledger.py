"""Durability of the ledger workload: no acknowledged insert may disappear.

Ops: ``insert`` with the id as value; ``read`` with the list of ids present. The final read is
the last ok read (by completion time).

- lost: ids with an ok insert that completed before the final read started, absent from it.
- unconfirmed: ids whose ok insert completed after the final read started and are absent
  (concurrent with the read: not judged).
- phantom: ids in any ok read that no insert ever attempted.
- indeterminate: ids whose inserts were all ``info``; never counted lost. How many of them the
  final read shows (they landed) and how many it does not is reported.
- failed_present: ids whose inserts all failed definitely (``fail``) but that an ok read shows: a
  "definite" failure that took effect, i.e. an error misclassified or a real anomaly.
- Engine promise (NDB): with options ``gcp_loss_window_s`` and ``cluster_crash_at`` (a time or a
  list of times), a lost id acknowledged within the window before a crash is
  ``explained_by_gcp`` and does not make the verdict invalid; every other lost id is
  ``unexplained``.

Valid: False if unexplained lost, phantom or failed_present > 0; "unknown" with no ok read;
else True. Every count comes with a bounded ``*_examples`` list.
"""

from __future__ import annotations

import math

import numpy as np

from ..history import NO_INT, HistoryFormatError, _Ints
from ..history.columns import _IntsRef
from .frame import FAIL, INFO, OK, Frame, int_values
from .verdict import UNKNOWN, Verdict

#: history times are written rounded to 1 us (docs/history-format.md)
_TIME_RESOLUTION = 1e-6

LIFT = ("lost", "phantom", "indeterminate", "unexplained", "explained_by_gcp", "failed_present")


def _examples(n: int) -> int:
    return max(0, int(n))


def _gcp(opts: dict):
    x, t = opts.get("gcp_loss_window_s"), opts.get("cluster_crash_at")
    if x is None and t is None:
        return None
    if x is None or t is None:
        raise ValueError("gcp_loss_window_s and cluster_crash_at go together")
    ts = t if isinstance(t, (list, tuple)) else [t]
    for v in [x, *ts]:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ValueError("gcp_loss_window_s and cluster_crash_at must be numbers (seconds)")
    if x < 0:
        raise ValueError("gcp_loss_window_s must not be negative")
    return float(x), [float(v) for v in ts]


def _read_ids(fr: Frame, k: int) -> np.ndarray:
    """Ids of the read at frame position k as an int64 array."""
    c = fr.history.cols
    row = int(fr.rows[k])
    v = c.ival[row]
    val = c.objs.get(row) if v == NO_INT else v
    if type(val) is _IntsRef:  # left in its columnar file: read it now, drop it after use
        return val.numpy()
    if type(val) is _Ints:
        return np.frombuffer(val, dtype=np.int64).copy()
    if isinstance(val, list):
        if not val:
            return np.empty(0, dtype=np.int64)
        try:
            return np.array(val, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            raise HistoryFormatError(f"ledger read (op {k}) holds a non-integer id") from None
    raise HistoryFormatError(f"ledger ok read (op {k}) must have the list of ids as value, not {type(val).__name__}")


def _uniq(a: np.ndarray, own: bool = False) -> np.ndarray:
    """Sorted unique values (sort based: faster than np.unique's hash path for int64 ids).
    ``own``: a is a temporary of the caller's, sorted in place (no copy)."""
    if len(a) == 0:
        return a.copy()
    if own:
        a.sort()
    else:
        a = np.sort(a)
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a if keep.all() else a[keep]


def _isin_sorted(x: np.ndarray, sorted_ref: np.ndarray) -> np.ndarray:
    out = np.zeros(len(x), dtype=bool)
    if len(sorted_ref) == 0:
        return out
    step = 1 << 20  # in slices: small temporaries
    for lo in range(0, len(x), step):
        xs = x[lo:lo + step]
        i = np.searchsorted(sorted_ref, xs)
        i[i == len(sorted_ref)] = 0
        np.equal(sorted_ref[i], xs, out=out[lo:lo + step])
    return out


def _scan_read(r: np.ndarray, attempted: np.ndarray, fail_flag: np.ndarray | None,
               phantom: set, failed_seen: set) -> None:
    """Add the ids of read r that no insert attempted to ``phantom``, and those whose inserts all
    failed (``fail_flag``, aligned with ``attempted``) to ``failed_seen``. In slices, so the
    temporaries stay small whatever the size of the read."""
    step = 1 << 20
    for lo in range(0, len(r), step):
        x = r[lo:lo + step]
        if len(attempted) == 0:
            phantom.update(x.tolist())
            continue
        i = np.searchsorted(attempted, x)
        i[i == len(attempted)] = 0
        hit = attempted[i] == x
        if not hit.all():
            phantom.update(x[~hit].tolist())
        if fail_flag is not None:
            bad = hit & fail_flag[i]
            if bad.any():
                failed_seen.update(x[bad].tolist())


class _SortedIds:
    """The ids of a ledger's inserts as sorted arrays, found by binary search: any ids at all
    (the reference the dense tables below are held to)."""

    def __init__(self, ids: np.ndarray, ins_type: np.ndarray):
        self.attempted = _uniq(ids)
        self.n_attempted = len(self.attempted)
        ok_ids = _uniq(ids[ins_type == OK], own=True)
        info_ids = _uniq(ids[ins_type == INFO], own=True)
        self.info_ids = info_ids[~_isin_sorted(info_ids, ok_ids)]
        fail_only = _uniq(ids[ins_type == FAIL], own=True)
        fail_only = fail_only[~_isin_sorted(fail_only, ok_ids) & ~_isin_sorted(fail_only, self.info_ids)]
        self.fail_flag = _isin_sorted(self.attempted, fail_only) if len(fail_only) else None
        self.n_acknowledged = len(ok_ids)
        self.final_u = None

    def scan(self, r: np.ndarray, phantom: set, failed_seen: set) -> None:
        _scan_read(r, self.attempted, self.fail_flag, phantom, failed_seen)

    def drop_attempted(self) -> None:
        self.attempted = self.fail_flag = None

    def final(self, r: np.ndarray) -> int:
        """Take r as the final read; the number of distinct ids in it."""
        self.final_u = _uniq(r, own=True)
        return len(self.final_u)

    def in_final(self, x: np.ndarray) -> np.ndarray:
        """Which of the attempted ids x the final read holds."""
        return _isin_sorted(x, self.final_u)


#: the ids go in tables indexed by id when their span is at most this many bytes per insert
#: (plus a small constant): a gather per id read instead of a binary search
_DENSE_PER_ID = 4


class _DenseIds:
    """The same as ``_SortedIds`` for ids in a span of integers not much wider than their number
    (a ledger's ids count up): a byte per id of the span, looked up by index.

    ``_state``: 0 never attempted, 1 attempted, 2 attempted and every insert of it failed
    definitely; ``_final``: in the final read."""

    @staticmethod
    def fits(ids: np.ndarray) -> bool:
        if len(ids) == 0:
            return False
        span = int(ids.max()) - int(ids.min()) + 1
        return span <= _DENSE_PER_ID * len(ids) + (1 << 16)

    def __init__(self, ids: np.ndarray, ins_type: np.ndarray):
        self.lo, self.hi = int(ids.min()), int(ids.max())
        span = self.hi - self.lo + 1
        off = ids - self.lo
        has_ok = np.zeros(span, dtype=bool)
        has_ok[off[ins_type == OK]] = True
        has_info = np.zeros(span, dtype=bool)
        has_info[off[ins_type == INFO]] = True
        state = np.zeros(span, dtype=np.uint8)
        state[off] = 1
        self.n_attempted = int(np.count_nonzero(state))
        self.n_acknowledged = int(np.count_nonzero(has_ok))
        has_info &= ~has_ok
        self.info_ids = np.flatnonzero(has_info) + self.lo  # ascending, as _uniq gives them
        fail_m = ins_type == FAIL
        if fail_m.any():
            fail_only = np.zeros(span, dtype=bool)
            fail_only[off[fail_m]] = True
            fail_only &= ~has_ok
            fail_only &= ~has_info
            state[fail_only] = 2
        self._state = state
        self._final = None
        self._outside_final = 0

    def _split(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """r's offsets into the span, and r's ids outside it (None when there are none)."""
        if len(r) == 0 or (int(r.min()) >= self.lo and int(r.max()) <= self.hi):
            return r - self.lo, None
        inside = (r >= self.lo) & (r <= self.hi)
        return r[inside] - self.lo, r[~inside]

    def scan(self, r: np.ndarray, phantom: set, failed_seen: set) -> None:
        step = 1 << 20
        for a in range(0, len(r), step):  # in slices: small temporaries whatever the read's size
            off, outside = self._split(r[a:a + step])
            if outside is not None:
                phantom.update(outside.tolist())
            s = self._state[off]
            never = s == 0
            if never.any():
                phantom.update((off[never] + self.lo).tolist())
            failed = s == 2
            if failed.any():
                failed_seen.update((off[failed] + self.lo).tolist())

    def drop_attempted(self) -> None:
        self._state = None

    def final(self, r: np.ndarray) -> int:
        off, outside = self._split(r)
        present = np.zeros(self.hi - self.lo + 1, dtype=bool)
        present[off] = True
        self._final = present
        n_outside = 0 if outside is None else len(_uniq(outside, own=True))
        return int(np.count_nonzero(present)) + n_outside

    def in_final(self, x: np.ndarray) -> np.ndarray:
        return self._final[x - self.lo]


#: False: every history through ``_SortedIds`` (the differential tests hold the tables to it)
DENSE = True


def _ids_of(ids: np.ndarray, ins_type: np.ndarray):
    return _DenseIds(ids, ins_type) if DENSE and _DenseIds.fits(ids) else _SortedIds(ids, ins_type)


def _positions(m: np.ndarray, sel: np.ndarray | None, ok_ins: np.ndarray) -> np.ndarray:
    """Frame positions of the acknowledged inserts selected by m (``sel``: their indexes among
    the ok inserts, None when they are all of them; ``ok_ins``: the ok inserts' frame mask)."""
    idx = np.flatnonzero(m) if sel is None else sel[m]
    if len(idx) == 0:
        return np.empty(0, dtype=np.int64)
    return np.flatnonzero(ok_ins)[idx]


def check(fr: Frame, opts: dict) -> Verdict:
    nex = _examples(opts.get("examples", 20))
    gcp = _gcp(opts)
    ins = fr.mask_f("insert")
    reads = fr.mask_f("read")
    ids = int_values(fr, ins)
    if ids is None:
        raise HistoryFormatError("ledger insert values must be integer ids")
    ins_type = fr.type[ins]

    ok_read_pos = np.flatnonzero(reads & (fr.type == OK))
    counts = {"inserts": int(ins.sum()), "ok": int((ins_type == OK).sum()), "fail": int((ins_type == FAIL).sum()),
              "info": int((ins_type == INFO).sum()), "reads": int(reads.sum()), "ok_reads": int(len(ok_read_pos))}

    known = _ids_of(ids, ins_type)
    unique_ids = known.n_attempted == len(ids)  # every id inserted once (the usual case)
    ok_m = ins_type == OK
    info_ids = known.info_ids
    n_acknowledged = known.n_acknowledged

    base = {"counts": counts, "attempted": int(known.n_attempted), "acknowledged": int(n_acknowledged)}
    if len(ok_read_pos) == 0:
        details = {**base, "final_read": None, "lost": None, "phantom": None, "indeterminate": int(len(info_ids)),
                   "reason": "no successful read: cannot tell what survived"}
        return Verdict("durability", UNKNOWN, "no ok read in the history, so nothing can be said about lost writes",
                       details, lift=LIFT)

    # Phantoms and failed-but-present over every ok read (one read in memory at a time).
    phantom_set: set[int] = set()
    failed_seen: set[int] = set()
    for k in ok_read_pos[:-1]:
        known.scan(_read_ids(fr, int(k)), phantom_set, failed_seen)

    fk = int(ok_read_pos[-1])
    final = _read_ids(fr, fk)
    known.scan(final, phantom_set, failed_seen)
    known.drop_attempted()
    n_final = known.final(final)
    duplicates = int(len(final) - n_final)
    del final
    f_start, f_end = float(fr.start[fk]), float(fr.end[fk])

    # Acknowledged before the final read started: each id's earliest ok ack (with unique ids,
    # every ok insert). Positions are kept as masks over the ok inserts (a byte an op).
    ok_ids_all = ids[ok_m]
    del ids
    ok_ins = ins & (fr.type == OK)  # the same ops as ok_m selects among the inserts
    ok_ends_all = fr.end[ok_ins]
    if unique_ids:
        sel = None
        acked_id, acked_end = ok_ids_all, ok_ends_all
    else:
        order = np.lexsort((ok_ends_all, ok_ids_all))
        first = np.ones(len(order), dtype=bool)
        first[1:] = ok_ids_all[order][1:] != ok_ids_all[order][:-1]
        sel = order[first]  # per id, its earliest ok insert (index among the ok inserts)
        del order, first
        acked_id, acked_end = ok_ids_all[sel], ok_ends_all[sel]
    del ok_ids_all, ok_ends_all
    present = known.in_final(acked_id)
    del acked_id
    before = acked_end < f_start
    lost_m = before & ~present
    unconfirmed_m = ~before & ~present
    del before, present
    lost_pos = _positions(lost_m, sel, ok_ins)
    lost_end = acked_end[lost_m]
    unconfirmed_pos = _positions(unconfirmed_m, sel, ok_ins)
    n_lost = int(lost_m.sum())
    n_unconfirmed = int(unconfirmed_m.sum())
    del acked_end, lost_m, unconfirmed_m, ok_ins
    explained_m = np.zeros(len(lost_pos), dtype=bool)
    if gcp is not None:
        x, crashes = gcp
        for t in crashes:
            # times are kept to the microsecond (the history's resolution): a crash time taken
            # from the last acknowledgement itself must include that acknowledgement
            explained_m |= (lost_end >= t - x - _TIME_RESOLUTION) & (lost_end <= t + _TIME_RESOLUTION)

    info_present = known.in_final(info_ids)

    def op_examples(pos: np.ndarray) -> list[dict]:
        out = []
        for p in pos[np.argsort(fr.end[pos], kind="stable")][:nex].tolist():
            n = int(fr.node[p])
            out.append({"id": int(fr.history.cols.ival[int(fr.rows[p])]), "end": round(float(fr.end[p]), 6),
                        "node": fr.node_names[n] if n >= 0 else None, "process": int(fr.process[p])})
        return out

    phantom = sorted(phantom_set)
    failed_present = sorted(failed_seen)
    n_expl = int(explained_m.sum())
    n_unexpl = n_lost - n_expl
    n = fr.node[fk]
    details = {
        **base,
        "final_read": {"start": round(f_start, 6), "end": round(f_end, 6),
                       "node": fr.node_names[n] if n >= 0 else None, "ids": n_final},
        "lost": n_lost,
        "lost_examples": op_examples(lost_pos),
        "unexplained": n_unexpl,
        "unexplained_examples": op_examples(lost_pos[~explained_m]),
        "explained_by_gcp": n_expl,
        "explained_by_gcp_examples": op_examples(lost_pos[explained_m]),
        "gcp": None if gcp is None else {"gcp_loss_window_s": gcp[0], "cluster_crash_at": gcp[1]},
        "phantom": len(phantom),
        "phantom_examples": phantom[:nex],
        "indeterminate": int(len(info_ids)),
        "indeterminate_present": int(info_present.sum()),
        "indeterminate_absent": int(len(info_ids) - info_present.sum()),
        "indeterminate_present_examples": info_ids[info_present][:nex].tolist(),
        "failed_present": len(failed_present),
        "failed_present_examples": failed_present[:nex],
        "unconfirmed": n_unconfirmed,
        "unconfirmed_examples": op_examples(unconfirmed_pos),
        "duplicates_in_final_read": duplicates,
    }
    bad = []
    if n_unexpl:
        bad.append(f"{n_unexpl} acknowledged insert(s) lost" + (" (not explained by the GCP window)" if gcp else ""))
    if len(phantom):
        bad.append(f"{len(phantom)} phantom id(s) never inserted")
    if len(failed_present):
        bad.append(f"{len(failed_present)} insert(s) that failed definitely are present")
    valid = not bad
    summ = (f"{n_acknowledged} acknowledged, final read at {f_end:.3f} s has {n_final} ids; "
            f"lost {n_lost}" + (f" ({n_expl} explained by GCP, {n_unexpl} unexplained)" if gcp else "")
            + f", phantom {len(phantom)}, indeterminate {len(info_ids)} ({int(info_present.sum())} landed)")
    if bad:
        summ = "; ".join(bad) + " -- " + summ
    return Verdict("durability", valid, summ, details, lift=LIFT)
