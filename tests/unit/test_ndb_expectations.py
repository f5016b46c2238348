"""NdbEngine.expectation on the default and small layouts (no Docker: a topology built from the
shipped config files), and the arbitration check of docs/facts.md NDB 5.1."""

from types import SimpleNamespace

import pytest

from ndbchaos import topology as TP
from ndbchaos.clock import RunClock
from ndbchaos.vocabulary import ClusterStatus, NodeStatus
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.engines.ndb import rules as ndbrules
from ndbchaos.engines.ndb.expectations import FAMILIES
from ndbchaos.engines.ndb.rules import arbitration_check
from ndbchaos.errors import UsageError
from ndbchaos.vocabulary import ClusterOptions

ROLE = {"MGM": TP.MGM, "NDB": TP.DATA, "API": TP.SQL}


def fake_cluster(layout="default"):
    eng = NdbEngine()
    opts = ClusterOptions(ndb_layout=layout)
    cfg = eng.config(opts)
    names = {"MGM": "mgm", "NDB": "data", "API": "sql"}
    counters: dict[str, int] = {}
    nodes = []
    for n in cfg.nodes:
        if n.type == "API" and not n.hostname:
            continue  # spare slots have no container
        counters[n.type] = counters.get(n.type, 0) + 1
        name = f"{names[n.type]}{counters[n.type]}"
        nodes.append(TP.Node(name=name, role=ROLE[n.type], container=f"p-{name}-1", nodeid=n.node_id,
                            nodegroup=n.nodegroup, serves_sql=n.type == "API", sql_port=None))
    topo = TP.Topology("p", "ndb", nodes)
    return eng, SimpleNamespace(topology=topo, options=opts, clock=RunClock())


def test_arbitration_check_rules():
    groups = {0: {11, 12}, 1: {13, 14}}
    alive = {11, 12, 13, 14}
    assert arbitration_check(groups, alive, {12, 13, 14}) == ("win", "Arbitration check won - node group majority")
    # no complete node group, all groups present, more than half: 3 of 4 with one from each group lost
    # earlier is not possible with 2 replicas; six nodes in 3 groups of 2, one lost from each:
    g3 = {0: {1, 2}, 1: {3, 4}, 2: {5, 6}}
    assert arbitration_check(g3, set(range(1, 7)), {1, 3, 5, 6}) == (
        "win", "Arbitration check won - node group majority")
    assert arbitration_check({0: {1, 2, 3}, 1: {4, 5, 6}}, set(range(1, 7)), {1, 2, 4, 5}) == (
        "win", "Arbitration check won - all node groups and more than 1/2 nodes left")
    assert arbitration_check(groups, alive, {12, 14})[0] == "arbitrate"
    assert arbitration_check(groups, alive, {13, 14}) == ("lose", "Arbitration check lost - missing node group")
    assert arbitration_check(groups, alive, {14}) == ("lose", "Arbitration check lost - missing node group")
    assert arbitration_check({0: {2, 3}}, {2, 3}, {3}) == ("arbitrate", "Network partitioning - arbitration required")
    # sequential: after the first loss, 2 of the 3 live nodes are more than half
    assert arbitration_check(groups, {12, 13, 14}, {12, 14})[0] == "win"
    three = {0: {1, 2, 3}}  # NoOfReplicas=3: a full node group with less than half of the live nodes
    assert arbitration_check(three, {1, 2, 3}, {1}) == ("lose", "Arbitration check lost - less than 1/2 nodes left")


def test_every_family_has_an_expectation_on_the_default_layout():
    eng, cl = fake_cluster()
    for fam in FAMILIES:
        e = eng.expectation(fam, cl)
        assert e.family == fam and e.rule.startswith("docs/facts.md NDB") and e.detection_bound_s > 0
        # a slow disk stops nobody, nor does a stall while GCP stops are disabled (the default)
        assert e.recovery in (("none",) if fam in ("slow_disk", "disk_stall") else ("node_restart", "system_restart"))
        assert e.recovery_bound_s > 0 and e.details["timing"]["heartbeat_db_s"] == 1.0


def test_datanode_loss_default_survives_without_arbitration():
    eng, cl = fake_cluster()
    e = eng.expectation("datanode_loss", cl)
    assert e.cluster_survives and e.survivors_serve and e.recovery == "node_restart"
    assert "node group majority" in e.rule and "arbitrator" not in e.rule
    assert e.details["lost"] == ["data1"] and e.details["survivors"] == ["data2", "data3", "data4"]
    # 5 x HeartbeatIntervalDbDb (1 s) + slack; no ArbitrationTimeout
    assert e.detection_bound_s == pytest.approx(5 * 1.0 + ndbrules.OBSERVATION_SLACK)
    assert e.recovery_bound_s == pytest.approx(ndbrules.NDBT_WAIT_CLUSTER_STARTED + ndbrules.CONTAINER_START_SLACK)


def test_datanode_loss_small_layout_needs_the_arbitrator():
    eng, cl = fake_cluster("small")
    e = eng.expectation("datanode_loss", cl)
    assert e.cluster_survives and "arbitration required" in e.rule and "arbitrator node 1" in e.rule
    assert e.detection_bound_s == pytest.approx(5 * 1.0 + 3.0 + ndbrules.OBSERVATION_SLACK)
    assert "arbitration_won" in e.details["expected_events"]
    # the management node was lost first: nobody can say yes
    e = eng.expectation("datanode_loss", cl, arbitrator=None)
    assert not e.cluster_survives and e.recovery == "system_restart" and e.details["exit_code"] == 2305


def test_two_datanodes_different_node_groups():
    eng, cl = fake_cluster()
    e = eng.expectation("two_datanodes_different_ng", cl)
    assert e.cluster_survives and e.details["lost"] == ["data1", "data3"]
    assert "arbitration required" in e.rule and "TwoNodeFailure" in e.rule
    seq = eng.expectation("two_datanodes_different_ng", cl, nodes=["data2", "data4"], simultaneous=False)
    assert seq.cluster_survives and all("won" in s["check"] for s in seq.details["decision"])
    with pytest.raises(UsageError):
        eng.expectation("two_datanodes_different_ng", cl, nodes=["data1", "data2"])
    with pytest.raises(UsageError):
        eng.expectation("two_datanodes_different_ng", fake_cluster("small")[1])


def test_nodegroup_loss_is_a_cluster_failure():
    eng, cl = fake_cluster()
    e = eng.expectation("nodegroup_loss", cl, nodegroup=1)
    assert not e.cluster_survives and not e.survivors_serve and e.recovery == "system_restart"
    assert "missing node group" in e.rule
    assert e.details["shut_down"] == ["data1", "data2"] and e.details["client_errors"]["expected"] == [4009]
    assert e.recovery_bound_s == pytest.approx(120 + 60 + 60 + ndbrules.CONTAINER_START_SLACK)
    with pytest.raises(UsageError):
        eng.expectation("nodegroup_loss", cl, nodegroup=5)


def test_partitions():
    eng, cl = fake_cluster()
    e = eng.expectation("partition_halves_arbitrator_side", cl)
    assert e.cluster_survives and e.details["winners"] == ["data1", "data3"]
    assert e.details["losers"] == ["data2", "data4"] and e.details["loser_exit_code"] == 2305
    assert e.details["arbitrator"] == 1 and e.details["arbitrator_node"] == "mgm1"
    assert e.detection_bound_s == pytest.approx(5 * 1.0 + 3.0 + ndbrules.OBSERVATION_SLACK)
    iso = eng.expectation("arbitrator_isolated", cl)
    assert not iso.cluster_survives and iso.details["exit_code"] == 2305 and iso.recovery == "system_restart"
    assert iso.details["shut_down"] == ["data1", "data2", "data3", "data4"]
    with pytest.raises(UsageError):  # not an even split with every node group on both sides
        eng.expectation("partition_halves_arbitrator_side", cl, side=["data1", "data2"])


def test_management_node_losses():
    eng, cl = fake_cluster()
    e = eng.expectation("mgmnode_loss", cl)
    assert e.cluster_survives and e.survivors_serve
    assert e.details["lost"] == ["mgm1"] and e.details["arbitrator_after"] == 2
    assert e.details["arbitrator_after_node"] == "mgm2" and "arbitrator_started" in e.details["expected_events"]
    e2 = eng.expectation("mgmnode_loss", cl, nodes=["mgm2"])
    assert e2.details["arbitrator_after"] == 1 and e2.details["expected_events"] == []
    a = eng.expectation("all_mgmnodes_loss", cl)
    assert a.cluster_survives and a.details["arbitrator_after"] is None and "without an arbitrator" in a.rule
    small = eng.expectation("mgmnode_loss", fake_cluster("small")[1])
    assert small.details["arbitrator_after"] is None and "runs without one" in small.rule


def test_sqlnode_loss():
    eng, cl = fake_cluster()
    e = eng.expectation("sqlnode_loss", cl)
    assert e.survivors_serve and e.details["lost"] == ["sql1"] and e.details["unaffected"] == ["sql2"]
    assert e.detection_bound_s == pytest.approx(5 * 1.5 + ndbrules.OBSERVATION_SLACK)
    assert e.recovery_bound_s == pytest.approx(60 + 60 + ndbrules.CONTAINER_START_SLACK)
    only = eng.expectation("sqlnode_loss", fake_cluster("small")[1])
    assert not only.survivors_serve and only.cluster_survives


def test_unknown_family_and_node():
    eng, cl = fake_cluster()
    with pytest.raises(UsageError):
        eng.expectation("meteor_strike", cl)
    with pytest.raises(UsageError):
        eng.expectation("datanode_loss", cl, nodes=["data9"])
    e = eng.expectation("datanode_loss", cl, nodes=[cl.topology.node("data4")])  # Node objects work too
    assert e.details["lost"] == ["data4"]


def test_loss_detected():
    eng = NdbEngine()

    def st(healthy: dict):
        nodes = [NodeStatus(n, TP.DATA if n.startswith("data") else TP.SQL, "running", "x", ok, {})
                 for n, ok in healthy.items()]
        return ClusterStatus(0.0, nodes, False, [], {})

    assert eng.loss_detected(st({"data1": False, "data2": True, "data3": True, "data4": True}), ["data1"])
    assert not eng.loss_detected(st({"data1": False, "data2": False, "data3": True, "data4": True}), ["data1"])
    assert not eng.loss_detected(st({"data1": True, "data2": True, "data3": True, "data4": True}), ["data1"])
    assert eng.loss_detected(st({"data1": True, "data2": True, "sql1": False}), ["sql1"])


def test_engine_surface():
    eng = NdbEngine()
    assert eng.sql_roles == ("sql",) and eng.table_engine == "NDBCLUSTER" and eng.name == "ndb"
    assert eng.compose_profiles(ClusterOptions()) == []
    assert eng.services(ClusterOptions()) == {"mgm": ["mgm1", "mgm2"], "data": ["data1", "data2", "data3", "data4"],
                                "sql": ["sql1", "sql2"]}
    assert eng.services(ClusterOptions(ndb_layout="small"))["data"] == ["data1", "data2"]
    assert eng.compose_files(ClusterOptions(ndb_layout="small"))[0].name == "ndb-small.yml"
    env = eng.compose_env(ClusterOptions(ports={"sql1": 13306}))
    assert env["NDBCHAOS_PORT_SQL1"] == "13306" and env["NDBCHAOS_NDB_SUBNET"] == "10.213.77"
    with pytest.raises(UsageError):
        eng.layout(ClusterOptions(ndb_layout="huge"))
    cl = fake_cluster()[1]
    assert eng.expected_members(cl) == 4


def test_the_next_master_is_the_next_in_succession_not_the_lowest_node_id():
    # measured on 9.7.2: the nodes joined 11, 14, 12, 13; node 14 took over when 11 died
    eng, cl = fake_cluster()
    order = [11, 14, 12, 13]
    e = eng.expectation("datanode_loss", cl, nodes=["data1"], succession=order)
    assert e.details["master_before"] == 11 and e.details["master_after"] == 14 and e.details["master_lost"]
    assert "node 14" in e.rule and "takes over" in e.rule
    # killing the master and then the new master, one after the other: the third in succession
    e = eng.expectation("datanode_loss", cl, nodes=["data1", "data4"], succession=order, simultaneous=False)
    assert e.cluster_survives and e.details["master_after"] == 12
    assert [s["check"] for s in e.details["decision"]] == ["Arbitration check won - node group majority",
                                                          "Arbitration check won - all node groups and more than "
                                                          "1/2 nodes left"]
    # a node that is not the master: the master stays
    e = eng.expectation("datanode_loss", cl, nodes=["data2"], succession=order)
    assert e.details["master_after"] == 11 and not e.details["master_lost"] and "takes over" not in e.rule
    # without a succession order nothing is claimed about the master
    assert "master_after" not in eng.expectation("datanode_loss", cl, nodes=["data1"], succession=[]).details


def test_two_nodes_of_different_groups_together_ask_the_arbitrator_but_apart_do_not():
    eng, cl = fake_cluster()
    together = eng.expectation("two_datanodes_different_ng", cl, nodes=["data1", "data3"], arbitrator=1)
    assert together.cluster_survives and "arbitration_won" in together.details["expected_events"]
    apart = eng.expectation("two_datanodes_different_ng", cl, nodes=["data1", "data3"], arbitrator=1,
                            simultaneous=False)
    assert apart.cluster_survives and "arbitration_won" not in apart.details["expected_events"]
    assert apart.detection_bound_s < together.detection_bound_s  # no ArbitrationTimeout to wait for
    with pytest.raises(UsageError, match="different node groups"):
        eng.expectation("two_datanodes_different_ng", cl, nodes=["data1", "data2"], arbitrator=1)


def test_a_data_node_restart_without_management_nodes_waits():
    eng, cl = fake_cluster()
    e = eng.expectation("datanode_restart_without_mgm", cl, nodes=["data2", "mgm1", "mgm2"])
    assert e.cluster_survives and e.details["held_down"]["nodes"] == ["data2"]
    assert e.details["arbitrator_after"] is None and e.recovery == "node_restart"
    assert e.recovery_bound_s > eng.expectation("datanode_loss", cl, nodes=["data2"]).recovery_bound_s
    with pytest.raises(UsageError, match="every management node"):
        eng.expectation("datanode_restart_without_mgm", cl, nodes=["data2", "mgm1"])
    with pytest.raises(UsageError, match="stops the cluster"):  # a whole node group, no arbitrator
        eng.expectation("datanode_restart_without_mgm", cl, nodes=["data1", "data2", "mgm1", "mgm2"])


def test_system_restarts_and_their_durability_window():
    eng, cl = fake_cluster()
    g = eng.expectation("system_restart", cl, how="graceful")
    assert not g.cluster_survives and g.recovery == "system_restart"
    assert g.details["gcp_loss_window_s"] == 0.0  # a graceful shutdown ends with a global checkpoint
    for how in ("abort", "kill"):
        e = eng.expectation("system_restart", cl, how=how)
        assert e.details["gcp_loss_window_s"] == pytest.approx(2 * 2.0)  # 2 x TimeBetweenGlobalCheckpoints
    with pytest.raises(UsageError, match="how="):
        eng.expectation("system_restart", cl, how="gently")


def test_a_rolling_restart_promises_zero_outage_and_excludes_nobody_at_the_end():
    eng, cl = fake_cluster()
    e = eng.expectation("rolling_restart", cl)
    assert e.cluster_survives and e.details["max_outage_s"] == 0.0 and e.details["excluded"] == []
    assert e.details["order"] == ["data1", "data2", "data3", "data4"]


def test_how_the_node_was_lost_adds_its_objectives():
    eng, cl = fake_cluster()
    # thawed, a node shuts itself down with 2315 (told it was declared dead) or 2305 (it found its
    # peers' connections closed first and lost its own check): a race, both seen on 9.7.2
    e = eng.expectation("datanode_loss", cl, nodes=["data2"], frozen=True)
    assert e.details["exit_on_heal"] == {"data2": [2315, 2305]} and "2315" in e.rule and "2305" in e.rule
    e = eng.expectation("two_datanodes_different_ng", cl, nodes=["data1", "data3"], held_s=8.0)
    assert e.details["held_down"]["nodes"] == ["data1", "data3"] and e.details["held_down"]["min_s"] == 8.0
    assert "exit_on_heal" not in e.details
    # a loss the cluster does not survive has no node restart to wait for
    e = eng.expectation("datanode_loss", cl, nodes=["data1", "data2"], frozen=True)
    assert not e.cluster_survives and "exit_on_heal" not in e.details


def test_a_slow_disk_stops_nobody():
    eng, cl = fake_cluster()
    e = eng.expectation("slow_disk", cl, nodes=["data3"], delay_ms=100)
    assert e.cluster_survives and e.survivors_serve and e.recovery == "none"
    assert e.details["lost"] == [] and e.details["excluded"] == [] and e.details["nodes"] == ["data3"]
    assert e.details["unexpected_events"] == ["forced_shutdown"] and e.details["gcp_stop_timeout_s"] is None
    assert "100 ms" in e.rule and e.details["client_errors"]["allowed"] == [410, 1220, 1221, 1234]


def test_a_stalled_disk_stops_nobody_while_gcp_stops_are_disabled():
    # TimeBetweenEpochsTimeout is not set: 0, the default, disables GCP stops (finding 37)
    eng, cl = fake_cluster()
    e = eng.expectation("disk_stall", cl, nodes=["data2"], arbitrator=1)
    assert e.cluster_survives and e.recovery == "none" and e.details["lost"] == [] and "shut_down" not in e.details
    assert e.details["unexpected_events"] == ["forced_shutdown"] and "disabled" in e.details["gcp_stop"]
    assert "finding 37" in e.rule


def test_a_stalled_disk_is_a_gcp_stop_after_the_monitors_max_lag_when_enabled():
    eng, cl = fake_cluster()
    cfg = eng.config(cl.options)
    cfg.defaults.setdefault("NDB", {})["timebetweenepochstimeout"] = "4000"
    tm = ndbrules.timings(cfg)
    assert tm["epochs_timeout_s"] == 4.0 and tm["gcp_timeout_s"] == 120.0
    from ndbchaos.engines.ndb import expectations as X
    e = X.expectation("disk_stall", cl.topology, cfg, 11, nodes=["data4"], arbitrator=1)
    loss = X.expectation("datanode_loss", cl.topology, cfg, 11, nodes=["data4"], arbitrator=1)
    assert e.cluster_survives and e.recovery == "node_restart" and e.details["lost"] == ["data4"]
    # 9.7.2 computed a max GCP_SAVE lag of 140 s for 4 data nodes: 120 s + 5 s each; then one GCP
    # interval and a node failure's detection
    assert e.details["gcp_stop_timeout_s"] == 140.0
    assert e.detection_bound_s == pytest.approx(140.0 + 2.0 + loss.detection_bound_s)
    # the stuck process logs its shutdown once the disk answers (9.7.2: 6050 after the heal)
    assert e.details["exit_on_heal"]["data4"][:2] == [6050, 2303] and "shut_down" not in e.details
    assert e.details["expected_events"][:2] == ["gcp_lag", "gcp_stop"]
    assert "GCP stop" in e.rule and "finding 37" in e.rule


def test_a_failing_write_or_sync_shuts_the_node_down_with_a_file_system_error():
    eng, cl = fake_cluster()
    e = eng.expectation("failing_io", cl, nodes=["data4"], arbitrator=1, call="fsync")
    assert e.cluster_survives and e.details["shut_down"] == ["data4"] and e.details["call"] == "fsync"
    assert e.details["exit_codes"]["data4"] == list(range(2801, 2817))  # 9.7.2: 2809 for a failed fsync
    assert e.details["decision_bound_s"] == 2 * 2.0 + 2.0
    # both nodes of a group: the cluster stops as when the group is lost
    e2 = eng.expectation("failing_io", cl, nodes=["data3", "data4"], arbitrator=1)
    assert not e2.cluster_survives and e2.recovery == "system_restart"


def test_a_power_loss_may_lose_the_gcp_window_as_a_kill_of_every_data_node():
    eng, cl = fake_cluster()
    e = eng.expectation("power_loss", cl)
    k = eng.expectation("system_restart", cl, how="kill")
    assert not e.cluster_survives and e.recovery == "system_restart"
    assert e.details["gcp_loss_window_s"] == k.details["gcp_loss_window_s"] == 4.0
    assert e.details["lost"] == ["data1", "data2", "data3", "data4"]
    assert "synced" in e.rule and "4 s" in e.details["durability"]
    # the plan passes the targets: ignored (every data node loses power), and said so
    assert eng.expectation("power_loss", cl, nodes=["data1"]).details["ignored_keywords"] == ["nodes"]


def test_a_node_failure_during_a_backup_aborts_it():
    eng, cl = fake_cluster()
    e = eng.expectation("datanode_loss", cl, nodes=["data3"], during_backup=True)
    assert e.cluster_survives and e.details["expected_events"][-1] == "backup_aborted"
    assert e.details["backup"] == {"aborted_with": 1326}


def test_a_full_disk_shuts_its_data_node_down_and_the_cluster_loses_it_as_a_failed_node():
    eng, cl = fake_cluster()
    e = eng.expectation("disk_full", cl, nodes=["data2"], arbitrator=1, succession=[11, 12, 13, 14])
    assert e.cluster_survives and e.survivors_serve and e.recovery == "node_restart"
    assert e.details["shut_down"] == ["data2"] and e.details["exit_codes"] == {"data2": [2813, 2810]}
    # the next REDO write within two GCPs (TimeBetweenGlobalCheckpoints 2 s: the default) + slack
    assert e.details["decision_bound_s"] == 2 * 2.0 + 2.0
    assert e.detection_bound_s == e.details["decision_bound_s"] + eng.expectation(
        "datanode_loss", cl, nodes=["data2"], arbitrator=1).detection_bound_s
    assert e.details["expected_events"][0] == "forced_shutdown" and "arbitration_check_won" in e.details[
        "expected_events"]
    assert e.rule.startswith("docs/facts.md NDB 11") and "2813" in e.rule
    # a whole node group's disks full: the cluster stops as when the group is lost
    e2 = eng.expectation("disk_full", cl, nodes=["data1", "data2"], arbitrator=1)
    assert not e2.cluster_survives and e2.recovery == "system_restart"
    assert e2.details["exit_codes"] == {"data1": [2813, 2810], "data2": [2813, 2810], "data3": 2305, "data4": 2305}
    assert e2.details["shut_down"] == ["data1", "data2", "data3", "data4"]
