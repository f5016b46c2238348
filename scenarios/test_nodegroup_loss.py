"""nodegroup_loss: every data node of one node group dies.

Expected: no surviving partition owns all data, so the cluster stops serving rather than serve
wrong results (NDB: "Arbitration check lost - missing node group", every remaining data node
shuts down with 2305, clients get 4009-class errors of unknown outcome, a system restart is
needed; Galera: its single group holds every replica, so losing it is losing every data node,
and the cluster needs a bootstrap from the most advanced node). After the documented recovery
every node is healthy and no acknowledged write is lost, except, on NDB, those within the last
global checkpoint interval before the cluster stopped committing (reported apart, never hidden).
"""

from __future__ import annotations

import pytest

from fixtures.scenarios import one_nodegroup, params
from ndbchaos.driver import Scenario
from ndbchaos.faults.node import Kill

pytestmark = [pytest.mark.nodegroup_loss, pytest.mark.docker]

SCENARIOS = [
    Scenario("kill_whole_nodegroup", "nodegroup_loss", "SIGKILL every data node of one node group, then system restart",
             fault=lambda c, rng: Kill(c, one_nodegroup(c, rng))),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_nodegroup_loss(sc, play):
    play(sc)
