"""partition: the network splits.

Which side keeps serving is the engine's rule (``Engine.partition_outcome``): NDB arbitration
(reference/ndb.md 5.1: a side missing a node group stops; more than half with every group wins;
an even split asks the arbitrator, and the side that cannot reach it shuts down with 2305);
Galera quorum (2*W(component) > W(last primary)). After the heal every node is healthy again (NDB:
nodes that shut themselves down get a node restart; Galera: the minority rejoins by itself).
"""

from __future__ import annotations

import pytest

from ndbchaos import topology as TP
from ndbchaos.engines.base import Expectation
from ndbchaos.faults.network import Isolate, NodeGroupSplit

from .common import run_fault, sql_nodes_on

pytestmark = [pytest.mark.partition, pytest.mark.docker]


def _partition_expectation(cluster, components, family) -> tuple[Expectation, list[str]]:
    """The engine's verdict on a clean partition, as an Expectation plus the nodes that stop."""
    out = cluster.engine.partition_outcome(cluster, components)
    stopped = sorted({n for comp in out["stopped"] for n in comp})
    base = cluster.engine.expectation("datanode_loss", cluster, lost=1)
    survives = bool(out["serving"]) and any(
        cluster.topology.node(n).role == TP.DATA for comp in out["serving"] for n in comp)
    return Expectation(family=family, survivors_serve=survives, cluster_survives=survives,
                       rule=out["rule"], detection_bound_s=out.get("detection_bound_s") or base.detection_bound_s,
                       recovery_bound_s=base.recovery_bound_s if survives else
                       cluster.engine.expectation("nodegroup_loss", cluster).recovery_bound_s,
                       recovery="partition healed, then " + (base.recovery if survives else "restart"),
                       details={"components": components, **out}), stopped


def test_isolate_one_data_node(cluster, scenario):
    run = scenario("ledger", title="isolate one data node from every other member")
    target = run.rng.choice(cluster.topology.data_nodes)
    fault = Isolate(cluster, target)
    exp, stopped = _partition_expectation(cluster, fault.window.params["components"], "partition_isolate")
    assert target.name in stopped, exp.rule
    data_stopped = [n for n in stopped if cluster.topology.node(n).role == TP.DATA]
    run_fault(run, cluster, fault, exp, data_stopped,
              stopped_sql=[n.name for n in sql_nodes_on(cluster, stopped)] if exp.cluster_survives else None)


def test_split_nodegroup_arbitrator_on_one_side(cluster, scenario):
    """Every node group split across the two sides, the arbitrator with side A: A wins."""
    run = scenario("ledger", title="split the node group(s) in two, arbitrator on one side")
    fault = NodeGroupSplit(cluster, arbitrator="a")
    exp, stopped = _partition_expectation(cluster, fault.window.params["components"],
                                          "partition_halves_arbitrator_side")
    assert exp.cluster_survives, exp.rule
    data_stopped = [n for n in stopped if cluster.topology.node(n).role == TP.DATA]
    run_fault(run, cluster, fault, exp, data_stopped,
              stopped_sql=[n.name for n in sql_nodes_on(cluster, stopped)])


def test_split_nodegroup_arbitrator_isolated(cluster, scenario):
    """The arbitrator reachable from neither side: no side may continue (NDB: both shut down
    with 2305; Galera: no component has a majority of votes)."""
    run = scenario("ledger", title="split the node group(s) in two, arbitrator isolated from both")
    fault = NodeGroupSplit(cluster, arbitrator="none")
    exp, _ = _partition_expectation(cluster, fault.window.params["components"], "arbitrator_isolated")
    assert not exp.cluster_survives, exp.rule
    run_fault(run, cluster, fault, exp, [n.name for n in cluster.topology.data_nodes])
