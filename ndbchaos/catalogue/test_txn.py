"""txn: transactions under the catalogue's faults, judged by the anomaly checker.

Each scenario plays one of the catalogue's faults (the same declaration, target choice and
expectation as its own family's scenario) under a transactional workload instead of the ledger:
eight clients, each a process of its own, pinned to an SQL node, running transactions of 1-4
appends and reads over a few hot keys (``list_append``, or ``rw_register``). Every transaction is
recorded with its micro-operations and outcome, the final read shows what stayed, and the
verdict holds the history to the models the engine promises for the variant
(``Engine.consistency_models``, with its source), besides everything the fault's own scenario
checks (detection, outage, recovery, errors):

    plain      reads as the application writes them: NDB's READ COMMITTED (no G0, no G1; read skew,
               lost updates and stale reads allowed)
    locking    SELECT ... FOR UPDATE on every read, every key's row created before the load: strict
               two-phase locking, checked against strict serializability

The default run (``-m "not slow"``: ``bin/chaos run`` and CI) keeps two of them, a data node killed
under plain reads and the master killed under locking reads; ``pytest -m txn`` runs them all.
Anomalies the promise allows are reported with their explanation and a picture, never hidden;
one it forbids fails the scenario like a lost write. A whole node group lost stops the cluster:
transactions acknowledged within the last global checkpoint interval before it stopped may be
lost by NDB's promise, and are judged as indeterminate (neither lost nor anomalous), while every
other transaction keeps its outcome.
"""

from __future__ import annotations

import pytest

from ndbchaos.catalogue import (lose_one_sql_node, masters, one_data_node, one_nodegroup, one_per_nodegroup,
                              params, replicated, sql_only)
from ndbchaos.driver import Scenario
from ndbchaos.faults.network import NodeGroupSplit
from ndbchaos.faults.node import Kill, Pause

# eight clients, each a process of its own (one connection), spread over the SQL nodes
PLAIN = {"workload": "list_append", "clients": 8}
LOCKING = {"workload": "list_append", "workload_params": {"read_lock": "update", "precreate": True}, "clients": 8}
# a TEXT value's first 256 bytes are inline, the rest in the parts table: 128 writes per key make
# lists of up to ~470 bytes, so each key spends the second half of its life there
TEXT = {"workload": "list_append", "workload_params": {"storage": "text", "max_writes": 128}, "clients": 8}
REGISTER = {"workload": "rw_register", "clients": 8}
NO_GROUPS = "Galera has one group holding every replica and no master"

pytestmark = [pytest.mark.txn, pytest.mark.docker]

SCENARIOS = [
    Scenario("txn_kill_one_data_node", "datanode_loss", "transactions (plain reads) while one data node is killed",
             fault=lambda c, rng: Kill(c, one_data_node(c, rng)), **PLAIN),
    Scenario("txn_kill_one_data_node_locking", "datanode_loss",
             "transactions (FOR UPDATE on every read) while one data node is killed",
             fault=lambda c, rng: Kill(c, one_data_node(c, rng)), slow=True, **LOCKING),
    # The master coordinates node failures and global checkpoints: the transactions it
    # coordinated are taken over by the survivors, who must finish or abort each everywhere.
    Scenario("txn_kill_master_data_node", "datanode_loss",
             "transactions (plain reads) while the master data node is killed",
             fault=lambda c, rng: Kill(c, masters(c)), engines=("ndb",), elsewhere=NO_GROUPS, slow=True, **PLAIN),
    Scenario("txn_kill_master_data_node_locking", "datanode_loss",
             "transactions (FOR UPDATE on every read) while the master data node is killed",
             fault=lambda c, rng: Kill(c, masters(c)), engines=("ndb",), elsewhere=NO_GROUPS, **LOCKING),
    Scenario("txn_freeze_one_data_node", "datanode_loss",
             "transactions (plain reads) while one data node is frozen, then thawed",
             fault=lambda c, rng: Pause(c, one_data_node(c, rng)), expectation_kw={"frozen": True}, slow=True, **PLAIN),
    Scenario("txn_kill_two_data_nodes_different_nodegroups", "datanode_loss",
             "transactions (FOR UPDATE on every read) while a data node of each node group is killed",
             fault=lambda c, rng: Kill(c, one_per_nodegroup(c, rng)), expectation="two_datanodes_different_ng",
             engines=("ndb",), elsewhere=NO_GROUPS, slow=True, **LOCKING),
    Scenario("txn_kill_whole_nodegroup", "nodegroup_loss",
             "transactions (plain reads) while a whole node group is killed: cluster stop, system restart",
             fault=lambda c, rng: Kill(c, one_nodegroup(c, rng)), slow=True, **PLAIN),
    Scenario("txn_kill_whole_nodegroup_locking", "nodegroup_loss",
             "transactions (FOR UPDATE on every read) while a whole node group is killed",
             fault=lambda c, rng: Kill(c, one_nodegroup(c, rng)), engines=("ndb",), elsewhere=NO_GROUPS, slow=True,
             **LOCKING),
    Scenario("txn_split_nodegroup_arbitrator_on_one_side", "partition",
             "transactions (plain reads) while the node groups are split, the arbitrator on one side",
             fault=lambda c, rng: NodeGroupSplit(c, arbitrator="a"), slow=True,
             needs=replicated("a node group split needs two members in a node group"), **PLAIN),
    # The SQL node dies with transactions open on it: those in COMMIT are of unknown outcome.
    Scenario("txn_lose_one_sql_node", "sqlnode_loss",
             "transactions (plain reads) while one SQL node is lost mid-transaction",
             fault=lose_one_sql_node, via_proxy=lambda c: not sql_only(c), slow=True, **PLAIN),
    Scenario("txn_lose_one_sql_node_locking", "sqlnode_loss",
             "transactions (FOR UPDATE on every read) while one SQL node is lost mid-transaction",
             fault=lose_one_sql_node, via_proxy=lambda c: not sql_only(c), slow=True, **LOCKING),
    # the lists in TEXT: all but their first 256 bytes in NDB's hidden parts table, and a SELECT of
    # a TEXT column takes a shared lock (docs/transactions.md)
    Scenario("txn_kill_one_data_node_text", "datanode_loss",
             "transactions (plain reads, lists in TEXT) while one data node is killed",
             fault=lambda c, rng: Kill(c, one_data_node(c, rng)), slow=True, **TEXT),
    # FOR UPDATE on every read, but a key's row created by its first append: a locking read of a
    # row that does not exist locks nothing in NDB (no gap locks), so only read committed holds
    Scenario("txn_kill_one_data_node_locking_missing_rows", "datanode_loss",
             "transactions (FOR UPDATE on every read, rows created by their first append) while a data node is killed",
             fault=lambda c, rng: Kill(c, one_data_node(c, rng)), slow=True,
             **{**LOCKING, "workload_params": {"read_lock": "update"}}),
    Scenario("txn_register_kill_one_data_node", "datanode_loss",
             "register transactions (plain reads) while one data node is killed",
             fault=lambda c, rng: Kill(c, one_data_node(c, rng)), slow=True, **REGISTER),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_txn(sc, play):
    play(sc)
