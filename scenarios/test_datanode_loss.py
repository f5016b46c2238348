"""datanode_loss: one data node dies under steady load.

Expected (the engine's rules, ``Engine.expectation("datanode_loss", nodes=[the target])``): the
survivors keep serving (Galera keeps a Primary component by quorum; NDB continues while the
node's group partner lives, with a check the real engine logs as "node group majority"),
clients on the surviving SQL nodes succeed again within the engine's detection bound, the node
comes back healthy after a node restart within the recovery bound, and no acknowledged write is
lost.
"""

from __future__ import annotations

import pytest

from fixtures.scenarios import one_data_node, params
from ndbchaos.driver import Scenario
from ndbchaos.faults.node import Kill, KillDuringRecovery, Pause, Stop

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
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_datanode_loss(sc, play):
    play(sc)
