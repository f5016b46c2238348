"""The Recovery part of the NDB engine (``NdbRecovery``): node restart and system restart, the
graceful stop of a data node (``ndb_mgm -e "N STOP"``), whether a data node's process has
stopped, and what a freeze or a partition leaves behind (``excluded_running``, ``rejoin``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...runtimes import docker
from ... import topology as TP
from ...errors import NdbChaosError
from ...waiting import Deadline, wait_until
from ..parts import RecoveryPart
from .mgm import answered as mgm_answered
from .ndbinfo import started_ids
from .rules import MGMD_START_BOUND
from .shell import NdbShell

if TYPE_CHECKING:  # pragma: no cover
    from .status import NdbStatus

log = logging.getLogger("ndbchaos")


class NdbRecovery(RecoveryPart):
    """Brings nodes back and stops them through the commands of ``shell``; asks ``state`` (the
    Status part) what the SQL nodes see."""

    def __init__(self, shell: NdbShell, state: NdbStatus):
        self.shell, self.state = shell, state

    def recover_nodes(self, cluster, nodes) -> None:
        """Node restart = start the container again (the data node keeps its file system, so it
        runs a node restart). If no data node is running at all, every data node is started:
        the cluster needs all of them for a system restart (ndb.md 7). Management nodes first
        (data and SQL nodes fetch their configuration from them), then data, then SQL nodes."""
        topo = cluster.topology
        order = {TP.MGM: 0, TP.DATA: 1, TP.SQL: 2}
        wanted = sorted(nodes, key=lambda n: (order.get(n.role, 3), n.nodeid or 0))
        started_mgm = []

        def start(n: TP.Node) -> bool:
            c = cluster.container(n)
            st = docker.container_state(c)
            if st == "paused":
                c.unpause()
                return False
            if st != "running":
                c.start()
                return True
            return False

        for n in [x for x in wanted if x.role == TP.MGM]:
            if start(n):
                started_mgm.append(n)
        for n in started_mgm:
            try:
                self.shell.wait_mgm(cluster, n, MGMD_START_BOUND)
                self.shell.apply_clusterlog(cluster, n)
            except NdbChaosError as e:
                log.warning("management node %s: %s", n.name, e)
        data_want = [x for x in wanted if x.role == TP.DATA]
        if data_want:
            running = [d for d in topo.data_nodes
                       if docker.container_state(cluster.container(d)) == "running"]
            targets = topo.data_nodes if not running else data_want  # system restart: all of them
            for n in targets:
                start(n)
        for n in [x for x in wanted if x.role not in (TP.MGM, TP.DATA)]:
            start(n)
        cluster.discover()

    #: How long a data node that the others declared dead while it was frozen or cut off may take
    #: to notice and shut itself down once it can talk again. Measured on 9.7.2: 0.3 s after the
    #: unpause or the heal (error 2315); the bound is our margin, not an NDB setting.
    THAW_SHUTDOWN_BOUND = 30.0

    def stop_node(self, cluster, node: TP.Node, timeout: float) -> str:
        """A data node's graceful stop is ``ndb_mgm -e "N STOP"``: the node hands its work over and
        the angel exits (measured on 9.7.2: 15 s under no load). ``docker stop`` is not one: the
        angel runs as the container's PID 1 and ignores SIGTERM, so Docker SIGKILLs it after the
        grace period; and SIGTERM to the data node process itself is a fast stop without handover
        ("Received signal 15. Performing stop."). Management and SQL nodes stop on SIGTERM."""
        if node.role != TP.DATA:
            return super().stop_node(cluster, node, timeout)
        code, out, src = self.shell.mgm(cluster, f"{node.nodeid} STOP", timeout=timeout + 10)
        if not mgm_answered(out):
            raise NdbChaosError(f"graceful stop of {node.name}: no management server answers "
                                f"(ndb_mgm '{node.nodeid} STOP' needs one): {out.strip()[-160:]}")
        if f"Node {node.nodeid} has shutdown" not in out:
            last = [ln for ln in out.strip().splitlines() if ln.strip()][-1:] or ["(no output)"]
            raise NdbChaosError(f"graceful stop of {node.name} refused: ndb_mgm '{node.nodeid} STOP' said {last[0]!r}")
        return f"ndb_mgm '{node.nodeid} STOP' via {src}"

    #: The data node's processes inside its container: the angel (PID 1) and the data node it
    #: forks, both named after the program. Counted from /proc, which every image has.
    _DATA_PROCESSES = ("sh", "-c",
                       'grep -l "^Name:[[:space:]]*ndb\\(mt\\)\\{0,1\\}d$" /proc/[0-9]*/status 2>/dev/null | wc -l')

    def process_stopped(self, cluster, node: TP.Node) -> bool:
        """A data node has stopped when its container has exited, or when only the angel is left.
        The second happens after a forced shutdown while the node cannot reach any ndb_mgmd
        (a partition): the angel then tries for 120 s to report the shutdown reason before it
        exits (9.7.2: "Unable to report shutdown reason to '10.213.77.101 1186'" 120.1 s after
        "Forced node shutdown completed"), so the container stays up while the node is down."""
        if super().process_stopped(cluster, node):
            return True
        if node.role != TP.DATA:
            return False
        h = cluster.container(node)
        if hasattr(h, "process_count"):  # an inventory host: the node's own processes, not the host's
            try:  # fewer than when it was found healthy (the angel alone, or nothing)
                return h.process_count() < max(1, h.baseline_processes)
            except NdbChaosError:
                return False
        code, out = self.shell.exec(cluster, node, list(self._DATA_PROCESSES), timeout=10)
        return code == 0 and out.strip().isdigit() and int(out.strip()) < 2

    def excluded_running(self, cluster, nodes) -> list:
        """Data nodes among ``nodes`` whose container runs (or is paused) while the management
        server reports them ``not connected``: the cluster declared them dead (heartbeats) while
        they were frozen or cut off."""
        data = [n for n in nodes if n.role == TP.DATA]
        if not data:
            return []
        rep, _ = self.shell.mgm_report(cluster)
        if rep is None:
            return []
        out = []
        for n in data:
            m = rep.node(n.nodeid)
            if (m is None or not m.connected) and \
                    docker.container_state(cluster.container(n)) in ("running", "paused"):
                out.append(n)
        if out:
            members = self._serving_members(cluster)
            out = [n for n in out if n.nodeid not in members]
        return out

    def _serving_members(self, cluster) -> set:
        """Data node ids some SQL node sees STARTED in ``ndbinfo.nodes``: members of a cluster
        that serves. The management server's "not connected" is only its own view: a partition
        that leaves every ndb_mgmd with the side that shuts down (one node group of 3 split 1/2,
        the arbitrator with the 1) shows the surviving 2 as not connected, though they never
        left their cluster and have nothing to learn when the partition heals (9.7.2)."""
        ids: set = set()
        for n in cluster.topology.role(TP.SQL):
            if not n.sql_port or docker.container_state(cluster.container(n)) != "running":
                continue
            ids.update(started_ids(self.state.sql_probe(n).get("nodes", [])))
        return ids

    def rejoin(self, cluster, nodes) -> str:
        """A data node that was declared dead while unreachable learns it on its first contact
        with the cluster and shuts itself down (9.7.2: error 2315 "We(12) have been declared dead
        by 13 ... Heartbeat failure", 0.3 s after a thaw, about 1 s after a partition healed; its
        container exits with code 0). One that already shut itself down while cut off (2305) has
        only its angel left, which exits once it has reported to ndb_mgmd (4-9 s after the heal
        on 9.7.2). Wait for the container to exit, then a node restart."""
        notes = []
        for n in nodes:
            c = cluster.container(n)
            d = Deadline(self.THAW_SHUTDOWN_BOUND)
            wait_until(lambda: docker.container_state(c) in ("exited", "dead"), d.remaining(), poll=0.1,
                       on_timeout=lambda: NdbChaosError(
                           f"{n.name} was declared dead while unreachable but still runs "
                           f"{self.THAW_SHUTDOWN_BOUND:.0f}s after it could reach the cluster again"))
            notes.append(f"{n.name} shut itself down {d.elapsed():.1f}s after it could reach the cluster")
        self.recover_nodes(cluster, nodes)
        return "; ".join(notes + ["node restart of " + ", ".join(n.name for n in nodes)])
