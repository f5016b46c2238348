"""datanode_loss: one data node dies under steady load.

Expected (the engine's rules, ``Engine.expectation("datanode_loss")``): the survivors keep serving
(Galera keeps a Primary component by quorum; NDB continues while the node's group partner lives,
reference/ndb.md 5.1), clients on the surviving SQL nodes succeed again within the engine's
detection bound, the node comes back healthy after a node restart within the recovery bound, and
no acknowledged write is lost.
"""

from __future__ import annotations

import pytest

from ndbchaos.faults import targets as T
from ndbchaos.faults.node import Kill, KillDuringRecovery, Pause, Stop

from .common import run_fault

pytestmark = [pytest.mark.datanode_loss, pytest.mark.docker]


def _one_data_node(run, cluster):
    return run.rng.choice(cluster.topology.data_nodes)


def test_kill_one_data_node(cluster, scenario):
    run = scenario("ledger", title="SIGKILL one data node under steady load, then node restart")
    target = _one_data_node(run, cluster)
    exp = cluster.engine.expectation("datanode_loss", cluster, lost=1)
    run_fault(run, cluster, Kill(cluster, [target]), exp, [target.name])


def test_freeze_one_data_node(cluster, scenario):
    """A frozen process keeps its TCP connections open: only heartbeats can tell."""
    run = scenario("ledger", title="freeze (SIGSTOP-like pause) one data node: the silent failure")
    target = _one_data_node(run, cluster)
    exp = cluster.engine.expectation("datanode_loss", cluster, lost=1)
    run_fault(run, cluster, Pause(cluster, [target]), exp, [target.name])


def test_graceful_stop_one_data_node(cluster, scenario):
    """A graceful stop: the node says goodbye, so the survivors re-form without waiting for a
    heartbeat timeout (Galera: a leave; NDB: a node stop hands its transactions over)."""
    run = scenario("ledger", title="graceful stop of one data node, then node restart")
    target = _one_data_node(run, cluster)
    exp = cluster.engine.expectation("datanode_loss", cluster, lost=1, graceful=True)
    run_fault(run, cluster, Stop(cluster, [target]), exp, [target.name])


@pytest.mark.slow
def test_kill_again_while_recovering(cluster, scenario):
    """NDB's RestartNFDuringNR: the node is killed a second time during its own recovery."""
    run = scenario("ledger", title="kill one data node, restart it, kill it again while it rejoins")
    target = _one_data_node(run, cluster)
    exp = cluster.engine.expectation("datanode_loss", cluster, lost=1)
    run_fault(run, cluster, KillDuringRecovery(cluster, [target]), exp, [target.name])


def test_bank_invariant_through_a_kill(cluster, scenario):
    """testSRBank's invariant: transfers under a node kill never create or destroy money."""
    run = scenario("bank", title="bank transfers while one data node is killed: the total never changes")
    target = _one_data_node(run, cluster)
    exp = cluster.engine.expectation("datanode_loss", cluster, lost=1)
    res = run_fault(run, cluster, Kill(cluster, [target]), exp, [target.name])
    assert "invariant" in res.verdict["checks"], sorted(res.verdict["checks"])
