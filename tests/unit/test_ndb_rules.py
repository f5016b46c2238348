"""NDB's rules as pure functions (ndbchaos.engines.ndb.rules and .expectations): functions of
the topology, config.ini, the arbitrator in effect and keywords. No engine, no cluster object,
no Docker: a topology and the shipped config files are all they get."""

import pytest

from ndbchaos import topology as TP
from ndbchaos.vocabulary import Expectation
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


# -- the arbitration check, branch by branch (QmgrMain.cpp handleArbitCheck's order) ---------------

TWO_BY_TWO = {0: {11, 12}, 1: {13, 14}}
THREE_BY_FIVE = {0: {1, 2, 3}, 1: {4, 5, 6}, 2: {7, 8, 9}, 3: {10, 11, 12}, 4: {13, 14, 15}}


@pytest.mark.parametrize("groups, before, survivors, outcome, text", [
    # a node group with no survivor loses, even with more than half left
    (TWO_BY_TWO, {11, 12, 13, 14}, {11, 12, 13}, "win", "Arbitration check won - node group majority"),
    (TWO_BY_TWO, {11, 12, 13, 14}, {11, 12}, "lose", "Arbitration check lost - missing node group"),
    ({0: {1, 2, 3}, 1: {4, 5, 6}}, {1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5}, "win",
     "Arbitration check won - node group majority"),
    # every group present, none complete: the count against the nodes alive before decides
    ({0: {1, 2, 3}, 1: {4, 5, 6}}, {1, 2, 3, 4, 5, 6}, {1, 2, 4, 5}, "win",
     "Arbitration check won - all node groups and more than 1/2 nodes left"),
    (TWO_BY_TWO, {11, 12, 13, 14}, {11, 13}, "arbitrate", "Network partitioning - arbitration required"),
    ({0: {1, 2, 3}, 1: {4, 5, 6}}, {1, 2, 3, 4, 5, 6}, {1, 4}, "lose",
     "Arbitration check lost - less than 1/2 nodes left"),
    # a complete node group wins before the count: 7 of 15 with group 0 complete (Qmgr's order)
    (THREE_BY_FIVE, set(range(1, 16)), {1, 2, 3, 4, 7, 10, 13}, "win", "Arbitration check won - node group majority"),
    # the count is of the nodes alive before: 2 of 3 alive (one already gone) is more than half
    ({0: {1, 2, 3}, 1: {4, 5, 6}}, {1, 2, 4}, {1, 4}, "win",
     "Arbitration check won - all node groups and more than 1/2 nodes left"),
    ({0: {1, 2, 3}, 1: {4, 5, 6}}, {1, 2, 4, 5}, {1, 4}, "arbitrate", "Network partitioning - arbitration required"),
])
def test_arbitration_check_in_qmgr_order(groups, before, survivors, outcome, text):
    assert R.arbitration_check(groups, before, survivors) == (outcome, text)


def test_partition_outcome_counts_only_the_data_nodes_alive_before():
    topo, cfg = shipped()
    rest = [n.name for n in topo.nodes if n.name not in ("data1", "data3")]
    # data4 was already down: data1,data3 is 2 of 3 alive, with both node groups: they win
    out = R.partition_outcome(topo, cfg, [["data1", "data3"], rest], alive=["data1", "data2", "data3"],
                              arbitrator=1)
    d = out["decisions"][0]
    assert d["outcome"] == "serving" and d["data_nodes"] == [11, 13] and "more than 1/2" in d["check"]
    assert out["decisions"][1]["data_nodes"] == [12] and out["decisions"][1]["outcome"] == "stopped"
    assert "alive before: 3" in out["rule"]
    # a live data node in no component counts as lost, and is said so
    left_out = R.partition_outcome(topo, cfg, [["data1", "data2", "data3"], ["mgm1"]], arbitrator=1)
    assert left_out["lost_data_nodes"] == [14] and "count as lost: 14" in left_out["rule"]
    assert left_out["serving"] == [["data1", "data2", "data3"]]


def test_partition_outcome_sql_nodes_serve_with_their_data_nodes():
    topo, cfg = shipped()
    comps = [["data1", "data3", "mgm1", "sql1"], ["data2", "data4", "sql2"]]
    out = R.partition_outcome(topo, cfg, comps, arbitrator=1)
    assert out["sql_serving"] == ["sql1"] and out["shut_down"] == ["data2", "data4"]
    # an SQL node in no component serves when some component does
    out2 = R.partition_outcome(topo, cfg, [["data1", "data3", "mgm1"], ["data2", "data4"]], arbitrator=1)
    assert out2["sql_serving"] == ["sql1", "sql2"]
    stopped = R.partition_outcome(topo, cfg, [["data1", "data3", "sql1"], ["data2", "data4", "sql2"], ["mgm1"]],
                                  arbitrator=1)
    assert stopped["sql_serving"] == [] and stopped["serving"] == [] and len(stopped["stopped"]) == 3
    assert stopped["exit_codes"] == {n: 2305 for n in ("data1", "data2", "data3", "data4")}


def test_partition_outcome_bounds_from_the_heartbeat_ring():
    topo, cfg = shipped()
    tm = R.timings(cfg)
    comps = [["data1", "data3", "mgm1"], ["data2", "data4"]]
    out = R.partition_outcome(topo, cfg, comps, arbitrator=1)
    assert out["detection_bound_s"] == round(R.partition_bounds(tm, 2, 2)[0], 3)
    assert out["decision_bound_s"] == round(R.partition_bounds(tm, 2, 2)[1], 3)
    assert f"within {R.partition_bounds(tm, 2, 2)[1]:.0f} s of the cut" in out["rule"]
    rest = [n.name for n in topo.nodes if n.name != "data1"]
    iso = R.partition_outcome(topo, cfg, [["data1"], rest], arbitrator=1)
    assert iso["detection_bound_s"] == round(R.partition_bounds(tm, 1, 3)[0], 3)
    assert iso["decision_bound_s"] == round(R.partition_bounds(tm, 3, 1)[1], 3)
    sql_only = R.partition_outcome(topo, cfg, [["sql1"], [n.name for n in topo.nodes if n.name != "sql1"]],
                                   arbitrator=1)
    assert sql_only["detection_bound_s"] is None and sql_only["decision_bound_s"] is None
    assert sql_only["shut_down"] == [] and sql_only["decisions"][0]["check"] == "no data nodes"
    assert sql_only["decisions"][1]["check"] == "no data node lost: no arbitration check"


def test_partition_outcome_race_and_the_only_side_that_asks():
    topo, cfg = shipped()
    halves = [["data1", "data3"], ["data2", "data4"]]  # mgm1 untouched: reaches both
    race = R.partition_outcome(topo, cfg, halves, arbitrator=1)
    assert race["race"] == halves and race["serving"] == [] and race["stopped"] == []
    assert [d["outcome"] for d in race["decisions"]] == ["race", "race"]
    assert race["sql_serving"] == ["sql1", "sql2"] and race["decision_bound_s"] is None
    one = R.partition_outcome(topo, cfg, [["data1", "data3"], ["data2"], ["data4"]], arbitrator=1)
    assert one["race"] == [] and one["serving"] == [["data1", "data3"]]
    assert one["decisions"][0]["arbitration"] == "Arbitration won - positive reply from node 1"
    assert "the only side that asks" in one["rule"] and one["expected_events"][0] == "arbitration_won"
    assert one["detection_bound_s"] == round(R.partition_bounds(R.timings(cfg), 2, 2)[0], 3)


def test_partition_outcome_says_who_arbitrates_next():
    topo, cfg = shipped()
    comps = [["data1", "data3", "mgm2"], ["data2", "data4", "mgm1"]]
    out = R.partition_outcome(topo, cfg, comps, arbitrator="mgm1")
    assert out["serving"] == [comps[1]]
    cut = R.partition_outcome(topo, cfg, [["data1", "data2", "data3"], ["data4", "mgm1"]], arbitrator=1)
    assert "no longer reaches arbitrator node 1: its president selects the next candidate it reaches (node 2)" \
        in cut["rule"]
    alone = R.partition_outcome(topo, cfg, [["data1", "data2", "data3"], ["data4", "mgm1", "mgm2"]], arbitrator=1)
    assert "(none: it runs without one)" in alone["rule"]
    assert "[UNVERIFIED timing" in out["rule"]


# -- what a report says, word for word ----------------------------------------------------------------

#: partition_outcome on five splits of the default layout: each side's decision and the rule text the
#: report shows (read against docs/facts.md NDB 5.1 when written). A changed rule, or its words, shows here.
GOLDEN = [
    ('halves_arbitrator_with_a', [['data1', 'data3', 'mgm1', 'sql1'], ['data2', 'data4', 'sql2']], 1, [
        {'component': ['data1', 'data3', 'mgm1', 'sql1'],
         'data_nodes': [11, 13],
         'check': 'Network partitioning - arbitration required',
         'outcome': 'serving',
         'arbitration': 'Arbitration won - positive reply from node 1'},
        {'component': ['data2', 'data4', 'sql2'],
         'data_nodes': [12, 14],
         'check': 'Network partitioning - arbitration required',
         'outcome': 'stopped',
         'exit_code': 2305,
         'arbitration': ("arbitrator node 1 unreachable: 'Network partitioning - no arbitrator available' or "
             "'Arbitration lost - negative reply'")},
     ],
     ('docs/facts.md NDB 5.1 (arbitration check per component of data nodes, in the order of '
      'QmgrMain.cpp handleArbitCheck; alive before: 4; node groups 0:[11, 12]; 1:[13, 14]; arbitrator '
      'mgm1 (node 1), given): {data1,data3,mgm1,sql1}: data nodes 11,13 = 2 of 4 (2*2 = 4), node '
      "groups present [0, 1], complete none -> 'Network partitioning - arbitration required'; "
      "arbitrator mgm1 (node 1, rank 1) is here -> 'Arbitration won - positive reply from node 1'; "
      '{data2,data4,sql2}: data nodes 12,14 = 2 of 4 (2*2 = 4), node groups present [0, 1], complete '
      "none -> 'Network partitioning - arbitration required'; arbitrator mgm1 (node 1) is not here -> "
      'shutdown (2305). management and SQL nodes do not vote; an SQL node serves only in a component '
      'whose data nodes keep running; assumes the data nodes see the split before they notice the loss'
      ' of arbitrator node 1 [UNVERIFIED timing: management/API links and data node links have their '
      'own heartbeats]; if the president loses the arbitrator first it selects the next candidate it '
      'reaches and the side that holds that one wins instead; the data nodes of stopped components '
      '(data2, data4) shut down once they have found every unreachable data node around the heartbeat '
      'ring: within 20 s of the cut')),
    ('halves_no_arbitrator', [['data1', 'data3'], ['data2', 'data4']], None, [
        {'component': ['data1', 'data3'],
         'data_nodes': [11, 13],
         'check': 'Network partitioning - arbitration required',
         'outcome': 'stopped',
         'arbitration': 'Network partitioning - no arbitrator available',
         'exit_code': 2305},
        {'component': ['data2', 'data4'],
         'data_nodes': [12, 14],
         'check': 'Network partitioning - arbitration required',
         'outcome': 'stopped',
         'arbitration': 'Network partitioning - no arbitrator available',
         'exit_code': 2305},
     ],
     ('docs/facts.md NDB 5.1 (arbitration check per component of data nodes, in the order of '
      'QmgrMain.cpp handleArbitCheck; alive before: 4; node groups 0:[11, 12]; 1:[13, 14]; arbitrator '
      'none, given): {data1,data3}: data nodes 11,13 = 2 of 4 (2*2 = 4), node groups present [0, 1], '
      "complete none -> 'Network partitioning - arbitration required'; no arbitrator -> 'Network "
      "partitioning - no arbitrator available' -> shutdown (2305); {data2,data4}: data nodes 12,14 = 2"
      " of 4 (2*2 = 4), node groups present [0, 1], complete none -> 'Network partitioning - "
      "arbitration required'; no arbitrator -> 'Network partitioning - no arbitrator available' -> "
      'shutdown (2305). management and SQL nodes do not vote; an SQL node serves only in a component '
      'whose data nodes keep running; the data nodes of stopped components (data1, data2, data3, '
      'data4) shut down once they have found every unreachable data node around the heartbeat ring: '
      'within 20 s of the cut')),
    ('halves_race', [['data1', 'data3'], ['data2', 'data4']], 1, [
        {'component': ['data1', 'data3'],
         'data_nodes': [11, 13],
         'check': 'Network partitioning - arbitration required',
         'outcome': 'race',
         'arbitration': ('arbitrator node 1 reaches every side: yes to the first requester only')},
        {'component': ['data2', 'data4'],
         'data_nodes': [12, 14],
         'check': 'Network partitioning - arbitration required',
         'outcome': 'race',
         'arbitration': ('arbitrator node 1 reaches every side: yes to the first requester only')},
     ],
     ('docs/facts.md NDB 5.1 (arbitration check per component of data nodes, in the order of '
      'QmgrMain.cpp handleArbitCheck; alive before: 4; node groups 0:[11, 12]; 1:[13, 14]; arbitrator '
      'mgm1 (node 1), given): {data1,data3}: data nodes 11,13 = 2 of 4 (2*2 = 4), node groups present '
      "[0, 1], complete none -> 'Network partitioning - arbitration required'; arbitrator mgm1 (node "
      '1) is in no component and reaches every side -> yes only if this side asks first; '
      '{data2,data4}: data nodes 12,14 = 2 of 4 (2*2 = 4), node groups present [0, 1], complete none '
      "-> 'Network partitioning - arbitration required'; arbitrator mgm1 (node 1) is in no component "
      'and reaches every side -> yes only if this side asks first. management and SQL nodes do not '
      'vote; an SQL node serves only in a component whose data nodes keep running; assumes the data '
      'nodes see the split before they notice the loss of arbitrator node 1 [UNVERIFIED timing: '
      'management/API links and data node links have their own heartbeats]; if the president loses the'
      ' arbitrator first it selects the next candidate it reaches and the side that holds that one '
      'wins instead')),
    ('halves_arbitrator_isolated', [['data1', 'data3'], ['data2', 'data4'], ['mgm1']], 1, [
        {'component': ['data1', 'data3'],
         'data_nodes': [11, 13],
         'check': 'Network partitioning - arbitration required',
         'outcome': 'stopped',
         'exit_code': 2305,
         'arbitration': ("arbitrator node 1 unreachable: 'Network partitioning - no arbitrator available' or "
             "'Arbitration lost - negative reply'")},
        {'component': ['data2', 'data4'],
         'data_nodes': [12, 14],
         'check': 'Network partitioning - arbitration required',
         'outcome': 'stopped',
         'exit_code': 2305,
         'arbitration': ("arbitrator node 1 unreachable: 'Network partitioning - no arbitrator available' or "
             "'Arbitration lost - negative reply'")},
        {'component': ['mgm1'],
         'outcome': 'stopped',
         'check': 'no data nodes'},
     ],
     ('docs/facts.md NDB 5.1 (arbitration check per component of data nodes, in the order of '
      'QmgrMain.cpp handleArbitCheck; alive before: 4; node groups 0:[11, 12]; 1:[13, 14]; arbitrator '
      'mgm1 (node 1), given): {data1,data3}: data nodes 11,13 = 2 of 4 (2*2 = 4), node groups present '
      "[0, 1], complete none -> 'Network partitioning - arbitration required'; arbitrator mgm1 (node "
      '1) is not here -> shutdown (2305); {data2,data4}: data nodes 12,14 = 2 of 4 (2*2 = 4), node '
      "groups present [0, 1], complete none -> 'Network partitioning - arbitration required'; "
      'arbitrator mgm1 (node 1) is not here -> shutdown (2305); {mgm1}: no live data node -> nothing '
      "runs here (its SQL nodes get 4009 'Cluster Failure' for NDB tables). management and SQL nodes "
      'do not vote; an SQL node serves only in a component whose data nodes keep running; assumes the '
      'data nodes see the split before they notice the loss of arbitrator node 1 [UNVERIFIED timing: '
      'management/API links and data node links have their own heartbeats]; if the president loses the'
      ' arbitrator first it selects the next candidate it reaches and the side that holds that one '
      'wins instead; the data nodes of stopped components (data1, data2, data3, data4) shut down once '
      'they have found every unreachable data node around the heartbeat ring: within 20 s of the cut')),
    ('sql_node_alone_and_a_data_node_left_out', [['sql1'], ['data1', 'data2', 'data3']], 'mgm2', [
        {'component': ['sql1'],
         'outcome': 'stopped',
         'check': 'no data nodes'},
        {'component': ['data1', 'data2', 'data3'],
         'data_nodes': [11, 12, 13],
         'check': 'Arbitration check won - node group majority',
         'outcome': 'serving'},
     ],
     ('docs/facts.md NDB 5.1 (arbitration check per component of data nodes, in the order of '
      'QmgrMain.cpp handleArbitCheck; alive before: 4; node groups 0:[11, 12]; 1:[13, 14]; arbitrator '
      'mgm2 (node 2), given): {sql1}: no live data node -> nothing runs here (its SQL nodes get 4009 '
      "'Cluster Failure' for NDB tables); {data1,data2,data3}: data nodes 11,12,13 = 3 of 4 (2*3 > 4),"
      " node groups present [0, 1], complete [0] -> 'Arbitration check won - node group majority'. "
      'management and SQL nodes do not vote; an SQL node serves only in a component whose data nodes '
      'keep running; live data nodes in no component count as lost: 14')),
]


@pytest.mark.parametrize("name, components, arbitrator, decisions, rule", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_partition_outcome_word_for_word(name, components, arbitrator, decisions, rule):
    topo, cfg = shipped()
    out = R.partition_outcome(topo, cfg, components, arbitrator=arbitrator)
    assert out["decisions"] == decisions
    assert out["rule"] == rule


def test_an_isolated_data_node_word_for_word():
    topo, cfg = shipped()
    rest = [n.name for n in topo.nodes if n.name != "data1"]
    out = R.partition_outcome(topo, cfg, [["data1"], rest], arbitrator=1)
    assert [d["check"] for d in out["decisions"]] == ["Arbitration check lost - missing node group",
                                                      "Arbitration check won - node group majority"]
    assert ("{data1}: data nodes 11 = 1 of 4 (2*1 < 4), node groups present [0], complete none -> "
            "'Arbitration check lost - missing node group' -> shutdown (2305)") in out["rule"]
    assert "data nodes 12,13,14 = 3 of 4 (2*3 > 4), node groups present [0, 1], complete [1]" in out["rule"]
    assert out["exit_codes"] == {"data1": 2305} and out["decisions"][1].get("exit_code") is None


def test_check_partition_takes_the_default_method_and_names_what_is_wrong():
    topo, cfg = shipped()
    # Arbitration left unset is NDB's default method
    unset = parse_config_ini((COMPOSE_DIR / LAYOUTS["default"][1]).read_text().replace("Arbitration=Default", ""))
    assert unset.data_param("Arbitration") is None
    R.check_partition(topo, unset, [["data1"], ["data2"]])
    other = parse_config_ini((COMPOSE_DIR / LAYOUTS["default"][1]).read_text()
                             + "\n[ndbd default]\nArbitration=WaitExternal\n")
    with pytest.raises(UsageError, match=r"^partition_outcome models Arbitration=Default only \(config.ini has "
                                         r"waitexternal\)$"):
        R.check_partition(topo, other, [["data1"]])
    with pytest.raises(UsageError, match=r"^partition_outcome: no node named 'nope' \(nodes: data1, data2, data3, "
                                         r"data4, mgm1, mgm2, sql1, sql2\)$"):
        R.check_partition(topo, cfg, [["nope"]])
    with pytest.raises(UsageError, match=r"^partition_outcome: data2 is in two components \(not a clean partition\)$"):
        R.check_partition(topo, cfg, [["data1", "data2"], ["data2"]])
    with pytest.raises(UsageError, match=r"^partition_outcome: arbitrator 'mgm9' is not a node of the topology$"):
        R.partition_outcome(topo, cfg, [["data1"]], arbitrator="mgm9")


# -- what mutation testing found untested (mutmut over rules.py) ------------------------------------

def test_every_timing_is_read_from_its_own_parameter():
    cfg = parse_config_ini("[ndbd default]\nNoOfReplicas=2\nHeartbeatIntervalDbDb=1100\nHeartbeatIntervalDbApi=1700\n"
                           "ArbitrationTimeout=3300\nTimeBetweenGlobalCheckpoints=1900\nTimeBetweenEpochsTimeout=4000\n"
                           "TimeBetweenGlobalCheckpointsTimeout=90000\n[ndbd]\nNodeId=2\n")
    assert R.timings(cfg) == {"heartbeat_db_s": 1.1, "heartbeat_api_s": 1.7, "arbitration_timeout_s": 3.3,
                              "gcp_interval_s": 1.9, "epochs_timeout_s": 4.0, "gcp_timeout_s": 90.0}
    # a round of the ring is five intervals, whatever the interval
    tm = R.timings(cfg)
    assert R.partition_bounds(tm, 2, 2) == pytest.approx((2 * 5.5 + 3.3 + R.OBSERVATION_SLACK,
                                                          3 * 5.5 + 3.3 + R.OBSERVATION_SLACK))


def test_partition_outcome_bounds_keep_their_fraction():
    """A heartbeat of 1.1 s: the bounds are not whole seconds, and are reported to the ms."""
    text = (COMPOSE_DIR / LAYOUTS["default"][1]).read_text().replace("HeartbeatIntervalDbDb=1000",
                                                                     "HeartbeatIntervalDbDb=1100")
    topo, cfg = shipped()[0], parse_config_ini(text)
    out = R.partition_outcome(topo, cfg, [["data1", "data3", "mgm1"], ["data2", "data4"]], arbitrator=1)
    assert out["detection_bound_s"] == pytest.approx(2 * 5.5 + 3.0 + R.OBSERVATION_SLACK)  # 16.0
    assert out["decision_bound_s"] == pytest.approx(3 * 5.5 + 3.0 + R.OBSERVATION_SLACK)  # 21.5
    assert out["decision_bound_s"] != round(out["decision_bound_s"])
    rest = [n.name for n in topo.nodes if n.name != "data1"]
    iso = R.partition_outcome(topo, cfg, [["data1"], rest], arbitrator=1)
    assert iso["detection_bound_s"] == pytest.approx(5.5 + 3.0 + R.OBSERVATION_SLACK)  # 10.5: one round


def test_a_side_that_is_exactly_one_node_group():
    topo, cfg = shipped()
    out = R.partition_outcome(topo, cfg, [["data1", "data2"], ["data3", "data4"]], arbitrator=1)
    assert "data nodes 11,12 = 2 of 4 (2*2 = 4), node groups present [0], complete [0]" in out["rule"]
    assert out["serving"] == [] and [d["check"] for d in out["decisions"]] == [
        "Arbitration check lost - missing node group"] * 2


def test_the_only_side_that_asks_keeps_its_facts_in_the_rule():
    topo, cfg = shipped()
    out = R.partition_outcome(topo, cfg, [["data1", "data3"], ["data2"], ["data4"]], arbitrator=1)
    assert ("{data1,data3}: data nodes 11,13 = 2 of 4 (2*2 = 4), node groups present [0, 1], complete none -> "
            "'Network partitioning - arbitration required'; arbitrator mgm1 (node 1) is in no component and reaches "
            "every side -> yes only if this side asks first; the only side that asks -> 'Arbitration won - positive "
            "reply from node 1'") in out["rule"]


def test_notes_name_every_lost_node_and_the_side_that_moves_arbitrator():
    topo, cfg = shipped()
    two_out = R.partition_outcome(topo, cfg, [["data1", "data3"], ["mgm1"]], arbitrator=1)
    assert "live data nodes in no component count as lost: 12,14" in two_out["rule"]
    cut = R.partition_outcome(topo, cfg, [["data1", "data2", "data3"], ["data4", "mgm1"]], arbitrator=1)
    assert "{data1,data2,data3} no longer reaches arbitrator node 1" in cut["rule"]


def test_one_candidate_has_no_next_one_to_race_with():
    """The small layout has one arbitrator candidate: no note that another could win instead."""
    small, scfg = shipped("small")
    data = [n.name for n in small.data_nodes]
    out = R.partition_outcome(small, scfg, [[data[0], "mgm1"], [data[1]]], arbitrator=1)
    assert out["serving"] == [[data[0], "mgm1"]] and "UNVERIFIED timing" not in out["rule"]


def test_a_side_after_one_without_data_nodes_still_gets_its_bounds():
    """A component of SQL nodes alone, listed first, does not end the count of the others."""
    topo, cfg = shipped()
    out = R.partition_outcome(topo, cfg, [["sql1"], ["data1", "data2", "data3"], ["data4"]], arbitrator=1)
    assert out["detection_bound_s"] == round(R.partition_bounds(R.timings(cfg), 1, 3)[0], 3)
    assert out["shut_down"] == ["data4"] and out["decision_bound_s"] == round(
        R.partition_bounds(R.timings(cfg), 3, 1)[1], 3)
