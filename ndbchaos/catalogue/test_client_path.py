"""client_path: faults between the clients and one SQL node (toxiproxy in front of it).

The engine is not involved: the affected endpoint's clients see the fault (latency, resets), the
other endpoints are unaffected, the clients of the target are served again after the heal, and
nothing acknowledged is lost (writes cut off by a reset are indeterminate, never counted lost).
"""

from __future__ import annotations

import pytest

from ndbchaos.catalogue import one_sql_node, params
from ndbchaos.driver import Scenario
from ndbchaos.faults.toxiproxy import Latency, ResetPeer

pytestmark = [pytest.mark.client_path, pytest.mark.docker]

LATENCY_MS = 150

SCENARIOS = [
    Scenario("latency_on_one_sql_node", "client_path", f"{LATENCY_MS} ms latency on the client path of one SQL node",
             fault=lambda c, rng: Latency(c, one_sql_node(c, rng), latency_ms=LATENCY_MS), workload="pk_update",
             via_proxy=True, latency_ms=LATENCY_MS),
    Scenario("reset_connections_on_one_sql_node", "client_path", "TCP reset of every connection to one SQL node",
             fault=lambda c, rng: ResetPeer(c, one_sql_node(c, rng), timeout_ms=0), via_proxy=True),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_client_path(sc, play):
    play(sc)
