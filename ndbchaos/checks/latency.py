"""Latency percentiles of ok operations per phase, through HdrHistogram.

Latency is ``end - start`` of each ok op, recorded in whole microseconds into an HdrHistogram
(1 us .. 1 h, 3 significant digits). Phases are decided by completion time.

Coordinated omission: when the history header says the load was paced (``params["rate"]``,
operations per second per process/connection), a slow op hid the ops its process should have
issued meanwhile. The correction is HdrHistogram's ``record_corrected_value(value,
expected_interval)`` with ``expected_interval = 1 / rate``: a value v also records v - I,
v - 2I, ... down to I. It is computed with numpy (identical bucket counts, thousands of times
faster than calling it per op) and, when applied, the uncorrected figures are reported too.
``params["co_correction"] = false`` or option ``co_correction=False`` turns it off (use that when
the runner already measures from the intended start time).

Judged only against option ``max_p99_ms`` (a bound for every phase, or per phase); without it
the verdict is a measurement and valid.
"""

from __future__ import annotations

import math

import numpy as np
from hdrh.histogram import HdrHistogram

from .frame import OK, PHASES, Frame
from .verdict import UNKNOWN, Verdict

LOWEST_US = 1
HIGHEST_US = 3600 * 1_000_000  # 1 h
SIG_FIGS = 3
_SUB_BITS = 11  # 3 significant digits: 2048 sub-buckets, so values below 2^11 are exact
_MAX_SYNTHETIC = 50_000_000  # cap on corrected samples generated (memory / time bound)


N_BINS = (HIGHEST_US.bit_length() - _SUB_BITS + 1) * 1024 + 1024


_SLICE = 1 << 20


def bin_index(us: np.ndarray) -> np.ndarray:
    """HdrHistogram bucket of integer microsecond values (1 us .. 1 h, 3 significant digits) as
    one flat index: values below 2048 are their own bin; above, a value with bit length L falls
    in sub-bucket ``v >> (L - 11)`` of bucket ``L - 11``."""
    us = us.astype(np.int64, copy=False)
    if len(us) > _SLICE:  # in slices: the temporaries stay small for a long history
        out = np.empty(len(us), dtype=np.int64)
        for lo in range(0, len(us), _SLICE):
            out[lo:lo + _SLICE] = bin_index(us[lo:lo + _SLICE])
        return out
    bits = np.frexp(us.astype(np.float64))[1].astype(np.int64)  # exact bit length below 2^53
    b = np.maximum(bits - _SUB_BITS, 0)
    return np.where(b == 0, us, b * 1024 + (us >> b))


def bin_value(idx: np.ndarray) -> np.ndarray:
    """The lowest value of each flat bin (inverse of ``bin_index`` up to bucket precision)."""
    idx = idx.astype(np.int64, copy=False)
    b = np.maximum(idx // 1024 - 1, 0)
    return np.where(idx < 2048, idx, (idx - b * 1024) << b)


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIG_FIGS)


def bin_counts(us: np.ndarray) -> np.ndarray:
    """Counts per flat bin of integer microsecond values (clipped to the histogram range)."""
    if len(us) == 0:
        return np.zeros(N_BINS, dtype=np.int64)
    return np.bincount(bin_index(np.clip(us, 0, HIGHEST_US)), minlength=N_BINS)


def histogram_from_counts(counts: np.ndarray) -> HdrHistogram:
    h = new_histogram()
    nz = np.flatnonzero(counts)
    rec = h.record_value
    for v, c in zip(bin_value(nz).tolist(), counts[nz].tolist()):
        rec(v, c)
    return h


def corrected_counts(us: np.ndarray, interval_us: int, limit: int = _MAX_SYNTHETIC) -> tuple[np.ndarray, float, bool]:
    """Bin counts and sum of the corrected extra values, built chunk by chunk (bounded memory)."""
    counts = np.zeros(N_BINS, dtype=np.int64)
    total, complete = 0.0, True
    for chunk, ok in _corrected_chunks(us, interval_us, limit):
        counts += bin_counts(chunk)
        total += float(chunk.sum())
        complete = complete and ok
    return counts, total, complete


def _corrected_chunks(us: np.ndarray, interval_us: int, limit: int, chunk: int = 1 << 20):
    if interval_us <= 0:
        return
    big = us[us > interval_us]
    if len(big) == 0:
        return
    k = (big - 1) // interval_us  # extra records: v - j*I for j = 1..k (the last one is <= I)
    complete = int(k.sum()) <= limit
    if not complete:  # keep the largest values' corrections up to the cap
        order = np.argsort(-big, kind="stable")
        keep = np.cumsum(k[order]) <= limit
        big, k = big[order][keep], k[order][keep]
    ends = np.cumsum(k)
    lo = 0
    while lo < len(big):
        # as many owners as fit in about `chunk` samples (at least one)
        hi = max(lo + 1, int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + chunk, "right")))
        kb, vb = k[lo:hi], big[lo:hi]
        n = int(kb.sum())
        owner = np.repeat(np.arange(len(kb)), kb)
        j = np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(kb) - kb, kb) + 1  # 1..k per owner
        yield vb[owner] - j * interval_us, complete
        lo = hi


def _summary(h: HdrHistogram, raw_us: np.ndarray, extra_sum: float = 0.0) -> dict:
    n = h.get_total_count()
    if n == 0:
        return {"count": 0, "p50_ms": None, "p99_ms": None, "p999_ms": None, "max_ms": None, "mean_ms": None}
    return {
        "count": int(n),
        "p50_ms": round(h.get_value_at_percentile(50) / 1000.0, 3),
        "p99_ms": round(h.get_value_at_percentile(99) / 1000.0, 3),
        "p999_ms": round(h.get_value_at_percentile(99.9) / 1000.0, 3),
        # the exact max of the recorded ops (corrected samples are all smaller)
        "max_ms": round(float(raw_us.max()) / 1000.0, 3) if len(raw_us) else None,
        # exact mean of the recorded values (hdrh's get_mean_value walks every bucket in Python)
        "mean_ms": round((float(raw_us.sum()) + extra_sum) / n / 1000.0, 3),
    }


def expected_interval_us(params: dict, opts: dict) -> tuple[int | None, str]:
    """(interval in us, reason) for coordinated-omission correction, or (None, reason)."""
    want = opts.get("co_correction")
    if want is False or params.get("co_correction") is False:
        return None, "disabled"
    rate = params.get("rate")
    if isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate > 0 and math.isfinite(rate):
        return max(1, int(round(1e6 / rate))), f"params.rate = {rate:g} ops/s per process"
    if want is True:
        raise ValueError("co_correction requested but the history params have no positive 'rate'")
    return None, "closed loop (no params.rate)"


def check(fr: Frame, opts: dict) -> Verdict:
    params = fr.history.params
    interval, why = expected_interval_us(params, opts)
    ok = fr.type == OK
    d = fr.end[ok]
    d -= fr.start[ok]
    d *= 1e6
    np.rint(d, out=d)
    us = d.astype(np.int64)
    del d
    np.clip(us, 0, HIGHEST_US, out=us)
    idx = bin_index(us).astype(np.int32)  # flat bins < N_BINS: 4 bytes an op
    phase = fr.phase[ok]
    fcode = fr.f[ok]
    truncated = False

    def stats(mask: np.ndarray) -> dict:
        nonlocal truncated
        sel = us if mask is None else us[mask]
        counts = np.bincount(idx if mask is None else idx[mask], minlength=N_BINS)
        raw = _summary(histogram_from_counts(counts), sel)
        if interval is None:
            return raw
        extra_counts, extra_sum, complete = corrected_counts(sel, interval)
        truncated = truncated or not complete
        out = _summary(histogram_from_counts(counts + extra_counts), sel, extra_sum)
        out["uncorrected"] = raw
        return out

    present = sorted(set(fcode.tolist()))
    phases = {}
    for p, name in enumerate(PHASES):
        if not fr.windows and p > 0:
            continue
        m = phase == p
        d = stats(m)
        if len(present) > 1:
            d["by_f"] = {fr.f_names[c]: stats(m & (fcode == c)) for c in present}
        phases[name] = d
    overall = stats(None)
    if len(present) > 1:
        overall["by_f"] = {fr.f_names[c]: stats(fcode == c) for c in present}
    details = {
        "unit": "ms",
        "corrected": interval is not None,
        "co_correction": why,
        "expected_interval_ms": None if interval is None else interval / 1000.0,
        "phases": phases,
        "all": overall,
    }
    if truncated:
        details["note"] = f"coordinated-omission correction capped at {_MAX_SYNTHETIC} synthetic samples"
    parts = [f"{name} p99 {d['p99_ms']} ms" for name, d in phases.items() if d["count"]]
    summ = (", ".join(parts) or "no ok operations") + (" (CO-corrected)" if interval is not None else "")
    valid, over = _judge_p99(phases, opts.get("max_p99_ms"))
    if over:
        details["over_bound"] = over
        summ = "p99 above the bound: " + "; ".join(f"{o['phase']} {o['p99_ms']} > {o['bound_ms']} ms"
                                                    for o in over) + f" -- {summ}"
    return Verdict("latency", valid, summ, details)


def _judge_p99(phases: dict, bound) -> tuple[bool | str, list[dict]]:
    """Option ``max_p99_ms``: None (a measurement only: valid), a number for every phase, or
    ``{phase: ms}``. Invalid when a phase's p99 is above its bound; "unknown" when a bounded
    phase has no successful operation to measure."""
    if bound is None:
        return True, []
    bounds = bound if isinstance(bound, dict) else {name: bound for name in phases}
    unknown_phase = set(bounds) - set(PHASES)
    if unknown_phase:
        raise ValueError(f"max_p99_ms: unknown phase(s) {sorted(unknown_phase)} (phases: {', '.join(PHASES)})")
    over, unmeasured = [], False
    for name, ms in bounds.items():
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not ms > 0:
            raise ValueError(f"max_p99_ms: the bound of {name} must be a positive number of ms")
        d = phases.get(name)
        if not d or not d["count"]:
            unmeasured = True
        elif d["p99_ms"] > ms:
            over.append({"phase": name, "p99_ms": d["p99_ms"], "bound_ms": ms})
    return (False if over else UNKNOWN if unmeasured else True), over
