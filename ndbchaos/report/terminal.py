"""The one line a scenario prints when it ends: what a person watching the terminal needs before
the HTML report exists (its name, the verdict, detection, outage per SQL node, recovery, and for
a transactional run what the anomaly checker found)."""

from __future__ import annotations

from ..checks.verdict import RunVerdict


def scenario_line(name: str, measurements: dict, verdict: RunVerdict) -> str:
    valid = verdict.valid
    word = "PASS" if valid is True else ("UNKNOWN" if valid == "unknown" else "FAIL")
    failed = verdict.failed()
    parts = []
    for key, label in (("detection", "detection"), ("stopped serving", "stopped serving"),
                       ("shut down", "shut down")):
        m = measurements.get(key)
        if m is not None and isinstance(m.value, (int, float)):
            parts.append(f"{label} {m.value:.1f} s")
    outages = [(k[len("outage on "):], m.value) for k, m in sorted(measurements.items())
               if k.startswith("outage on ") and isinstance(m.value, (int, float))]
    if outages:
        parts.append("outage " + ", ".join(f"{n} {v:.1f} s" for n, v in outages))
    rec = measurements.get("recovery")
    if rec is not None and isinstance(rec.value, (int, float)):
        parts.append(f"recovery {rec.value:.1f} s")
    tx = verdict.transactions
    if tx is not None and tx.decided:
        held = "held" if tx.valid_models is True else "NOT"
        parts.append(f"txn {held} {', '.join(tx.consistency_models)}: {tx.found_text()}")
    head = f"ndbchaos: {name} {word}" + (f" ({', '.join(failed)})" if failed and valid is not True else "")
    return head + ("  " + " | ".join(parts) if parts else "")


__all__ = ["scenario_line"]
