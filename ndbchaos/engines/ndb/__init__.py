"""MySQL NDB Cluster: the primary engine.

Roles: ``mgm`` = ndb_mgmd (management node and arbitrator, by ArbitrationRank), ``data`` = ndbmtd
in node groups, ``sql`` = mysqld (the client endpoint, a container of its own). The containers run
the official image (never built or faked here) or one built from a MySQL Cluster distribution;
the topology and the test settings are ours: ndbchaos/data/compose/ndb.yml (+ ndb/config.ini,
ndb/my.cnf) and the small layout ndb-small.yml.

Facts used here are in docs/facts.md, NDB sections 2 (ndb_mgm output), 3 (cluster log), 4 (ndbinfo),
5 (arbitration and survival rules, timeouts), 7 (restart semantics).

The engine is composed of its parts (``ndbchaos.engines.parts``), each given the parts it asks:

* ``NdbLayouts`` (``layout``): layouts, subnets, config files (or the configuration adopted from
  a running cluster), compose files and environment, services, ports;
* ``NdbShell`` (``shell``): the commands run in the containers: ``mgm``, its report, ``root_sql``,
  the cluster log levels;
* ``NdbLifecycle`` (``lifecycle``): start and readiness, the first preparation;
* ``NdbStatus`` and ``NdbLogs`` (``status``): ``status()``, loss and rejoin judgement, master and
  arbitrator in effect; the events of the nodes' logs;
* ``NdbRecovery`` (``recovery``): node and system restart, graceful stop, rejoin after a freeze or
  a partition;
* ``NdbRules`` (here): the expectation of each fault family and of a partition, with the
  arbitrator in effect, from ``rules`` and ``expectations`` (pure functions of topology, config,
  arbitrator in effect and keywords), and what a workload must show;
* ``NdbErrorInserts`` (``errorinsert``): NDB's own failure points;
* ``image``, ``config``, ``mgm``, ``ndbinfo``, ``clusterlog``: the image, config.ini, ndb_mgm
  output, ndbinfo tables and the cluster log follower;
* ``logs`` (+ ``logtexts``, ``logignored``): the reader of NDB's logs; ``errors``: NDB's error
  classes as clients see them.
"""

from __future__ import annotations

from ... import topology as TP
from ...vocabulary import ClusterOptions, Expectation, TxnModels
from ..base import Engine, Part
from ..parts import RulesPart
from . import expectations, rules
from .config import NdbConfig
from .errorinsert import NdbErrorInserts
from .layout import NdbLayouts
from .lifecycle import NdbLifecycle
from .procedures import NdbProcedures
from .recovery import NdbRecovery
from .shell import NdbShell
from .status import NdbLogs, NdbStatus


class NdbRules(RulesPart):
    """What NDB promises: the expectation of each fault family and the outcome of a partition
    with the arbitrator in effect (asked of ``state``), from the configuration of ``layouts``; the
    workloads' settings and consistency models."""

    def __init__(self, layouts: NdbLayouts, state: NdbStatus):
        self.layouts, self.state = layouts, state

    def probe_ports(self, node) -> list[int]:
        return self.layouts.probe_ports(node)

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

    def crash_loss_window_s(self, options: ClusterOptions) -> float | None:
        """Acknowledged commits this long before the cluster stopped may be lost in a system
        restart: ``rules.crash_loss_window_s`` (2 x TimeBetweenGlobalCheckpoints)."""
        return rules.crash_loss_window_s(self.timings(options))

    # -- expectations ---------------------------------------------------------------------------
    def timings(self, options: ClusterOptions) -> dict:
        """The timing settings of the layout's config.ini (``rules.timings``)."""
        return rules.timings(self.layouts.config(options))

    def _candidates(self, cluster, cfg: NdbConfig) -> tuple[list[int], dict]:
        by_id = {n.nodeid: n for n in cluster.topology.nodes if n.nodeid is not None}
        return [i for i in rules.arbitrator_candidates(cfg) if i in by_id], by_id

    def expectation(self, family: str, cluster, **kw) -> Expectation:
        """The expected outcome of a fault family (``expectations.FAMILIES``), from
        ``expectations.expectation`` with the arbitrator in effect (``running_arbitrator``)
        unless ``arbitrator=`` says which one (or None). See ``expectations.expectation`` for
        ``lost=<count>`` and the keywords each family reads."""
        expectations.check_family(family)
        cfg = self.layouts.config(cluster.options)
        in_effect = None
        if "arbitrator" not in kw:
            in_effect = self.state.running_arbitrator(cluster, *self._candidates(cluster, cfg))[0]
        if "succession" in expectations.FAMILY_KEYWORDS[family] and "succession" not in kw:
            kw["succession"] = [n.nodeid for n in self.state.succession(cluster)]
        return expectations.expectation(family, cluster.topology, cfg, in_effect, **kw)

    _NO_ARB = object()  # partition_outcome(arbitrator=...) not given: find the one in effect

    def partition_outcome(self, cluster, components: list[list[str]], alive: list[str] | None = None,
                          arbitrator=_NO_ARB) -> dict:
        """Which components of a clean partition keep running, by NDB's arbitration (ndb.md 5.1):
        ``rules.partition_outcome`` with the arbitrator in effect (``running_arbitrator``)
        unless ``arbitrator=`` (name, node id or None) says which one."""
        cfg = self.layouts.config(cluster.options)
        rules.check_partition(cluster.topology, cfg, components)
        if arbitrator is self._NO_ARB:
            arb, source = self.state.running_arbitrator(cluster, *self._candidates(cluster, cfg))
        else:
            arb, source = arbitrator, "given"
        return rules.partition_outcome(cluster.topology, cfg, components, alive=alive, arbitrator=arb,
                                       arbitrator_source=source)


class NdbEngine(Engine):
    """NDB composed of its parts; besides the protocols' members it answers for the abilities
    (``ManagementClient``, ``ClusterLog``, ``Procedures``, ``InventoryCheck``) and what NDB's own
    faults, procedures and commands ask of its layout, shell and error inserts."""

    name = "ndb"
    table_engine = "NDBCLUSTER"
    sql_roles = (TP.SQL,)

    #: keywords each family reads (``expectations.FAMILY_KEYWORDS``)
    FAMILY_KEYWORDS = expectations.FAMILY_KEYWORDS
    #: the operator procedures of the ``operations`` family (the ability ``Procedures``)
    procedures = NdbProcedures()
    #: how long a data node may take to log NDB_TAMPER (``NdbErrorInserts.TAMPER_WAIT_S``)
    TAMPER_WAIT_S = NdbErrorInserts.TAMPER_WAIT_S

    def __init__(self):
        super().__init__()
        self.layouts = NdbLayouts(self.sql_private_port)
        self.shell = NdbShell()
        self.lifecycle = NdbLifecycle(self.layouts, self.shell, self.account)
        self.state = NdbStatus(self.monitor, self.shell, self.layouts)
        self.recovery = NdbRecovery(self.shell, self.state)
        self.rules = NdbRules(self.layouts, self.state)
        self.logs = NdbLogs(self.name, self.log_roles)
        self.error_inserts = NdbErrorInserts(self.shell)

    # -- the layout (NDB's faults, procedures and commands; InventoryCheck) ---------------------
    layout = Part("layouts")
    layout_spec = Part("layouts")
    layout_text = Part("layouts")
    subnet = Part("layouts")
    config = Part("layouts")
    config_files = Part("layouts")
    services = Part("layouts")
    check_inventory = Part("layouts")
    timings = Part("rules")

    # -- the shell (ManagementClient) -----------------------------------------------------------
    mgm = Part("shell")
    mgm_report = Part("shell")
    root_sql = Part("shell")

    # -- the cluster log (ClusterLog) -----------------------------------------------------------
    cluster_log_follower = Part("logs")

    # -- error inserts (NDB's error_insert family) ------------------------------------------------
    error_inserts_unavailable = Part("error_inserts")
    tamper_since = Part("error_inserts")
    armed_error_inserts = Part("error_inserts")
    error_log = Part("error_inserts")
    insert_error = Part("error_inserts")


__all__ = ["NdbEngine", "NdbRules"]
