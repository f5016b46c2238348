"""The channel failover's SQL, the standby's answers, and the failover as a procedure of named
steps with a fault on any of them (no Docker: the pair is faked)."""

from types import SimpleNamespace

import pytest

from ndbchaos import topology as TP
from ndbchaos.replication.channel import ReplicationError
from ndbchaos.replication.failover import (APPLIER_RESET, STEPS, failover, parse_position, play, position_sql,
                                           reposition)


def test_the_position_is_right_after_the_last_applied_epoch_in_the_standby_binlog():
    sql = position_sql(90194313225)
    assert "WHERE epoch = 90194313225" in sql and "next_position" in sql and "SUBSTRING_INDEX(next_file" in sql
    assert parse_position([["binlog.000003", "7608"]], 90194313225, "sql2") == ("binlog.000003", 7608)


def test_a_standby_without_that_epoch_or_with_a_strange_row_is_refused_in_one_line():
    with pytest.raises(ReplicationError, match="no ndb_binlog_index row for epoch 42"):
        parse_position([], 42, "sql2")
    with pytest.raises(ReplicationError, match="unexpected"):
        parse_position([["binlog.000003", "x"]], 42, "sql2")


# -- the failover as a procedure: named steps on the run clock, a fault on any of them ------------


class _Clock:
    def __init__(self):
        self.t = 100.0

    def now(self):
        self.t += 0.25
        return self.t


class _Sql:
    def __init__(self, pair, side, name):
        self.pair, self.where = pair, f"{side}/{name}"

    def rows(self, sql, timeout=30):
        self.pair.log.append((self.where, sql.split()[0]))
        if self.where in self.pair.down:
            raise ReplicationError(f"{self.where}: SQL failed (exit 1): ERROR 2002 (HY000): Can't connect")
        if "ndb_apply_status" in sql:
            return [["90194313225"]]
        if "gtid_executed" in sql or sql.startswith("STOP"):
            return [["f613d3c0-ec21-11f1-88cb-02420ad55a79:1-80"]] if "@@" in sql else []
        return [["binlog.000003", "7608"]]


class _Pair:
    """What the failover reads of a pair: the binlog server, the source's SQL nodes, the clock,
    SQL on either side, the channel's change and the replica's notes."""

    def __init__(self):
        self.binlog_server, self.source_ids, self.clock = "sql1", (1021, 1022), _Clock()
        nodes = [TP.Node(n, TP.SQL, n) for n in ("sql1", "sql2")]
        self.source = SimpleNamespace(topology=SimpleNamespace(sql_nodes=nodes))
        self.replica = SimpleNamespace(note=lambda kind, **kw: self.notes.append((kind, kw)))
        self.log, self.down, self.notes, self.changed = [], set(), [], []

    def sql(self, side, name=None):
        return _Sql(self, side, name or (self.binlog_server if side == "source" else "sql1"))

    def configure_channel(self, binlog_server=None, log_file=None, log_pos=None):
        if "replica/sql1" in self.down:
            raise ReplicationError("replica/sql1: SQL failed (exit 1): ERROR 2002 (HY000): Can't connect")
        self.changed.append((binlog_server, log_file, log_pos))
        self.binlog_server = binlog_server


def test_the_failover_is_three_named_steps_on_the_run_clock():
    p = _Pair()
    f = failover(p, "sql2")
    assert [s.name for s in f.steps] == list(STEPS) and f.done and f.fault is None
    assert [s.outcome for s in f.steps] == ["done"] * 3
    assert all(a.end <= b.start for a, b in zip(f.steps, f.steps[1:]))  # in order, on one clock
    assert (f.latest_epoch, f.log_file, f.log_pos) == (90194313225, "binlog.000003", 7608)
    assert f.steps[0].detail == "epoch 90194313225 (gci 21)" and f.steps[1].detail == "sql2: binlog.000003:7608"
    assert p.changed == [("sql2", "binlog.000003", 7608)] and p.binlog_server == "sql2"
    assert p.notes == [("replication_failover", {"frm": "sql1", "to": "sql2", "epoch": 90194313225,
                                                 "file": "binlog.000003", "position": 7608})]


@pytest.mark.parametrize("step,down", [(STEPS[0], "replica/sql1"), (STEPS[1], "source/sql2"),
                                       (STEPS[2], "replica/sql1")])
def test_a_fault_lands_on_any_step_and_the_steps_after_a_failed_one_are_skipped(step, down):
    p = _Pair()
    at = []

    def fault():
        at.append([s for s, _ in p.log])  # what ran before the fault landed
        p.down.add(down)
        return f"{down} killed"

    f = play(p, "sql2", fault_step=step, fault=fault)
    k = STEPS.index(step)
    assert len(at[0]) == k  # the fault landed as its step began, after the steps before it
    assert [s.outcome for s in f.steps] == ["done"] * k + ["failed"] + ["skipped"] * (2 - k)
    hit = f.steps[k]
    assert hit.fault == f"{down} killed at {step!r}" and f.fault == hit.fault
    assert "Can't connect" in hit.detail and not f.done
    assert all(s.detail == f"not run: {step} failed" for s in f.steps[k + 1:])
    # the channel was never moved and the pair still names the old binlog server; no failover noted
    assert p.changed == [] and p.binlog_server == "sql1" and p.notes == []
    with pytest.raises(ReplicationError, match=r"not done: .*: failed .*Can't connect"):
        failover(p, "sql2")  # the plain failover raises with every step's record


def test_a_failover_to_nowhere_or_on_no_step_is_refused_before_anything_runs():
    p = _Pair()
    with pytest.raises(ReplicationError, match="already the channel's binlog server"):
        play(p, "sql1")
    with pytest.raises(ReplicationError, match="not an SQL node of the source"):
        play(p, "sql9")
    with pytest.raises(ValueError, match="has no step 'restart'.*latest applied epoch"):
        play(p, "sql2", fault_step="restart", fault=lambda: None)
    with pytest.raises(ValueError, match="without a fault"):
        play(p, "sql2", fault_step=STEPS[1])
    assert p.log == [] and p.changed == []


def test_reposition_runs_the_steps_on_the_channels_own_binlog_server_with_the_applier_reset():
    # after a replica cluster's crash: the channel restarted right after the newest epoch the
    # replica holds, on the server it reads already (a failover to it is refused)
    p = _Pair()
    f = reposition(p)
    assert f.done and (f.from_server, f.to_server) == ("sql1", "sql1")
    assert [s.name for s in f.steps] == [*STEPS[:2], APPLIER_RESET, STEPS[2]]
    assert f.steps[2].detail == "STOP REPLICA; RESET REPLICA"
    assert p.changed == [("sql1", "binlog.000003", 7608)]
    assert ("source/sql1", "SELECT") in p.log  # the position read on sql1's own ndb_binlog_index
    p.down.add("replica/sql1")
    with pytest.raises(ReplicationError, match="reposition on sql1 not done: latest applied epoch: failed"):
        reposition(p)


def test_reposition_can_forget_the_executed_gtids_before_the_channel_is_moved():
    p = _Pair()
    f = reposition(p, forget_gtids=True)
    assert [s.name for s in f.steps] == [*STEPS[:2], APPLIER_RESET, STEPS[2]] and f.done
    assert ("replica/sql1", "STOP") in p.log and p.changed == [("sql1", "binlog.000003", 7608)]
    assert "RESET REPLICA; RESET BINARY LOGS AND GTIDS" in f.steps[2].detail and ":1-80" in f.steps[2].detail
    assert [s.name for s in failover(_Pair(), "sql2").steps] == list(STEPS)  # a failover: three steps
