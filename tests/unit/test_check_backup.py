"""The backup checker on hand-made ledger histories and restores: a correct restore passes for both
snapshot kinds, each doctored restore is found (an acknowledged write missing, a write started
after the consistency bound, a restore that is not a cut, a phantom, a duplicate, a definitely
failed write, a row count that disagrees), indeterminate writes pass either way, and a backup
never restored is "unknown"."""

from __future__ import annotations

import json
import re

import pytest

from ndbchaos.checks import UNKNOWN, resolve_options
from ndbchaos.checks.backup import SLOT, check
from ndbchaos.checks.frame import build_frame
from ndbchaos.history import FINAL_PROCESS, ErrorInfo, History

E_TMP = ErrorInfo(1297, 4010, "temporary", "Got temporary error 4010 'Node failure' from NDBCLUSTER")
E_UNK = ErrorInfo(2013, None, "unknown", "Lost connection to MySQL server during query")
ISSUED, STARTED, COMPLETED = 4.0, 4.5, 6.0


def ident(slot: int, n: int) -> int:
    return (slot + 1) * SLOT + n


def ledger(n: int = 100, types: dict | None = None, workload: str = "ledger"):
    """Two client slots inserting their ids one at a time: slot s's n-th insert starts at
    (n - 1) * 0.1 + s * 0.05 s and takes 40 ms; ok unless ``types`` ({id: "fail"|"info"}) says
    otherwise. Returns the History and its inserts as (id, type, start, end)."""
    h, ops = History(workload, {}), []
    for s in range(2):
        for k in range(1, n + 1):
            i, t0 = ident(s, k), round((k - 1) * 0.1 + s * 0.05, 6)
            typ = (types or {}).get(i, "ok")
            err = {"ok": None, "fail": E_TMP, "info": E_UNK}[typ]
            h.add(s, "insert", i, typ, t0, t0 + 0.04, f"sql{s + 1}", err)
            ops.append((i, typ, t0, round(t0 + 0.04, 6)))
    h.add(FINAL_PROCESS, "read", [i for i, typ, _, _ in ops if typ == "ok"], "ok", 11.0, 11.1, "sql1")
    return h, ops


def committed_by(ops, t: float) -> list[int]:
    """A correct restore: what was acknowledged by t (a consistent cut at t)."""
    return [i for i, typ, _, e in ops if typ == "ok" and e <= t]


def backup(ids=None, snapshot="end", started=STARTED, rows=None, **more) -> dict:
    b = {"id": 1, "snapshot": snapshot, "issued": ISSUED, "started": started, "completed": COMPLETED,
         "start_gcp": 177, "stop_gcp": 180, "records": None, **more}
    if ids is not None:
        b["restored"] = {"into": "nodegroups=1,replicas=1", "table": "ledger", "ids": list(ids),
                         "rows": len(ids) if rows is None else rows}
    return b


def judge(h: History, b: dict, **options):
    v = check(build_frame(h), resolve_options(options), b)
    json.dumps(v.to_json(), allow_nan=False)  # always plain JSON
    return v


ANOMALIES = ("missing", "too_late", "not_a_cut", "phantom", "failed_present", "duplicates")


def counts(v) -> dict:
    return {k: v.details[k] for k in ANOMALIES if v.details[k]}


@pytest.mark.parametrize("snapshot, point, bound", [("end", 5.5, COMPLETED), ("start", 4.2, STARTED)])
def test_a_correct_restore_passes_for_both_snapshot_kinds(snapshot, point, bound):
    h, ops = ledger()
    v = judge(h, backup(committed_by(ops, point), snapshot))
    assert v.valid is True, v.summary
    assert counts(v) == {} and v.details["rows_match"] is True
    d = v.details
    assert (d["bound"], d["bound_from"], d["loose_bound"]) == (bound, "completed" if snapshot == "end" else "started",
                                                               False)
    assert d["must_have"] == sum(1 for _, typ, _, e in ops if typ == "ok" and e < ISSUED) == 80
    between = [(i, e) for i, typ, s, e in ops if typ == "ok" and e >= ISSUED and s <= bound]
    assert d["between"] == len(between)
    assert d["between_restored"] == sum(1 for _, e in between if e <= point)  # where the snapshot fell
    assert d["restored"] == {"into": "nodegroups=1,replicas=1", "table": "ledger", "ids": len(committed_by(ops, point)),
                             "rows": len(committed_by(ops, point))}
    assert v.to_json()["missing"] == 0  # headline figure


def test_a_restore_missing_an_acknowledged_write_is_invalid():
    h, ops = ledger()
    lost = ident(0, 20)  # acknowledged at 1.94 s, long before the backup was issued
    v = judge(h, backup([i for i in committed_by(ops, 5.5) if i != lost]))
    assert v.valid is False and v.details["missing"] == 1
    assert v.summary.startswith("1 acknowledged before the backup was issued, not restored")
    (ex,) = v.details["missing_examples"]
    assert ex == {"id": lost, "start": 1.9, "end": 1.94, "type": "ok", "node": "sql1", "process": 0}


@pytest.mark.parametrize("snapshot, point, extra", [
    ("end", 5.5, lambda ops: [i for i, typ, s, e in ops if i < ident(1, 0) and 5.5 < e <= 7.0]),  # slot 0 to 7 s
    ("start", 4.2, lambda ops: [i for i, typ, s, e in ops if i > ident(1, 0) and 4.2 < e <= 4.6]),  # slot 1 to 4.6 s
])
def test_a_restore_holding_a_write_started_after_the_bound_is_invalid(snapshot, point, extra):
    h, ops = ledger()
    more = extra(ops)
    bound = COMPLETED if snapshot == "end" else STARTED
    late = sorted(i for i, _, s, _ in ops if i in more and s > bound)
    assert late  # the doctored restore holds some
    v = judge(h, backup(committed_by(ops, point) + more, snapshot))
    assert v.valid is False and counts(v) == {"too_late": len(late)}
    assert [x["id"] for x in v.details["too_late_examples"]] == late
    assert re.match(rf"{len(late)} started after the backup's (completed|started), restored", v.summary)


def test_a_restore_that_is_not_a_cut_is_invalid():
    h, ops = ledger()
    hole = ident(0, 46)  # started 4.5, acknowledged 4.54: after the backup was issued, so not required ...
    v = judge(h, backup([i for i in committed_by(ops, 5.5) if i != hole]))
    # ... but the restore holds its slot's next insert, which started after that acknowledgement
    assert v.valid is False and counts(v) == {"not_a_cut": 1}
    (ex,) = v.details["not_a_cut_examples"]
    assert (ex["id"], ex["slot"], ex["restored"]) == (hole, 0, ident(0, 47))
    # the same id absent with nothing of its slot restored after it is a cut
    v = judge(h, backup([i for i in committed_by(ops, 5.5) if not (i < ident(1, 0) and i >= hole)]))
    assert v.valid is True, v.summary


def test_a_phantom_and_a_duplicate_and_a_wrong_row_count_are_invalid():
    h, ops = ledger()
    good = committed_by(ops, 5.5)
    v = judge(h, backup(good + [ident(4, 1)]))
    assert v.valid is False and counts(v) == {"phantom": 1} and v.details["phantom_examples"] == [ident(4, 1)]
    v = judge(h, backup(good + [good[3]]))
    assert v.valid is False and counts(v) == {"duplicates": 1} and v.details["duplicates_examples"] == [good[3]]
    v = judge(h, backup(good, rows=len(good) - 1))
    assert v.valid is False and counts(v) == {} and v.details["rows_match"] is False
    assert v.summary.startswith(f"the restored table counts {len(good) - 1} rows but {len(good)} ids were read back")


def test_a_definitely_failed_write_restored_is_invalid_absent_is_fine():
    failed = ident(0, 10)
    h, ops = ledger(types={failed: "fail"})
    good = committed_by(ops, 5.5)
    assert failed not in good
    assert judge(h, backup(good)).valid is True
    v = judge(h, backup(sorted(good + [failed])))
    assert v.valid is False and counts(v) == {"failed_present": 1}
    assert v.details["failed_present_examples"] == [failed]


def test_indeterminate_writes_pass_restored_or_not():
    early, during = ident(0, 10), ident(1, 50)  # info inserts before and while the backup ran
    h, ops = ledger(types={early: "info", during: "info"})
    good = committed_by(ops, 5.5)
    for extra in ([], [early], [during], [early, during]):
        v = judge(h, backup(good + extra))
        assert v.valid is True, v.summary
        assert (v.details["indeterminate"], v.details["indeterminate_restored"]) == (2, len(extra))
        assert v.details["indeterminate_restored_examples"] == extra


def test_a_backup_never_restored_is_unknown():
    h, ops = ledger()
    v = judge(h, backup())
    assert v.valid == UNKNOWN
    assert v.summary == "backup 1 (SNAPSHOTEND): the backup was not restored: what it holds cannot be checked " \
                        "(80 acknowledged before it was issued)"
    assert v.details["restored"] is None and v.details["missing"] is None and v.details["must_have"] == 80
    v = judge(h, backup(completed=None))
    assert v.valid == UNKNOWN and "the backup did not complete" in v.summary


def test_a_snapshot_start_without_its_start_observed_is_bounded_by_the_completion():
    h, ops = ledger()
    v = judge(h, backup(committed_by(ops, 5.5), "start", started=None))
    assert v.valid is True, v.summary
    assert (v.details["bound"], v.details["bound_from"], v.details["loose_bound"]) == (COMPLETED, "completed", True)
    assert "the start was not observed: bounded by the completion (loose)" in v.summary


def test_example_lists_are_bounded_and_in_time_order():
    h, ops = ledger()
    v = judge(h, backup([ident(1, 1)]), examples=3)  # every acknowledged id before the issue but one
    assert v.details["missing"] == 79
    ex = v.details["missing_examples"]
    assert len(ex) == 3 and [x["end"] for x in ex] == sorted(x["end"] for x in ex)
    assert [x["id"] for x in ex] == [ident(0, 1), ident(0, 2), ident(1, 2)]  # acknowledged 0.04, 0.14, 0.19 s


def test_a_workload_other_than_the_ledger_or_the_bank_is_unknown():
    h, ops = ledger(workload="counter")
    v = judge(h, backup(committed_by(ops, 5.5)))
    assert v.valid == UNKNOWN and "ledger and bank workloads only" in v.summary


def _bank(accounts=8, total=800):
    h = History("bank", {"accounts": accounts, "total": total, "table": "accounts"})
    h.add(0, "transfer", {"from": 1, "to": 2, "amount": 3}, "ok", 1.0, 1.1, "sql1")
    return h


def _bank_backup(ids, total, rows=None):
    b = backup(list(ids), rows=rows)
    b["restored"].update(table="accounts", sum=total)
    return b


def test_a_bank_restore_holds_every_account_and_the_total():
    v = judge(_bank(), _bank_backup(range(8), 800))
    assert v.valid is True and "all 8 accounts restored, holding the total 800" in v.summary


@pytest.mark.parametrize("ids,total,rows,said", [
    (range(8), 797, None, "the balances sum to 797, not the bank's total 800: not a consistent snapshot"),
    (range(7), 800, None, "accounts: 1 missing, 0 extra, 0 duplicate"),
    ([*range(8), 9], 800, None, "accounts: 0 missing, 1 extra, 0 duplicate"),
    ([*range(8), 3], 800, None, "accounts: 0 missing, 0 extra, 1 duplicate"),
    (range(8), None, None, "no sum of the balances was read back"),
    (range(8), 800, 9, "COUNT(*) 9 but 8 ids read back"),
])
def test_a_doctored_bank_restore_is_invalid(ids, total, rows, said):
    """A snapshot that cut a transfer in half holds another total; an account lost or invented."""
    v = judge(_bank(), _bank_backup(ids, total, rows))
    assert v.valid is False and said in v.summary


def test_a_bank_backup_never_restored_is_unknown_and_a_bad_sum_is_refused():
    assert judge(_bank(), backup()).valid == UNKNOWN
    with pytest.raises(ValueError, match="procedure.backup.restored.sum must be"):
        judge(_bank(), _bank_backup(range(8), "800"))


@pytest.mark.parametrize("change, message", [
    ({"snapshot": "middle"}, "procedure.backup.snapshot must be 'end' (SNAPSHOTEND) or 'start' (SNAPSHOTSTART)"),
    ({"issued": None}, "procedure.backup.issued must be a number"),
    ({"started": "soon"}, "procedure.backup.started must be a number (seconds on the run clock) or null"),
    ({"completed": 3.0}, "procedure.backup.completed 3.0 is before issued 4.0"),
    ({"started": 7.0}, "procedure.backup.started 7.0 is not between issued 4.0 and completed 6.0"),
    ({"id": "one"}, "procedure.backup.id must be an integer >= 0 or null"),
    ({"restored": {"ids": [1, "2"], "rows": 2}}, "procedure.backup.restored.ids must be the list of integer ids"),
    ({"restored": {"ids": [1, True], "rows": 2}}, "procedure.backup.restored.ids must be the list of integer ids"),
    ({"restored": {"ids": [1]}}, "procedure.backup.restored.rows is missing"),
    ({"restored": [1, 2]}, "procedure.backup.restored must be an object"),
    ({"restored": {"ids": [1], "rows": 1}, "completed": None},
     "procedure.backup.completed must be a number when the backup was restored"),
])
def test_a_malformed_record_raises_naming_the_field(change, message):
    h, _ = ledger(10)
    b = {**backup(), **change}
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        judge(h, b)
    del b["snapshot"]
    with pytest.raises(ValueError, match=r"^procedure\.backup\.snapshot is missing"):
        judge(h, b)
