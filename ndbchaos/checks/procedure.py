"""An operator's procedure under load, step by step: did each step end as the engine's
documentation allows, what did the clients see while it ran, and did the procedure achieve what
it must.

An ``operations`` scenario runs a procedure (online add node group, backup and restore, rolling
configuration change, online schema change) under steady client load, sometimes with a fault
injected during a step. Its driver records ``run["procedure"]`` (docs/history-format.md 1.5):
per step its span on the run clock, the outcome the engine reported and the outcomes its
documentation allows there (``expected``), the engine's own words, the fault injected during it
and an optional bound on the clients' outage (``max_outage_s``); then what the procedure must
have achieved, observed after it (``outcomes``, each holding, not holding or not observed).

Judged here:

* a step whose outcome is not among its ``expected`` ones is invalid: the engine did what its
  documentation does not allow at that point (an add node group that failed where it must
  succeed, a backup that completed where a fault must abort it);
* the clients during each step, from the history: the operations that ended in its span
  ``[start, end]`` (``ok``, ``fail``, ``info``; the error classes as the errors checker names
  them, the workload's own refusals left out), the longest time with no successful operation on
  any SQL node (the availability checker's outages, within the span and its edges: the gap from
  the step's start to the first success counts, and the one from the last success to its end;
  the threshold from the baseline's gaps between successes, as availability takes it from its
  own), the p99 latency of its ok operations (as the latency checker measures it, corrected for
  coordinated omission when it is), its throughput (ok/s) and that throughput's ratio to the
  baseline's. A step whose longest outage exceeds its ``max_outage_s`` is invalid; the outage
  threshold of a bounded step is at most its bound, so the bound is always judged;
* an outcome that does not hold (``holds`` false) is invalid; one not observed (null) makes the
  verdict "unknown" unless something is invalid.

The baseline is the run's phase named "baseline" (the driver's; else the frame's: before the first
fault window, the whole run without one), cut at the first step's start: the procedure's own load
is no baseline. Its
throughput is None when there is no such span. The final reads are not load: they are left out
everywhere. Valid: False as above; "unknown" with an outcome not observed or no step at all; else
True. A record that lacks a field, or holds one of the wrong type, raises ValueError naming it.
"""

from __future__ import annotations

import math

import numpy as np

from ..history import FINAL_PROCESS
from .availability import find_outages, threshold_for
from .errors import _application, _block
from .frame import FAIL, INFO, OK, Frame
from .latency import HIGHEST_US, bin_counts, corrected_counts, expected_interval_us, histogram_from_counts
from .verdict import UNKNOWN, Verdict

#: the outcomes a step may end with
OUTCOMES = ("done", "failed", "aborted", "skipped")

LIFT = ("procedure", "steps_failed", "outcomes_missed", "outcomes_unknown", "longest_outage_s")


def _r(x, nd=6):
    return None if x is None or not math.isfinite(x) else round(float(x), nd)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _bad(where: str, d: dict, key: str, what: str) -> ValueError:
    if key not in d:
        return ValueError(f"{where}.{key} is missing ({what})")
    return ValueError(f"{where}.{key} must be {what}, not {str(repr(d[key]))[:60]}")


def _text(d: dict, key: str, where: str, required: bool) -> str | None:
    v = d.get(key)
    if v is None and not required:
        return None
    if not isinstance(v, str) or (required and not v.strip()):
        raise _bad(where, d, key, "a non-empty string" if required else "a string or null")
    return v


def _time(d: dict, key: str, where: str, optional: bool = False) -> float | None:
    v = d.get(key)
    if v is None and optional:
        return None
    if not _finite(v):
        raise _bad(where, d, key, "a number (seconds on the run clock)" + (" or null" if optional else ""))
    return float(v)


def _object(d, where: str) -> dict:
    if not isinstance(d, dict):
        raise ValueError(f"{where} must be an object, not {type(d).__name__}")
    return d


def _step(k: int, s) -> dict:
    w = f"procedure.steps[{k}]"
    s = _object(s, w)
    name = _text(s, "name", w, True)
    start, end = _time(s, "start", w), _time(s, "end", w)
    if end < start:
        raise ValueError(f"{w}.end {end} is before its start {start}")
    outcome = s.get("outcome")
    if not isinstance(outcome, str) or outcome not in OUTCOMES:
        raise _bad(w, s, "outcome", f"one of {', '.join(OUTCOMES)}")
    expected = s.get("expected")
    if (not isinstance(expected, list) or not expected
            or not all(isinstance(x, str) and x in OUTCOMES for x in expected)):
        raise _bad(w, s, "expected", f"a non-empty list of {', '.join(OUTCOMES)}")
    bound = s.get("max_outage_s")
    if bound is not None and (not _finite(bound) or bound < 0):
        raise _bad(w, s, "max_outage_s", "a number of seconds >= 0 or null")
    return {"name": name, "start": start, "end": end, "outcome": outcome, "expected": list(expected),
            "detail": _text(s, "detail", w, False) or "", "fault": _text(s, "fault", w, False),
            "max_outage_s": None if bound is None else float(bound)}


def _outcome(k: int, o) -> dict:
    w = f"procedure.outcomes[{k}]"
    o = _object(o, w)
    name = _text(o, "name", w, True)
    h = o.get("holds", 0)  # the key must be there, even when null
    if not (h is True or h is False or h is None):
        raise _bad(w, o, "holds", "true, false or null")
    return {"name": name, "holds": o["holds"], "detail": _text(o, "detail", w, False) or ""}


def parse(procedure) -> dict:
    """The run record's ``procedure``, checked field by field: ``{"name", "steps", "outcomes"}``
    with every step's and outcome's fields (optional ones filled in). Raises ValueError naming the
    first field missing or of the wrong type."""
    p = _object(procedure, "procedure")
    name = _text(p, "name", "procedure", True)
    steps, outcomes = p.get("steps"), p.get("outcomes")
    if not isinstance(steps, list):
        raise _bad("procedure", p, "steps", "a list of steps")
    if not isinstance(outcomes, list):
        raise _bad("procedure", p, "outcomes", "a list of outcomes (empty when none is observed)")
    return {"name": name, "steps": [_step(k, s) for k, s in enumerate(steps)],
            "outcomes": [_outcome(k, o) for k, o in enumerate(outcomes)]}


def baseline(fr: Frame, ok_end: np.ndarray, phases, before: float | None) -> tuple[list | None, float | None]:
    """(the baseline span, its throughput in ok/s) or (None, None): the run's phase "baseline"
    (else the frame's), cut at ``before`` (the first step's start)."""
    span = None
    for ph in phases or []:
        if isinstance(ph, dict) and ph.get("name") == "baseline" and _finite(ph.get("start")) \
                and _finite(ph.get("end")):
            span = [float(ph["start"]), float(ph["end"])]
    if span is None and fr.n:
        span = fr.phase_spans().get("baseline")
    if span is None:
        return None, None
    a, b = span[0], span[1] if before is None else min(span[1], before)
    if not b > a:
        return None, None
    n = int(np.count_nonzero((ok_end >= a) & (ok_end < b)))
    return [_r(a), _r(b)], n / (b - a)


def p99_ms(fr: Frame, mask: np.ndarray, interval_us: int | None) -> float | None:
    """p99 latency (ms) of the ok operations selected by ``mask``, as the latency checker
    measures it (HdrHistogram bins, corrected for coordinated omission with ``interval_us``)."""
    sel = mask & (fr.type == OK)
    if not sel.any():
        return None
    us = np.rint((fr.end[sel] - fr.start[sel]) * 1e6).astype(np.int64)
    np.clip(us, 0, HIGHEST_US, out=us)
    counts = bin_counts(us)
    if interval_us is not None:
        counts = counts + corrected_counts(us, interval_us)[0]
    return round(histogram_from_counts(counts).get_value_at_percentile(99) / 1000.0, 3)


def _impact(fr: Frame, st: dict, load: np.ndarray, engine: np.ndarray, ok_end: np.ndarray, th: float,
            interval: int | None, base_rate: float | None, nex: int) -> dict:
    """The clients during one step: the operations that ended in its span."""
    s, e, bound = st["start"], st["end"], st["max_outage_s"]
    ends = ok_end[np.searchsorted(ok_end, s, "left"):np.searchsorted(ok_end, e, "right")]
    sth = th if bound is None else min(th, bound)
    outs = find_outages(ends, s, e, sth)
    inside = load & (fr.end >= s) & (fr.end <= e)
    blk = _block(fr, inside & engine)
    dur = e - s
    tput = len(ends) / dur if dur > 0 else None
    return {
        "ok": int(len(ends)), "fail": int(np.count_nonzero(inside & (fr.type == FAIL))),
        "info": int(np.count_nonzero(inside & (fr.type == INFO))),
        "error_classes": {k: n for k, n in blk["by_class"].items() if n},
        "error_codes": [{k: c[k] for k in ("errno", "engine_code", "class", "count")} for c in blk["codes"][:nex]],
        "outage_threshold_s": _r(sth), "outage_count": len(outs),
        "longest_outage_s": max((o["duration_s"] for o in outs), default=0.0), "outages": outs[:nex],
        "p99_ms": p99_ms(fr, inside, interval),
        "throughput_ops_s": _r(tput, 3),
        "throughput_ratio": _r(tput / base_rate, 3) if tput is not None and base_rate else None,
    }


def check(fr: Frame, opts: dict, procedure: dict, phases: list | None = None) -> Verdict:
    """``procedure``: the run record's (module docstring); ``phases``: the run's recorded phases
    (its "baseline" is the throughput's reference)."""
    p = parse(procedure)
    nex = max(0, int(opts.get("examples", 20)))
    load = fr.process != FINAL_PROCESS
    ok = (fr.type == OK) & load
    ok_end = fr.end[ok]  # sorted: the frame is in completion order
    base_span, base_rate = baseline(fr, ok_end, phases, p["steps"][0]["start"] if p["steps"] else None)
    # the outage threshold from the baseline's gaps between successes; without a baseline, from the
    # frame's phase, as the availability checker does (without a fault window: the whole run)
    th = threshold_for(ok_end, fr.phase[ok] == 0 if base_span is None
                       else (ok_end >= base_span[0]) & (ok_end < base_span[1]), opts)
    interval, why = expected_interval_us(fr.history.params, opts)
    engine = ~_application(fr)

    steps, bad = [], []
    for k, st in enumerate(p["steps"]):
        fig = _impact(fr, st, load, engine, ok_end, th, interval, base_rate, nex)
        notes = []
        if st["outcome"] not in st["expected"]:
            notes.append(f"ended {st['outcome']} (expected {' or '.join(st['expected'])})")
        if st["max_outage_s"] is not None and fig["longest_outage_s"] > st["max_outage_s"]:
            notes.append(f"outage {fig['longest_outage_s']:.3f} s > max_outage_s {st['max_outage_s']:g}")
        bad += [f"step {st['name']!r} {n}" for n in notes]
        steps.append({"index": k, **st, "duration_s": _r(st["end"] - st["start"]),
                      "as_expected": st["outcome"] in st["expected"], "valid": not notes, **fig, "notes": notes})
    missed = [o for o in p["outcomes"] if o["holds"] is False]
    unseen = [o for o in p["outcomes"] if o["holds"] is None]
    bad += [f"outcome {o['name']!r} does not hold" + (f" ({o['detail']})" if o["detail"] else "") for o in missed]
    worst = max(steps, key=lambda x: x["longest_outage_s"], default=None)

    details = {
        "procedure": p["name"], "steps": steps, "outcomes": p["outcomes"],
        "steps_failed": sum(1 for s in steps if not s["valid"]),
        "outcomes_missed": len(missed), "outcomes_unknown": len(unseen),
        "longest_outage_s": None if worst is None else worst["longest_outage_s"],
        "outage_threshold_s": _r(th),
        "baseline": base_span, "baseline_throughput_ops_s": _r(base_rate, 3),
        "latency_corrected": interval is not None, "co_correction": why,
    }
    as_expected = sum(1 for s in steps if s["as_expected"])
    summ = (f"{p['name']}: {len(steps)} step(s), {as_expected} as expected; "
            f"{len(p['outcomes']) - len(missed) - len(unseen)}/{len(p['outcomes'])} outcome(s) hold")
    if worst is not None:
        summ += f"; longest outage {worst['longest_outage_s']:.3f} s ({worst['name']})"
    if unseen:
        summ += "; not observed: " + ", ".join(repr(o["name"]) for o in unseen)
    if bad:
        valid: bool | str = False
        summ = "; ".join(bad) + " -- " + summ
    elif unseen or not steps:
        valid = UNKNOWN
        if not steps:
            summ += "; no step was recorded"
    else:
        valid = True
    return Verdict("procedure", valid, summ, details, lift=LIFT)


__all__ = ["OUTCOMES", "baseline", "check", "p99_ms", "parse"]
