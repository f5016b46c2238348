"""plans.py turns the engine's rules into what a run is judged against: which nodes the engine
must exclude, which SQL nodes stop, which serve, the bounds and the latency objectives. Played
here on the real engines' rules (NdbEngine on its shipped default layout, GaleraEngine) with
only their live lookups replaced (the arbitrator in effect and the succession order, read from
ndbinfo on a running cluster): a rule or a plan that changes fails a test."""

from types import SimpleNamespace

import pytest

from ndbchaos import plans
from ndbchaos import topology as TP
from ndbchaos.engines.galera import GaleraEngine
from ndbchaos.engines.galera import rules as GR
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.errors import UsageError
from ndbchaos.workload.contract import ClientOptions
from ndbchaos.vocabulary import ClusterOptions


def ndb_cluster(arbitrator: int | None = 1):
    """The default layout (2 mgm, 4 data nodes in 2 node groups, 2 SQL nodes), mgm1 arbitrating."""
    nodes = [TP.Node("mgm1", TP.MGM, "p-mgm1-1", nodeid=1), TP.Node("mgm2", TP.MGM, "p-mgm2-1", nodeid=2)]
    nodes += [TP.Node(f"data{i}", TP.DATA, f"p-data{i}-1", nodeid=10 + i, nodegroup=(i - 1) // 2)
              for i in range(1, 5)]
    nodes += [TP.Node(f"sql{i}", TP.SQL, f"p-sql{i}-1", nodeid=50 + i, sql_port=3305 + i, serves_sql=True)
              for i in (1, 2)]
    engine = NdbEngine()
    engine.state.running_arbitrator = lambda cluster, cands, by_id: (arbitrator, "test")
    engine.succession = lambda cluster: [cluster.topology.node(n) for n in ("data1", "data2", "data3", "data4")]
    return SimpleNamespace(topology=TP.Topology("p", "ndb", nodes), engine=engine, options=ClusterOptions())


def galera_cluster():
    """Two data nodes (each its own SQL endpoint) and garbd."""
    nodes = [TP.Node(f"galera{i}", TP.DATA, f"p-galera{i}-1", sql_port=3305 + i, serves_sql=True) for i in (1, 2)]
    nodes.append(TP.Node("garbd", TP.ARBITRATOR, "p-garbd-1"))
    return SimpleNamespace(topology=TP.Topology("p", "galera", nodes), engine=GaleraEngine(), options=ClusterOptions())


def fault(cluster, names, kind="kill", components=None, **attrs):
    return SimpleNamespace(kind=kind, targets=[cluster.topology.node(n) for n in names],
                           window=SimpleNamespace(params={"components": components}), **attrs)


# -- node loss ------------------------------------------------------------------------------------

def test_one_data_node_lost_the_cluster_survives_and_every_sql_node_serves():
    c = ndb_cluster()
    p = plans.node_loss(c, "datanode_loss", fault(c, ["data1"]))
    assert p.exp.cluster_survives is True and p.exp.survivors_serve is True
    assert p.lost == ["data1"] and p.stopped_sql == [] and p.affected == []
    assert p.sql_nodes == ["sql1", "sql2"] and p.serving == ["sql1", "sql2"] and p.engine_reacts is True
    assert p.exp.details["lost"] == ["data1"] and p.exp.details["survivors"] == ["data2", "data3", "data4"]
    rec = p.to_record()
    assert rec["serving"] == ["sql1", "sql2"] and rec["stopped_sql"] == [] and rec["engine_reacts"] is True
    assert rec["cluster_survives"] is True and "latency" not in rec and "failover" not in rec
    assert rec["sql_nodes"] == ["sql1", "sql2"] and rec["affected"] == []


def test_a_node_group_lost_stops_the_cluster_and_every_sql_node():
    c = ndb_cluster()
    p = plans.node_loss(c, "nodegroup_loss", fault(c, ["data1", "data2"]))
    assert p.exp.cluster_survives is False
    assert p.stopped_sql == ["sql1", "sql2"] and p.serving == []
    assert p.exp.details["nodegroup"] == 0  # the targets' one node group, handed to the rule
    assert plans.node_loss(c, "nodegroup_loss", fault(c, ["data3", "data4"])).exp.details["nodegroup"] == 1


def test_a_data_node_of_each_group_one_after_the_other_is_a_check_each():
    c = ndb_cluster()
    targets = ["data1", "data3"]
    at_once = plans.node_loss(c, "datanode_loss", fault(c, targets), expectation="two_datanodes_different_ng")
    apart = plans.node_loss(c, "datanode_loss", fault(c, targets, simultaneous=False),
                            expectation="two_datanodes_different_ng")
    assert at_once.exp.family == "two_datanodes_different_ng" and at_once.lost == targets
    # at once: half left, arbitration; one after the other: two checks, each won without asking
    assert [d.get("check") for d in at_once.exp.details["decision"]][0] == "Network partitioning - arbitration required"
    assert len(apart.exp.details["decision"]) == 2 and "arbitration_required" in apart.exp.details["unexpected_events"]
    assert at_once.exp.cluster_survives is True and apart.exp.cluster_survives is True


def test_an_sql_node_lost_stops_its_own_clients_only():
    c = ndb_cluster()
    p = plans.node_loss(c, "sqlnode_loss", fault(c, ["sql1"]))
    assert p.exp.cluster_survives is True and p.stopped_sql == ["sql1"] and p.serving == ["sql2"]


def test_a_fault_on_the_client_path_only_leaves_the_engine_alone():
    c = galera_cluster()
    p = plans.node_loss(c, "sqlnode_loss", fault(c, ["galera1"], client_path=True))
    assert p.engine_reacts is False and p.lost == []
    assert p.stopped_sql == ["galera1"] and p.serving == ["galera2"]


def test_a_galera_data_node_is_its_own_sql_endpoint():
    c = galera_cluster()
    p = plans.node_loss(c, "datanode_loss", fault(c, ["galera1"]))
    assert p.exp.cluster_survives is True and p.lost == ["galera1"] and p.engine_reacts is True
    assert p.stopped_sql == ["galera1"] and p.serving == ["galera2"]
    both = plans.node_loss(c, "datanode_loss", fault(c, ["galera1", "galera2"]))
    assert both.exp.cluster_survives is False and both.stopped_sql == ["galera1", "galera2"]


def test_excluded_nodes_of_the_rule_replace_the_targets():
    """A rolling restart brings every target back during the fault: the rule names who must be
    let go (``excluded``), not every target."""
    c = ndb_cluster()
    p = plans.node_loss(c, "datanode_loss", fault(c, ["data1", "data2", "data3", "data4"]),
                        expectation="rolling_restart")
    assert p.lost == list(p.exp.details.get("excluded", ["data1", "data2", "data3", "data4"]))
    assert "excluded" in p.exp.details


def test_sql_nodes_on_follows_containers():
    c = galera_cluster()
    assert plans.sql_nodes_on(c, ["galera2"]) == ["galera2"] and plans.sql_nodes_on(c, ["garbd"]) == []
    n = ndb_cluster()
    assert plans.sql_nodes_on(n, ["data1", "sql2"]) == ["sql2"]
    # an SQL endpoint living in another node's container goes with that node
    shared = SimpleNamespace(topology=TP.Topology("p", "ndb", [
        TP.Node("data1", TP.DATA, "p-host1", nodeid=11, nodegroup=0),
        TP.Node("api1", TP.SQL, "p-host1", nodeid=51, sql_port=3306, serves_sql=True)]))
    assert plans.sql_nodes_on(shared, ["data1"]) == ["api1"]


def test_the_rule_is_asked_about_the_fault_s_own_targets():
    """Not a count: the engine's rule gets the nodes the fault took (data3 here, not the first
    of its pool)."""
    c = ndb_cluster()
    p = plans.node_loss(c, "datanode_loss", fault(c, ["data3"]))
    assert p.exp.details["lost"] == ["data3"] and p.lost == ["data3"]


# -- failover -----------------------------------------------------------------------------------

def test_failover_bound_is_what_the_client_needs_to_move():
    c = ndb_cluster()
    p = plans.node_loss(c, "sqlnode_loss", fault(c, ["sql2"]))
    o = ClientOptions()
    f = plans.failover(p, True)
    assert f["nodes"] == ["sql2"] and f["clients_fail_over"] is True
    assert f["bound_s"] == pytest.approx(o.backoff_max + o.connect_timeout + 2.0)
    assert f["bound_from"] == "from the client's first error: ClientOptions backoff_max + connect_timeout + 2 s"
    g = plans.failover(p, False)
    assert g["bound_s"] is None and g["bound_from"] is None and g["clients_fail_over"] is False
    p.failover = f
    assert p.to_record()["failover"] == f


# -- partitions ---------------------------------------------------------------------------------

def test_an_isolated_data_node_is_excluded_and_the_others_serve():
    c = ndb_cluster()
    rest = [n.name for n in c.topology.nodes if n.name != "data2"]
    p = plans.partition(c, "partition", fault(c, ["data2"], components=[["data2"], rest]))
    base = c.engine.expectation("datanode_loss", c, lost=1)
    assert p.exp.cluster_survives is True and p.exp.survivors_serve is True
    assert p.lost == ["data2"] and p.stopped_sql == [] and p.serving == ["sql1", "sql2"]
    assert p.exp.recovery_bound_s == base.recovery_bound_s
    assert p.exp.recovery == "partition healed, then " + base.recovery
    out = c.engine.partition_outcome(c, [["data2"], rest])
    assert p.exp.detection_bound_s == out["detection_bound_s"] and p.exp.rule == out["rule"]
    assert p.exp.details["components"] == [["data2"], rest] and p.exp.details["shut_down"] == ["data2"]
    # who is master afterwards: as for the same data node lost
    lost = c.engine.expectation("datanode_loss", c, nodes=["data2"], lost=1)
    for k in ("master_before", "master_after", "succession", "master_lost"):
        assert p.exp.details.get(k) == lost.details.get(k)


def test_an_even_split_with_the_arbitrator_on_one_side():
    c = ndb_cluster(arbitrator=1)
    comps = [["data1", "data3", "mgm1", "sql1"], ["data2", "data4", "mgm2", "sql2"]]
    p = plans.partition(c, "partition", fault(c, [], components=comps))
    assert p.exp.cluster_survives is True
    assert p.lost == ["data2", "data4"] and p.stopped_sql == ["sql2"] and p.serving == ["sql1"]


def test_a_split_no_side_survives_stops_every_sql_node():
    """The arbitrator cut off from both halves: both shut down, the cluster is restarted."""
    c = ndb_cluster(arbitrator=1)
    comps = [["data1", "data3", "sql1"], ["data2", "data4", "sql2"], ["mgm1"]]
    p = plans.partition(c, "partition", fault(c, [], components=comps))
    assert p.exp.cluster_survives is False and p.exp.survivors_serve is False
    assert p.stopped_sql == ["sql1", "sql2"] and p.serving == [] and p.sql_nodes == ["sql1", "sql2"]
    assert p.lost == ["data1", "data2", "data3", "data4"]
    assert p.exp.recovery_bound_s == c.engine.expectation("nodegroup_loss", c).recovery_bound_s
    assert p.exp.recovery == "partition healed, then restart"
    base = c.engine.expectation("datanode_loss", c, lost=1)
    assert p.exp.detection_bound_s == base.detection_bound_s  # no side serves: no detection bound of its own


def test_a_side_of_data_nodes_alone_survives_and_untouched_sql_nodes_follow_the_cluster():
    """The winning side holds data nodes only; SQL nodes in no component serve when the cluster
    does and stop when it does."""
    c = ndb_cluster(arbitrator=1)
    win = plans.partition(c, "partition", fault(c, [], components=[["data1", "data2", "data3"], ["data4"]]))
    assert win.exp.cluster_survives is True and win.exp.family == "partition"
    assert win.lost == ["data4"] and win.stopped_sql == [] and win.serving == ["sql1", "sql2"]
    down = plans.partition(c, "partition", fault(c, [], components=[["data1", "data3"], ["data2", "data4"],
                                                                    ["mgm1"]]))
    assert down.exp.cluster_survives is False and down.stopped_sql == ["sql1", "sql2"] and down.serving == []


def test_a_side_of_sql_nodes_only_keeps_the_data_nodes_running():
    """Only data nodes vote: a component of SQL nodes alone does not make the cluster survive,
    and one with data nodes that win does."""
    c = ndb_cluster()
    comps = [["sql1"], [n.name for n in c.topology.nodes if n.name != "sql1"]]
    p = plans.partition(c, "partition", fault(c, [], components=comps))
    assert p.exp.cluster_survives is True and p.lost == [] and p.stopped_sql == ["sql1"] and p.serving == ["sql2"]


def test_a_race_for_the_arbitrator_is_refused_not_judged():
    """NDB: two sides that each need the arbitrator, which reaches both, get its yes in the order
    they ask; which side keeps running is timing, not a rule (docs/facts.md NDB 5.1)."""
    c = ndb_cluster(arbitrator=1)
    comps = [["data1", "data3", "sql1"], ["data2", "data4", "sql2"]]  # mgm1 untouched: reaches both
    assert len(c.engine.partition_outcome(c, comps)["race"]) == 2
    with pytest.raises(UsageError) as ei:
        plans.partition(c, "partition", fault(c, [], components=comps))
    assert str(ei.value) == (
        "partition data1,data3,sql1 | data2,data4,sql2: the sides {data1,data3,sql1} and {data2,data4,sql2} each "
        "need the arbitrator (node 1), which reaches them all and says yes to whichever asks first: which side "
        "keeps running is a race the engine's rules do not decide; put the arbitrator with one side or cut it off "
        "from every side")


def test_the_only_side_that_asks_the_untouched_arbitrator_wins():
    """Half the data nodes with every node group ask; the other two sides lost their checks and
    ask nobody: the arbitrator's yes is the asking side's."""
    c = ndb_cluster(arbitrator=1)
    comps = [["data1", "data3", "sql1"], ["data2"], ["data4", "sql2"]]
    p = plans.partition(c, "partition", fault(c, [], components=comps))
    assert p.exp.cluster_survives is True and p.lost == ["data2", "data4"]
    assert p.stopped_sql == ["sql2"] and p.serving == ["sql1"]


def test_a_galera_partition_follows_quorum():
    c = galera_cluster()
    maj = plans.partition(c, "partition", fault(c, [], components=[["galera1", "garbd"], ["galera2"]]))
    assert maj.exp.cluster_survives is True and maj.lost == ["galera2"] and maj.stopped_sql == ["galera2"]
    assert maj.serving == ["galera1"]
    assert maj.exp.detection_bound_s == GR.expectation("datanode_loss", 2).detection_bound_s
    none = plans.partition(c, "partition", fault(c, [], components=[["galera1"], ["galera2"], ["garbd"]]))
    assert none.exp.cluster_survives is False and none.stopped_sql == ["galera1", "galera2"]
    assert none.exp.recovery_bound_s == GR.expectation("nodegroup_loss", 2).recovery_bound_s


# -- client path --------------------------------------------------------------------------------

def test_a_client_path_fault_disturbs_its_target_only():
    c = ndb_cluster()
    o = ClientOptions()
    p = plans.client_path(c, fault(c, ["sql1"], kind="timeout"))
    bound = o.read_timeout + o.connect_timeout + o.backoff_max + 2.0
    assert p.engine_reacts is False and p.lost == [] and p.stopped_sql == []
    assert p.affected == ["sql1"] and p.serving == ["sql2"] and p.latency is None
    assert p.exp.cluster_survives is True and p.exp.survivors_serve is True
    assert p.exp.detection_bound_s == pytest.approx(bound) and p.exp.recovery_bound_s == pytest.approx(bound)
    assert p.exp.family == "client_path" and p.exp.recovery == "heal the client path"
    assert p.exp.rule == ("client path only (timeout on sql1): the engine is not involved; the other SQL endpoints "
                          "are unaffected")
    assert p.exp.details == {"bound_from": "ClientOptions read_timeout + connect_timeout + backoff_max + 2 s"}
    two = plans.client_path(c, fault(c, ["sql1", "sql2"], kind="timeout"))
    assert "(timeout on sql1, sql2)" in two.exp.rule


def test_a_latency_fault_sets_its_floor_and_the_others_ceiling():
    c = ndb_cluster()
    p = plans.client_path(c, fault(c, ["sql2"], kind="latency"), latency_ms=200.0)
    assert p.latency == {"node": "sql2", "min_p50_ms": pytest.approx(190.0), "others_max_p50_ms": pytest.approx(100.0)}
    assert p.affected == [] and p.serving == ["sql1", "sql2"]
    assert p.to_record()["latency"] == p.latency
