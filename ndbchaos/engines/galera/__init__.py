"""MariaDB Galera Cluster with garbd: the engine built from Debian packages, on which this
repository proves end to end everything outside the engine adapter.

Roles: ``data`` = mariadbd (also the SQL endpoint, same container), ``arbitrator`` = garbd.
Facts used here are in docs/facts.md (Galera) (A1 quorum, A2 status, A3 client errors,
A4 recovery).

The engine is composed of its parts (``ndbchaos.engines.parts``):

* ``GaleraLifecycle`` (``lifecycle``): images, compose, start;
* ``GaleraStatus`` (``status``): the wsrep status variables, loss and rejoin judgement;
* ``GaleraRecovery`` (``lifecycle``): node restart, the whole-cluster bootstrap;
* ``GaleraRules`` (here): the quorum expectation and partition outcome (``rules``: timers and
  formulas, pure), the consistency models, the probe ports;
* the default Logs part, with ``logs`` (the mariadbd error log reader) behind ``ndbchaos.events``;
  ``errors``: Galera's client errors.
"""

from __future__ import annotations

from ... import topology as TP
from ...vocabulary import Expectation, TxnModels
from ..base import Engine
from ..parts import RulesPart
from . import rules
from .lifecycle import GaleraLifecycle, GaleraRecovery
from .rules import data_count
from .status import GaleraStatus


class GaleraRules(RulesPart):
    """The Rules part: the quorum rule and the configured timers, what a workload must show."""

    def expectation(self, family: str, cluster, **kw) -> Expectation:
        """Expected outcome of a fault family, from the quorum rule and the configured timers
        (``rules.expectation``); ``members`` defaults to every data node and garbd."""
        return rules.expectation(family, data_count(cluster.options), **kw)

    def partition_outcome(self, cluster, components) -> dict:
        """Galera quorum on a clean partition of a healthy cluster (``rules.partition_outcome``):
        every data node and garbd votes."""
        members = [n.name for n in cluster.topology.nodes if n.role in (TP.DATA, TP.ARBITRATOR)]
        return rules.partition_outcome(members, components)

    def consistency_models(self, workload: str, params: dict) -> TxnModels:
        """Galera certifies write-sets without first-committer-wins, so two transactions that
        read the same version and write different rows both commit: lost updates happen on a
        healthy cluster, and with wsrep_sync_wait=0 a node may serve stale reads (Jepsen,
        MariaDB Galera 12.1.2, 2026; MDEV-38999; docs/facts.md Galera A5). A lock on every read
        (``FOR UPDATE``) is taken on the node that runs the transaction only, and certification
        compares write sets: two writes of one key still conflict (no lost update), but two
        transactions on two nodes that each read what the other writes both commit (write skew,
        G2-item), measured here (docs/transactions.md). Jepsen's 2015 finding that FOR UPDATE
        restored serializability on Percona XtraDB Cluster was on transfers that write every row
        they read."""
        if params.get("read_lock") == "update":
            return TxnModels(("cursor-stability",), "Galera: FOR UPDATE locks are local to a node and certification "
                                                    "compares write sets (measured: no lost update, write skew "
                                                    "across nodes)", "write skew across nodes (G2-item), stale reads")
        return TxnModels(("read-committed",), "Galera certification without first-committer-wins (Jepsen, "
                                              "MariaDB Galera 12.1.2, 2026)", "lost updates, read skew, stale reads")

    # -- facts for the fault catalogue (ndbchaos.faults) -------------------------------------------
    GCOMM_PORT = 4567  # data nodes and garbd alike listen for gcomm here

    def probe_ports(self, node) -> list[int]:
        """gcomm first (the peer traffic a partition must cut), then SQL on data nodes."""
        return [self.GCOMM_PORT, 3306] if node.role == TP.DATA else [self.GCOMM_PORT]



class GaleraEngine(Engine):
    name = "galera"
    table_engine = "InnoDB"
    sql_roles = (TP.DATA,)
    monitor_init = ("SET SESSION wsrep_sync_wait=0",)  # a status read must never block

    def __init__(self):
        super().__init__()
        self.lifecycle = GaleraLifecycle(self.account)
        self.state = GaleraStatus(self.monitor)
        self.recovery = GaleraRecovery(self.state, self.monitor)
        self.rules = GaleraRules()


__all__ = ["GaleraEngine", "data_count"]
