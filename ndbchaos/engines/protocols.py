"""The protocols an engine is made of: what each caller asks of it, named by what it is for.

``Engine`` (``ndbchaos.engines.base``) is their sum and gives each member's default; an engine
class (``NdbEngine``, ``GaleraEngine``) overrides what its rules differ in. A caller names the
part it calls, not the whole engine:

    ``Lifecycle``   images, the Compose project, the start order, the first preparation, the options
                    that reproduce a running cluster  (the compose runtime, provision, ``fault --project``)
    ``Status``      every node's state and the engine's reading of it  (the cluster handle and its
                    observer, fault targets, the node faults' waits, the kill switch's watch)
    ``Recovery``    bringing nodes back, stopping one gracefully, what a freeze or a partition leaves
                    behind  (the node faults, the handle's reset, the driver)
    ``Rules``       what the engine promises: each fault family's expectation, a partition's outcome,
                    the ports a partition is verified on, the workloads' settings and consistency
                    models, the SQL account and table engine  (plans, faults, the driver, workloads)
    ``Logs``        the engine's log events during a run  (the run's evidence: the scenario's events)

Abilities only some engines have are asked with ``isinstance`` against their protocol, never by the
engine's name: ``ManagementClient``, ``ClusterLog`` and ``Procedures`` here; ``handle.HandleEngine``
(what every cluster handle calls), ``runtimes.compose.cluster.ComposeEngine`` (what the compose
runtime calls, with ``services``) and ``runtimes.inventory.cluster.InventoryCheck`` live with the
runtimes that ask for them. ``tests/unit/test_engine_protocols.py`` holds every engine to every
protocol, and ``Engine``'s public members to exactly the protocols' union.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..vocabulary import ClusterOptions, ClusterStatus, Expectation, NodeStatus, TxnModels

if TYPE_CHECKING:  # pragma: no cover (an engine acts on the runtimes' handles)
    from ..handle import ClusterHandle
    from ..runtimes.compose.cluster import ComposeCluster
    from ..topology import Node, Topology


@runtime_checkable
class Lifecycle(Protocol):
    """How the engine's cluster is built and started: the images, the Compose project (files,
    environment, profiles; what ``ComposeEngine`` asks, with ``services`` of the engines that name
    them), the start order, the first preparation once healthy (the client account and database),
    and the options that reproduce a running cluster's shape. Asked by the compose runtime
    (``ComposeCluster.up``), every handle (``prepare``), ``ndbchaos.provision`` (``images``) and
    the commands that attach to a cluster they did not start (``options_from_topology``)."""

    name: str

    def image(self, options: ClusterOptions) -> str: ...

    def images(self, options: ClusterOptions) -> list[str]: ...

    def ensure_images(self, options: ClusterOptions) -> None: ...

    def compose_files(self, options: ClusterOptions) -> list[Path]: ...

    def compose_env(self, options: ClusterOptions) -> dict[str, str]: ...

    def compose_profiles(self, options: ClusterOptions) -> list[str]: ...

    def start(self, cluster: ComposeCluster) -> None: ...

    def prepare(self, cluster: ClusterHandle) -> None: ...

    def options_from_topology(self, topology: Topology) -> ClusterOptions: ...


@runtime_checkable
class Status(Protocol):
    """Every node's state and the engine's reading of it: the whole cluster's status, how many
    members a healthy one has, whether a loss was detected, a node is rejoining or has itself
    failed, the master and its successors, the arbitrator in effect; status reads go through the
    monitoring connection (``monitor_query``, opened with ``monitor_init``). Asked by the cluster
    handle (``ClusterHandle.status``, which the observer samples), fault targets
    (``faults.targets``: the master), the node faults' waits (``faults.node``: loss detected,
    rejoining), the kill switch's watch (``ScenarioRun._watch``: node failed) and the catalogue
    (the arbitrator in effect, the succession)."""

    name: str
    monitor_init: tuple[str, ...]

    def monitor_query(self, node: Node, query) -> dict: ...

    def status(self, cluster: ClusterHandle) -> ClusterStatus: ...

    def expected_members(self, cluster: ClusterHandle) -> int: ...

    def loss_detected(self, status: ClusterStatus, lost: list[str]) -> bool: ...

    def node_rejoining(self, status: ClusterStatus, node: str) -> bool: ...

    def node_failed(self, node: NodeStatus) -> bool: ...

    def master_node(self, cluster: ClusterHandle): ...

    def succession(self, cluster: ClusterHandle) -> list: ...

    def arbitrator_in_effect(self, cluster: ClusterHandle): ...


@runtime_checkable
class Recovery(Protocol):
    """Bringing nodes back and stopping one: the documented recovery of dead nodes, the graceful
    stop, whether a node's process has stopped, and what nodes a freeze or a partition cut off
    need once they can talk again (``excluded_running`` before the heal, ``rejoin`` after). Asked
    by the node faults (``faults.node``), the handle's reset (``recover_nodes``) and the driver
    (``process_stopped``)."""

    name: str

    def recover_nodes(self, cluster: ClusterHandle, nodes: list[Node]) -> None: ...

    def stop_node(self, cluster: ClusterHandle, node: Node, timeout: float) -> str: ...

    def process_stopped(self, cluster: ClusterHandle, node: Node) -> bool: ...

    def excluded_running(self, cluster: ClusterHandle, nodes: list[Node]) -> list[Node]: ...

    def rejoin(self, cluster: ClusterHandle, nodes: list[Node]) -> str: ...


@runtime_checkable
class Rules(Protocol):
    """What the engine promises, as rules: the expectation of each fault family and of a clean
    partition, the ports a partition is verified on, what a workload needs so that its checks
    judge the engine's promise (its settings, the consistency models, the loss window of a whole
    crash), and what clients are given (the SQL account, database and roles, the SQL port inside
    a container, the table engine). Asked by ``ndbchaos.plans`` (expectations, partition
    outcomes), the network faults (``probe_ports``, ``sql_roles``), the toxiproxy
    (``sql_private_port``), the driver and the player (workload settings, models, loss window)
    and the workloads (account, table engine)."""

    name: str
    sql_user: str
    sql_password: str
    sql_database: str
    sql_roles: tuple[str, ...]
    sql_private_port: int
    table_engine: str

    def expectation(self, family: str, cluster: ClusterHandle, **kw) -> Expectation: ...

    def partition_outcome(self, cluster: ClusterHandle, components: list[list[str]]) -> dict: ...

    def probe_ports(self, node: Node) -> list[int]: ...

    def workload_params(self, workload: str) -> dict: ...

    def consistency_models(self, workload: str, params: dict) -> TxnModels: ...

    def crash_loss_window_s(self, options: ClusterOptions) -> float | None: ...


@runtime_checkable
class Logs(Protocol):
    """The engine's log: the roles whose output is its log, the parsed events of a run and of
    one node's output. Asked for a run's evidence (``ScenarioRun._events``: the events since the
    run began)."""

    name: str
    log_roles: tuple[str, ...]

    def collect_events(self, cluster: ClusterHandle, since: float) -> list[dict]: ...

    def node_log_events(self, cluster: ClusterHandle, node: Node, since: float,
                        reporter: int | None = None) -> list[dict]: ...


#: the protocols ``Engine`` is the sum of
PARTS: tuple[type, ...] = (Lifecycle, Status, Recovery, Rules, Logs)


# -- abilities an engine may have (checked with isinstance, never by the engine's name) -------

@runtime_checkable
class ManagementClient(Protocol):
    """A management client (NDB's ndb_mgm): ``mgm(cluster, command, timeout=...)`` -> (exit code,
    output, the management node that answered). Asked by NDB's management-client faults
    (``engines.ndb.faults.mgm``)."""

    def mgm(self, cluster: ClusterHandle, command: str, node=None, timeout: float = ...) -> tuple: ...


@runtime_checkable
class ClusterLog(Protocol):
    """A cluster log a fault can follow while it acts (NDB's management nodes' log). Asked by
    NDB's management-client faults."""

    def cluster_log_follower(self, cluster: ClusterHandle, node=None, keep_other: bool = False): ...


@runtime_checkable
class Procedures(Protocol):
    """Operator procedures an operation declaration asks for (``ndbchaos.operations``): NDB's
    online schema change, online add node group, backup and restore, rolling configuration
    change, each a ``Procedure``."""

    procedures: object


__all__ = ["ClusterLog", "Lifecycle", "Logs", "ManagementClient", "PARTS", "Procedures", "Recovery", "Rules",
           "Status"]
