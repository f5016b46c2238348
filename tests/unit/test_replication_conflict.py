"""The active-active judgement (``ndbchaos.replication.conflict.judge``) on constructed results:
the winner of each key, the exceptions held to the keys both sides wrote, the counters."""

import pytest

from ndbchaos.replication.channel import ReplicationError
from ndbchaos.replication.conflict import (ExceptionRow, Write, counter_changes, expected, judge, parse_counters,
                                           parse_exceptions, parse_rows)

KEYS = 6
# A (primary) wrote 0, 2, 3; B (secondary) wrote 2, 3, 4: 2 and 3 conflict
WRITES = [Write("A", 0, "A:1", 1), Write("A", 2, "A:2", 2), Write("B", 2, "B:1", 1), Write("B", 3, "B:2", 2),
          Write("A", 3, "A:3", 3), Write("B", 4, "B:3", 3), Write("B", 2, "B:4", 4)]
WANT = {0: "A:1", 1: "seed", 2: "A:2", 3: "A:3", 4: "B:3", 5: "seed"}
EX = [ExceptionRow(2, "UPDATE_ROW", "DATA_IN_CONFLICT"), ExceptionRow(2, "UPDATE_ROW", "DATA_IN_CONFLICT"),
      ExceptionRow(3, "UPDATE_ROW", "DATA_IN_CONFLICT")]
COUNT = {"A": {"Ndb_conflict_fn_epoch2": 3}, "B": {"Ndb_conflict_refresh_op_count": 3,
                                                 "Ndb_conflict_reflected_op_prepare_count": 2,
                                                 "Ndb_conflict_reflected_op_discard_count": 2}}


def test_the_primary_wins_the_secondary_keeps_what_only_it_wrote():
    assert expected(KEYS, WRITES) == WANT


def test_the_history_held_converges():
    rep = judge(KEYS, WRITES, dict(WANT), dict(WANT), EX, [], COUNT)
    assert rep.ok and rep.both == (2, 3) and rep.writes == {"A": 3, "B": 4}
    assert "converged as the history says" in rep.summary()


def test_clusters_that_differ_are_caught():
    b = {**WANT, 3: "B:2"}
    rep = judge(KEYS, WRITES, dict(WANT), b, EX, [], COUNT)
    assert not rep.ok and rep.differ == (3,)


def test_the_secondary_winning_a_conflict_is_caught():
    both = {**WANT, 2: "B:4"}
    rep = judge(KEYS, WRITES, both, dict(both), EX, [], COUNT)
    assert not rep.ok and rep.wrong == (2,) and rep.differ == ()


def test_a_conflict_missed_or_invented_is_caught():
    rep = judge(KEYS, WRITES, dict(WANT), dict(WANT), EX[:2], [], {"A": {"Ndb_conflict_fn_epoch2": 2}, "B": COUNT["B"]})
    assert not rep.ok and "1 missed (3)" in rep.why[0]
    rep = judge(KEYS, WRITES, dict(WANT), dict(WANT), EX + [ExceptionRow(4, "UPDATE_ROW", "DATA_IN_CONFLICT")], [],
                {"A": {"Ndb_conflict_fn_epoch2": 4}, "B": COUNT["B"]})
    assert not rep.ok and "1 not written by both (4)" in rep.why[0]


def test_exceptions_of_another_kind_on_the_secondary_or_miscounted_are_caught():
    odd = [ExceptionRow(2, "WRITE_ROW", "ROW_ALREADY_EXISTS")] + EX[1:]
    assert "another kind" in judge(KEYS, WRITES, dict(WANT), dict(WANT), odd, [], COUNT).why[0]
    assert "on the secondary" in judge(KEYS, WRITES, dict(WANT), dict(WANT), EX, EX[:1], COUNT).why[0]
    assert "counted 2 conflicts" in judge(KEYS, WRITES, dict(WANT), dict(WANT), EX, [],
                                          {"A": {"Ndb_conflict_fn_epoch2": 2}, "B": COUNT["B"]}).why[0]


def test_the_secondarys_counters_are_held_to_the_conflicts():
    few = {"A": COUNT["A"], "B": {**COUNT["B"], "Ndb_conflict_refresh_op_count": 1}}
    assert "applied 1 refreshes for 2 rows" in judge(KEYS, WRITES, dict(WANT), dict(WANT), EX, [], few).why[0]
    odd = {"A": COUNT["A"], "B": {**COUNT["B"], "Ndb_conflict_reflected_op_discard_count": 3}}
    assert "discarded 3 reflected operations of 2" in judge(KEYS, WRITES, dict(WANT), dict(WANT), EX, [], odd).why[0]


def test_a_key_nobody_wrote_is_caught():
    rows = {**WANT, 9: "seed"}
    rep = judge(KEYS, WRITES, rows, dict(rows), EX, [], COUNT)
    assert not rep.ok and any("nobody wrote" in w for w in rep.why)


def test_parsing_what_the_servers_answer():
    assert parse_rows([["1", "seed"], ["2", "A:17"]]) == {1: "seed", 2: "A:17"}
    with pytest.raises(ReplicationError, match="unexpected row"):
        parse_rows([["1", "C:1"]])
    assert parse_exceptions([["2", "UPDATE_ROW", "DATA_IN_CONFLICT"]]) == EX[:1]
    with pytest.raises(ReplicationError, match="unexpected row"):
        parse_exceptions([["x", "UPDATE_ROW", "DATA_IN_CONFLICT"]])
    c = parse_counters([["Ndb_conflict_fn_epoch2", "7"], ["Ndb_conflict_last_conflict_epoch", "0"], ["x", "y"]])
    assert c == {"Ndb_conflict_fn_epoch2": 7, "Ndb_conflict_last_conflict_epoch": 0}
    assert counter_changes({"a": 1, "b": 2}, {"a": 4, "b": 2, "c": 1}) == {"a": 3, "c": 1}
