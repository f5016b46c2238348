"""Client errors: counts by class and by (errno, engine_code), per phase (by completion time).

Which classes a run may show is option ``allowed_error_classes`` (default temporary and
unknown: what a node failure, a partition or a client-path fault can cause; an engine's
expectation may narrow it). An error of another class makes the verdict invalid (a permanent
error under a fault is either the application mishandling a retryable error or a classifier
gap); one the classifier did not recognise (``unclassified``, class null, recorded as
indeterminate when it was a write) makes it unknown. Failures with errno 0 are the workload's
own refusals (the bank declining a transfer that would overdraw): counted as ``application``,
never judged.
"""

from __future__ import annotations

import numpy as np

from ..history import CLASSES
from .frame import OK, PHASES, Frame
from .verdict import UNKNOWN, Verdict

_CLASS_KEYS = ("unclassified", "temporary", "unknown", "permanent")


def _application(fr: Frame) -> np.ndarray:
    """Failures with errno 0 and an error message: the workload declined the operation."""
    msgs = fr.history.cols.msgs
    app = (fr.type != OK) & (fr.errno == 0)
    for k in np.flatnonzero(app):
        if int(fr.rows[k]) not in msgs:
            app[k] = False
    return app


def _block(fr: Frame, mask: np.ndarray) -> dict:
    idx = np.flatnonzero(mask & (fr.type != OK))
    ecls = fr.ecls[idx]
    by_class = {k: int(np.count_nonzero(ecls == i)) for i, k in enumerate(_CLASS_KEYS)}
    codes = []
    if len(idx):
        key = np.stack([fr.errno[idx].astype(np.int64), fr.ecode[idx].astype(np.int64),
                        ecls.astype(np.int64)], axis=1)
        uniq, first, counts = np.unique(key, axis=0, return_index=True, return_counts=True)
        msgs = fr.history.cols.msgs
        for (e, c, k), i0, n in sorted(zip(uniq.tolist(), first.tolist(), counts.tolist()), key=lambda t: -t[2]):
            row = int(fr.rows[idx[i0]])
            has_error = row in msgs  # errno 0 is a real value when the op carries an error
            codes.append({
                "errno": None if e == -1 or (e == 0 and not has_error) else e,
                "engine_code": None if c == -1 or (c == 0 and not has_error) else c,
                "class": CLASSES[k], "count": n, "example": msgs.get(row, "")[:200],
            })
    return {
        "ops": int(np.count_nonzero(mask)),  # every operation of the block, failed or not
        "count": int(len(idx)),
        "fail": int(np.count_nonzero(fr.type[idx] == 1)),
        "info": int(np.count_nonzero(fr.type[idx] == 2)),
        "by_class": by_class,
        "codes": codes,
    }


def check(fr: Frame, opts: dict) -> Verdict:
    app = _application(fr)
    engine = ~app
    phases = {}
    for p, name in enumerate(PHASES):
        if not fr.windows and p > 0:
            continue
        phases[name] = _block(fr, (fr.phase == p) & engine)
    total = _block(fr, engine)
    application = int(np.count_nonzero(app))
    bc = total["by_class"]
    allowed = set(opts.get("allowed_error_classes") or ("temporary", "unknown"))
    summ = (f"{total['count']} failed ops ({total['fail']} fail, {total['info']} info): "
            f"{bc['temporary']} temporary, {bc['unknown']} unknown, {bc['permanent']} permanent, "
            f"{bc['unclassified']} unclassified")
    if application:
        summ += f"; {application} declined by the workload"
    if total["codes"]:
        top = total["codes"][0]
        code = f"{top['errno']}" + (f"/{top['engine_code']}" if top["engine_code"] is not None else "")
        summ += f"; most frequent {code} x{top['count']}"
    bad = [c for c in total["codes"] if c["class"] not in allowed and c["class"] is not None]
    if bad:
        valid, summ = False, (f"errors of a class not allowed ({', '.join(sorted(allowed))}): "
                              + ", ".join(f"{c['errno']}" + (f"/{c['engine_code']}" if c["engine_code"] is not None
                                                           else "") + f" {c['class']} x{c['count']}" for c in bad)
                              + f" -- {summ}")
    elif bc["unclassified"]:
        valid = UNKNOWN
    else:
        valid = True
    return Verdict("errors", valid, summ, {"phases": phases, "all": total, "application": application,
                                           "allowed_classes": sorted(allowed)})
