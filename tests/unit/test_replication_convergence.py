"""The convergence check after a heal, on constructed inputs: lost, late, duplicated, wrong,
extra rows must each be caught, and only a replica equal to the source converges."""

import pytest

from ndbchaos.history import History
from ndbchaos.replication.convergence import (Expected, Snapshot, expected_from_ledger, judge, ledger_rows,
                                              ledger_value)

K = [1_000_000_001 + i for i in range(6)]  # ledger ids of slot 1 (value 1)
SRC = {k: 1 for k in K}
EXP = Expected({k: 1 for k in K[:5]}, frozenset({K[5]}))  # K[5]: an insert whose outcome was unknown


def snap(t, keys, value=1):
    return Snapshot(t, tuple((k, value) for k in keys))


def test_an_equal_replica_converges_with_its_catch_up_time():
    c = judge(EXP, SRC, [snap(9.0, K[:2]), snap(12.5, K)], caught_up_at=12.0, since=10.0)
    assert c.converged and c.seconds == 2.0 and c.rows == 6 and c.why == ()
    assert "converged" in c.summary()


def test_a_lost_row_is_caught():
    c = judge(EXP, SRC, [snap(12.5, K[1:])], caught_up_at=12.0, since=10.0)
    assert not c.converged and c.lost == (K[0],) and "1 lost" in c.summary()


def test_a_row_seen_only_after_the_catch_up_read_is_late_not_lost():
    c = judge(EXP, SRC, [snap(12.5, K[1:]), snap(14.0, K)], caught_up_at=12.0, since=10.0)
    assert not c.converged and c.late == (K[0],) and c.lost == ()


def test_a_duplicated_row_is_caught():
    c = judge(EXP, SRC, [snap(12.5, K + [K[2]])], caught_up_at=12.0, since=10.0)
    assert not c.converged and c.duplicated == (K[2],)


def test_a_wrong_value_and_an_extra_row_are_caught():
    rows = Snapshot(12.5, tuple((k, 2 if k == K[3] else 1) for k in K) + ((7_000_000_001, 7),))
    c = judge(EXP, SRC, [rows], caught_up_at=12.0, since=10.0)
    assert not c.converged and c.wrong == (K[3],) and c.extra == (7_000_000_001,)


def test_a_maybe_row_may_be_missing_on_both_sides_but_not_on_one():
    src = {k: 1 for k in K[:5]}
    assert judge(EXP, src, [snap(12.5, K[:5])], caught_up_at=12.0, since=10.0).converged
    # on the source, not on the replica: the replica missed a row
    c = judge(EXP, SRC, [snap(12.5, K[:5])], caught_up_at=12.0, since=10.0)
    assert not c.converged and c.lost == (K[5],)
    # on the replica, not on the source: allowed only because the outcome was unknown
    assert judge(EXP, src, [snap(12.5, K)], caught_up_at=12.0, since=10.0).converged


def test_no_catch_up_or_no_read_after_it_never_converges():
    assert judge(EXP, SRC, [snap(12.5, K)], caught_up_at=None, since=10.0).converged is False
    c = judge(EXP, SRC, [snap(11.0, K)], caught_up_at=12.0, since=10.0)
    assert not c.converged and "nothing to judge" in c.why[0]


def test_a_row_lost_on_the_source_is_counted_apart():
    src = {k: 1 for k in K[1:]}
    c = judge(EXP, src, [snap(12.5, K[1:])], caught_up_at=12.0, since=10.0)
    assert not c.converged and c.source_lost == (K[0],) and c.lost == (K[0],)


def test_the_ledger_history_gives_acknowledged_and_unknown_inserts():
    h = History("ledger")
    h.add(0, "insert", K[0], "ok", 1.0, 1.1, "sql1")
    h.add(0, "insert", K[1], "info", 1.2, 1.3, "sql1")
    h.add(1, "insert", K[2], "fail", 1.2, 1.3, "sql2")
    h.add(1, "read", [K[0]], "ok", 2.0, 2.1, "sql2")
    e = expected_from_ledger(h)
    assert e.acked == {K[0]: 1} and e.maybe == frozenset({K[1]})
    assert ledger_value(3_000_000_017) == 3
    assert ledger_rows([["3000000017", "3"]]) == ((3_000_000_017, 3),)


def test_a_whole_source_crash_may_take_its_window_from_both_sides_but_not_from_one():
    # K[0] and K[1] were acknowledged within the source's crash window; the source lost both
    exp = Expected({k: 1 for k in K[:5]}, frozenset({K[5]}), crash_may_lose=frozenset(K[:2]))
    src = {k: 1 for k in K[2:5]}
    c = judge(exp, src, [snap(12.5, K[2:5])], caught_up_at=12.0, since=10.0)
    assert c.converged and c.crash_lost == 2 and c.lost == () and c.source_lost == ()
    assert "2 acknowledged inserts lost by the source's crash" in c.summary()
    # the replica kept one of them: it is ahead of its source, not converged
    c = judge(exp, src, [snap(12.5, K[1:5])], caught_up_at=12.0, since=10.0)
    assert not c.converged and c.extra == (K[1],) and c.lost == ()
    # one the source kept must be on the replica like any other
    c = judge(exp, {k: 1 for k in K[1:5]}, [snap(12.5, K[2:5])], caught_up_at=12.0, since=10.0)
    assert not c.converged and c.lost == (K[1],)
    # a key outside the window the source lost is its own durability failure still
    c = judge(exp, {k: 1 for k in K[:2] + K[3:5]}, [snap(12.5, K[:2] + K[3:5])], caught_up_at=12.0, since=10.0)
    assert not c.converged and c.source_lost == (K[2],)


def test_the_crash_window_covers_the_acknowledgements_just_before_the_crash():
    h = History("ledger")
    h.add(0, "insert", K[0], "ok", 1.0, 5.9, "sql1")  # before the window [6, 10]
    h.add(0, "insert", K[1], "ok", 6.0, 6.0, "sql1")  # at its start
    h.add(1, "insert", K[2], "ok", 9.0, 10.0, "sql2")  # at the crash itself
    h.add(1, "insert", K[3], "ok", 10.5, 10.6, "sql2")  # after the crash (a later epoch)
    h.add(1, "insert", K[4], "info", 9.0, 9.5, "sql2")  # unknown: a maybe, never acknowledged
    e = expected_from_ledger(h, crashes=[10.0], window_s=4.0)
    assert e.crash_may_lose == frozenset({K[1], K[2]}) and e.maybe == frozenset({K[4]})
    assert expected_from_ledger(h).crash_may_lose == frozenset()
    with pytest.raises(ValueError, match="negative"):
        expected_from_ledger(h, crashes=[10.0], window_s=-1)


def test_a_replica_that_never_caught_up_is_still_judged_on_its_last_read():
    c = judge(EXP, SRC, [snap(11.0, K[:1]), snap(12.5, K[:3])], caught_up_at=None, since=10.0)
    assert not c.converged and c.seconds is None
    assert c.why[0] == "the replica never applied the source's last epoch"
    assert c.lost == (K[3], K[4]) + (K[5],) and c.late == () and c.rows == 3
    never = judge(EXP, SRC, [], caught_up_at=None, since=10.0)
    assert never.why == ("the replica never applied the source's last epoch",)


def test_a_reports_figures_are_plain_and_carry_the_judgement():
    import json

    from ndbchaos.replication.run import FaultWindow, ReplicationReport
    c = judge(EXP, SRC, [snap(12.5, K[1:])], caught_up_at=12.0, since=10.0)
    rep = ReplicationReport(100, 5, (FaultWindow("cut", 1.0, 11.0, 7, ("healed",)),), (), (), (None,), c, 0)
    f = rep.figures()
    assert json.loads(json.dumps(f)) == f  # attachable as it is
    assert f["converged"] is False and f["lost"] == 1 and f["catch_up_s"] == [None] and f["why"] == list(c.why)
    assert f["windows"] == [{"name": "cut", "injected": 1.0, "healed": 11.0, "notes": ["healed"]}]
