"""Bank invariant: every ok read sees all accounts and a sum equal to the header's ``total``.

Header params: ``accounts`` (n: the accounts are "0" .. "n-1"; or a list of account ids),
``total`` (the constant sum), optional ``allow_negative`` (default true; when false a negative
balance also makes a read bad). Ops: ``transfer`` with ``{"from", "to", "amount"}``, ``read``
with ``{"balances": {"<account>": balance}}``.

Valid: False when any ok read is bad; "unknown" when there is no ok read or the header lacks
accounts/total; else True.
"""

from __future__ import annotations

import math

import numpy as np

from ..history import HistoryFormatError
from .frame import FAIL, INFO, OK, Frame
from .verdict import UNKNOWN, Verdict


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check(fr: Frame, opts: dict) -> Verdict:
    nex = max(0, int(opts.get("examples", 20)))
    params = fr.history.params
    accounts, total = params.get("accounts"), params.get("total")
    tr = fr.mask_f("transfer")
    rd = fr.mask_f("read")
    counts = {"transfers": {"ok": int((tr & (fr.type == OK)).sum()), "fail": int((tr & (fr.type == FAIL)).sum()),
                            "info": int((tr & (fr.type == INFO)).sum())},
              "reads": int(rd.sum())}
    if isinstance(accounts, list):
        names = [str(a) for a in accounts]
    elif isinstance(accounts, int) and not isinstance(accounts, bool) and accounts > 0:
        names = [str(i) for i in range(accounts)]
    else:
        names = None
    if names is None or not _num(total):
        return Verdict("invariant", UNKNOWN, "history params lack accounts (n or list) and a numeric total",
                       {"counts": counts, "reads": 0, "bad_reads": None, "bad_read_examples": [],
                        "reason": "params.accounts and params.total are required"}, lift=("bad_reads",))
    expected = set(names)
    allow_negative = params.get("allow_negative", True) is not False
    tol = 1e-9 * max(1.0, abs(float(total))) if isinstance(total, float) else 0

    cols = fr.history.cols
    pos = np.flatnonzero(rd & (fr.type == OK))
    bad = 0
    examples = []
    for k in pos.tolist():
        row = int(fr.rows[k])
        val = cols.value(row)
        bal = val.get("balances") if isinstance(val, dict) else None
        if not isinstance(bal, dict):
            raise HistoryFormatError(f"bank ok read (op {k}) must have {{\"balances\": {{...}}}} as value")
        try:
            s = sum(bal.values())
        except TypeError:
            raise HistoryFormatError(f"bank read (op {k}) holds a non-numeric balance") from None
        keys = bal.keys()
        ok_sum = abs(s - total) <= tol
        ok_keys = len(bal) == len(expected) and expected.issuperset(keys)
        neg = [] if allow_negative else [a for a, b in bal.items() if b < 0]
        if ok_sum and ok_keys and not neg:
            continue
        bad += 1
        if len(examples) < nex:
            n = int(fr.node[k])
            ex = {"end": round(float(fr.end[k]), 6), "node": fr.node_names[n] if n >= 0 else None,
                  "process": int(fr.process[k]), "sum": s, "expected_total": total}
            if not ok_keys:
                ex["missing"] = sorted(expected - set(keys))[:nex]
                ex["unexpected"] = sorted(set(keys) - expected)[:nex]
            if neg:
                ex["negative"] = neg[:nex]
            examples.append(ex)
    details = {"counts": counts, "accounts": len(names), "total": total, "reads": int(len(pos)),
               "bad_reads": bad, "bad_read_examples": examples}
    if len(pos) == 0:
        details["reason"] = "no successful read"
        return Verdict("invariant", UNKNOWN, "no ok read in the history, so the invariant was never observed",
                       details, lift=("bad_reads", "reads"))
    summ = f"{bad} of {len(pos)} ok reads broke the invariant (sum {total}, {len(names)} accounts)"
    return Verdict("invariant", bad == 0, summ, details, lift=("bad_reads", "reads"))
