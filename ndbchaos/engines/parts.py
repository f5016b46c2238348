"""The parts an engine is composed of, with their defaults: one class per protocol of
``ndbchaos.engines.protocols`` (``LifecyclePart``, ``StatusPart``, ``RecoveryPart``,
``RulesPart``, ``LogsPart``) and the monitoring connections (``Monitor``) a status part reads
through. An engine's own part subclasses the default and overrides what its rules differ in;
``Engine`` (``engines.base``) holds one of each and answers every protocol member from the part
it belongs to.

A part is given what it needs when it is built (the sibling parts it asks, the engine's SQL
account), never the engine: a part's calls to another are named (``self.shell.mgm``), so what
depends on what is read from the constructors.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..events import parse_lines, time_to_epoch
from ..runtimes import docker
from ..sqlconn import connect, error_fields
from ..vocabulary import ClusterOptions, ClusterStatus, Expectation, NodeStatus, TxnModels

if TYPE_CHECKING:  # pragma: no cover (a part acts on the runtimes' handles)
    from ..handle import ClusterHandle
    from ..runtimes.compose.cluster import ComposeCluster
    from ..topology import Node

#: a kept monitoring connection that fails faster than this was stale (closed by a restart of its
#: server), not a sign of the server now; the monitoring read timeout is 2 s
STALE_FAILS_WITHIN_S = 0.5


class Account:
    """The SQL account, database and dialect clients are given (the ``Rules`` attributes an
    engine declares), for the parts that connect or create it."""

    def __init__(self, user: str, password: str, database: str, init: tuple[str, ...] = ()):
        self.user, self.password, self.database, self.init = user, password, database, init


class Monitor:
    """The kept monitoring connections to SQL endpoints, one per node, opened on first use with
    short timeouts so a status poll never hangs on a frozen node."""

    def __init__(self, account: Account):
        self.account = account
        self._conns: dict[str, object] = {}  # node name -> open monitoring connection
        self._lock = threading.Lock()

    def _open(self, node: Node):
        conn = self._conns.get(node.name)
        if conn is not None:
            return conn
        a = self.account
        conn = connect(node.sql_port, a.user, a.password, host=node.sql_host,
                       connect_timeout=1.0, read_timeout=2.0, write_timeout=2.0)
        if a.init:
            cur = conn.cursor()
            for stmt in a.init:
                cur.execute(stmt)
            cur.close()
        self._conns[node.name] = conn
        return conn

    def query(self, node: Node, query) -> dict:
        """``query(cursor)`` on the node's monitoring connection; on any error the connection is
        dropped (the next call opens a new one) and ``{"error": "errno: message"}`` returned.

        A kept connection can be stale: the server was restarted since its last use (a fault, a
        heal, a scenario of an earlier test). It fails at once, and that says nothing about the
        server now, so the query is tried once more on a new connection. A failure that took
        time (a frozen or cut-off server: the read timeout) is not tried again: a status poll
        must stay short while the server does not answer."""
        with self._lock:
            kept = node.name in self._conns
            t0 = time.monotonic()
            out = self._once(node, query)
            if "error" in out and kept and time.monotonic() - t0 < STALE_FAILS_WITHIN_S:
                out = self._once(node, query)
            return out

    def _once(self, node: Node, query) -> dict:
        try:
            cur = self._open(node).cursor()
            try:
                return query(cur)
            finally:
                cur.close()
        except Exception as e:
            self.drop(node.name)
            errno, msg = error_fields(e)
            return {"error": f"{errno}: {msg}"}

    def drop(self, name: str) -> None:
        """Close and forget the node's connection (its server went away or was restarted)."""
        conn = self._conns.pop(name, None)
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass


class LifecyclePart:
    """``protocols.Lifecycle``: images, the Compose project, the start order, the first
    preparation, the options that reproduce a running cluster's shape."""

    def image(self, options: ClusterOptions) -> str:
        """The image of the engine's nodes for this run (chosen, not pulled or built)."""
        raise NotImplementedError

    def images(self, options: ClusterOptions) -> list[str]:
        """Every image the cluster's containers run (for the report's environment)."""
        raise NotImplementedError

    def ensure_images(self, options: ClusterOptions) -> None:
        """Make sure the images exist locally (build or refuse with how to get them)."""
        raise NotImplementedError

    def compose_files(self, options: ClusterOptions) -> list[Path]:
        """The compose files of the cluster, then the overlays of ``options.overlays``."""
        raise NotImplementedError

    def compose_env(self, options: ClusterOptions) -> dict[str, str]:
        """The environment the compose files need (image, ports of ``options.ports``, ...)."""
        raise NotImplementedError

    def compose_profiles(self, options: ClusterOptions) -> list[str]:
        """Compose profiles to enable. Default: none."""
        return []

    def start(self, cluster: ComposeCluster) -> None:
        """Bring the cluster up in the engine's order (compose up of services)."""
        raise NotImplementedError

    def prepare(self, cluster: ClusterHandle) -> None:
        """After the first healthy state: create the client user and database."""
        raise NotImplementedError

    def options_from_topology(self, topology) -> ClusterOptions:
        """Cluster options that reproduce a running cluster's shape, so ``ndbchaos status`` and
        ``ndbchaos fault --project`` can attach to a cluster they did not start."""
        return ClusterOptions()


class StatusPart:
    """``protocols.Status``: every node's state and the engine's reading of it, read through the
    monitoring connections."""

    def __init__(self, monitor: Monitor):
        self.monitor = monitor

    def monitor_query(self, node: Node, query) -> dict:
        """``Monitor.query``: ``query(cursor)`` on the node's monitoring connection."""
        return self.monitor.query(node, query)

    def status(self, cluster: ClusterHandle) -> ClusterStatus:
        """Every node's state and the engine's judgement of the whole (``healthy``, ``problems``,
        engine facts in ``summary``)."""
        raise NotImplementedError

    def expected_members(self, cluster: ClusterHandle) -> int:
        """How many members a healthy cluster has, as the engine counts them."""
        raise NotImplementedError

    def loss_detected(self, status: ClusterStatus, lost: list[str]) -> bool:
        """True when the cluster has excluded the ``lost`` nodes and every surviving data node is
        serving again: the engine's reaction to a node loss that it survives."""
        raise NotImplementedError

    def node_failed(self, node: NodeStatus) -> bool:
        """Has this node itself failed (its process down, not answering, out of the cluster)?
        Not the same as not healthy, which may say only that the cluster around it is short of a
        member (the kill switch asks this: ndbchaos.killswitch). Default: not healthy."""
        return not node.healthy

    def node_rejoining(self, status: ClusterStatus, node: str) -> bool:
        """Is ``node`` in the middle of recovery (restarted, not yet healthy)? Default: its
        container runs and its process answers, but its state is not healthy. NDB: a start
        phase (``starting``) in ndb_mgm / ndbinfo.nodes."""
        ns = status.node(node)
        return ns.container == "running" and not ns.healthy and ns.state not in ("down", "unreachable", "gone")

    def arbitrator_in_effect(self, cluster: ClusterHandle):
        """The node that arbitrates right now (NDB: the management node the data nodes chose,
        from ndbinfo; Galera: garbd). Default: the first arbitrator of the topology by node id."""
        arbs = sorted(cluster.topology.arbitrators, key=lambda n: (n.nodeid or 0, n.name))
        return arbs[0] if arbs else None

    def master_node(self, cluster: ClusterHandle):
        """The master / president data node (NDB: ndbinfo.membership / the cluster log), or
        None where the engine has no such role (Galera)."""
        return None

    def succession(self, cluster: ClusterHandle) -> list:
        """Data nodes in the order they take over as master (the master first), or [] where the
        engine has no such role (Galera)."""
        return []


class RecoveryPart:
    """``protocols.Recovery``: bringing nodes back, the graceful stop, whether a process has
    stopped, what a freeze or a partition leaves behind."""

    def recover_nodes(self, cluster: ClusterHandle, nodes: list[Node]) -> None:
        """The documented action that brings dead nodes back (node restart; a system restart
        or bootstrap when the whole cluster is down)."""
        raise NotImplementedError

    def stop_node(self, cluster: ClusterHandle, node: Node, timeout: float) -> str:
        """The engine's graceful stop of one node, returned when the stop was requested (the
        caller waits for the process to exit). Default: SIGTERM to the container's main process,
        SIGKILL after ``timeout`` (``docker stop``). Returns how it was stopped, for the evidence."""
        cluster.container(node).stop(timeout=int(timeout))
        return "SIGTERM (docker stop)"

    def process_stopped(self, cluster: ClusterHandle, node: Node) -> bool:
        """Has the node's server process stopped (crashed, shut itself down, been stopped)?
        Default: its container has exited."""
        return docker.container_state(cluster.container(node)) in ("exited", "dead")

    def excluded_running(self, cluster: ClusterHandle, nodes: list[Node]) -> list[Node]:
        """Of ``nodes``, those whose process still runs (or is frozen) but whom the cluster has
        excluded: what a freeze or a partition leaves behind before it is healed. Asked before
        the heal; the answer goes to ``rejoin`` after it. Default: none (the engine takes its
        members back by itself, as Galera does)."""
        return []

    def rejoin(self, cluster: ClusterHandle, nodes: list[Node]) -> str:
        """What nodes excluded while unreachable (``excluded_running``) need once they can talk
        to the cluster again; returns what was done, for the evidence. Default: nothing."""
        return "nothing: the engine takes them back by itself"


class RulesPart:
    """``protocols.Rules``: what the engine promises (expectations, a partition's outcome, the
    probe ports, the workloads' settings and consistency models, the loss window of a crash)."""

    def expectation(self, family: str, cluster: ClusterHandle, **kw) -> Expectation:
        """The outcome a fault of ``family`` must have by the engine's rules, with its bounds and
        the rule it comes from. Keywords a family does not read are accepted and ignored."""
        raise NotImplementedError

    def partition_outcome(self, cluster: ClusterHandle, components: list[list[str]]) -> dict:
        """Which components of a clean partition keep serving by the engine's rules:
        ``{"serving": [component, ...], "stopped": [...], "rule": "..."}``
        (NDB: arbitration, docs/facts.md NDB 5.1; Galera: the quorum formula)."""
        raise NotImplementedError("this engine has no partition rule")

    def probe_ports(self, node: Node) -> list[int]:
        """TCP ports to probe a node on, peer-facing port first: a partition is verified by a
        connect to ``ports[0]`` from the other side. NDB: ndb_mgmd 1186, a data node its
        ServerPort (config.ini), mysqld 3306. Galera: 4567 (gcomm) on data nodes and garbd."""
        raise NotImplementedError("this engine does not say which ports to probe")

    def workload_params(self, workload: str) -> dict:
        """Engine-specific settings a workload needs so that its checks judge what the engine
        promises (e.g. how to read several rows consistently). Default: none."""
        return {}

    def consistency_models(self, workload: str, params: dict) -> TxnModels:
        """What a transactional workload (``list_append``, ``rw_register``) with these
        parameters (``read_lock``, ``precreate``, ``storage``) must show on this engine: the
        models the anomaly checker holds the history to. Default: read committed, the weakest
        level a SQL engine offers by its standard."""
        return TxnModels(("read-committed",), "the SQL standard's read committed; the engine declares nothing "
                                              "stronger")

    def crash_loss_window_s(self, options: ClusterOptions) -> float | None:
        """The engine's durability promise when the whole cluster crashes: acknowledged commits
        this many seconds before the cluster stopped acknowledging may be lost (and are reported
        apart from other losses). None: no acknowledged commit may be lost."""
        return None


class LogsPart:
    """``protocols.Logs``: the engine's log events during a run, read from the containers'
    output of the ``log_roles`` nodes with ``ndbchaos.events`` for the engine ``engine``."""

    def __init__(self, engine: str, log_roles: tuple[str, ...]):
        self.engine, self.log_roles = engine, log_roles

    def collect_events(self, cluster: ClusterHandle, since: float) -> list[dict]:
        """Parsed engine log events since run time ``since``, each with ``t`` (run clock) and
        ``log`` (the node whose log it came from)."""
        events: list[dict] = []
        for n in cluster.topology.nodes:
            if n.role in self.log_roles:
                events += [e for e in self.node_log_events(cluster, n, since) if e["t"] is None or e["t"] >= since - 1]
        events.sort(key=lambda e: (e["t"] is None, e["t"] or 0))
        return events

    def node_log_events(self, cluster: ClusterHandle, node: Node, since: float,
                        reporter: int | None = None) -> list[dict]:
        """The events of one node's container output from about run time ``since`` (Docker's
        ``since`` has whole seconds), stamped with ``t`` (run clock, None without a stamp) and
        ``log`` (the node's name). ``reporter``: the engine's id of the node whose log it is."""
        try:
            raw = cluster.container(node).logs(since=int(cluster.clock.wall(since)) - 1, stdout=True, stderr=True)
        except Exception:
            return []
        out = []
        for ev in parse_lines(raw.decode("utf-8", "replace").splitlines(), engine=self.engine, reporter=reporter):
            epoch = time_to_epoch(ev.get("time"))
            ev["t"] = None if epoch is None else round(cluster.clock.from_wall(epoch), 3)
            ev["log"] = node.name
            out.append(ev)
        return out


__all__ = ["Account", "LifecyclePart", "LogsPart", "Monitor", "RecoveryPart", "RulesPart", "StatusPart"]
