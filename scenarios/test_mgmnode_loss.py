"""mgmnode_loss: the management node / arbitrator dies.

Expected: management and arbitration are not on the data path, so traffic continues. NDB: the
cluster keeps running and, when the active arbitrator was lost, the next candidate by
ArbitrationRank takes over (reference/ndb.md 5.1). Galera: garbd is one vote of the component;
losing it leaves 2 of 3 votes (quorum), every data node stays Primary.
"""

from __future__ import annotations

import pytest

from ndbchaos.faults.node import Kill

from .common import run_fault

pytestmark = [pytest.mark.mgmnode_loss, pytest.mark.docker]


def test_kill_arbitrator(cluster, scenario):
    run = scenario("ledger", title="SIGKILL the arbitrator (management node / garbd) under load")
    target = cluster.engine.arbitrator_in_effect(cluster)  # NDB: ndbinfo's, not the config's rank 1
    assert target is not None, "the topology has no management node / arbitrator"
    exp = cluster.engine.expectation("mgmnode_loss", cluster, nodes=[target.name], arbitrator=target.name)
    assert exp.cluster_survives, f"losing the arbitrator must not stop traffic: {exp.rule}"
    run_fault(run, cluster, Kill(cluster, [target]), exp, [target.name], stopped_sql=[])
