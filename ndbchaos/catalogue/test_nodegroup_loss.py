"""nodegroup_loss: every data node of one node group dies.

Expected: no surviving partition owns all data, so the cluster stops serving rather than serve
wrong results (NDB: "Arbitration check lost - missing node group", every remaining data node
shuts down with 2305, clients get 4009-class errors of unknown outcome, a system restart is
needed; Galera: its single group holds every replica, so losing it is losing every data node,
and the cluster needs a bootstrap from the most advanced node). After the documented recovery
every node is healthy and no acknowledged write is lost, except, on NDB, those within the last
global checkpoint interval before the cluster stopped committing (reported apart, never hidden).

NDB only: system restarts of the whole cluster. ``ALL RESTART`` (a graceful cluster shutdown:
its last global checkpoint makes every acknowledged commit durable, so none may be lost),
``ALL RESTART -a`` (abort: no last checkpoint) and SIGKILL of every data node at once; the last
two may lose acknowledged commits of the last 2 x TimeBetweenGlobalCheckpoints before the stop.
"""

from __future__ import annotations

import pytest

from ndbchaos.catalogue import every_data_node, one_nodegroup, params
from ndbchaos.driver import Scenario
from ndbchaos.engines.ndb.faults.mgm import SystemRestart
from ndbchaos.faults.node import Kill

ONE_GROUP = "Galera's one group holds every replica: kill_whole_nodegroup already stops every data node there"

pytestmark = [pytest.mark.nodegroup_loss, pytest.mark.docker]

SCENARIOS = [
    Scenario("kill_whole_nodegroup", "nodegroup_loss", "SIGKILL every data node of one node group, then system restart",
             fault=lambda c, rng: Kill(c, one_nodegroup(c, rng))),
    # The restarts stop every data node and come back by themselves (the angels): a short hold,
    # so that the heal follows the stop and not the restart.
    Scenario("system_restart_graceful", "nodegroup_loss",
             "ndb_mgm 'ALL RESTART' under load: graceful system restart, no acknowledged write lost",
             fault=lambda c, rng: SystemRestart(c), expectation="system_restart",
             expectation_kw={"how": "graceful"}, hold_s=1.0, engines=("ndb",), elsewhere=ONE_GROUP, slow=True),
    Scenario("system_restart_abort", "nodegroup_loss",
             "ndb_mgm 'ALL RESTART -a' under load: aborted system restart, loss only within the GCP window",
             fault=lambda c, rng: SystemRestart(c, abort=True), expectation="system_restart",
             expectation_kw={"how": "abort"}, hold_s=1.0, engines=("ndb",), elsewhere=ONE_GROUP, slow=True),
    Scenario("kill_every_data_node", "nodegroup_loss",
             "SIGKILL every data node at once, then system restart: loss only within the GCP window",
             fault=lambda c, rng: Kill(c, every_data_node(c)), expectation="system_restart",
             expectation_kw={"how": "kill"}, engines=("ndb",), elsewhere=ONE_GROUP),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_nodegroup_loss(sc, play):
    play(sc)
