"""sqlnode_loss: one SQL endpoint is lost; the other SQL nodes are unaffected.

NDB: the mysqld process of one SQL node is killed (its clients lose their connections; the data
nodes declare the API node dead after about 1.5 s of missed heartbeats, reference/ndb.md 5.2).
Galera has no separate SQL node: mariadbd is both the SQL endpoint and the data node, so killing
it is datanode_loss. Here the SQL endpoint's client path is taken down instead (its toxiproxy
proxy stops listening and drops its connections), which is what the clients of a lost SQL node
see, while the engine itself is untouched.
"""

from __future__ import annotations

import pytest

from ndbchaos import topology as TP
from ndbchaos.faults.node import Kill

from .common import run_fault

pytestmark = [pytest.mark.sqlnode_loss, pytest.mark.docker]


def test_lose_one_sql_node(cluster, scenario):
    sql_only = [n for n in cluster.topology.sql_nodes if n.role == TP.SQL]
    if sql_only:
        run = scenario("ledger", title="SIGKILL one SQL node (mysqld); the others are unaffected")
        target = run.rng.choice(sql_only)
        fault = Kill(cluster, [target])
    else:
        from ndbchaos.faults.toxiproxy import ProxyDown
        run = scenario("ledger", title="client path of one SQL endpoint down; the others are unaffected",
                       via_proxy=True)
        target = run.rng.choice(cluster.topology.sql_nodes)
        fault = ProxyDown(cluster, [target])
    exp = cluster.engine.expectation("sqlnode_loss", cluster, nodes=[target.name])
    assert exp.cluster_survives, exp.rule
    run_fault(run, cluster, fault, exp, [target.name], stopped_sql=[target.name], engine_reacts=bool(sql_only))
