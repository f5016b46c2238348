"""NDB's rules as pure functions (ndbchaos.engines.ndb.rules and .expectations): functions of
the topology, config.ini, the arbitrator in effect and keywords. No engine, no cluster object,
no Docker: a topology and the shipped config files are all they get."""

import pytest

from ndbchaos import topology as TP
from ndbchaos.engines.base import Expectation
from ndbchaos.resources import COMPOSE_DIR
from ndbchaos.engines.ndb import errors as ndb_errors
from ndbchaos.engines.ndb import expectations as X
from ndbchaos.engines.ndb import rules as R
from ndbchaos.engines.ndb.config import parse_config_ini, read_config
from ndbchaos.engines.ndb.layout import LAYOUTS
from ndbchaos.errors import UsageError

ROLE = {"MGM": TP.MGM, "NDB": TP.DATA, "API": TP.SQL}


def shipped(layout="default"):
    """(topology, config) of a shipped layout: one node per configured section with a host."""
    cfg = read_config(COMPOSE_DIR / LAYOUTS[layout][1])
    names = {"MGM": "mgm", "NDB": "data", "API": "sql"}
    counters: dict[str, int] = {}
    nodes = []
    for n in cfg.nodes:
        if n.type == "API" and not n.hostname:
            continue
        counters[n.type] = counters.get(n.type, 0) + 1
        name = f"{names[n.type]}{counters[n.type]}"
        nodes.append(TP.Node(name, ROLE[n.type], f"p-{name}-1", nodeid=n.node_id, nodegroup=n.nodegroup))
    return TP.Topology("p", "ndb", nodes), cfg


# -- timing facts ---------------------------------------------------------------------------------

def test_timings_and_crash_window_come_from_config_ini():
    _, cfg = shipped()
    tm = R.timings(cfg)
    assert tm == {"heartbeat_db_s": 1.0, "heartbeat_api_s": 1.5, "arbitration_timeout_s": 3.0, "gcp_interval_s": 2.0,
                  "epochs_timeout_s": 0.0, "gcp_timeout_s": 120.0}
    assert R.crash_loss_window_s(tm) == 4.0
    # the documented defaults when config.ini sets nothing
    bare = parse_config_ini("[ndbd default]\nNoOfReplicas=2\n[ndbd]\nNodeId=2\n")
    assert R.timings(bare) == {"heartbeat_db_s": 5.0, "heartbeat_api_s": 1.5, "arbitration_timeout_s": 7.5,
                               "gcp_interval_s": 2.0, "epochs_timeout_s": 0.0, "gcp_timeout_s": 120.0}


def test_arbitrator_candidates_by_rank():
    assert R.arbitrator_candidates(shipped()[1]) == [1, 2]
    assert R.arbitrator_candidates(shipped("small")[1]) == [1]
    cfg = parse_config_ini("[ndb_mgmd]\nNodeId=1\nArbitrationRank=2\n[ndb_mgmd]\nNodeId=2\nArbitrationRank=1\n"
                           "[mysqld]\nNodeId=5\nArbitrationRank=1\n[mysqld]\nNodeId=6\nArbitrationRank=0\n")
    assert R.arbitrator_candidates(cfg) == [2, 5, 1]


def test_partition_bounds_follow_the_heartbeat_ring():
    tm = {"heartbeat_db_s": 1.0, "arbitration_timeout_s": 3.0}
    # an isolated node: finds 3 peers one after the other, decides alone
    assert R.partition_bounds(tm, 3, 1) == (3 * 5 + 3 + R.OBSERVATION_SLACK, 3 * 5 + 3 + R.OBSERVATION_SLACK)
    # a half of a 2/2 split: its peer finds the president's shutdown one round later
    assert R.partition_bounds(tm, 2, 2) == (2 * 5 + 3 + R.OBSERVATION_SLACK, 3 * 5 + 3 + R.OBSERVATION_SLACK)
    # a half of a 4/4 split: its three peers shut down one after the other, a round each (9.7.2:
    # 20.2 s for the president, then 25.2, 27.9, 32.6 s; the old bound of one round was 30 s)
    assert R.partition_bounds(tm, 4, 4) == (4 * 5 + 3 + R.OBSERVATION_SLACK, 7 * 5 + 3 + R.OBSERVATION_SLACK)
    assert R.partition_bounds(tm, 4, 4)[1] > 32.6


# -- partition_outcome ----------------------------------------------------------------------------

def test_partition_outcome_with_the_arbitrator_given():
    topo, cfg = shipped()
    comps = [["data1", "data3", "mgm1"], ["data2", "data4"]]
    out = R.partition_outcome(topo, cfg, comps, arbitrator=1, arbitrator_source="ndbinfo")
    assert out["serving"] == [comps[0]] and out["stopped"] == [comps[1]] and out["race"] == []
    assert out["arbitrator"] == 1 and out["arbitrator_source"] == "ndbinfo" and "ndbinfo" in out["rule"]
    assert out["exit_codes"] == {"data2": 2305, "data4": 2305}
    # the same split with mgm2 arbitrating: the other side wins
    assert R.partition_outcome(topo, cfg, comps, arbitrator="mgm2")["serving"] == []  # mgm2 in no component: race
    assert R.partition_outcome(topo, cfg, [comps[0], comps[1] + ["mgm2"]], arbitrator="mgm2")["serving"] == [
        comps[1] + ["mgm2"]]
    none = R.partition_outcome(topo, cfg, comps, arbitrator=None)
    assert none["serving"] == [] and "no arbitrator available" in none["rule"]
    with pytest.raises(UsageError):
        R.partition_outcome(topo, cfg, comps, arbitrator="mgm9")


STOPPED_EVENTS = ["arbitration_check_lost|no_arbitrator|arbitration_lost|arbitrator_lost", "forced_shutdown"]


def test_partition_outcome_names_the_events_each_side_logs():
    """What the real engine logged in each case (tests/unit/fixtures/ndb-9.7 and the catalogue's
    runs on 9.7.2): the winners of an even split log the arbitration they won, a side with a
    complete node group logs the check it won, a stopped side logs why and its forced shutdown."""
    topo, cfg = shipped()
    rest = [n.name for n in topo.nodes if n.name != "data1"]
    halves = [["data1", "data3", "mgm1"], ["data2", "data4"]]
    assert R.partition_outcome(topo, cfg, halves, arbitrator=1)["expected_events"] == [
        "arbitration_won", *STOPPED_EVENTS]
    assert R.partition_outcome(topo, cfg, [["data1"], rest], arbitrator=1)["expected_events"] == [
        "arbitration_check_won", *STOPPED_EVENTS]
    assert R.partition_outcome(topo, cfg, halves, arbitrator=None)["expected_events"] == STOPPED_EVENTS
    sql_only = [["sql1"], [n.name for n in topo.nodes if n.name != "sql1"]]
    assert R.partition_outcome(topo, cfg, sql_only, arbitrator=1)["expected_events"] == []


def test_partition_outcome_checks_its_input_first():
    topo, cfg = shipped()
    with pytest.raises(UsageError):
        R.check_partition(topo, cfg, [["data1", "data2"], ["data2"]])
    with pytest.raises(UsageError):
        R.check_partition(topo, cfg, [["nope"]])
    other = parse_config_ini((COMPOSE_DIR / LAYOUTS["default"][1]).read_text()
                             + "\n[ndbd default]\nArbitration=WaitExternal\n")
    with pytest.raises(UsageError):
        R.partition_outcome(topo, other, [["data1"]], arbitrator=1)


# -- expectations ---------------------------------------------------------------------------------

def test_every_family_is_a_pure_function_of_its_inputs():
    topo, cfg = shipped()
    for fam in X.FAMILIES:
        a = X.expectation(fam, topo, cfg, 1)
        b = X.expectation(fam, topo, cfg, 1)
        assert isinstance(a, Expectation) and a.to_dict() == b.to_dict() and a.family == fam
        assert a.rule.startswith("docs/facts.md NDB")
    with pytest.raises(UsageError):
        X.expectation("meteor_strike", topo, cfg, 1)


def test_the_arbitrator_in_effect_decides_and_the_keyword_overrides_it():
    topo, cfg = shipped()
    assert X.expectation("mgmnode_loss", topo, cfg, 2).details["lost"] == ["mgm2"]
    assert X.expectation("mgmnode_loss", topo, cfg, 2).details["arbitrator_after"] == 1
    assert X.expectation("mgmnode_loss", topo, cfg, 2, arbitrator=1).details["lost"] == ["mgm1"]
    assert X.expectation("mgmnode_loss", topo, cfg, 2, lost=1).details["lost"] == ["mgm2"]
    halves = X.expectation("partition_halves_arbitrator_side", topo, cfg, 2)
    assert halves.details["arbitrator_node"] == "mgm2"
    small, scfg = shipped("small")
    assert X.expectation("datanode_loss", small, scfg, 1).cluster_survives
    assert not X.expectation("datanode_loss", small, scfg, None).cluster_survives
    assert not X.expectation("datanode_loss", small, scfg, 1, arbitrator=None).cluster_survives


def test_lost_pool_orders():
    topo, cfg = shipped()
    assert X.lost_pool("datanode_loss", topo, cfg, None) == ["data1", "data3", "data2", "data4"]
    assert X.lost_pool("mgmnode_loss", topo, cfg, 2) == ["mgm2", "mgm1"]
    assert X.lost_pool("mgmnode_loss", topo, cfg, "mgm1") == ["mgm1", "mgm2"]
    assert X.lost_pool("sqlnode_loss", topo, cfg, None) == ["sql1", "sql2"]


# -- error classes ----------------------------------------------------------------------------------

def test_ndb_error_rules_place_only_their_own_numbers():
    assert ndb_errors.classify("ndb", 1297, "Got temporary error 4010 'x' from NDBCLUSTER") == ("unknown", 4010)
    assert ndb_errors.classify("ndb", 1180, "Got error 4009 - 'Cluster Failure' during COMMIT") == ("unknown", 4009)
    assert ndb_errors.classify("galera", 1180, "Got error 4009 - 'Cluster Failure' during COMMIT") is None
    assert ndb_errors.classify("ndb", None, "Got temporary error 4025 'x' from NDBCLUSTER") == ("temporary", 4025)
    assert ndb_errors.classify("ndb", None, "") is None
    for errno in (2013, 1205, 1213, 1047, 1062):
        assert ndb_errors.classify("ndb", errno, "x") is None
    assert ndb_errors.ndb_class(4115) == "unknown" and ndb_errors.ndb_class(281) == "permanent"
    assert ndb_errors.handler_code("Got error 157 - 'x' from storage engine") == 157
