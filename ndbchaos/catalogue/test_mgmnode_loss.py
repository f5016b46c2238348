"""mgmnode_loss: the management node / arbitrator dies.

Expected: management and arbitration are not on the data path, so traffic continues. NDB: the
cluster keeps running and the next candidate by ArbitrationRank takes over as arbitrator (the
target is the arbitrator in effect, read from ndbinfo: rank 1 is a preference, not a guarantee);
Galera: garbd is one vote of the component; losing it leaves 2 of 3 votes (quorum), every data
node stays Primary.

NDB only: losing every management node leaves traffic alone and the cluster without an
arbitrator; but a data node restart needs a management server (its configuration comes from one),
so a data node started while none runs waits, unstarted, until one is back.
"""

from __future__ import annotations

import pytest

from ndbchaos.catalogue import every_mgm_node, one_data_node, params
from ndbchaos.driver import Scenario
from ndbchaos.faults.node import Kill, RestartWithout

ONE_GARBD = "Galera has one arbitrator (garbd), which kill_arbitrator already takes, and no node restart needs it"

pytestmark = [pytest.mark.mgmnode_loss, pytest.mark.docker]

SCENARIOS = [
    Scenario("kill_arbitrator", "mgmnode_loss", "SIGKILL the arbitrator (management node / garbd) under load",
             fault=lambda c, rng: Kill(c, [c.engine.arbitrator_in_effect(c)])),
    # Data traffic never needs a management node; the cluster runs on without an arbitrator.
    Scenario("kill_every_management_node", "mgmnode_loss",
             "SIGKILL every management node: traffic continues, no arbitrator is left",
             fault=lambda c, rng: Kill(c, every_mgm_node(c)), expectation="all_mgmnodes_loss",
             engines=("ndb",), elsewhere=ONE_GARBD),
    # ... but a data node restart does: it gets its configuration from a management server. The
    # hold is longer than a node restart takes here (21-32 s measured, docs/ndb.md), so a restart
    # that did not wait would finish inside it and the "held down" objective would fail.
    Scenario("data_node_restart_waits_for_management", "mgmnode_loss",
             "every management node and one data node killed; the data node restarts at once and must wait",
             fault=lambda c, rng: RestartWithout(c, one_data_node(c, rng), every_mgm_node(c)),
             expectation="datanode_restart_without_mgm", expectation_kw={"held_s": 40.0}, hold_s=42.0,
             engines=("ndb",), elsewhere=ONE_GARBD,
             # slow, and out of the default run, because of an open finding: in one CI run the data
             # nodes had no arbitrator 8 min after both management nodes were back
             # (arbitrator_validity_summary: arbitrator None, connected No); it passed twice before
             slow=True),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_mgmnode_loss(sc, play):
    play(sc)
