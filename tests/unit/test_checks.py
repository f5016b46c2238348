"""The checkers on hand-made histories: clean ones pass, each injected anomaly is found."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ndbchaos.checks import UNKNOWN, Verdict, check_history, compose
from ndbchaos.checks.frame import WindowError
from ndbchaos.history import ErrorInfo, History, HistoryFormatError

E_TMP = ErrorInfo(1297, 4010, "temporary", "Got temporary error 4010 'Node failure' from NDBCLUSTER")
E_UNK = ErrorInfo(2013, None, "unknown", "Lost connection to MySQL server during query")
E_PERM = ErrorInfo(1296, 4350, "permanent", "Got error 4350 'Transaction already aborted' from NDBCLUSTER")


def hist(workload: str, ops, params=None) -> History:
    h = History(workload, params or {})
    for op in ops:
        h.add(*op)
    return h


def run(h, windows=None, **options):
    res = check_history(h, windows, options).to_json()
    json.dumps(res, allow_nan=False)  # always plain JSON
    return res


# -- composition ------------------------------------------------------------------------------

def test_compose_worst_wins():
    assert compose([]) is True
    assert compose([True, True]) is True
    assert compose([True, UNKNOWN, True]) == UNKNOWN
    assert compose([UNKNOWN, False, True]) is False
    assert compose([{"valid": True}, Verdict("x", UNKNOWN, "")]) == UNKNOWN
    assert compose([True, "garbage"]) == UNKNOWN


def test_verdict_json_round_trip_and_validation():
    v = Verdict("durability", False, "lost 1", {"lost": 1, "lost_examples": [5]}, lift=("lost",))
    d = v.to_json()
    assert d == {"name": "durability", "valid": False, "summary": "lost 1", "lost": 1,
                 "details": {"lost": 1, "lost_examples": [5]}}
    assert Verdict.from_json(d).to_json() == d
    with pytest.raises(ValueError):
        Verdict("x", 1, "")
    with pytest.raises(ValueError):
        Verdict("x", True, "", {}, lift=("valid",))


# -- ledger durability ------------------------------------------------------------------------

def ledger_ops(n=10, read_at=5.0, read_ids=None, extra=()):
    ops = [(i % 3, "insert", i, "ok", i * 0.1, i * 0.1 + 0.05, f"sql{i % 2}") for i in range(1, n + 1)]
    ops += list(extra)
    ids = list(range(1, n + 1)) if read_ids is None else read_ids
    ops.append((99, "read", ids, "ok", read_at, read_at + 0.1, "sql0"))
    return ops


def test_ledger_clean_passes():
    res = run(hist("ledger", ledger_ops()))
    d = res["checks"]["durability"]
    assert res["valid"] is True and d["valid"] is True
    assert (d["lost"], d["phantom"], d["indeterminate"]) == (0, 0, 0)
    assert d["details"]["final_read"]["ids"] == 10
    assert set(res["checks"]) == {"availability", "latency", "errors", "durability"}


def test_ledger_lost_write_is_found():
    res = run(hist("ledger", ledger_ops(read_ids=[1, 2, 3, 4, 6, 7, 8, 9, 10])))
    d = res["checks"]["durability"]
    assert res["valid"] is False and d["valid"] is False
    assert d["lost"] == 1 and d["unexplained"] == 1 and d["explained_by_gcp"] == 0
    (ex,) = d["details"]["lost_examples"]
    assert ex["id"] == 5 and ex["end"] == pytest.approx(0.55) and ex["node"] == "sql1"


def test_ledger_phantom_is_found():
    res = run(hist("ledger", ledger_ops(read_ids=list(range(1, 11)) + [999])))
    d = res["checks"]["durability"]
    assert d["valid"] is False and d["phantom"] == 1 and d["details"]["phantom_examples"] == [999]
    assert d["lost"] == 0


def test_phantom_in_an_earlier_read_counts():
    extra = [(98, "read", [1, 777], "ok", 0.3, 0.35, "sql1")]
    d = run(hist("ledger", ledger_ops(extra=extra)))["checks"]["durability"]
    assert d["valid"] is False and d["details"]["phantom_examples"] == [777]


@pytest.mark.parametrize("landed", [True, False])
def test_indeterminate_writes_pass_whether_or_not_they_landed(landed):
    extra = [(5, "insert", 11, "info", 0.2, 0.9, "sql0", E_UNK), (6, "insert", 12, "info", 0.2, 0.9, None, E_UNK)]
    ids = list(range(1, 11)) + ([11, 12] if landed else [])
    d = run(hist("ledger", ledger_ops(read_ids=ids, extra=extra)))["checks"]["durability"]
    assert d["valid"] is True
    assert d["indeterminate"] == 2 and d["lost"] == 0 and d["phantom"] == 0
    assert d["details"]["indeterminate_present"] == (2 if landed else 0)
    assert d["details"]["indeterminate_absent"] == (0 if landed else 2)


def test_indeterminate_then_ok_retry_counts_as_acknowledged():
    extra = [(5, "insert", 11, "info", 0.2, 0.3, "sql0", E_UNK), (7, "insert", 11, "ok", 0.4, 0.5, "sql0")]
    d = run(hist("ledger", ledger_ops(extra=extra)))["checks"]["durability"]
    assert d["lost"] == 1 and d["indeterminate"] == 0  # 11 was acknowledged and is absent


def test_failed_insert_that_is_present_is_an_anomaly():
    extra = [(5, "insert", 11, "fail", 0.2, 0.3, "sql0", E_TMP)]
    d = run(hist("ledger", ledger_ops(read_ids=list(range(1, 12)), extra=extra)))["checks"]["durability"]
    assert d["valid"] is False and d["failed_present"] == 1
    # absent, it is just a failure
    d = run(hist("ledger", ledger_ops(extra=extra)))["checks"]["durability"]
    assert d["valid"] is True and d["failed_present"] == 0


def test_last_ok_read_is_the_final_read():
    extra = [
        (98, "read", [1, 2], "ok", 0.0, 0.01, "sql1"),  # early partial read: fine
        (98, "read", None, "fail", 6.0, 6.5, "sql1", E_TMP),  # a later failed read is ignored
    ]
    d = run(hist("ledger", ledger_ops(extra=extra)))["checks"]["durability"]
    assert d["valid"] is True and d["details"]["final_read"]["end"] == pytest.approx(5.1)
    # an earlier complete read does not save a later read that misses an id
    extra = [(98, "read", list(range(1, 11)), "ok", 2.0, 2.1, "sql1")]
    d = run(hist("ledger", ledger_ops(read_ids=list(range(2, 11)), extra=extra)))["checks"]["durability"]
    assert d["lost"] == 1


def test_insert_acknowledged_during_final_read_is_not_judged():
    extra = [(5, "insert", 11, "ok", 4.9, 5.05, "sql0")]  # acked after the read started at 5.0
    d = run(hist("ledger", ledger_ops(extra=extra)))["checks"]["durability"]
    assert d["valid"] is True and d["lost"] == 0 and d["details"]["unconfirmed"] == 1


def test_no_ok_read_is_unknown():
    ops = [(1, "insert", 1, "ok", 0.0, 0.1, "a"), (2, "read", None, "fail", 0.2, 0.3, "a", E_TMP)]
    res = run(hist("ledger", ops))
    d = res["checks"]["durability"]
    assert d["valid"] == UNKNOWN and res["valid"] == UNKNOWN
    assert "no successful read" in d["details"]["reason"]


def test_gcp_window_explains_only_recent_losses():
    # crash at 1.0 with a 0.5 s GCP window: the insert acked at 0.55 (id 5) and 0.95 (id 9) may be
    # lost; id 2 (acked 0.25) may not.
    ops = ledger_ops(read_ids=[1, 3, 4, 6, 7, 8, 10])
    d = run(hist("ledger", ops), gcp_loss_window_s=0.5, cluster_crash_at=1.0)["checks"]["durability"]
    assert d["lost"] == 3 and d["explained_by_gcp"] == 2 and d["unexplained"] == 1
    assert [e["id"] for e in d["details"]["explained_by_gcp_examples"]] == [5, 9]
    assert [e["id"] for e in d["details"]["unexplained_examples"]] == [2]
    assert d["valid"] is False
    ops = ledger_ops(read_ids=[1, 2, 3, 4, 6, 7, 8, 10])
    d = run(hist("ledger", ops), gcp_loss_window_s=0.5, cluster_crash_at=[3.0, 1.0])["checks"]["durability"]
    assert d["valid"] is True and d["explained_by_gcp"] == 2 and d["lost"] == 2  # never hidden
    assert "explained by GCP" in d["summary"]
    with pytest.raises(ValueError):
        run(hist("ledger", ops), gcp_loss_window_s=0.5)


def test_gcp_window_includes_the_acknowledgement_the_crash_time_was_taken_from():
    # The driver takes the crash time from the last acknowledgement, rounded to 1 us; the ack's
    # own end may be a fraction of a microsecond later (seen on a real node group loss).
    ops = [(1, "insert", 1, "ok", 0.0, 0.1, "a"), (2, "insert", 2, "ok", 0.9, 1.0000004, "a"),
           (3, "read", [1], "ok", 5.0, 5.1, "a")]
    d = run(hist("ledger", ops), gcp_loss_window_s=0.5, cluster_crash_at=1.0)["checks"]["durability"]
    assert d["lost"] == 1 and d["explained_by_gcp"] == 1 and d["valid"] is True
    d = run(hist("ledger", ops), gcp_loss_window_s=0.5, cluster_crash_at=0.99)["checks"]["durability"]
    assert d["unexplained"] == 1 and d["valid"] is False


def _random_ledger(rng, n: int, spread: str) -> History:
    """Inserts of ids (dense, with gaps, negative, repeated or far apart) of every outcome and
    ok reads of what landed, some holding ids never inserted, some twice."""
    base = int(rng.integers(-1000, 1000))
    if spread == "dense":
        ids = base + np.arange(n)
    elif spread == "gaps":
        ids = base + np.sort(rng.choice(3 * n, n, replace=False))
    elif spread == "repeats":
        ids = base + rng.integers(0, n // 2 + 1, n)
    else:  # far apart: the span is far wider than the ids
        ids = rng.integers(-(1 << 40), 1 << 40, n)
    h = History("ledger", {})
    t = 0.0
    landed = []
    for i, x in enumerate(ids.tolist()):
        t += float(rng.uniform(0.001, 0.01))
        typ = str(rng.choice(["ok", "ok", "ok", "fail", "info"]))
        err = None if typ == "ok" else (E_TMP if typ == "fail" else E_UNK)
        h.add(i % 5, "insert", x, typ, t, t + 0.005, f"sql{i % 3}", error=err)
        if typ == "ok" and rng.random() < 0.97 or typ != "ok" and rng.random() < 0.3:
            landed.append(x)
        if rng.random() < 8 / n or i == n - 1:  # a read: most of what landed so far, and more
            seen = [y for y in landed if rng.random() < 0.98]
            seen += rng.integers(ids.min() - 50, ids.max() + 50, int(rng.integers(0, 3))).tolist()
            seen += [int(rng.integers(-(1 << 62), 1 << 62)) for _ in range(int(rng.integers(0, 2)))]
            if seen and rng.random() < 0.3:
                seen.append(seen[0])
            rng.shuffle(seen)
            h.add(9, "read", seen, "ok", t, t + float(rng.uniform(0.0, 0.05)), "sql0")
    return h


@pytest.mark.parametrize("seed", range(12))
def test_ledger_tables_agree_with_binary_search(seed, monkeypatch):
    """The durability checker's id tables (ids in a narrow span) give what its sorted arrays
    give, on generated ledgers of every kind of id and read."""
    from ndbchaos.checks import ledger
    rng = np.random.default_rng(seed)
    spread = ["dense", "gaps", "repeats", "far"][seed % 4]
    h = _random_ledger(rng, int(rng.integers(50, 3000)), spread)
    ids = np.array([op.value for op in h if op.f == "insert"], dtype=np.int64)
    assert ledger._DenseIds.fits(ids) == (spread != "far")
    fast = run(h)["checks"]["durability"]
    monkeypatch.setattr(ledger, "DENSE", False)
    slow = run(h)["checks"]["durability"]
    assert fast == slow
    assert slow["details"]["attempted"] > 0 and slow["details"]["final_read"]


def test_ledger_non_integer_ids_are_a_format_error():
    ops = [(1, "insert", "a", "ok", 0.0, 0.1, "a"), (2, "read", ["a"], "ok", 0.2, 0.3, "a")]
    with pytest.raises(HistoryFormatError):
        run(hist("ledger", ops))


# -- latency ------------------------------------------------------------------------------------

def test_latency_is_a_measurement_unless_bounded_and_fails_above_its_bound():
    # ops take 50 ms; a window from 0.45 to 0.75 s makes baseline, fault and recovery phases
    ops = ledger_ops(n=10)
    windows = [{"kind": "kill", "start": 0.45, "end": 0.75, "targets": ["x"]}]
    assert run(hist("ledger", ops), windows)["checks"]["latency"]["valid"] is True
    lat = run(hist("ledger", ops), windows, max_p99_ms=20)["checks"]["latency"]
    assert lat["valid"] is False and {o["phase"] for o in lat["details"]["over_bound"]} == {
        "baseline", "fault", "recovery"}
    assert "p99 above the bound" in lat["summary"]
    lat = run(hist("ledger", ops), windows, max_p99_ms={"fault": 20, "baseline": 100})["checks"]["latency"]
    assert lat["valid"] is False and [o["phase"] for o in lat["details"]["over_bound"]] == ["fault"]
    assert run(hist("ledger", ops), windows, max_p99_ms=150)["checks"]["latency"]["valid"] is True  # the read: 100 ms
    # a bounded phase with nothing to measure cannot be judged
    short = [op for op in ops if not 0.45 <= round(op[5], 6) <= 0.75]  # times as a history keeps them (to the us)
    assert run(hist("ledger", short), windows, max_p99_ms={"fault": 100})["checks"]["latency"]["valid"] == UNKNOWN
    with pytest.raises(ValueError):
        run(hist("ledger", ops), windows, max_p99_ms={"during": 100})


# -- bank invariant ---------------------------------------------------------------------------

BANK = {"accounts": 3, "total": 30}


def bank_ops(*reads):
    ops = [(1, "transfer", {"from": 0, "to": 1, "amount": 2}, "ok", 0.0, 0.1, "a"),
           (2, "transfer", {"from": 1, "to": 2, "amount": 1}, "info", 0.0, 0.2, "b", E_UNK)]
    for k, bal in enumerate(reads):
        ops.append((3, "read", {"balances": bal}, "ok", 1.0 + k, 1.1 + k, "a"))
    return ops


def test_bank_clean_passes():
    res = run(hist("bank", bank_ops({"0": 8, "1": 12, "2": 10}, {"0": 10, "1": 10, "2": 10}), BANK))
    v = res["checks"]["invariant"]
    assert res["valid"] is True and v["bad_reads"] == 0 and v["reads"] == 2
    assert v["details"]["counts"]["transfers"] == {"ok": 1, "fail": 0, "info": 1}


def test_bank_imbalance_and_missing_account_are_found():
    res = run(hist("bank", bank_ops({"0": 8, "1": 12, "2": 10}, {"0": 8, "1": 12, "2": 9},
                                    {"0": 18, "1": 12}), BANK))
    v = res["checks"]["invariant"]
    assert res["valid"] is False and v["bad_reads"] == 2
    bad = v["details"]["bad_read_examples"]
    assert bad[0]["sum"] == 29 and bad[0]["expected_total"] == 30
    assert bad[1]["missing"] == ["2"] and bad[1]["sum"] == 30


def test_bank_example_list_is_bounded():
    reads = [{"0": 1, "1": 1, "2": 1}] * 50
    v = run(hist("bank", bank_ops(*reads), BANK), examples=5)["checks"]["invariant"]
    assert v["bad_reads"] == 50 and len(v["details"]["bad_read_examples"]) == 5


def test_bank_negative_balance_only_when_disallowed():
    r = {"0": -2, "1": 22, "2": 10}
    assert run(hist("bank", bank_ops(r), BANK))["valid"] is True
    v = run(hist("bank", bank_ops(r), {**BANK, "allow_negative": False}))["checks"]["invariant"]
    assert v["valid"] is False and v["details"]["bad_read_examples"][0]["negative"] == ["0"]


def test_bank_without_reads_or_params_is_unknown():
    assert run(hist("bank", bank_ops(), BANK))["checks"]["invariant"]["valid"] == UNKNOWN
    assert run(hist("bank", bank_ops({"0": 10}), {}))["checks"]["invariant"]["valid"] == UNKNOWN


# -- availability -----------------------------------------------------------------------------

def steady(t0, t1, node, proc, step=0.01, lat=0.003, typ="ok", err=None):
    ops, t = [], t0
    while t < t1 - 1e-9:
        ops.append((proc, "insert", int(t * 1000) * 10 + proc, typ, round(t, 6), round(t + lat, 6), node, err))
        t += step
    return ops


def outage_history():
    """Two SQL nodes, ok every 10 ms; both fail from 1.0 s, sql2 recovers at 2.0 s, sql1 at 3.0 s."""
    ops = []
    ops += steady(0.0, 1.0, "sql1", 1) + steady(0.0, 1.0, "sql2", 2)
    ops += steady(1.0, 3.0, "sql1", 1, typ="fail", err=E_TMP)
    ops += steady(1.0, 2.0, "sql2", 2, typ="info", err=E_UNK)
    ops += steady(2.0, 4.0, "sql2", 2) + steady(3.0, 4.0, "sql1", 1)
    return hist("x", ops)


def test_outage_boundaries_are_exact_op_times():
    h = outage_history()
    res = run(h, [{"kind": "kill", "start": 1.0, "end": 2.5, "targets": ["ndbd-1"]}])
    a = res["checks"]["availability"]
    (o,) = a["details"]["outages"]
    # last ok completed at 0.99 + 0.003; first ok after completed at 2.0 + 0.003
    assert o["start"] == pytest.approx(0.993, abs=1e-9) and o["end"] == pytest.approx(2.003, abs=1e-9)
    assert o["duration_s"] == pytest.approx(1.01, abs=1e-9) and not o["open"] and o["windows"] == [0]
    assert a["longest_outage_s"] == pytest.approx(1.01, abs=1e-9)
    per = a["details"]["per_node"]
    (o1,) = per["sql1"]["outages"]
    assert (o1["start"], o1["end"]) == (pytest.approx(0.993, abs=1e-9), pytest.approx(3.003, abs=1e-9))
    assert per["sql2"]["longest_outage_s"] == pytest.approx(1.01, abs=1e-9)
    (f,) = a["details"]["faults"]
    assert f["first_error_s"] == pytest.approx(0.003, abs=1e-9)  # the first failed op ended at 1.003
    assert f["first_error"]["errno"] in (1297, 2013)
    assert f["first_ok_after_error_s"] == pytest.approx(1.003, abs=1e-9)
    # baseline 200 ok/s; after the heal at 2.5 s only sql2 serves (100/s) until 3.0 s. The first
    # 1 s window with 90 % of the baseline (180 ops) starts at most 0.2 s before 3.0 s.
    assert a["details"]["baseline_throughput_ops_s"] == pytest.approx(200, rel=0.01)
    rec = f["throughput_recovered_s"]
    assert rec is not None and 0.3 - 0.01 <= rec <= 0.5 + 0.01
    assert a["throughput_recovered_s"] == rec


def test_open_outage_at_the_end_and_max_outage_option():
    ops = steady(0.0, 1.0, "a", 1) + steady(1.0, 2.0, "a", 1, typ="fail", err=E_TMP)
    res = run(hist("x", ops))
    (o,) = res["checks"]["availability"]["details"]["outages"]
    assert o["open"] and o["start"] == pytest.approx(0.993) and o["end"] == pytest.approx(1.993)
    assert res["checks"]["availability"]["valid"] is True
    res = run(hist("x", ops), max_outage_s=0.5)
    assert res["checks"]["availability"]["valid"] is False and res["valid"] is False


def test_short_gaps_are_not_outages():
    ops = steady(0.0, 1.0, "a", 1) + steady(1.1, 2.0, "a", 1)  # a 100 ms gap
    a = run(hist("x", ops))["checks"]["availability"]
    assert a["outage_count"] == 0 and a["details"]["outage_threshold_s"] == pytest.approx(0.2)
    a = run(hist("x", ops), min_outage_s=0.05)["checks"]["availability"]
    assert a["outage_count"] == 1 and a["details"]["outages"][0]["duration_s"] == pytest.approx(0.11, abs=1e-9)


def test_threshold_adapts_to_a_sparse_baseline():
    ops = steady(0.0, 20.0, "a", 1, step=0.5)  # one op every 500 ms
    a = run(hist("x", ops))["checks"]["availability"]
    assert a["outage_count"] == 0 and a["details"]["outage_threshold_s"] == pytest.approx(1.5, rel=0.01)


def test_series_buckets_by_completion_time():
    ops = [(1, "f", 0, "ok", 0.00, 0.05, "a"), (1, "f", 0, "ok", 0.06, 0.09, "a"),
           (1, "f", 0, "fail", 0.09, 0.15, "a", E_TMP), (1, "f", 0, "info", 0.2, 0.35, "a", E_UNK)]
    s = run(hist("x", ops))["checks"]["availability"]["details"]["series"]
    assert s["t0"] == 0.0 and s["bucket_s"] == 0.1
    assert (s["ok"], s["fail"], s["info"]) == ([2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1])
    assert s["success_rate"] == [1.0, 0.0, None, 0.0]
    s = run(hist("x", ops), bucket_ms=50)["checks"]["availability"]["details"]["series"]
    assert len(s["ok"]) == 8 and s["ok"][1] == 2


def test_empty_history_is_unknown():
    res = run(History("x"))
    assert res["valid"] == UNKNOWN and res["ops"] == 0


# -- latency ----------------------------------------------------------------------------------

def test_latency_percentiles_per_phase_match_hdrhistogram():
    from hdrh.histogram import HdrHistogram
    rng = np.random.default_rng(5)
    ops, lat_base, lat_fault = [], [], []
    for k in range(2000):
        t = k * 0.005
        lat = float(rng.lognormal(np.log(0.002), 0.6))
        if 4.0 <= t <= 5.5:
            lat *= 20
        if 4.0 <= t + lat <= 6.0:
            lat_fault.append(lat)
        elif t + lat < 4.0:
            lat_base.append(lat)
        ops.append((1, "insert", k, "ok", t, t + lat, "a"))
    lat_rec = run(hist("x", ops), [{"kind": "k", "start": 4.0, "end": 6.0}])["checks"]["latency"]["details"]
    for name, lats in (("baseline", lat_base), ("fault", lat_fault)):
        h = HdrHistogram(1, 3600 * 10**6, 3)
        for x in lats:
            h.record_value(int(round(x * 1e6)))
        d = lat_rec["phases"][name]
        assert d["count"] == len(lats)
        for p, key in ((50, "p50_ms"), (99, "p99_ms"), (99.9, "p999_ms")):
            assert d[key] == round(h.get_value_at_percentile(p) / 1000, 3)
        assert d["max_ms"] == pytest.approx(max(lats) * 1000, abs=0.001)
    assert lat_rec["corrected"] is False


def test_coordinated_omission_correction_equals_record_corrected_value():
    from hdrh.histogram import HdrHistogram
    rng = np.random.default_rng(9)
    lats = [float(x) for x in rng.lognormal(np.log(0.003), 0.4, 500)] + [0.5, 1.25, 2.0]
    ops = [(1, "insert", k, "ok", k * 0.01, k * 0.01 + x, "a") for k, x in enumerate(lats)]
    d = run(hist("x", ops, {"rate": 100}))["checks"]["latency"]["details"]  # 100 ops/s: 10 ms
    assert d["corrected"] is True and d["expected_interval_ms"] == 10.0
    h = HdrHistogram(1, 3600 * 10**6, 3)
    for x in lats:
        h.record_corrected_value(int(round(x * 1e6)), 10_000)
    b = d["phases"]["baseline"]
    assert b["count"] == h.get_total_count() > len(lats)
    for p, key in ((50, "p50_ms"), (99, "p99_ms"), (99.9, "p999_ms")):
        assert b[key] == round(h.get_value_at_percentile(p) / 1000, 3)
    assert b["uncorrected"]["count"] == len(lats)
    assert b["p99_ms"] > b["uncorrected"]["p99_ms"]
    d = run(hist("x", ops, {"rate": 100}), co_correction=False)["checks"]["latency"]["details"]
    assert d["corrected"] is False and d["phases"]["baseline"]["count"] == len(lats)


# -- errors -----------------------------------------------------------------------------------

def test_error_counts_by_class_and_code_per_phase():
    ops = [(1, "insert", 1, "ok", 0.0, 0.1, "a"), (1, "insert", 2, "fail", 0.1, 0.2, "a", E_PERM),
           (1, "insert", 3, "fail", 1.0, 1.1, "a", E_TMP), (1, "insert", 4, "fail", 1.1, 1.2, "a", E_TMP),
           (1, "insert", 5, "info", 1.2, 1.3, "a", E_UNK), (1, "read", None, "fail", 2.5, 2.6, "a",
                                                          ErrorInfo(None, None, None, "boom"))]
    e = run(hist("x", ops), [{"kind": "k", "start": 1.0, "end": 2.0}])["checks"]["errors"]
    # 4350 is a permanent error: not something a fault may cause (the default allows temporary
    # and unknown), so the errors checker fails, and says which
    assert e["valid"] is False and "1296/4350 permanent x1" in e["summary"]
    d = e["details"]
    assert d["all"]["by_class"] == {"unclassified": 1, "temporary": 2, "unknown": 1, "permanent": 1}
    assert (d["all"]["fail"], d["all"]["info"]) == (4, 1)
    assert d["phases"]["baseline"]["codes"] == [{"errno": 1296, "engine_code": 4350, "class": "permanent",
                                                 "count": 1, "example": E_PERM.message}]
    top = d["phases"]["fault"]["codes"][0]
    assert (top["errno"], top["engine_code"], top["count"]) == (1297, 4010, 2)
    assert d["phases"]["recovery"]["codes"][0]["errno"] is None


def test_errors_valid_unknown_and_application_refusals():
    ok = (1, "insert", 1, "ok", 0.0, 0.1, "a")
    tmp = [ok, (1, "insert", 3, "fail", 1.0, 1.1, "a", E_TMP), (1, "insert", 5, "info", 1.2, 1.3, "a", E_UNK)]
    assert run(hist("x", tmp))["checks"]["errors"]["valid"] is True
    # an error the classifier did not recognise: the verdict cannot say
    unclassified = tmp + [(1, "read", None, "fail", 2.5, 2.6, "a", ErrorInfo(None, None, None, "boom"))]
    assert run(hist("x", unclassified))["checks"]["errors"]["valid"] == "unknown"
    # the workload declining an operation (errno 0 with a message) is not an engine error
    declined = tmp + [(1, "insert", 7, "fail", 2.0, 2.1, "a", ErrorInfo(0, None, "permanent", "account 3 has 2"))]
    e = run(hist("x", declined))["checks"]["errors"]
    assert e["valid"] is True and e["details"]["application"] == 1 and "1 declined" in e["summary"]
    # an expectation can narrow what is allowed: a survivable fault allows only temporary errors
    e = run(hist("x", tmp), allowed_error_classes=["temporary"])["checks"]["errors"]
    assert e["valid"] is False and "unknown x1" in e["summary"]


# -- windows, options, workloads --------------------------------------------------------------

@pytest.mark.parametrize("windows", [
    [{"kind": "k", "start": "x"}], [{"kind": "k", "start": 2.0, "end": 1.0}], "nope",
    [{"kind": "k", "start": 1.0, "targets": "n1"}], [3],
])
def test_bad_windows_are_rejected(windows):
    with pytest.raises(WindowError):
        run(hist("x", [(1, "f", 1, "ok", 0.0, 0.1, "a")]), windows)


def test_unknown_option_is_rejected():
    with pytest.raises(ValueError, match="unknown check option"):
        run(hist("x", [(1, "f", 1, "ok", 0.0, 0.1, "a")]), bucket=5)


def test_phases_and_unhealed_window():
    ops = steady(0.0, 3.0, "a", 1)
    res = run(hist("x", ops), [{"kind": "k", "start": 1.0, "end": None, "targets": []}])
    assert res["phases"]["baseline"][1] == 1.0 and res["phases"]["recovery"] is None
    assert res["phases"]["fault"] == [1.0, pytest.approx(2.993)]
    assert res["checks"]["availability"]["throughput_recovered_s"] is None
    lat = res["checks"]["latency"]["details"]["phases"]
    assert lat["recovery"]["count"] == 0 and lat["fault"]["count"] > 0


def test_synthetic_history_is_valid_and_fast():
    import time
    from ndbchaos.bench.checker import synthetic_ledger
    h, windows = synthetic_ledger(50_000, rate=5_000)
    t0 = time.perf_counter()
    res = run(h, windows)
    assert time.perf_counter() - t0 < 5
    assert res["valid"] is True, res["summary"]
    d = res["checks"]["durability"]
    assert d["lost"] == 0 and d["indeterminate"] > 0


def test_bench_checker_reports_time_and_memory():
    from ndbchaos.bench.checker import bench_checker
    res = bench_checker(5_000, record=False)
    assert res["n_ops"] == 5_000 and res["valid"] is True
    assert res["check_s"] > 0 and res["check_peak_mb"] > 0 and "tracemalloc" in res["memory_method"]


def test_a_checker_that_fails_is_an_unknown_verdict_not_a_crash():
    from ndbchaos.checks import GENERIC, check_history, register
    from ndbchaos.history import History

    def broken(fr, opts):
        return {}["no such figure"]

    saved = list(GENERIC)
    try:
        register("broken", broken)
        h = History("ledger", {})
        h.add(0, "insert", 1, "ok", 0.0, 0.01, "sql1")
        h.add(0, "read", [1], "ok", 0.02, 0.03, "sql1")
        v = check_history(h).to_json()
    finally:
        GENERIC[:] = saved
    assert v["valid"] == "unknown"
    b = v["checks"]["broken"]
    assert b["valid"] == "unknown" and "KeyError" in b["summary"]
    assert b["details"]["at"].split(":")[0].endswith("test_checks.py")
    assert v["checks"]["durability"]["valid"] is True  # the others still judged
