"""Availability: when could clients get work done, and how fast did they get it back.

Outages are derived from operation times, not from buckets: an outage is a gap between two
consecutive successful completions (``end`` of ok ops, all SQL nodes together, or one SQL node)
longer than the outage threshold. Its start is the completion of the last ok op before the gap
(the last proof that the cluster served clients), its end the completion of the first ok op after
it. A gap that reaches the end of the history is ``open``; one that begins at the first op
``at_start``. Boundaries are therefore exact to the recorded op times.

The threshold is ``max(min_outage_s, outage_gap_factor * p99 of the gaps between successes in the
baseline phase)`` so a slow or sparse workload does not report its normal pauses as outages.
"""

from __future__ import annotations

import math

import numpy as np

from ..history import CLASSES, FINAL_PROCESS, TYPES
from .frame import FAIL, INFO, OK, Frame
from .verdict import UNKNOWN, Verdict

MAX_OUTAGES_LISTED = 100


def _r(x, nd=6):
    return None if x is None or not math.isfinite(x) else round(float(x), nd)


def baseline_gaps(ok_end: np.ndarray, base_mask: np.ndarray | None) -> tuple[float, float] | None:
    """(p99, longest) of the gaps between successes in the baseline (None: fewer than 11)."""
    e = ok_end if base_mask is None else ok_end[base_mask]
    if len(e) < 11:
        return None
    gaps = np.diff(e)
    del e
    longest = float(gaps.max())
    return float(np.percentile(gaps, 99, overwrite_input=True)), longest


def threshold_for(ok_end: np.ndarray, base_mask: np.ndarray | None, opts: dict) -> float:
    """Outage threshold from the gaps between successes in the baseline."""
    return _threshold(baseline_gaps(ok_end, base_mask), opts)


def _threshold(gaps: tuple[float, float] | None, opts: dict) -> float:
    th = float(opts["min_outage_s"])
    return th if gaps is None else max(th, float(opts["outage_gap_factor"]) * gaps[0])


def find_outages(ok_end: np.ndarray, span_start: float, span_end: float, threshold: float) -> list[dict]:
    """Gaps longer than threshold between consecutive successes within [span_start, span_end]."""
    pts = np.concatenate(([span_start], ok_end, [span_end]))
    gaps = np.diff(pts)
    last = len(pts) - 2
    out = []
    for i in np.flatnonzero(gaps > threshold):
        s, e = float(pts[i]), float(pts[i + 1])
        out.append({"start": _r(s), "end": _r(e), "duration_s": _r(e - s),
                    "at_start": bool(i == 0), "open": bool(i == last)})
    return out


def _overlaps(o: dict, windows) -> list[int]:
    res = []
    for k, w in enumerate(windows):
        wend = math.inf if w.end is None else w.end
        if o["start"] <= wend and o["end"] >= w.start:
            res.append(k)
    return res


def recovered_after(ok_end: np.ndarray, heal: float, t_finish: float, need: float, window_s: float) -> float | None:
    """Earliest c >= heal with at least ``need`` successes in (c, c + window_s]; c - heal."""
    if need <= 0:
        return None
    later = ok_end[ok_end > heal + window_s]
    cand = np.concatenate(([heal], later - window_s))
    cand = cand[cand + window_s <= t_finish + 1e-12]
    if len(cand) == 0:
        return None
    counts = np.searchsorted(ok_end, cand + window_s, "right") - np.searchsorted(ok_end, cand, "right")
    hit = np.flatnonzero(counts >= need - 1e-9)
    if len(hit) == 0:
        return None
    return float(cand[hit[0]] - heal)


def series(fr: Frame, bucket_s: float) -> dict:
    if fr.n == 0:
        return {"t0": 0.0, "bucket_s": bucket_s, "ok": [], "fail": [], "info": [], "success_rate": [],
                "ok_by_node": {}}
    t0 = math.floor(fr.t_begin / bucket_s) * bucket_s
    eps = 1e-9  # an end exactly on a boundary belongs to the bucket it opens, despite float error
    nb = int(math.floor((fr.t_finish - t0) / bucket_s + eps)) + 1
    if nb > 5_000_000:
        raise ValueError(f"bucket of {bucket_s * 1000:g} ms gives {nb} buckets; use a wider bucket")
    x = fr.end - t0  # in place from here: a long history's temporaries are 8 bytes an op each
    x /= bucket_s
    x += eps
    np.floor(x, out=x)
    idx = x.astype(np.int32)  # nb is bounded below
    del x
    np.clip(idx, 0, nb - 1, out=idx)
    counts = [np.bincount(idx[fr.type == t], minlength=nb) for t in (OK, FAIL, INFO)]
    tot = counts[0] + counts[1] + counts[2]
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(tot > 0, counts[0] / np.maximum(tot, 1), np.nan)
    ok = fr.type == OK
    by_node = {name: np.bincount(idx[ok & (fr.node == k)], minlength=nb).tolist()
               for k, name in enumerate(fr.node_names)}
    return {
        "t0": _r(t0), "bucket_s": bucket_s,
        "ok": counts[0].tolist(), "fail": counts[1].tolist(), "info": counts[2].tolist(),
        "success_rate": [None if math.isnan(x) else round(x, 4) for x in rate.tolist()],
        "ok_by_node": by_node,
    }


def check(fr: Frame, opts: dict) -> Verdict:
    bucket_s = float(opts["bucket_ms"]) / 1000.0
    if fr.n == 0:
        return Verdict("availability", UNKNOWN, "no operations in the history",
                       {"ops": {"ok": 0, "fail": 0, "info": 0}, "outage_count": 0, "longest_outage_s": None,
                        "outages": [], "per_node": {}, "faults": [], "series": series(fr, bucket_s),
                        "reason": "no operations"})
    # The final reads are the checkers' step after the load stopped, not load: the pause before
    # them is not an outage.
    load = fr.process != FINAL_PROCESS
    ok = (fr.type == OK) & load
    ok_end = fr.end[ok]  # sorted: the frame is in completion order
    base = fr.phase[ok] == 0
    n_ok, n_fail, n_info = int(ok.sum()), int((fr.type == FAIL).sum()), int((fr.type == INFO).sum())
    t0, t1 = fr.t_begin, fr.t_finish

    th = threshold_for(ok_end, base, opts)
    outs = find_outages(ok_end, t0, float(fr.end[load][-1]) if load.any() else t1, th)
    for o in outs:
        o["windows"] = _overlaps(o, fr.windows)
    longest = max((o["duration_s"] for o in outs), default=0.0)

    # Per SQL node (ops without a node, e.g. never connected, belong to none).
    nodes = {}
    for code, name in enumerate(fr.node_names):
        m = (fr.node == code) & load
        if not m.any():
            continue
        mok = m & ok
        nend = fr.end[mok]
        gaps = baseline_gaps(nend, fr.phase[mok] == 0)
        nth = _threshold(gaps, opts)
        no = find_outages(nend, float(fr.start[m].min()), float(fr.end[m][-1]), nth)
        for o in no:
            o["windows"] = _overlaps(o, fr.windows)
        nodes[name] = {
            "ops": int(m.sum()), "ok": int(mok.sum()), "threshold_s": _r(nth),
            "baseline_gap_max_s": None if gaps is None else _r(gaps[1]),
            "outage_count": len(no), "longest_outage_s": max((o["duration_s"] for o in no), default=0.0),
            "outages": no[:MAX_OUTAGES_LISTED],
        }

    # Baseline throughput, for "back to 90 %".
    a, b = fr.phase_bounds
    base_from, base_to = t0, min(a, t1)
    base_rate = None
    if base_to - base_from >= float(opts["recovery_window_s"]):
        n_base = int(np.count_nonzero((ok_end >= base_from) & (ok_end < base_to)))
        base_rate = n_base / (base_to - base_from)
    frac, win_s = float(opts["recovery_fraction"]), float(opts["recovery_window_s"])
    need = None if not base_rate else frac * base_rate * win_s

    nonok = np.flatnonzero(~ok)
    nonok_end = fr.end[nonok]
    faults = []
    for k, w in enumerate(fr.windows):
        d = {"index": k, "kind": w.kind, "start": w.start, "end": w.end, "targets": list(w.targets)}
        j = np.searchsorted(nonok_end, w.start, "left")
        if j < len(nonok):
            i = int(nonok[j])
            d["first_error_s"] = _r(fr.end[i] - w.start)
            d["first_error"] = _op_brief(fr, i)
            q = np.searchsorted(ok_end, fr.end[i], "right")
            d["first_ok_after_error_s"] = _r(ok_end[q] - w.start) if q < len(ok_end) else None
        else:
            d["first_error_s"] = None
            d["first_error"] = None
            d["first_ok_after_error_s"] = None
        wend = t1 if w.end is None else w.end
        inw = (fr.end >= w.start) & (fr.end <= wend)
        d["ops"] = {"ok": int((inw & ok).sum()), "fail": int((inw & (fr.type == FAIL)).sum()),
                    "info": int((inw & (fr.type == INFO)).sum())}
        d["longest_outage_s"] = max((o["duration_s"] for o in outs if k in o["windows"]), default=0.0)
        d["throughput_recovered_s"] = (_r(recovered_after(ok_end, w.end, t1, need, win_s))
                                       if w.end is not None and need else None)
        faults.append(d)

    recovered = None
    if fr.windows and math.isfinite(b) and need:
        recovered = _r(recovered_after(ok_end, b, t1, need, win_s))

    details = {
        "ops": {"ok": n_ok, "fail": n_fail, "info": n_info},
        "success_rate": round(n_ok / fr.n, 6),
        "outage_threshold_s": _r(th),
        "outage_count": len(outs),
        "longest_outage_s": longest,
        "total_outage_s": _r(sum(o["duration_s"] for o in outs)),
        "outages": outs[:MAX_OUTAGES_LISTED],
        "per_node": nodes,
        "baseline_throughput_ops_s": _r(base_rate, 3),
        "throughput_recovered_s": recovered,
        "recovery_fraction": frac,
        "faults": faults,
        "series": series(fr, bucket_s),
    }
    valid: bool | str = True
    limit = opts.get("max_outage_s")
    notes = []
    if limit is not None and longest > float(limit):
        valid = False
        notes.append(f"longest outage {longest:.3f} s exceeds max_outage_s {float(limit):g}")
    if fr.windows and math.isfinite(b) and need and recovered is None:
        notes.append(f"throughput never got back to {frac:.0%} of baseline after the last heal")
    if fr.windows and math.isfinite(b) and not need:
        notes.append("no baseline throughput to compare recovery with")
    details["notes"] = notes
    summ = (f"{n_ok}/{fr.n} ok ({n_ok / fr.n:.1%}); {len(outs)} outage(s) > {th:.3f} s, "
            f"longest {longest:.3f} s")
    if recovered is not None:
        summ += f"; throughput back to {frac:.0%} {recovered:.3f} s after heal"
    if notes:
        summ += "; " + "; ".join(notes)
    return Verdict("availability", valid, summ, details,
                   lift=("success_rate", "outage_count", "longest_outage_s", "throughput_recovered_s"))


def _op_brief(fr: Frame, i: int) -> dict:
    e, c = int(fr.errno[i]), int(fr.ecode[i])
    n = int(fr.node[i])
    return {"type": TYPES[int(fr.type[i])], "f": fr.f_names[int(fr.f[i])], "end": _r(fr.end[i]),
            "node": fr.node_names[n] if n >= 0 else None, "process": int(fr.process[i]),
            "errno": None if e in (0, -1) else e, "engine_code": None if c in (0, -1) else c,
            "class": CLASSES[int(fr.ecls[i])]}
