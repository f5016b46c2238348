"""partition: the network splits.

Which side keeps serving is the engine's rule (``Engine.partition_outcome``): NDB arbitration
(a side missing a node group stops; a complete node group or more than half wins; an even split
asks the arbitrator, and the side that cannot reach it shuts down with 2305; the data nodes of a
side find the unreachable ones one after the other around the heartbeat ring); Galera quorum
(2*W(component) > W(last primary)). After the heal every node is healthy again (NDB: nodes that
shut themselves down, or were declared dead while cut off, get a node restart; Galera: the
minority rejoins by itself).
"""

from __future__ import annotations

import pytest

from ndbchaos.catalogue import masters, one_data_node, one_sql_node, params, replicated
from ndbchaos.driver import Scenario
from ndbchaos.faults.network import Isolate, NodeGroupSplit, OneWay

pytestmark = [pytest.mark.partition, pytest.mark.docker]

#: a node group of one member cannot be split in two
SPLIT = replicated("a node group split needs two members in a node group")

SCENARIOS = [
    Scenario("isolate_one_data_node", "partition", "isolate one data node from every other member",
             fault=lambda c, rng: Isolate(c, one_data_node(c, rng)[0])),
    # NDB's catalogue: isolate the master. It is alone and loses; the others win by majority and
    # the next in the succession order takes over (checked).
    Scenario("isolate_master_data_node", "partition", "isolate the master data node from every other member",
             fault=lambda c, rng: Isolate(c, masters(c)[0]), engines=("ndb",),
             elsewhere="Galera has no master", slow=True),
    # NDB's catalogue: a one-way link between the data nodes and one SQL node. Its packets to
    # every data node are dropped (their packets to it still arrive): TCP fails both ways, the
    # data nodes declare the API node dead after its heartbeats stop, its clients stop being
    # served; the other SQL node is untouched; after the heal it reconnects.
    Scenario("one_way_cut_sql_node_from_data_nodes", "partition",
             "one SQL node's packets to every data node dropped (one-way), then healed",
             fault=lambda c, rng: OneWay(c, one_sql_node(c, rng)[0].name, [d.name for d in c.topology.data_nodes],
                                         mode="packets"),
             engines=("ndb",), elsewhere="Galera's SQL endpoint is its data node: no separate SQL node to cut off",
             slow=True),
    # Every node group split across the two sides, the arbitrator with side A: A wins.
    Scenario("split_nodegroup_arbitrator_on_one_side", "partition",
             "split the node group(s) in two, arbitrator on one side",
             fault=lambda c, rng: NodeGroupSplit(c, arbitrator="a"), needs=SPLIT),
    # The arbitrator reachable from neither side: no side may continue (NDB: both shut down
    # with 2305; Galera: no component has a majority of votes).
    Scenario("split_nodegroup_arbitrator_isolated", "partition",
             "split the node group(s) in two, arbitrator isolated from both",
             fault=lambda c, rng: NodeGroupSplit(c, arbitrator="none"), needs=SPLIT),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_partition(sc, play):
    play(sc)
