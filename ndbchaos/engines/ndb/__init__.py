"""MySQL NDB Cluster: the primary engine.

Roles: ``mgm`` = ndb_mgmd (management node and arbitrator, by ArbitrationRank), ``data`` = ndbmtd
in node groups, ``sql`` = mysqld (the client endpoint, a container of its own). The containers run
the official image (never built or faked here) or one built from a MySQL Cluster distribution;
the topology and the test settings are ours: ndbchaos/data/compose/ndb.yml (+ ndb/config.ini,
ndb/my.cnf) and the small layout ndb-small.yml.

Facts used here are in docs/facts.md, NDB sections 2 (ndb_mgm output), 3 (cluster log), 4 (ndbinfo),
5 (arbitration and survival rules, timeouts), 7 (restart semantics).

The package:

* ``layout``: layouts, subnets, config files, compose files and environment, services, ports;
* ``lifecycle``: start and readiness, the exec helpers (``mgm``, ``root_sql``), recovery,
  graceful stop, rejoin after a freeze or a partition;
* ``status``: ``status()``, loss and rejoin judgement, master and arbitrator in effect, events;
* ``rules``, ``expectations``: the rules and the expectation of each fault family, as pure
  functions of (topology, config, arbitrator in effect, keywords);
* ``image``, ``config``, ``mgm``, ``ndbinfo``, ``clusterlog``: the image, config.ini, ndb_mgm
  output, ndbinfo tables and the cluster log follower;
* ``logs`` (+ ``logtexts``, ``logignored``): the reader of NDB's logs; ``errors``: NDB's error
  classes as clients see them.
"""

from __future__ import annotations

from ... import topology as TP
from ...vocabulary import Expectation, TxnModels
from ..base import Engine
from . import expectations, rules
from .config import NdbConfig
from .errorinsert import ErrorInsertMixin
from .layout import LayoutMixin
from .lifecycle import LifecycleMixin
from .procedures import NdbProcedures
from .status import StatusMixin


class NdbEngine(LayoutMixin, LifecycleMixin, StatusMixin, ErrorInsertMixin, Engine):
    name = "ndb"
    table_engine = "NDBCLUSTER"
    sql_roles = (TP.SQL,)

    #: keywords each family reads (``expectations.FAMILY_KEYWORDS``)
    FAMILY_KEYWORDS = expectations.FAMILY_KEYWORDS
    #: the operator procedures of the ``operations`` family (the ability ``Procedures``)
    procedures = NdbProcedures()

    def __init__(self):
        super().__init__()
        self._clusterlog_applied: dict[str, str] = {}  # mgm node -> container StartedAt
        self._shipped_cfg: dict[str, NdbConfig] = {}  # layout -> its shipped config.ini, for probe_ports

    # -- what NDB promises to clients --------------------------------------------------------
    def workload_params(self, workload: str) -> dict:
        """NDB supports only READ COMMITTED (manual, "Limitations relating to transaction
        handling"): a plain SELECT over several rows reads each row's latest committed value as
        the scan reaches it, not a snapshot, so a transfer that commits mid-scan makes the bank's
        total look wrong (measured on 9.7.2: 174 of 2,886 plain reads of 8 accounts, in steady
        state as much as during a kill). A consistent read of several rows takes shared locks in
        one transaction (``SELECT ... FOR SHARE``): a transfer cannot commit between two rows of
        the read, so every total a read returns is one the bank actually had."""
        return {"read_lock": "share"} if workload == "bank" else {}

    def consistency_models(self, workload: str, params: dict) -> TxnModels:
        """NDB supports only READ COMMITTED (manual, "Limitations relating to transaction
        handling"): a read returns the last committed version of the row when it reaches the
        data node, so no dirty or intermediate read and no cycle of write and read dependencies
        (G0, G1); read skew across rows (G-single), lost updates and stale reads are allowed.
        With a lock on every read (``LOCK IN SHARE MODE`` / ``FOR UPDATE``: held until commit,
        the same manual page; pessimistic locking, NDB API "Concurrency control") and every row
        there before the load, each transaction is strict two-phase locking over the rows it
        touches: strictly serializable [inference, checked here]. A locking read of a row that
        does not exist locks nothing (no next-key or gap locks: WL#2912 unassigned), so with
        rows created by their first write two transactions may both read a key as empty and
        both write it: only read committed is promised then."""
        lock = params.get("read_lock")
        if lock and params.get("precreate"):
            return TxnModels(("strict-serializable",), "strict two-phase locking: every read locks its row until "
                                                       "commit, every row exists beforehand [inference]")
        if lock:
            return TxnModels(("read-committed",), "NDB: READ COMMITTED only; a locking read of a missing row locks "
                                                  "nothing (no gap locks, WL#2912)",
                             "lost updates and G-single through a key's empty version")
        return TxnModels(("read-committed",), "NDB: READ COMMITTED only (manual, limitations of transactions)",
                         "read skew (G-single), lost updates, stale reads")

    def crash_loss_window_s(self, options: dict) -> float | None:
        """Acknowledged commits this long before the cluster stopped may be lost in a system
        restart: ``rules.crash_loss_window_s`` (2 x TimeBetweenGlobalCheckpoints)."""
        return rules.crash_loss_window_s(self.timings(options))

    # -- expectations ---------------------------------------------------------------------------
    def timings(self, options: dict) -> dict:
        """The timing settings of the layout's config.ini (``rules.timings``)."""
        return rules.timings(self.config(options))

    def _candidates(self, cluster, cfg: NdbConfig) -> tuple[list[int], dict]:
        by_id = {n.nodeid: n for n in cluster.topology.nodes if n.nodeid is not None}
        return [i for i in rules.arbitrator_candidates(cfg) if i in by_id], by_id

    def expectation(self, family: str, cluster, **kw) -> Expectation:
        """The expected outcome of a fault family (``expectations.FAMILIES``), from
        ``expectations.expectation`` with the arbitrator in effect (``_running_arbitrator``)
        unless ``arbitrator=`` says which one (or None). See ``expectations.expectation`` for
        ``lost=<count>`` and the keywords each family reads."""
        expectations.check_family(family)
        cfg = self.config(cluster.options)
        in_effect = None
        if "arbitrator" not in kw:
            in_effect = self._running_arbitrator(cluster, *self._candidates(cluster, cfg))[0]
        if "succession" in expectations.FAMILY_KEYWORDS[family] and "succession" not in kw:
            kw["succession"] = [n.nodeid for n in self.succession(cluster)]
        return expectations.expectation(family, cluster.topology, cfg, in_effect, **kw)

    _NO_ARB = object()  # partition_outcome(arbitrator=...) not given: find the one in effect

    def partition_outcome(self, cluster, components: list[list[str]], alive: list[str] | None = None,
                          arbitrator=_NO_ARB) -> dict:
        """Which components of a clean partition keep running, by NDB's arbitration (ndb.md 5.1):
        ``rules.partition_outcome`` with the arbitrator in effect (``_running_arbitrator``)
        unless ``arbitrator=`` (name, node id or None) says which one."""
        cfg = self.config(cluster.options)
        rules.check_partition(cluster.topology, cfg, components)
        if arbitrator is self._NO_ARB:
            arb, source = self._running_arbitrator(cluster, *self._candidates(cluster, cfg))
        else:
            arb, source = arbitrator, "given"
        return rules.partition_outcome(cluster.topology, cfg, components, alive=alive, arbitrator=arb,
                                       arbitrator_source=source)


__all__ = ["NdbEngine"]
