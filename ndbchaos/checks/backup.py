"""What a backup must hold, proved on its restore: the ledger's ids read back from the restored
cluster against the inserts the history shows around the backup.

An NDB backup is a consistent snapshot of the data at one global checkpoint: at its end
(``SNAPSHOTEND``, the default: what was committed when it completed, the changes made meanwhile
replayed from its log) or at its start (``SNAPSHOTSTART``: those changes undone). The run record's
``procedure.backup`` (docs/history-format.md 1.5) holds the moments the driver saw on the run
clock (``issued``: START BACKUP sent; ``started``: the engine reported the backup started, null
when not observed; ``completed``: it reported completion), the engine's own figures (``id``,
``start_gcp``, ``stop_gcp``, ``records``) and, once restored into another cluster, ``restored``:
every id read back from the restored table (``ids``) and its ``SELECT COUNT(*)`` (``rows``).

Judged, for the ledger (each client slot inserts its ids one at a time: an insert starts after
the slot's previous one completed):

* must have (``missing``): every id whose insert was acknowledged (ok) before the backup was
  issued. Any snapshot taken after the acknowledgement holds it, of either kind;
* must not have (``too_late``): every id whose every insert started after the consistency bound
  (``completed`` for SNAPSHOTEND, ``started`` for SNAPSHOTSTART; ``completed``, the loose bound,
  when the start was not observed: ``details.loose_bound``), whatever its outcome: a write begun
  after the snapshot's point cannot be in it;
* a consistent cut (``not_a_cut``): an acknowledged id of a slot committed before the slot's next
  insert began, so when the restore holds an id of a slot, it must hold every acknowledged id of
  that slot with a smaller sequence number. The recorded times decide ("acknowledged before the
  restored id's insert started", the same order for the ledger), so the rule does not rest on the
  id scheme. Counted: the acknowledged ids absent below a restored one;
* ``phantom``: restored ids that no insert attempted; ``failed_present``: restored ids whose
  inserts all failed definitely (``fail``); ``duplicates``: ids read back more than once;
  ``rows`` must equal the number of ids read back (``rows_match``);
* indeterminate ids (inserts all ``info``): counted, restored or not; never judged, but by the
  bound above.

Between the two bounds lie the acknowledged ids the snapshot may hold or not: how many there are
(``between``) and how many the restore holds (``between_restored``) show where the snapshot fell.

For the bank (transfers that conserve the total): the restore must hold every account (ids 0 to
n-1, none else, none twice) and its balances must sum to the bank's total (``restored.sum``),
whatever moment the snapshot is of: a snapshot that cut a transfer in half holds another sum.

Valid: False with any anomaly above; "unknown" when the restore did not happen (``restored``
absent or null) or the workload is neither the ledger nor the bank; else True. A record that lacks a field, or
holds one of the wrong type, raises ValueError naming it.
"""

from __future__ import annotations

import math

import numpy as np

from ..history import TYPES, HistoryFormatError
from .frame import INFO, OK, Frame, int_values
from .procedure import _bad, _object, _text, _time
from .verdict import UNKNOWN, Verdict

#: ids of slot s are (s + 1) * SLOT + n (ndbchaos.workload.ledger)
SLOT = 1_000_000_000
SNAPSHOTS = ("end", "start")

LIFT = ("missing", "too_late", "not_a_cut", "phantom", "failed_present", "duplicates")

_W = "procedure.backup"


def _int(d: dict, key: str, where: str, optional: bool = True) -> int | None:
    v = d.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise _bad(where, d, key, "an integer >= 0" + (" or null" if optional else ""))
    return v


def parse(backup) -> dict:
    """The run record's ``procedure.backup``, checked field by field (the restore's ids as an int64
    array). Raises ValueError naming the first field missing, of the wrong type or out of order."""
    b = _object(backup, _W)
    snap = b.get("snapshot")
    if not isinstance(snap, str) or snap not in SNAPSHOTS:
        raise _bad(_W, b, "snapshot", "'end' (SNAPSHOTEND) or 'start' (SNAPSHOTSTART)")
    issued, started = _time(b, "issued", _W), _time(b, "started", _W, optional=True)
    completed = _time(b, "completed", _W, optional=True)
    if completed is not None and completed < issued:
        raise ValueError(f"{_W}.completed {completed} is before issued {issued}")
    if started is not None and not (issued <= started <= (math.inf if completed is None else completed)):
        raise ValueError(f"{_W}.started {started} is not between issued {issued} and completed {completed}")
    out = {"id": _int(b, "id", _W), "snapshot": snap, "issued": issued, "started": started, "completed": completed,
           "start_gcp": _int(b, "start_gcp", _W), "stop_gcp": _int(b, "stop_gcp", _W),
           "records": _int(b, "records", _W), "restored": None}
    r = b.get("restored")
    if r is None:
        return out
    w = f"{_W}.restored"
    r = _object(r, w)
    ids = r.get("ids")
    if not isinstance(ids, list) or not all(type(x) is int for x in ids):
        raise _bad(w, r, "ids", "the list of integer ids read back")
    try:
        arr = np.array(ids, dtype=np.int64)
    except OverflowError:
        raise ValueError(f"{w}.ids holds an id beyond 64 bits") from None
    if completed is None:
        raise ValueError(f"{_W}.completed must be a number when the backup was restored")
    out["restored"] = {"into": _text(r, "into", w, False), "table": _text(r, "table", w, False),
                       "ids": arr, "rows": _int(r, "rows", w, optional=False), "sum": r.get("sum")}
    if out["restored"]["sum"] is not None and type(out["restored"]["sum"]) is not int:
        raise _bad(w, r, "sum", "the integer sum of the restored balances, or null")
    return out


BANK_LIFT = ("accounts_missing", "accounts_extra")


def _bank(fr: Frame, b: dict, name: str, head: dict) -> Verdict:
    """The bank: transfers conserve the total, so a consistent snapshot holds every account
    (``ids`` = the account ids, 0..n-1) and exactly the total (``restored.sum``), whenever it was
    taken; a snapshot that cut a transfer in half holds another sum."""
    params = fr.history.params
    n, total = params.get("accounts"), params.get("total")
    r = b["restored"]
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0 or type(total) is not int:
        return Verdict("backup", UNKNOWN, f"{name}: the history's params lack the bank's accounts and total",
                       {**head, "reason": "params.accounts and params.total are required"}, lift=BANK_LIFT)
    if r is None:
        why = "the backup did not complete" if b["completed"] is None else "the backup was not restored"
        return Verdict("backup", UNKNOWN, f"{name}: {why}: what it holds cannot be checked",
                       {**head, "restored": None, "reason": why}, lift=BANK_LIFT)
    got = set(r["ids"].tolist())
    want = set(range(n))
    missing, extra = sorted(want - got), sorted(got - want)
    dups = len(r["ids"]) - len(got)
    details = {**head, "accounts": n, "total": total, "restored": {k: v for k, v in r.items() if k != "ids"},
               "accounts_missing": len(missing), "accounts_missing_examples": missing[:20],
               "accounts_extra": len(extra), "accounts_extra_examples": extra[:20], "duplicates": dups,
               "rows_match": r["rows"] == len(r["ids"]), "sum": r["sum"]}
    problems = []
    if missing or extra or dups:
        problems.append(f"accounts: {len(missing)} missing, {len(extra)} extra, {dups} duplicate")
    if r["sum"] is None:
        problems.append("no sum of the balances was read back")
    elif r["sum"] != total:
        problems.append(f"the balances sum to {r['sum']}, not the bank's total {total}: not a consistent snapshot")
    if not details["rows_match"]:
        problems.append(f"COUNT(*) {r['rows']} but {len(r['ids'])} ids read back")
    if problems:
        return Verdict("backup", False, f"{name} of the bank: " + "; ".join(problems), details, lift=BANK_LIFT)
    return Verdict("backup", True, f"{name} of the bank: all {n} accounts restored, holding the total {total}",
                   details, lift=BANK_LIFT)


def _bound(b: dict) -> tuple[float | None, str, bool]:
    """(the consistency bound, the moment it is, whether it is the loose one)."""
    if b["snapshot"] == "start" and b["started"] is not None:
        return b["started"], "started", False
    return b["completed"], "completed", b["snapshot"] == "start"


def _isin(x: np.ndarray, sorted_ref: np.ndarray) -> np.ndarray:
    if len(sorted_ref) == 0 or len(x) == 0:
        return np.zeros(len(x), dtype=bool)
    i = np.searchsorted(sorted_ref, x)
    i[i == len(sorted_ref)] = 0
    return sorted_ref[i] == x


def _per_id(fr: Frame) -> dict:
    """Per distinct id attempted (sorted): its first start, first acknowledgement (inf: none),
    and whether any insert was ok / info (neither: every insert failed definitely)."""
    ins = fr.mask_f("insert")
    ids = int_values(fr, ins)
    if ids is None:
        raise HistoryFormatError("ledger insert values must be integer ids")
    typ, start, end = fr.type[ins], fr.start[ins], fr.end[ins]
    u, inv = np.unique(ids, return_inverse=True)
    first_start = np.full(len(u), np.inf)
    np.minimum.at(first_start, inv, start)
    ack = np.full(len(u), np.inf)
    okm = typ == OK
    np.minimum.at(ack, inv[okm], end[okm])
    has_info = np.zeros(len(u), dtype=bool)
    has_info[inv[typ == INFO]] = True
    return {"ids": u, "start": first_start, "ack": ack, "ok": np.isfinite(ack), "info": has_info,
            "pos": np.flatnonzero(ins), "op_ids": ids}


def _not_a_cut(a: dict, present: np.ndarray) -> np.ndarray:
    """Acknowledged ids absent although their slot's restore holds an id whose insert started
    after their acknowledgement; as a mask over ``a["ids"]`` and, per id, that restored id."""
    u = a["ids"]
    slots, sinv = np.unique(u // SLOT, return_inverse=True)
    latest = np.full(len(slots), -np.inf)  # per slot: the latest start of a restored id
    np.maximum.at(latest, sinv[present], a["start"][present])
    return a["ok"] & ~present & (a["ack"] < latest[sinv])


def check(fr: Frame, opts: dict, backup: dict) -> Verdict:
    """``backup``: the run record's ``procedure.backup`` (module docstring)."""
    b = parse(backup)
    nex = max(0, int(opts.get("examples", 20)))
    bound, bound_from, loose = _bound(b)
    head = {k: b[k] for k in ("id", "snapshot", "issued", "started", "completed", "start_gcp", "stop_gcp",
                              "records")}
    head.update(bound=bound, bound_from=bound_from, loose_bound=loose)
    name = (f"backup {b['id']} " if b["id"] is not None else "the backup ") + f"(SNAPSHOT{b['snapshot'].upper()})"
    if fr.history.workload == "bank":
        return _bank(fr, b, name, head)
    if fr.history.workload != "ledger":
        return Verdict("backup", UNKNOWN, f"{name}: what a restore must hold is known for the ledger and bank "
                       f"workloads only, not {fr.history.workload}",
                       {**head, "reason": "not the ledger or bank workload"}, lift=LIFT)
    a = _per_id(fr)
    u, ok = a["ids"], a["ok"]
    must = ok & (a["ack"] < b["issued"])
    late = a["start"] > (math.inf if bound is None else bound)
    between = ok & ~must & ~late
    info = a["info"] & ~ok
    head.update(attempted=int(len(u)), acknowledged=int(ok.sum()), must_have=int(must.sum()),
                must_not_have=int(late.sum()), between=int(between.sum()), indeterminate=int(info.sum()))
    r = b["restored"]
    if r is None:
        why = "the backup did not complete" if b["completed"] is None else "the backup was not restored"
        head.update(restored=None, reason=why, **{k: None for k in LIFT})
        return Verdict("backup", UNKNOWN, f"{name}: {why}: what it holds cannot be checked "
                       f"({head['must_have']} acknowledged before it was issued)", head, lift=LIFT)

    got = r["ids"]
    ru, counts = np.unique(got, return_counts=True)
    present = _isin(u, ru)
    phantom = ru[~_isin(ru, u)]
    missing = must & ~present
    too_late = late & present
    failed_present = ~ok & ~a["info"] & present
    hole = _not_a_cut(a, present)
    dups = ru[counts > 1]

    def ex(mask: np.ndarray, key: np.ndarray) -> list[int]:
        idx = np.flatnonzero(mask)
        return idx[np.argsort(key[idx], kind="stable")][:nex].tolist()

    def op(i: int) -> dict:
        """The first insert of id u[i]: its times, outcome, node and process."""
        k = int(a["pos"][np.flatnonzero(a["op_ids"] == u[i])[0]])
        n = int(fr.node[k])
        return {"id": int(u[i]), "start": round(float(a["start"][i]), 6),
                "end": None if not math.isfinite(a["ack"][i]) else round(float(a["ack"][i]), 6),
                "type": TYPES[int(fr.type[k])], "node": fr.node_names[n] if n >= 0 else None,
                "process": int(fr.process[k])}

    def cut_ex(i: int) -> dict:
        same = (u // SLOT == u[i] // SLOT) & present & (a["start"] > a["ack"][i])
        return {**op(i), "slot": int(u[i] // SLOT - 1), "restored": int(u[np.flatnonzero(same)[0]])}

    rows_match = r["rows"] == len(got)
    details = {
        **head, "restored": {"into": r["into"], "table": r["table"], "ids": int(len(got)), "rows": r["rows"]},
        "rows_match": rows_match,
        "missing": int(missing.sum()), "missing_examples": [op(i) for i in ex(missing, a["ack"])],
        "too_late": int(too_late.sum()), "too_late_examples": [op(i) for i in ex(too_late, a["start"])],
        "not_a_cut": int(hole.sum()), "not_a_cut_examples": [cut_ex(i) for i in ex(hole, a["ack"])],
        "phantom": int(len(phantom)), "phantom_examples": phantom[:nex].tolist(),
        "failed_present": int(failed_present.sum()),
        "failed_present_examples": u[ex(failed_present, a["start"])].tolist(),
        "duplicates": int(len(dups)), "duplicates_examples": dups[:nex].tolist(),
        "between_restored": int((between & present).sum()),
        "indeterminate_restored": int((info & present).sum()),
        "indeterminate_restored_examples": u[ex(info & present, a["start"])].tolist(),
    }
    bad = [f"{details[k]} {what}" for k, what in (
        ("missing", "acknowledged before the backup was issued, not restored"),
        ("too_late", f"started after the backup's {bound_from}, restored"),
        ("not_a_cut", "acknowledged, absent below a restored id of their slot (not a consistent cut)"),
        ("phantom", "restored id(s) never inserted"),
        ("failed_present", "restored id(s) whose inserts failed definitely"),
        ("duplicates", "id(s) restored more than once")) if details[k]]
    if not rows_match:
        bad.append(f"the restored table counts {r['rows']} rows but {len(got)} ids were read back")
    summ = (f"{name}: restored {len(ru)} ids; {details['must_have']} acknowledged before it was issued, "
            f"{details['between_restored']}/{details['between']} acknowledged during it restored, "
            f"{details['indeterminate_restored']}/{details['indeterminate']} indeterminate restored")
    if loose:
        summ += "; the start was not observed: bounded by the completion (loose)"
    if bad:
        summ = "; ".join(bad) + " -- " + summ
    return Verdict("backup", not bad, summ, details, lift=LIFT)


__all__ = ["SLOT", "SNAPSHOTS", "check", "parse"]
