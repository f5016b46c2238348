"""mgmnode_loss: the management node / arbitrator dies.

Expected: management and arbitration are not on the data path, so traffic continues. NDB: the
cluster keeps running and the next candidate by ArbitrationRank takes over as arbitrator (the
target is the arbitrator in effect, read from ndbinfo: rank 1 is a preference, not a guarantee);
Galera: garbd is one vote of the component; losing it leaves 2 of 3 votes (quorum), every data
node stays Primary.
"""

from __future__ import annotations

import pytest

from fixtures.scenarios import params
from ndbchaos.driver import Scenario
from ndbchaos.faults.node import Kill

pytestmark = [pytest.mark.mgmnode_loss, pytest.mark.docker]

SCENARIOS = [
    Scenario("kill_arbitrator", "mgmnode_loss", "SIGKILL the arbitrator (management node / garbd) under load",
             fault=lambda c, rng: Kill(c, [c.engine.arbitrator_in_effect(c)])),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_mgmnode_loss(sc, play):
    play(sc)
