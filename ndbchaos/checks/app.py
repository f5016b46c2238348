"""Checkers of a project's own workload (``ndbchaos.workload.app``), chosen by the declaration its
run recorded in the history's header (``params["declared"]``), so ``ndbchaos check`` judges a
saved run as the live run was judged:

- ``durability`` when an operation declares a ``key``: the ledger's check (``checks.ledger``) on
  the keys: every key of an acknowledged write must be in the final ``final_keys`` read (lost
  otherwise, unless NDB's GCP window explains it), a write of unknown outcome may be either way,
  one that failed definitely must be absent, a key no write attempted is a phantom. Judged from
  the file alone.
- ``invariant`` when the workload has a ``final_state`` or an operation declared
  ``invariant=True``: the workload's own ``invariant`` on the final state and on every successful
  result of those operations. It needs the workload's class (its ``ref``, ``module:qualname``):
  where that cannot be imported the verdict is unknown, with the reason.
"""

from __future__ import annotations

import numpy as np

from ..errors import NdbChaosError
from ..history import History, HistoryFormatError
from ..workload import workload_class
from .frame import FAIL, INFO, OK, Frame, build_frame
from .ledger import check as check_durability
from .verdict import UNKNOWN, Verdict

DECLARED = "declared"  # ndbchaos.workload.app.DECLARED (not imported: the checkers need no workload code)
FINAL_STATE, FINAL_KEYS = "final_state", "final_keys"
_TYPES = {OK: "ok", FAIL: "fail", INFO: "info"}


def declared(history: History) -> dict | None:
    d = history.params.get(DECLARED)
    return d if isinstance(d, dict) and isinstance(d.get("operations"), list) else None


def checkers(history: History) -> list:
    """The checkers a history of a project's workload gets (empty for any other history)."""
    d = declared(history)
    if d is None:
        return []
    out = []
    if d.get("final_keys"):
        out.append(("durability", durability))
    if d.get("final_state") or any(op.get("invariant") for op in d["operations"]):
        out.append(("invariant", invariant))
    return out


def _positions(fr: Frame, names) -> list[int]:
    codes = [i for i, n in enumerate(fr.f_names) if n in names]
    if not codes:
        return []
    return np.flatnonzero(np.isin(fr.f, codes)).tolist()


def durability(fr: Frame, opts: dict) -> Verdict:
    """The keys of the writes as a ledger: each keyed write an insert of its key, the
    ``final_keys`` reads its reads; then the ledger's own check."""
    d = declared(fr.history)
    keys = {op["name"]: op["key"] for op in d["operations"] if op.get("key")}
    cols = fr.history.cols
    h = History("ledger", {})
    for k in _positions(fr, set(keys) | {FINAL_KEYS}):
        f = fr.f_names[int(fr.f[k])]
        row = int(fr.rows[k])
        value = cols.value(row)
        n = int(fr.node[k])
        node = fr.node_names[n] if n >= 0 else None
        if f == FINAL_KEYS:
            if int(fr.type[k]) == OK:
                h.add(int(fr.process[k]), "read", value, "ok", float(fr.start[k]), float(fr.end[k]), node)
            continue
        key = value.get(keys[f]) if isinstance(value, dict) else None
        if not isinstance(key, int) or isinstance(key, bool):
            raise HistoryFormatError(f"{f} (op {k}) declares key {keys[f]!r}, but its value holds no integer "
                                     f"{keys[f]!r}")
        h.add(int(fr.process[k]), "insert", key, _TYPES[int(fr.type[k])], float(fr.start[k]), float(fr.end[k]), node)
    v = check_durability(build_frame(h), opts)
    v.details["operations"] = sorted(keys)
    return v


def invariant(fr: Frame, opts: dict) -> Verdict:
    d = declared(fr.history)
    nex = max(0, int(opts.get("examples", 20)))
    checked_ops = {op["name"] for op in d["operations"] if op.get("invariant")}
    wl, why = _workload(fr.history, d)
    if wl is None:
        return Verdict("invariant", UNKNOWN, f"not checked: {why}", {"reason": why, "checked": 0, "bad": None},
                       lift=("bad",))
    cols = fr.history.cols
    finals = [k for k in _positions(fr, {FINAL_STATE}) if int(fr.type[k]) == OK]
    during = [k for k in _positions(fr, checked_ops) if int(fr.type[k]) == OK]
    bad, examples, errors = 0, [], []
    for k in during + finals[-1:]:
        row = int(fr.rows[k])
        try:
            wrong = wl.invariant(cols.value(row))
        except Exception as e:  # the workload's own code: said, never a crash of the verdict
            errors.append(f"{type(e).__name__}: {e}"[:200])
            continue
        if wrong:
            bad += 1
            if len(examples) < nex:
                n = int(fr.node[k])
                examples.append({"op": fr.f_names[int(fr.f[k])], "end": round(float(fr.end[k]), 6),
                                 "node": fr.node_names[n] if n >= 0 else None, "process": int(fr.process[k]),
                                 "wrong": str(wrong)[:300]})
    details = {"ref": d.get("ref"), "checked": len(during) + len(finals[-1:]), "during": len(during),
               "final_state": bool(finals), "bad": bad, "bad_examples": examples, "errors": errors[:nex]}
    if bad:
        return Verdict("invariant", False, f"{bad} state(s) break the invariant: {examples[0]['wrong']}",
                       details, lift=("bad",))
    if errors:
        return Verdict("invariant", UNKNOWN, f"the workload's invariant raised {errors[0]}", details, lift=("bad",))
    if d.get("final_state") and not finals:
        return Verdict("invariant", UNKNOWN, "no successful final state read: the end state is not judged",
                       details, lift=("bad",))
    return Verdict("invariant", True, f"held on {details['checked']} state(s)"
                   + (" including the final state" if finals else ""), details, lift=("bad",))


def _workload(history: History, d: dict):
    """The workload's instance with the run's parameters, or (None, why not)."""
    ref = d.get("ref")
    try:
        cls = workload_class(ref if isinstance(ref, str) and ":" in ref else history.workload)
        params = {k: history.params[k] for k in getattr(cls, "defaults", {}) if k in history.params}
        return cls(**params), ""
    except NdbChaosError as e:
        return None, str(e)
