"""The engine: the sum of the engine's protocols, composed of one part per protocol.

A scenario is written against roles (data, arbitrator/mgm, sql); the engine supplies:
compose files and their environment, the start order, readiness, per-node status, the SQL
dialect of the workloads, error classification, the expected outcome of each fault family
(with the rule it comes from) and the recovery procedure of a node. Callers name the protocol
they call (``ndbchaos.engines.protocols``: ``Lifecycle``, ``Status``, ``Recovery``, ``Rules``,
``Logs``, and the abilities some engines have); the engine answers each member from the part
that protocol is (``ndbchaos.engines.parts``), which the engine built in ``__init__``.
"""

from __future__ import annotations

from .parts import Account, LifecyclePart, LogsPart, Monitor, RecoveryPart, RulesPart, StatusPart


class Part:
    """``Engine.<member>`` is the member of the same name of the engine's part ``part`` (an
    attribute of the engine, built in its ``__init__``). A subclass may still define the member
    itself (a test's toy engine does); the part then never hears of it."""

    def __init__(self, part: str):
        self.part = part
        self.name = ""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(getattr(obj, self.part), self.name)

    def __repr__(self) -> str:
        return f"<{self.name} of the part {self.part}>"


class Engine:
    """The sum of the engine's protocols (``ndbchaos.engines.protocols``), each answered by the
    part it belongs to: ``lifecycle``, ``state`` (Status), ``recovery``, ``rules`` and ``logs``,
    built in ``__init__`` (the defaults of ``ndbchaos.engines.parts``; an engine builds its own
    and assigns them). Every public member belongs to one protocol
    (``tests/unit/test_engine_protocols.py``); the abilities only some engines have
    (``ManagementClient``, ``ClusterLog``, ``Procedures``, ...) are the engine's own."""

    name = "base"
    #: SQL client credentials created by the engine at start
    sql_user = "chaos"
    sql_password = "chaos"
    sql_database = "ndbchaos"
    #: storage engine clause for workload tables
    table_engine = "InnoDB"
    #: roles whose nodes are SQL endpoints for the clients (NDB: mysqld; Galera: the data nodes)
    sql_roles: tuple[str, ...] = ("sql",)
    #: statements run once on every new monitoring connection
    monitor_init: tuple[str, ...] = ()
    #: roles whose container output is the engine's log (Galera: mariadbd and garbd)
    log_roles: tuple[str, ...] = ("data", "arbitrator")
    #: the SQL port inside an SQL node's container (toxiproxy's upstream)
    sql_private_port = 3306

    def __init__(self):
        self.account = Account(self.sql_user, self.sql_password, self.sql_database, self.monitor_init)
        self.monitor = Monitor(self.account)
        self.lifecycle: LifecyclePart = LifecyclePart()
        self.state: StatusPart = StatusPart(self.monitor)
        self.recovery: RecoveryPart = RecoveryPart()
        self.rules: RulesPart = RulesPart()
        self.logs: LogsPart = LogsPart(self.name, self.log_roles)

    # -- Lifecycle ---------------------------------------------------------------------------
    image = Part("lifecycle")
    images = Part("lifecycle")
    ensure_images = Part("lifecycle")
    compose_files = Part("lifecycle")
    compose_env = Part("lifecycle")
    compose_profiles = Part("lifecycle")
    start = Part("lifecycle")
    prepare = Part("lifecycle")
    options_from_topology = Part("lifecycle")

    # -- Status ------------------------------------------------------------------------------
    monitor_query = Part("state")
    status = Part("state")
    expected_members = Part("state")
    loss_detected = Part("state")
    node_rejoining = Part("state")
    node_failed = Part("state")
    master_node = Part("state")
    succession = Part("state")
    arbitrator_in_effect = Part("state")

    # -- Recovery ----------------------------------------------------------------------------
    recover_nodes = Part("recovery")
    stop_node = Part("recovery")
    process_stopped = Part("recovery")
    excluded_running = Part("recovery")
    rejoin = Part("recovery")

    # -- Rules -------------------------------------------------------------------------------
    expectation = Part("rules")
    partition_outcome = Part("rules")
    probe_ports = Part("rules")
    workload_params = Part("rules")
    consistency_models = Part("rules")
    crash_loss_window_s = Part("rules")

    # -- Logs --------------------------------------------------------------------------------
    collect_events = Part("logs")
    node_log_events = Part("logs")


__all__ = ["Engine", "Part"]
