"""Client errors: counts by class and by (errno, engine_code), per phase (by completion time).

Informational: always valid. A class ``null`` error is one the classifier did not recognise
(``unclassified`` in the counts); it is worth a look, because an unclassified failed write is
recorded as indeterminate.
"""

from __future__ import annotations

import numpy as np

from . import Verdict
from .frame import OK, PHASES, Frame
from ..history import CLASSES

_CLASS_KEYS = ("unclassified", "temporary", "unknown", "permanent")


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
        "count": int(len(idx)),
        "fail": int(np.count_nonzero(fr.type[idx] == 1)),
        "info": int(np.count_nonzero(fr.type[idx] == 2)),
        "by_class": by_class,
        "codes": codes,
    }


def check(fr: Frame, opts: dict) -> Verdict:
    everything = np.ones(fr.n, dtype=bool)
    phases = {}
    for p, name in enumerate(PHASES):
        if not fr.windows and p > 0:
            continue
        phases[name] = _block(fr, fr.phase == p)
    total = _block(fr, everything)
    bc = total["by_class"]
    summ = (f"{total['count']} failed ops ({total['fail']} fail, {total['info']} info): "
            f"{bc['temporary']} temporary, {bc['unknown']} unknown, {bc['permanent']} permanent, "
            f"{bc['unclassified']} unclassified")
    if total["codes"]:
        top = total["codes"][0]
        code = f"{top['errno']}" + (f"/{top['engine_code']}" if top["engine_code"] is not None else "")
        summ += f"; most frequent {code} x{top['count']}"
    return Verdict("errors", True, summ, {"phases": phases, "all": total})
