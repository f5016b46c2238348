"""The faults of a run with several (a soak), each judged on its own time span.

A soak's run record has ``steps``: per fault its plan (``expectation``), marks, fault windows,
check options and the span it covers (``begin``: the start of the pause before it, ``end``: the
end of its recovery). Each step is judged like a one-fault scenario on the operations that ended
in its span, with the status samples and engine events of that span: availability, latency and
errors there, and the engine's expectation for that fault (detection, outage per serving SQL
node, shutdowns, recovery, served again). The workload's own checkers (durability, invariant)
need the final reads and judge the whole history instead (``check_run``).
"""

from __future__ import annotations

from ..history import History
from .judge import check_history
from .verdict import Verdict, compose


def _step_run(run: dict, step: dict) -> dict:
    """The record a one-fault scenario would have had for this step."""
    t0, t1 = step["begin"], step["end"]
    inside = [e for e in run.get("events") or [] if e.get("t") is None or t0 - 1 <= e["t"] <= t1]
    return {**{k: run.get(k) for k in ("version", "engine", "topology", "seed", "via_proxy")},
            "expectation": step.get("expectation"), "marks": step.get("marks") or {},
            "windows": step.get("windows") or [], "check_options": step.get("check_options") or {},
            "cluster_samples": [s for s in run.get("cluster_samples") or [] if t0 <= s["t"] <= t1],
            "events": None if run.get("events") is None else inside}


def check(history: History, run: dict, options: dict | None = None) -> Verdict:
    """``faults``: every step of ``run`` judged on its span (``check_history`` on the slice,
    without the workload's checkers); valid when every step is."""
    per = []
    for step in run.get("steps") or []:
        sub = history.between(step["begin"], step["end"])
        srun = _step_run(run, step)
        v = check_history(sub, srun["windows"], {**(options or {}), **srun["check_options"]}, run=srun,
                          workload_checks=False)
        per.append({"index": step.get("index"), "scenario": step.get("scenario"), "family": step.get("family"),
                    "targets": step.get("targets"), "begin": step["begin"], "end": step["end"],
                    "ops": v.ops, "valid": v.valid, "summary": v.summary,
                    "objectives": (v.checks["expectation"].details.get("objectives")
                                   if "expectation" in v.checks else None)})
    bad = [p for p in per if p["valid"] is not True]
    kinds = sorted({p["scenario"] for p in per})
    valid = compose(p["valid"] for p in per) if per else "unknown"  # no fault played: nothing shown
    if not per:
        summ = "no fault was played"
    elif bad:
        summ = f"{len(bad)} of {len(per)} faults missed: " + "; ".join(
            f"#{p['index']} {p['scenario']}: " + " | ".join(s for s in p["summary"] if ": valid:" not in s)
            for p in bad)
    else:
        summ = f"all {len(per)} faults of {len(kinds)} kinds met their expectation ({', '.join(kinds)})"
    return Verdict("faults", valid, summ, {"faults": len(per), "kinds": kinds, "failed": len(bad), "steps": per},
                   lift=("faults", "kinds", "failed"))


def whole_run_options(run: dict) -> dict:
    """Check options of the whole history from its steps': every whole-cluster crash (with the
    widest loss window any promised) and every error class a step allowed."""
    opts: dict = {}
    crashes, window, allowed = [], None, set()
    for step in run.get("steps") or []:
        o = step.get("check_options") or {}
        if o.get("cluster_crash_at") is not None:
            at = o["cluster_crash_at"]
            crashes += at if isinstance(at, list) else [at]
            window = max(window or 0.0, float(o["gcp_loss_window_s"]))
        allowed |= set(o.get("allowed_error_classes") or [])
    if crashes:
        opts.update(cluster_crash_at=crashes, gcp_loss_window_s=window)
    if allowed:
        opts["allowed_error_classes"] = sorted(allowed | {"temporary", "unknown"})
    return opts


__all__ = ["check", "whole_run_options"]
