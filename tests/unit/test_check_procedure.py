"""The procedure checker (an operator's procedure under load, step by step) on hand-made histories
and run records: each step's outcome against the outcomes its engine allows, the clients' impact
during it (with a known gap: the numbers), a bound on the outage, the procedure's outcomes; and
``check_run`` adding it (and the backup's verdict) from a run record, kept by the JSON round trip."""

from __future__ import annotations

import json
import re

import pytest

from ndbchaos.checks import UNKNOWN, RunVerdict, check_run, resolve_options
from ndbchaos.checks.frame import build_frame
from ndbchaos.checks.procedure import check
from ndbchaos.history import FINAL_PROCESS, ErrorInfo, History

E_TMP = ErrorInfo(1297, 4010, "temporary", "Got temporary error 4010 'Node failure' from NDBCLUSTER")
E_UNK = ErrorInfo(2013, None, "unknown", "Lost connection to MySQL server during query")


def gap_history() -> History:
    """One client, an insert every 0.25 s from 0 to 30 s taking 10 ms (the one started at 14 s:
    50 ms); no success between 10.01 and 13.01 s, where 10 inserts fail (temporary) and one is
    indeterminate."""
    h = History("ledger", {})
    n = 0
    for k in range(121):
        t = k * 0.25
        n += 1
        if 10.0 < t < 13.0:
            if t <= 12.5:
                h.add(0, "insert", 1_000_000_000 + n, "fail", t, t + 0.1, "sql1", E_TMP)
            else:
                h.add(0, "insert", 1_000_000_000 + n, "info", t, 12.9, "sql1", E_UNK)
            continue
        h.add(0, "insert", 1_000_000_000 + n, "ok", t, t + (0.05 if t == 14.0 else 0.01), "sql1")
    h.add(FINAL_PROCESS, "read", [], "ok", 31.0, 31.1, "sql1")
    return h


def step(name="add node group", start=9.0, end=15.0, outcome="done", expected=("done",), **more) -> dict:
    return {"name": name, "start": start, "end": end, "outcome": outcome, "expected": list(expected),
            "detail": "Node group 1 created", "fault": None, "max_outage_s": None, **more}


def procedure(*steps, outcomes=None) -> dict:
    return {"name": "add_node_group", "steps": list(steps),
            "outcomes": [{"name": "fragments on the new node group", "holds": True, "detail": "4/4"}]
            if outcomes is None else outcomes}


BASELINE = [{"name": "baseline", "start": 0.0, "end": 5.0, "description": ""}]


def judge(h: History, proc: dict, phases=BASELINE, windows=None, **options):
    v = check(build_frame(h, windows), resolve_options(options), proc, phases)
    json.dumps(v.to_json(), allow_nan=False)  # always plain JSON
    return v


def test_step_figures_on_a_history_with_a_known_gap():
    v = judge(gap_history(), procedure(step()))
    assert v.valid is True, v.summary
    (s,) = v.details["steps"]
    # ok ops ending in [9, 15]: started 9.0 .. 10.0 (5) and 13.0 .. 14.75 (8)
    assert (s["ok"], s["fail"], s["info"]) == (13, 10, 1)
    assert s["error_classes"] == {"temporary": 10, "unknown": 1}
    assert s["error_codes"][0] == {"errno": 1297, "engine_code": 4010, "class": "temporary", "count": 10}
    # threshold: 3 x the baseline's 0.25 s gaps; the gap: 10.01 -> 13.01
    assert s["outage_threshold_s"] == pytest.approx(0.75)
    assert s["longest_outage_s"] == pytest.approx(3.0)
    (o,) = s["outages"]
    assert (o["start"], o["end"], o["at_start"], o["open"]) == (pytest.approx(10.01), pytest.approx(13.01), False,
                                                                False)
    assert s["throughput_ops_s"] == pytest.approx(13 / 6, abs=1e-3)
    assert v.details["baseline"] == [0.0, 5.0]
    assert v.details["baseline_throughput_ops_s"] == pytest.approx(4.0)  # 20 ok in [0, 5)
    assert s["throughput_ratio"] == pytest.approx(13 / 6 / 4.0, abs=1e-3)
    assert s["p99_ms"] == pytest.approx(50.0, rel=2e-3)  # the 50 ms insert is the 99th percentile of 13
    assert v.details["longest_outage_s"] == pytest.approx(3.0)
    assert "longest outage 3.000 s (add node group)" in v.summary


def test_the_gaps_at_a_steps_edges_count():
    v = judge(gap_history(), procedure(step("drain", 10.5, 13.5), step("stop", 8.0, 11.0)))
    drain, stop = v.details["steps"]
    (o,) = drain["outages"]  # from the step's start to the first success
    assert o["at_start"] and (o["start"], o["end"]) == (10.5, pytest.approx(13.01))
    assert drain["longest_outage_s"] == pytest.approx(2.51)
    (o,) = stop["outages"]  # from the last success to the step's end
    assert o["open"] and (o["start"], o["end"]) == (pytest.approx(10.01), 11.0)
    assert stop["longest_outage_s"] == pytest.approx(0.99)


def test_a_step_outside_its_expected_outcomes_is_invalid_and_named():
    v = judge(gap_history(), procedure(step(), step("start backup", 16.0, 20.0, outcome="aborted",
                                                      expected=("done", "failed"))))
    assert v.valid is False
    assert v.summary.startswith("step 'start backup' ended aborted (expected done or failed)")
    ok, bad = v.details["steps"]
    assert ok["valid"] and ok["as_expected"]
    assert not bad["valid"] and not bad["as_expected"] and bad["notes"] == ["ended aborted (expected done or failed)"]
    assert v.details["steps_failed"] == 1
    # an outcome the documentation allows is fine, even "failed"
    assert judge(gap_history(), procedure(step(outcome="failed", expected=("failed",)))).valid is True


def test_an_outage_over_the_steps_bound_is_invalid():
    v = judge(gap_history(), procedure(step(max_outage_s=2.0)))
    assert v.valid is False
    assert "step 'add node group' outage 3.000 s > max_outage_s 2" in v.summary
    assert judge(gap_history(), procedure(step(max_outage_s=5.0))).valid is True
    # a bound below the availability threshold is still judged: the threshold follows it
    v = judge(gap_history(), procedure(step("steady", 20.0, 25.0, max_outage_s=0.1)))
    (s,) = v.details["steps"]
    assert v.valid is False and s["outage_threshold_s"] == 0.1 and s["longest_outage_s"] == pytest.approx(0.25)


def test_an_outcome_that_does_not_hold_is_invalid_and_one_not_observed_unknown():
    missed = [{"name": "fragments on the new node group", "holds": False, "detail": "2/4 tables"},
              {"name": "rows readable", "holds": True, "detail": ""}]
    v = judge(gap_history(), procedure(step(), outcomes=missed))
    assert v.valid is False and v.details["outcomes_missed"] == 1
    assert v.summary.startswith("outcome 'fragments on the new node group' does not hold (2/4 tables)")
    unseen = [{"name": "restore readable", "holds": None, "detail": "the restore did not run"}]
    v = judge(gap_history(), procedure(step(), outcomes=unseen))
    assert v.valid == UNKNOWN and v.details["outcomes_unknown"] == 1 and "not observed: 'restore readable'" in v.summary
    v = judge(gap_history(), procedure(step(outcome="skipped"), outcomes=unseen))
    assert v.valid is False  # an invalid step outweighs an outcome not observed
    assert judge(gap_history(), procedure()).valid == UNKNOWN  # no step recorded


def test_baseline_from_the_frame_before_the_first_step_or_none():
    h = gap_history()
    # no recorded phase: the frame's baseline (no window: the whole run), cut at the first step
    v = judge(h, procedure(step()), phases=None)
    assert v.details["baseline"] == [0.0, 9.0]
    assert v.details["baseline_throughput_ops_s"] == pytest.approx(36 / 9, abs=1e-3)
    # a fault window opening the run leaves no baseline: no ratio
    v = judge(h, procedure(step("first", 0.0, 15.0)), phases=None,
              windows=[{"kind": "kill", "start": 0.0, "end": 14.0, "targets": ["ndbd-3"]}])
    assert v.details["baseline"] is None and v.details["steps"][0]["throughput_ratio"] is None


@pytest.mark.parametrize("mutate, field", [
    (lambda p: p.pop("steps"), "procedure.steps is missing"),
    (lambda p: p.update(name=3), "procedure.name must be a non-empty string"),
    (lambda p: p.pop("outcomes"), "procedure.outcomes is missing"),
    (lambda p: p["steps"][0].pop("start"), "procedure.steps[0].start is missing"),
    (lambda p: p["steps"][0].update(end="late"), "procedure.steps[0].end must be a number"),
    (lambda p: p["steps"][0].update(end=1.0), "procedure.steps[0].end 1.0 is before its start 9.0"),
    (lambda p: p["steps"][0].update(outcome="ok"), "procedure.steps[0].outcome must be one of done"),
    (lambda p: p["steps"][0].update(expected="done"), "procedure.steps[0].expected must be a non-empty list"),
    (lambda p: p["steps"][0].update(max_outage_s=-1), "procedure.steps[0].max_outage_s must be a number"),
    (lambda p: p["steps"][0].update(fault=7), "procedure.steps[0].fault must be a string or null"),
    (lambda p: p["outcomes"][0].pop("holds"), "procedure.outcomes[0].holds is missing"),
    (lambda p: p["outcomes"][0].update(holds=1), "procedure.outcomes[0].holds must be true, false or null"),
])
def test_a_malformed_record_raises_naming_the_field(mutate, field):
    p = procedure(step())
    mutate(p)
    with pytest.raises(ValueError, match="^" + re.escape(field)):
        judge(gap_history(), p)


def test_a_procedure_that_is_not_an_object_raises():
    with pytest.raises(ValueError, match="^procedure must be an object, not list"):
        judge(gap_history(), ["not", "a", "procedure"])


def backup_run() -> dict:
    """A backup_restore record over gap_history: issued at 5, completed at 8, its restore holding
    what was committed by 7.5 s (the inserts started 0 .. 7.25 s)."""
    ids = [1_000_000_000 + k + 1 for k in range(30)]
    return {"phases": BASELINE, "procedure": {
        **procedure(step("start backup", 5.0, 8.0)),
        "name": "backup_restore",
        "backup": {"id": 1, "snapshot": "end", "issued": 5.0, "started": 5.4, "completed": 8.0, "start_gcp": 177,
                   "stop_gcp": 180, "records": len(ids),
                   "restored": {"into": "nodegroups=1,replicas=1", "table": "ledger", "ids": ids,
                                "rows": len(ids)}}}}


def test_check_run_adds_procedure_and_backup_and_the_round_trip_keeps_them():
    h = gap_history()
    h.run = backup_run()
    v = check_run(h)
    assert set(v.checks) >= {"availability", "latency", "errors", "durability", "procedure", "backup"}
    assert v.validity("procedure") is True and v.validity("backup") is True, v.summary
    back = RunVerdict.from_json(json.loads(json.dumps(v.to_json())))
    for got in (v, back):
        assert got.procedure.name == "backup_restore"
        (s,) = got.procedure.steps
        assert (s.name, s.outcome, s.as_expected, s.valid, s.ok) == ("start backup", "done", True, True, 12)
        assert s.throughput_ratio == pytest.approx(1.0)
        assert got.procedure.outcomes[0].holds is True
        assert got.backup.restored and got.backup.missing == 0 and got.backup.ids == 30
        assert (got.backup.snapshot, got.backup.bound, got.backup.loose_bound) == ("end", 8.0, False)
    assert back.to_json() == v.to_json()
    # without a procedure in the record, neither checker runs
    h.run = {"phases": BASELINE}
    v = check_run(h)
    assert v.procedure is None and v.backup is None and "procedure" not in v.checks


def test_check_run_on_a_malformed_procedure_raises_and_a_procedure_without_backup_has_no_backup_verdict():
    h = gap_history()
    h.run = {"procedure": {"name": "x", "steps": [{"name": "s"}], "outcomes": []}}
    with pytest.raises(ValueError, match=r"procedure\.steps\[0\]\.start is missing"):
        check_run(h)
    h.run = {"procedure": procedure(step())}
    v = check_run(h)
    assert v.validity("procedure") is True and v.backup is None


def test_a_saved_run_is_judged_as_live(tmp_path):
    h = gap_history()
    h.run = backup_run()
    h.run["procedure"]["steps"][0]["outcome"] = "aborted"
    live = check_run(h).to_json()
    path = tmp_path / "run.jsonl"
    h.write(path)
    saved = check_run(History.read(path)).to_json()
    assert saved == live and saved["checks"]["procedure"]["valid"] is False and saved["valid"] is False
