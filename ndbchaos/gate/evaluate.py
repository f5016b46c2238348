"""Judging scenario runs against a gate: measured value, limit and PASS / WARN / FAIL per
objective, from each run's record alone (the history with its run header), so the live session
and ``ndbchaos gate`` on saved results give the same answer.

A run is ``(test_id, markers, history)``; its verdict is ``check_run(history, options)``, with
the options the gate needs (``throughput_back_pct``). A scenario the gate names that did not run
is NOT EVALUATED, never passed.
"""

from __future__ import annotations

import fnmatch

import math
from dataclasses import dataclass, field

import numpy as np

from ..checks import UNKNOWN, RunVerdict, check_run
from ..errors import UsageError, shown
from ..txn.check import holds
from ..history import OK, History
from .spec import OBJECTIVES, Gate, matches

PASS, WARN, FAIL, NOT_EVALUATED = "PASS", "WARN", "FAIL", "NOT EVALUATED"
#: rows every scenario gets whatever the file says: they judge the run, not the gate's objectives
_ALWAYS = ("safety: ", "scenario verdict")


@dataclass
class Run:
    test_id: str  # test_datanode_loss[kill_one_data_node]
    markers: list[str]
    history: History
    names: list[str] = field(default_factory=list)  # other ids it answers to (scenario name, node id)
    source: str = ""  # the file it was read from (offline), for an error naming it

    @property
    def ids(self) -> list[str]:
        return [self.test_id, *self.names]


@dataclass
class Row:
    scenario: str
    objective: str
    measured: object
    limit: object
    status: str
    severity: str = "fail"
    note: str = ""

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _r(x):
    return round(x, 3) if isinstance(x, float) and math.isfinite(x) else x


def measure(run: Run, verdict: RunVerdict) -> dict:
    """Every figure an objective can bound, from the run's record and verdict."""
    av = verdict.availability
    lat = verdict.latency
    err = verdict.errors
    exp = verdict.expectation
    tx = verdict.transactions
    record = run.history.run or {}
    plan = record.get("expectation") or {}
    marks = record.get("marks") or {}

    def objective(name):
        o = exp.objective(name) if exp is not None else None
        return None if o is None else o.measured

    every = err.all if err is not None else None
    m: dict = {
        "outage_s": av.longest_outage_s if av else None,
        "outage_per_node_s": {n: (av.per_node.get(n) if av else None) for n in plan.get("serving") or []},
        "throughput_back_s": av.throughput_recovered_s if av else None,
        "detection_s": objective("detection"),
        "recovery_s": objective("recovery"),
        "first_success_s": _first_success(run.history, marks.get("in_place")),
        "error_classes": sorted(k for k, n in every.by_class.items() if n) if every else [],
        "error_codes": sorted({c for e in every.codes for c in (e.errno, e.engine_code) if c is not None})
        if every else [],
        "expectation_valid": verdict.validity("expectation"),
        "cluster": None if not marks else ("stops" if marks.get("stopped_serving") is not None else "survives"),
        "safety": {**{k: verdict.validity(k) for k in ("durability", "invariant") if k in verdict.checks},
                   # a transactional run's acknowledged appends missing from its final read
                   **({"transactions durability": not tx.lost} if tx is not None else {})},
        "txn_found": tx.found if tx is not None and tx.decided else None,
        "verdict_valid": verdict.valid,
    }
    proc = verdict.procedure
    played = [st for st in (proc.steps if proc is not None else []) if st.outcome != "skipped"]
    m["step_outage_s"] = {st.name: st.longest_outage_s for st in played}
    m["step_p99_ms"] = {st.name: st.p99_ms for st in played}
    for q in ("p50", "p99", "max"):
        per = {}
        for ph, d in ({**lat.phases, "all": lat.all} if lat else {}).items():
            if d.count:
                per[ph] = d.quantile(q)
                for f, fd in d.by_f.items():
                    if fd.count:
                        per[f"{ph}.{f}"] = fd.quantile(q)
        m[f"latency_{q}_ms"] = per
    for key, field_ in (("failed_share", "fail"), ("indeterminate_share", "info")):
        per = {}
        for ph, d in ({**err.phases, "all": err.all} if err else {}).items():
            if d.ops:
                per[ph] = round(getattr(d, field_) / d.ops, 6)
        m[key] = per
    return m


def _first_success(h: History, in_place) -> float | None:
    if in_place is None:
        return None
    c = h.cols
    typ, start, end = (np.frombuffer(x, dtype=d) for x, d in ((c.type, np.uint8), (c.start, np.float64),
                                                               (c.end, np.float64)))
    ends = end[(typ == OK) & (start >= in_place)]
    return _r(float(ends.min()) - in_place) if len(ends) else None


def _status(ok, severity: str) -> str:
    if ok is None or ok == UNKNOWN:
        return NOT_EVALUATED
    return PASS if ok else (WARN if severity == "warn" else FAIL)


def judge(run: Run, gate: Gate, baseline: dict | None = None,
          verdict: RunVerdict | None = None) -> tuple[list[Row], dict]:
    """The rows of one run, and its measurements (what a later run's regression compares with).
    ``verdict``: the run's own verdict (``check_run`` of its record), reused unless the gate asks
    for another throughput level, which needs the availability checker again."""
    objectives, severity, regression = gate.for_scenario(run.ids, run.markers)
    pct = objectives.get("throughput_back_pct")
    if verdict is None or pct is not None:
        verdict = check_run(run.history, None if pct is None else {"recovery_fraction": pct / 100.0})
    av = verdict.availability
    pct = 100.0 * (av.recovery_fraction if av is not None else 0.9)
    m = measure(run, verdict)
    rows: list[Row] = []
    sid = run.test_id

    def row(name, measured, limit, ok, note=""):
        rows.append(Row(sid, name, _r(measured), limit, _status(ok, severity.get(name.split(" ")[0], "fail")),
                        severity.get(name.split(" ")[0], "fail"), note))

    # never negotiable: a lost acknowledged write or a broken invariant fails whatever the file says
    for k, v in m["safety"].items():
        rows.append(Row(sid, f"safety: {k}", v, True, PASS if v is True else FAIL, "fail",
                        "no lost acknowledged write and no broken invariant (not configurable)"))
    rows.append(Row(sid, "scenario verdict", m["verdict_valid"], True, PASS if m["verdict_valid"] is True else FAIL,
                    "fail", "the scenario's own checks (a failed scenario is also a failed test)"))
    for name, limit in objectives.items():
        kind = OBJECTIVES[name][0]
        if name == "throughput_back_pct":
            continue
        if kind == "s" and name == "outage_per_node_s":
            per = m[name]
            if not per:
                row(name, None, limit, None, "no SQL node was expected to keep serving")
            for node, v in per.items():
                row(f"{name} {node}", v, limit, None if v is None else v <= limit)
        elif kind == "s":
            v = m[name]
            note = f"at {pct:g} % of baseline" if name == "throughput_back_s" else ""
            row(name, v, limit, None if v is None else v <= limit, note)
        elif kind in ("ms_by_phase", "share_by_phase"):
            for ph, lim in limit.items():
                v = m[name].get(ph)
                row(f"{name} {ph}", v, lim, None if v is None else v <= lim)
        elif kind in ("s_by_step", "ms_by_step"):
            steps = m[name]
            if not steps:
                row(name, None, limit, None, "not an operations run (no procedure step)")
                continue
            for step, v in steps.items():
                lim = next((x for pat, x in limit.items() if fnmatch.fnmatchcase(step, pat)), None)
                if lim is not None:
                    row(f"{name} {step}", v, lim, None if v is None else v <= lim)
        elif kind == "classes":
            bad = [c for c in m["error_classes"] if c not in limit]
            row(name, m["error_classes"], limit, not bad, f"not allowed: {', '.join(bad)}" if bad else "")
        elif kind == "codes":
            bad = [c for c in m["error_codes"] if c not in limit]
            row(name, m["error_codes"], limit, not bad, f"not allowed: {bad}" if bad else "")
        elif name == "arbitration":
            v = m["expectation_valid"]
            row(name, v, True, None if v in (None, UNKNOWN) else v is True,
                "the engine's expectation checker (who serves, shutdowns, exit codes, arbitrator, events)")
        elif name == "cluster":
            row(name, m["cluster"], limit, None if m["cluster"] is None else m["cluster"] == limit)
        elif name == "consistency_models":
            found = m["txn_found"]
            if found is None:
                row(name, None, limit, None, "not a transactional run")
                continue
            forbidden = sorted(k for k in found if holds([k], limit) is False)
            held = holds(found, limit)
            # never negotiable: an anomaly the declared models forbid fails like a lost write
            rows.append(Row(sid, name, forbidden or "none", limit,
                            NOT_EVALUATED if held == UNKNOWN else (PASS if held is True else FAIL), "fail",
                            "anomalies found: " + (", ".join(f"{k} x{n}" for k, n in found.items()) or "none")))
    for name, p in regression.items():
        base = (baseline or {}).get(sid, {}).get(name)
        now = m.get(name)
        if base is None or now is None:
            rows.append(Row(sid, f"regression {name}", _r(now), None, NOT_EVALUATED,
                            severity.get(f"regression {name}", "fail"),
                            "no baseline figure for this scenario" if base is None else "not measured"))
            continue
        lim = _r(base * (1 + p / 100.0))
        sev = severity.get(f"regression {name}", "fail")
        rows.append(Row(sid, f"regression {name}", _r(now), lim, _status(now <= lim, sev), sev,
                        f"baseline {base:g} + {p:g} %"))
    figures = {k: v for k, v in m.items() if k in OBJECTIVES and isinstance(v, (int, float))}
    return rows, figures


def evaluate(gate: Gate, runs: list[Run], expected: list[tuple[list[str], list[str]]] | None = None,
             baseline: dict | None = None,
             not_applicable: list[tuple[list[str], list[str]]] | None = None) -> dict:
    """The gate's result over a session: every run judged, and every scenario the gate names that
    did not run listed as NOT EVALUATED. ``expected``: (ids, markers) of every scenario that could
    have run (the collected catalogue); without it, entries that matched no run are listed.
    ``not_applicable``: scenarios collected but declared for other engines; an entry that names
    only those is about another engine, not a scenario that failed to run."""
    rows: list[Row] = []
    figures = {}
    for run in runs:
        try:
            r, f = judge(run, gate, baseline)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
            if not run.source:
                raise  # a record this session wrote: a defect of the framework, not the user's input
            # a saved run record whose header is not what a run writes: one line naming its file
            raise UsageError(f"{shown(run.source)}: its run header is not one a run writes "
                             f"({type(e).__name__}: {' '.join(str(e).split())})") from None
        rows += r
        figures[run.test_id] = f
    ran = {run.test_id for run in runs}
    for ids, markers in expected or []:
        if ids[0] not in ran and any(matches(e, ids, markers) for e in gate.entries):
            rows.append(Row(ids[0], "(all)", None, None, NOT_EVALUATED, "fail", "did not run (deselected or skipped)"))
    for e in gate.entries:
        if not any(matches(e, run.ids, run.markers) for run in runs) and not any(
                matches(e, ids, mk) for ids, mk in [*(expected or []), *(not_applicable or [])]):
            rows.append(Row(" | ".join(e.patterns), "(all)", None, None, NOT_EVALUATED, e.severity,
                            "no scenario of this run matches"))
    return {**summarize(gate, rows), "figures": figures}


def judged(rows: list[Row]) -> list[str]:
    """The scenarios on which at least one of the gate's own objectives was evaluated (the safety
    and scenario verdict rows every run gets do not count: they judge the run, not the gate)."""
    return sorted({r.scenario for r in rows if r.status != NOT_EVALUATED and r.objective != "(all)"
                   and not r.objective.startswith(_ALWAYS)})


def summarize(gate: Gate, rows: list[Row]) -> dict:
    """Result, rows and counts of a set of rows (a session's, or one scenario's). ``result``:
    ``fail`` (a row of severity fail failed), else ``not evaluated`` when no objective of the gate
    could be evaluated on any scenario (never a pass), else ``warn`` or ``pass``."""
    statuses = {r.status for r in rows}
    some = judged(rows)
    result = "fail" if FAIL in statuses else "not evaluated" if not some else "warn" if WARN in statuses else "pass"
    return {"gate": gate.path, "result": result, "rows": [r.to_json() for r in rows], "judged": len(some),
            "counts": {s: sum(1 for r in rows if r.status == s) for s in (PASS, WARN, FAIL, NOT_EVALUATED)}}


def table(result: dict) -> str:
    """One text table: scenario, objective, measured, limit, status."""
    head = ("scenario", "objective", "measured", "limit", "status")
    rows = [head] + [(r["scenario"], r["objective"], _fmt(r["measured"]), _fmt(r["limit"]),
                      r["status"] + (f" ({r['note']})" if r["note"] and r["status"] != PASS else ""))
                     for r in result["rows"]]
    w = [max(len(str(r[i])) for r in rows) for i in range(4)]
    lines = ["  ".join(str(c).ljust(w[i]) if i < 4 else str(c) for i, c in enumerate(r)) for r in rows]
    c = result["counts"]
    lines.append(f"gate {result['result'].upper()}: {c[PASS]} passed, {c[WARN]} warned, {c[FAIL]} failed, "
                 f"{c[NOT_EVALUATED]} not evaluated ({result['gate']})")
    return "\n".join(lines)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_fmt(x)}" for k, x in v.items())
    if isinstance(v, list):
        return ",".join(map(str, v)) or "none"
    return str(v)


__all__ = ["FAIL", "NOT_EVALUATED", "PASS", "Row", "Run", "WARN", "evaluate", "judge", "judged", "measure",
           "summarize", "table"]
