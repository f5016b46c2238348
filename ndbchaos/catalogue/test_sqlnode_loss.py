"""sqlnode_loss: one SQL endpoint is lost; the other SQL nodes are unaffected.

NDB: the mysqld process of one SQL node is killed (its clients lose their connections; the data
nodes declare the API node dead after its heartbeats stop). Galera has no separate SQL node:
mariadbd is both the SQL endpoint and the data node, so killing it is datanode_loss. There the
SQL endpoint's client path is taken down instead (its toxiproxy proxy stops listening and drops
its connections), which is what the clients of a lost SQL node see, while the engine is untouched.

Both scenarios report how long the lost node's clients needed to be served again: without
failover on their own node once it is back; with failover (the clients' list of servers) on the
next SQL node, within the bound derived from the client's timeouts.
"""

from __future__ import annotations

import pytest

from ndbchaos.catalogue import lose_one_sql_node, params, sql_only
from ndbchaos.driver import Scenario

pytestmark = [pytest.mark.sqlnode_loss, pytest.mark.docker]

SCENARIOS = [
    Scenario("lose_one_sql_node", "sqlnode_loss", "lose one SQL node; the others are unaffected",
             fault=lose_one_sql_node, via_proxy=lambda c: not sql_only(c)),
    # The same loss with clients that fail over (the connector's list of servers): the lost
    # node's clients are served by another SQL node within what the client needs to notice and
    # reconnect. Without failover (above) they wait for their node: both figures are reported.
    Scenario("lose_one_sql_node_with_failover", "sqlnode_loss",
             "lose one SQL node; its clients fail over to the next SQL node",
             fault=lose_one_sql_node, via_proxy=lambda c: not sql_only(c), failover=True),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_sqlnode_loss(sc, play):
    play(sc)
