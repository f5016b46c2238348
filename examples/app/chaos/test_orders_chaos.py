"""The shop under faults: orders keep being placed while a data node is killed, and afterwards no
confirmed order is lost and stock + ordered is still the initial stock for every item.

    pytest chaos                                   # both engines: NDB when available, else Galera
    pytest chaos --gate gate.toml                  # and the availability the shop requires
"""

from __future__ import annotations

import pytest

from ndbchaos.catalogue import one_data_node, params
from ndbchaos.driver import Scenario
from ndbchaos.faults.node import Kill

pytestmark = [pytest.mark.datanode_loss, pytest.mark.docker]

SCENARIOS = [
    Scenario("orders_through_a_data_node_kill", "datanode_loss",
             "orders placed while one data node is SIGKILLed and restarts",
             fault=lambda c, rng: Kill(c, one_data_node(c, rng)), workload="orders"),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_orders(sc, play):
    play(sc)  # the verdict: availability, errors, latency, every confirmed order kept, the invariant
