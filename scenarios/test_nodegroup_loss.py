"""nodegroup_loss: every data node of one node group dies.

Expected: no surviving partition owns all data, so the cluster stops serving rather than serve
wrong results (NDB: every data node shuts down, clients get 4009-class errors, a system restart
is needed, reference/ndb.md 5.1; Galera: its single group holds every replica, so losing it is
losing every data node, and the cluster needs a bootstrap from the most advanced node). After the
documented recovery every node is healthy and no acknowledged write is lost (for NDB, losses within
the last global checkpoint interval before a whole-cluster crash are reported separately).
"""

from __future__ import annotations

import pytest

from ndbchaos.faults.node import Kill

from .common import run_fault

pytestmark = [pytest.mark.nodegroup_loss, pytest.mark.docker]


def test_kill_whole_nodegroup(cluster, scenario):
    run = scenario("ledger", title="SIGKILL every data node of one node group, then system restart")
    groups = cluster.topology.nodegroups()
    ng = run.rng.choice(sorted(groups))
    victims = groups[ng]
    exp = cluster.engine.expectation("nodegroup_loss", cluster, nodegroup=ng)
    assert not exp.cluster_survives, f"losing a whole node group must stop the cluster: {exp.rule}"
    # NDB's durability promise for a whole-cluster crash (commits after the last global checkpoint
    # may be lost) is applied by run_fault; such losses are reported apart, never hidden.
    run_fault(run, cluster, Kill(cluster, victims), exp, [n.name for n in victims])
