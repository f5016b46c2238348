"""The transactional workloads judged: the anomaly checker (ndbchaos.txn) on the run's
transactions, against the consistency models the engine promises for the workload's variant
(check option ``consistency_models``, recorded by the driver from ``Engine.consistency_models``),
and the durability of every acknowledged append (list-append) against the final read.

- A whole-cluster crash (options ``gcp_loss_window_s`` and ``cluster_crash_at``, as for the
  ledger): transactions acknowledged within the window before a crash may be lost by the
  engine's promise (NDB: the last global checkpoint). They are judged as indeterminate (info):
  their writes may or may not be there and their reads are not used; every other transaction
  keeps its outcome, so a loss or an anomaly outside the window is still found. How many of
  them were really lost is reported (``lost_within_gcp``).
- ``lost``: appends of ok transactions (outside any such window) missing from the final read.
  The final read is one transaction that began after the load stopped, so a lost append is
  also a real-time cycle when the models forbid those; it is counted here whatever the models,
  as the ledger counts a lost insert.

Valid: False when an anomaly the models forbid was found or an acknowledged append was lost;
"unknown" when the search could not finish or there is no final read; else True.
"""

from __future__ import annotations

from ..history import FINAL_PROCESS
from ..txn import CheckOptions, TxnFormatError, TxnHistory, check as check_txns
from ..txn.check import holds
from ..txn.history import INFO, OK
from ..txn.picture import cycle_svg
from .verdict import UNKNOWN, Verdict, compose

LIFT = ("anomaly_types", "lost", "not")
MODEL_OF = {"list_append": "list-append", "rw_register": "rw-register"}


def check(fr, opts: dict) -> Verdict:
    h = fr.history
    models = tuple(opts.get("consistency_models") or ("strict-serializable",))
    try:
        txns = TxnHistory.from_history(h)
    except TxnFormatError as e:
        return Verdict("transactions", UNKNOWN, f"not transactions: {e}", {"reason": str(e)})
    recorded = txns.counts()  # before the GCP window's transactions are judged as indeterminate
    within = _within_gcp(txns, opts)
    for t in within:
        t.type = INFO  # acknowledged, but the engine's promise allows its loss: may or may not be there
    # searched as for strict serializability (process and real-time order included): every
    # anomaly is found and reported; the verdict is the promised models' (``holds``)
    v = check_txns(txns, CheckOptions(model=MODEL_OF.get(h.workload, "list-append"),
                                      cycle_search_timeout_ms=float(opts.get("txn_cycle_search_timeout_ms") or 1000)))
    held = holds(v.found, models)
    forbidden = sorted(k for k in v.found if holds([k], models) is False)
    final = next((t for t in reversed(txns.txns) if t.process == FINAL_PROCESS and t.type == OK), None)
    # lost writes are counted for lists only: a register's final value says nothing of the
    # writes before it (they are checked as real-time anomalies: a stale final read)
    lost, lost_gcp, landed = (_durability(txns, final, set(t.id for t in within)) if h.workload == "list_append"
                              else ([], 0, 0))
    body = v.to_json()
    details = {
        "model": body["model"], "consistency_models": list(models),
        "promise": opts.get("consistency_source"), "allowed": opts.get("consistency_allows"),
        "valid_models": held, "anomaly_types": forbidden, "found": v.found,
        "not": v.not_, "also_not": v.also_not, "txns": recorded, "graph": v.graph,
        "anomalies": {k: body["anomalies"][k] for k in forbidden if k in body["anomalies"]},
        # every anomaly type found, allowed or not: its first case in words and as a picture
        "examples": _examples(v),
        "final_read": final is not None, "lost": len(lost), "lost_examples": lost[:20],
        "within_gcp": len(within), "lost_within_gcp": lost_gcp, "info_landed": landed,
        "seconds": body["seconds"],
    }
    valid = compose([held, False if lost else True, UNKNOWN if final is None and h.workload == "list_append"
                     else True])
    found = ", ".join(f"{k} x{n}" for k, n in v.found.items()) or "no anomaly"
    summary = (f"{recorded['ok']} ok / {recorded['fail']} fail / {recorded['info']} info transactions; {found}; "
               f"{'held' if held is True else 'NOT'} {', '.join(models)}")
    if v.not_:
        summary += f"; not {', '.join(v.not_)}"
    if lost:
        summary += f"; {len(lost)} acknowledged append(s) lost"
    if within:
        summary += f"; {len(within)} acknowledged within the GCP window ({lost_gcp} of their appends gone)"
    if final is None and h.workload == "list_append":
        summary += "; no final read"
    return Verdict("transactions", valid, summary, details, lift=LIFT)


def _within_gcp(txns: TxnHistory, opts: dict) -> list:
    x, t = opts.get("gcp_loss_window_s"), opts.get("cluster_crash_at")
    if x is None or t is None:
        return []
    crashes = t if isinstance(t, (list, tuple)) else [t]
    return [tx for tx in txns.txns if tx.type == OK and tx.process != FINAL_PROCESS
            and any(c - x - 1e-6 <= tx.end <= c + 1e-6 for c in crashes)]


def _durability(txns: TxnHistory, final, within: set) -> tuple[list, int, int]:
    """(lost appends of ok transactions, appends gone among those within a GCP window, info
    appends the final read holds)."""
    if final is None:
        return [], 0, 0
    state = {k: set(v or ()) for f, k, v in final.mops if f == "r"}
    lost, gone_gcp, landed = [], 0, 0
    for t in txns.txns:
        if t.process == FINAL_PROCESS or t.end > final.start:
            continue
        for f, k, v in t.mops:
            if f != "append" or k not in state:
                continue
            present = v in state[k]
            if t.type == OK and not present:
                lost.append({"op": t.index, "key": k, "value": v, "end": round(t.end, 6), "node": t.node})
            elif t.id in within and not present:
                gone_gcp += 1
            elif t.type == INFO and t.id not in within and present:
                landed += 1
    return lost, gone_gcp, landed


def _examples(v) -> list[dict]:
    out = []
    for kind, cases in v.cases.items():
        a = cases[0]
        if not a.steps and not a.why:
            continue
        out.append({"type": kind, "explanation": a.explain(v.history),
                    "svg": cycle_svg(a, v.history) if a.steps else None})
    return out


__all__ = ["check"]
