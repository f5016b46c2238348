"""datanode_loss: one data node dies under steady load.

Expected (the engine's rules, ``Engine.expectation("datanode_loss", nodes=[the target])``): the
survivors keep serving (Galera keeps a Primary component by quorum; NDB continues while the
node's group partner lives, with a check the real engine logs as "node group majority"),
clients on the surviving SQL nodes succeed again within the engine's detection bound, the node
comes back healthy after a node restart within the recovery bound, and no acknowledged write is
lost.

NDB only (``engines=("ndb",)``; Galera has one group holding every replica and no master): the
master data node, and after it the node that took over (the verdict checks which node is master
afterwards: the next in the cluster's succession order, read before the fault); one data node in
each of two node groups together (the survivors must ask the arbitrator) and 2 s apart (a
majority each time, no arbitration: the verdict fails if the arbitrator is asked).
"""

from __future__ import annotations

import pytest

from fixtures.scenarios import masters, one_data_node, one_per_nodegroup, params
from ndbchaos.driver import Scenario
from ndbchaos.faults.node import Kill, KillDuringRecovery, KillInTurn, Pause, Stop

NO_GROUPS = "Galera has one group holding every replica and no master: its data node losses are the quorum cases above"

pytestmark = [pytest.mark.datanode_loss, pytest.mark.docker]

SCENARIOS = [
    Scenario("kill_one_data_node", "datanode_loss", "SIGKILL one data node under steady load, then node restart",
             fault=lambda c, rng: Kill(c, one_data_node(c, rng))),
    # A frozen process keeps its TCP connections open: only heartbeats can tell.
    Scenario("freeze_one_data_node", "datanode_loss", "freeze (SIGSTOP-like pause) one data node: the silent failure",
             fault=lambda c, rng: Pause(c, one_data_node(c, rng))),
    # The node says goodbye: Galera's leave, NDB's 'N STOP' (its work handed over).
    Scenario("graceful_stop_one_data_node", "datanode_loss", "graceful stop of one data node, then node restart",
             fault=lambda c, rng: Stop(c, one_data_node(c, rng)), expectation_kw={"graceful": True}),
    # NDB's RestartNFDuringNR: killed a second time during its own recovery.
    Scenario("kill_again_while_recovering", "datanode_loss",
             "kill one data node, restart it, kill it again while it rejoins",
             fault=lambda c, rng: KillDuringRecovery(c, one_data_node(c, rng)), slow=True),
    # testSRBank's invariant: transfers under a node kill never create or destroy money.
    Scenario("bank_invariant_through_a_kill", "datanode_loss",
             "bank transfers while one data node is killed: the total never changes",
             fault=lambda c, rng: Kill(c, one_data_node(c, rng)), workload="bank"),
    # The master (president) dies: the next one is the oldest survivor by the order the nodes
    # joined, read from the cluster before the fault; the verdict checks who took over.
    Scenario("kill_master_data_node", "datanode_loss", "SIGKILL the master data node: the oldest survivor takes over",
             fault=lambda c, rng: Kill(c, masters(c)), engines=("ndb",), elsewhere=NO_GROUPS),
    # NDB's catalogue: kill the master, then the new master once it has taken over.
    Scenario("kill_master_then_new_master", "datanode_loss",
             "SIGKILL the master, then the node that took over: the third in succession is master",
             fault=lambda c, rng: KillInTurn(c, masters(c, 2)), engines=("ndb",), elsewhere=NO_GROUPS),
    # NdbRestarts TwoNodeFailure: one node of each of two node groups at the same moment. Half
    # the data nodes are left, every group still has one: the survivors must ask the arbitrator.
    Scenario("kill_two_data_nodes_different_nodegroups", "datanode_loss",
             "SIGKILL one data node in each of two node groups at the same moment",
             fault=lambda c, rng: Kill(c, one_per_nodegroup(c, rng)), expectation="two_datanodes_different_ng",
             engines=("ndb",), elsewhere=NO_GROUPS),
    # The same two nodes 2 s apart (NDB's "two node failures within 3 s"): the first loss has
    # been handled when the second comes, so each check is a majority and no arbitration happens.
    Scenario("kill_two_data_nodes_seconds_apart", "datanode_loss",
             "SIGKILL one data node in each of two node groups, 2 s apart",
             fault=lambda c, rng: KillInTurn(c, one_per_nodegroup(c, rng), gap_s=2.0),
             expectation="two_datanodes_different_ng", engines=("ndb",), elsewhere=NO_GROUPS),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_datanode_loss(sc, play):
    play(sc)
