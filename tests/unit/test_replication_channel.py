"""The replication pair's layout (server ids, binlog options, overlays) and the channel's typed
state and lag, parsed from the rows the SQL nodes return (no Docker)."""

import pytest
import yaml

from ndbchaos.errors import UsageError
from ndbchaos.replication.channel import (ChannelError, LagTracker, ReplicationError, applied_sql, binlog_sql, gci,
                                          parse_binlog, parse_epoch, parse_state,
                                          sample_lag)
from ndbchaos.replication.layout import BINLOG_OPTIONS, PairLayout, cluster_options, overlay_text, sql_nodes


def test_source_sql_nodes_are_binlog_servers_with_distinct_server_ids():
    doc = yaml.safe_load(overlay_text("nodegroups=1,replicas=2,sql=2,mgm=1,spare=0", 1000, BINLOG_OPTIONS))
    cmds = {name: svc["command"] for name, svc in doc["services"].items()}
    assert cmds == {"sql1": ["mysqld", "--ndb-nodeid=21", "--server-id=1021", "--log-bin=binlog", "--ndb-log-bin=ON"],
                    "sql2": ["mysqld", "--ndb-nodeid=22", "--server-id=1022", "--log-bin=binlog", "--ndb-log-bin=ON"]}


def test_replica_ids_differ_from_the_source_ids(tmp_path, monkeypatch):
    monkeypatch.setenv("NDBCHAOS_TOOLS", str(tmp_path / "tools"))
    src, rep = cluster_options(PairLayout(), "source"), cluster_options(PairLayout(), "replica")
    assert (src.ndb_subnet, rep.ndb_subnet) == ("10.213.90", "10.213.91")
    ids = []
    for opts in (src, rep):
        (overlay,) = opts.overlays
        doc = yaml.safe_load(open(overlay).read())
        ids += [a for svc in doc["services"].values() for a in svc["command"] if a.startswith("--server-id=")]
    assert len(ids) == len(set(ids)) == 3
    assert sql_nodes("small") == [("sql1", 4)]


def test_bad_pairs_are_refused_in_one_line():
    with pytest.raises(UsageError, match="distinct subnets"):
        PairLayout(source_net="10.0.5", replica_net="10.0.5")
    with pytest.raises(UsageError):
        PairLayout(source_layout="nodegroups=1,replicas=9")
    with pytest.raises(UsageError, match="no side"):
        cluster_options(PairLayout(), "middle")


def test_channel_state_running_and_stopped_on_an_applier_error():
    ok = parse_state(1.0, [["state", "ON", "ON", "0", ""]])
    assert ok.running and ok.errors == () and ok.last_error is None
    st = parse_state(2.0, [["state", "CONNECTING", "OFF", "2003", "Can't connect"],
                           ["worker 1", "1062", "Duplicate entry '7' for key 'PRIMARY'"]])
    assert not st.running
    # the applier's error comes first: it stops the channel; the receiver retries its own
    assert st.last_error == ChannelError("worker 1", 1062, "Duplicate entry '7' for key 'PRIMARY'")
    assert st.errors[1].where == "receiver" and "1062" in st.describe()
    none = parse_state(3.0, [])
    assert (none.receiver, none.applier, none.running) == ("(none)", "(none)", False)
    with pytest.raises(ReplicationError):
        parse_state(4.0, [["state", "ON", "ON", "x", ""]])


def test_epochs_and_binlog_rows():
    assert gci((17 << 32) | 5) == 17
    assert parse_epoch([["73014444036"]], "x") == 73014444036
    with pytest.raises(ReplicationError):
        parse_epoch([], "ndb_apply_status")
    assert parse_binlog([["99", "3"]]) == (99, 3)
    with pytest.raises(ReplicationError):
        parse_binlog([["99"]])
    assert "server_id IN (1021, 1022)" in applied_sql((1021, 1022))
    assert "epoch > 42" in binlog_sql(42)


def test_lag_in_seconds_counts_from_the_first_sighting_of_the_oldest_unapplied_epoch():
    e = [(10 << 32) + i for i in range(5)]
    tr = LagTracker()
    assert tr.observe(0.0, e[1], e[1], 0).seconds == 0.0
    assert tr.observe(1.0, e[2], e[1], 1).seconds == 0.0  # first seen now
    lag = tr.observe(3.0, e[4], e[1], 3)  # e[2] (seen at 1.0) is still the oldest unapplied
    assert lag.seconds == pytest.approx(2.0) and not lag.caught_up and lag.behind_epochs == 3
    assert tr.observe(4.0, e[4], e[3], 1).seconds == pytest.approx(1.0)  # e[4], seen at 3.0
    done = tr.observe(5.0, e[4], e[4], 0)
    assert done.caught_up and done.seconds == 0.0 and done.behind_gci == 0
    # an epoch the tracker never saw above the applied one: not measurable
    assert LagTracker().observe(1.0, 0, 0, 0).seconds == 0.0
    behind = LagTracker(seen=[(0.0, e[0])]).observe(1.0, e[0], (9 << 32), 1)
    assert behind.seconds == pytest.approx(1.0) and behind.behind_gci == 1


def test_epochs_seen_while_the_replica_cannot_be_read_count_in_the_lag():
    e = [(10 << 32) + i for i in range(4)]
    tr = LagTracker()
    tr.observe(0.0, e[0], e[0], 0)
    tr.see(1.0, e[1])  # the applier is down: only the source answers
    tr.see(2.0, e[2])
    tr.see(2.5, e[1])  # an older epoch changes nothing
    assert tr.observe(6.0, e[3], e[0], 3).seconds == pytest.approx(5.0)


class Node:
    """An SQL node that answers one row, or fails like a stopped container."""

    def __init__(self, name, row=None):
        self.name, self.row, self.asked = name, row, []

    def rows(self, sql, timeout=30):
        self.asked.append(sql)
        if self.row is None:
            raise ReplicationError(f"{self.name}: SQL failed (exit 126): cannot exec in a stopped container")
        return [self.row]


E = [(10 << 32) + i for i in range(10)]


def test_a_lag_sample_with_everything_up_is_exact():
    replica, src = Node("r/sql1", [str(E[5])]), Node("s/sql1", [str(E[9]), "4"])
    lag, errors = sample_lag(replica, [src], (1021,), LagTracker(), 1.0, None)
    assert errors == [] and not lag.stale
    assert (lag.applied_epoch, lag.source_epoch, lag.behind_epochs) == (E[5], E[9], 4)
    assert f"epoch > {E[5]}" in src.asked[0]  # the replica first: never an epoch counted applied too soon


def test_a_dead_applier_compares_the_source_with_the_last_applied_epoch():
    tr = LagTracker(seen=[(1.0, E[6])])
    last = tr.observe(1.0, E[6], E[5], 1)
    lag, errors = sample_lag(Node("r/sql1"), [Node("s/sql1", [str(E[9]), "4"])], (1021,), tr, 3.0, last)
    assert lag.stale and lag.applied_epoch == E[5] and lag.seconds == pytest.approx(2.0) and len(errors) == 1
    # no sample before: nothing to compare with
    assert sample_lag(Node("r/sql1"), [Node("s/sql1", [str(E[9]), "4"])], (1021,), LagTracker(), 3.0, None)[0] is None


def test_a_dead_binlog_server_is_replaced_by_the_standby_index():
    dead, standby = Node("s/sql1"), Node("s/sql2", [str(E[8]), "3"])
    lag, errors = sample_lag(Node("r/sql1", [str(E[5])]), [dead, standby], (1021, 1022), LagTracker(), 1.0, None)
    assert lag.source_epoch == E[8] and not lag.stale and "stopped container" in errors[0]
    assert sample_lag(Node("r/sql1", [str(E[5])]), [dead], (1021,), LagTracker(), 1.0, None)[0] is None
