"""Start, readiness and recovery of an NDB cluster, and the commands run in its containers.

Start order: management nodes, then data nodes (until every one is ``started`` in
``ndb_mgm -e "all status"``), the cluster log levels, then SQL nodes (until the real server
answers), then the client user and database. No image healthcheck is used (ndb.md section 10).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...runtimes import docker
from ... import topology as TP
from ...errors import ClusterNotReady, NdbChaosError
from ...waiting import Deadline, wait_until
from .mgm import all_started
from .mgm import answered as mgm_answered
from .ndbinfo import started_ids
from .rules import MGMD_START_BOUND
from .spec import SPARE, available_mib, check_free

if TYPE_CHECKING:  # pragma: no cover
    from ...runtimes.compose.cluster import ComposeCluster

log = logging.getLogger("ndbchaos")

#: the management client, run inside a management node's container
MGM_CLIENT = ["ndb_mgm", "-c", "127.0.0.1:1186"]
#: the same for a probe (status, readiness): one connection attempt. ndb_mgm's default retries a
#: refused connection 12 times, 5 s apart (9.7.2 --help), and a probe is always polled again, so
#: a management server that is not there now must not cost a minute. On a host that outlives its
#: ndb_mgmd (the inventory backend) a status read caught running when the server was killed
#: otherwise spent 12 s retrying, and that fault's window had no status sample at all.
#: (--connect-retries=0 means "retry for ever", measured.)
PROBE_MGM_CLIENT = [*MGM_CLIENT, "--connect-retries=1"]

#: Cluster log levels of ndb_mgmd. They are not config.ini parameters: ndb_mgmd starts with 7 for
#: every category, ERROR 15, CONNECTION 8, BACKUP 15 (MgmtSrvr.cpp constructor), which hides the
#: threshold-8 NodeRestart events (NODE_FAILREP "has failed", NodeFailCompleted "completed failure
#: of") that the expectations look for. Each ndb_mgmd has its own cluster log and its own levels,
#: and they reset when it restarts, so they are applied to each management node after it starts.
CLUSTERLOG = "ALL CLUSTERLOG STARTUP=15 SHUTDOWN=15 NODERESTART=15 CONNECTION=15 ERROR=15"


class LifecycleMixin:
    """start, prepare, the exec helpers (``mgm``, ``root_sql``), recovery, graceful stop, rejoin."""

    # -- start ------------------------------------------------------------------------------
    def start(self, cluster: ComposeCluster) -> None:
        """Management nodes first, then data nodes (wait until all are started), then SQL nodes
        (wait until each answers SQL), then the client user and database."""
        budget = float(cluster.options.get("ndb_start_timeout") or 600)
        deadline = Deadline(budget)
        if self.layout(cluster.options) != "default":  # what the machine holds now (spec.py)
            check_free(self.layout_spec(cluster.options), available_mib())
        self._check_subnet_free(cluster)
        svc = self.services(cluster.options)
        up = ["up", "-d", "--pull", "never", "--no-deps"]
        cluster.compose(*up, *svc.get(TP.MGM, []))
        cluster.discover()
        for n in cluster.topology.role(TP.MGM):
            self._wait_mgm(cluster, n, min(90.0, deadline.remaining()))
        # Spare data nodes (a generated layout's, in no node group) start with the others: no
        # data node then waits StartNoNodegroupTimeout for them (ndb-operations 1.1).
        cluster.compose(*up, *svc.get(TP.DATA, []), *svc.get(SPARE, []))
        cluster.discover()
        self._wait_data_started(cluster, deadline)
        for n in cluster.topology.role(TP.MGM):
            self._apply_clusterlog(cluster, n)
        cluster.compose(*up, *svc.get(TP.SQL, []))
        cluster.discover()
        for n in cluster.topology.role(TP.SQL):
            self._wait_local_sql(cluster, n, deadline)
            self._ensure_client(cluster, n, deadline)
        extra = self._overlay_services(cluster.options)
        if extra:  # overlays (toxiproxy in front of the SQL nodes): once the SQL nodes answer
            cluster.compose(*up, *extra)
        cluster.discover()
        # Readiness within our own budget (an NDB start can outlast Cluster.up's default timeout;
        # its wait_healthy then returns at once).
        cluster.wait_healthy(max(5.0, deadline.remaining()))

    def _check_subnet_free(self, cluster) -> None:
        net = self.subnet(cluster.options) + ".0/24"
        try:
            networks = docker.docker_client().networks.list()
        except Exception:
            return
        for nw in networks:
            labels = (nw.attrs.get("Labels") or {})
            if labels.get(TP.PROJECT) == cluster.project:
                continue
            for cfg in ((nw.attrs.get("IPAM") or {}).get("Config") or []):
                if cfg.get("Subnet") == net:
                    other = labels.get(TP.PROJECT)
                    raise NdbChaosError(
                        f"subnet {net} is already used by network {nw.name}"
                        + (f" (ndbchaos project {other}: `ndbchaos reap --project {other}`)" if other else "")
                        + "; set NDBCHAOS_NDB_SUBNET to another /24")

    def _raise_if_exited(self, cluster, node: TP.Node) -> None:
        c = cluster.container(node)
        st = docker.container_state(c)
        if st in ("exited", "dead"):
            tail = c.logs(tail=20).decode("utf-8", "replace").strip().splitlines()
            last = [ln for ln in tail if ln.strip()][-1:] or ["(no output)"]
            raise ClusterNotReady(f"{node.name} exited during start: {last[0][-240:]}")

    def _wait_mgm(self, cluster, node: TP.Node, timeout: float) -> None:
        last = [""]

        def answers():
            self._raise_if_exited(cluster, node)
            code, out = self._exec(cluster, node, PROBE_MGM_CLIENT + ["-e", "show"], timeout=10)
            last[0] = (out.strip().splitlines() or [""])[-1]
            return code == 0 and "Cluster Configuration" in out

        wait_until(answers, max(timeout, 1), poll=1.0, on_timeout=lambda: ClusterNotReady(
            f"{node.name}: ndb_mgmd did not answer within {timeout:.0f}s ({last[0][-200:]})"))

    def _wait_data_started(self, cluster, deadline: Deadline) -> None:
        expected = [n.nodeid for n in cluster.topology.data_nodes]
        problems: list[str] = ["no report yet"]

        def started():
            for n in cluster.topology.data_nodes:
                self._raise_if_exited(cluster, n)
            rep, _ = self.mgm_report(cluster)
            if rep is None:
                return False
            ok, problems[:] = all_started(rep, expected)
            return ok

        wait_until(started, deadline.remaining(), poll=1.0, on_timeout=lambda: ClusterNotReady(
            "data nodes not started: " + "; ".join(problems[:4])))

    def _wait_local_sql(self, cluster, node: TP.Node, deadline: Deadline) -> None:
        """Wait for the real server: the image's entrypoint first runs a temporary server for
        its initialisation, with --skip-networking, on the same socket."""
        last = [""]

        def networking():
            self._raise_if_exited(cluster, node)
            code, out = self.root_sql(cluster, node, "SELECT @@skip_networking", timeout=10)
            lines = out.strip().splitlines()
            last[0] = out.strip()[-200:]
            return code == 0 and lines and lines[-1].strip() == "0"

        wait_until(networking, deadline.remaining(), poll=1.0, on_timeout=lambda: ClusterNotReady(
            f"{node.name} did not accept SQL in time ({last[0]})"))

    def _ensure_client(self, cluster, node: TP.Node, deadline: Deadline | None = None) -> None:
        """The client user (per SQL node: users are local to each mysqld) and the database
        (distributed to the other SQL nodes by NDB schema distribution; IF NOT EXISTS everywhere)."""
        u, p, db = self.sql_user, self.sql_password, self.sql_database
        sql = (f"CREATE USER IF NOT EXISTS '{u}'@'%' IDENTIFIED BY '{p}'; "
               f"ALTER USER '{u}'@'%' IDENTIFIED BY '{p}'; "
               f"GRANT ALL PRIVILEGES ON *.* TO '{u}'@'%'; "
               f"CREATE DATABASE IF NOT EXISTS `{db}`")
        last = [""]

        def created():
            code, out = self.root_sql(cluster, node, sql, timeout=60)
            last[0] = out.strip()[-240:]
            return code == 0

        wait_until(created, (deadline or Deadline(120)).remaining(), poll=2.0, on_timeout=lambda: NdbChaosError(
            f"creating the client user on {node.name} failed: {last[0]}"))

    def prepare(self, cluster) -> None:
        """Idempotent: the client user and database on every SQL node, cluster log levels."""
        for n in cluster.topology.role(TP.SQL):
            self._ensure_client(cluster, n)
        for n in cluster.topology.role(TP.MGM):
            self._apply_clusterlog(cluster, n)

    # -- exec helpers -------------------------------------------------------------------------
    def _exec(self, cluster, node: TP.Node, cmd: list[str] | str, timeout: float = 10) -> tuple[int, str]:
        try:
            c = cluster.container(node)
            return docker.exec_in(c, cmd, timeout=timeout)
        except Exception as e:  # paused, gone, docker error: an answer, not an exception
            return -1, f"{type(e).__name__}: {e}"

    def root_sql(self, cluster, node: TP.Node, sql: str, timeout: float = 30) -> tuple[int, str]:
        """Run SQL as root@localhost inside an SQL node's container, through the server's socket
        (the image sets MYSQL_UNIX_PORT); the password is the container's MYSQL_ROOT_PASSWORD.
        Returns (exit code, output)."""
        cmd = ["sh", "-c", 'MYSQL_PWD="$MYSQL_ROOT_PASSWORD" exec mysql -uroot -N -B -e "$0"', sql]
        return self._exec(cluster, node, cmd, timeout=timeout)

    def mgm(self, cluster, command: str, node: TP.Node | None = None,
            timeout: float = 10) -> tuple[int, str, str | None]:
        """Run one ndb_mgm command in a management container (the given one, or the first
        running one in node id order); (exit code, output, node name that answered)."""
        candidates = [node] if node is not None else sorted(cluster.topology.role(TP.MGM), key=lambda n: n.nodeid or 0)
        last = (-1, "no management node container is running", None)
        for n in candidates:
            try:
                if docker.container_state(cluster.container(n)) != "running":
                    continue
            except Exception:
                continue
            code, out = self._exec(cluster, n, MGM_CLIENT + ["-e", command], timeout=timeout)
            if code == 0 and mgm_answered(out):
                return code, out, n.name
            last = (code, out, n.name)
        return last

    def _apply_clusterlog(self, cluster, node: TP.Node) -> bool:
        code, out, _ = self.mgm(cluster, CLUSTERLOG, node=node, timeout=15)
        ok = code == 0 and "failed" not in out
        if ok:
            try:
                c = cluster.container(node)
                self._clusterlog_applied[node.name] = (c.attrs.get("State") or {}).get("StartedAt", "")
            except Exception:
                pass
        else:
            log.warning("CLUSTERLOG levels not applied on %s: %s", node.name, out.strip()[-200:])
        return ok

    def _reapply_clusterlog(self, cluster, cstates: dict) -> None:
        """A management node that restarted since its levels were applied gets them again."""
        for n in cluster.topology.role(TP.MGM):
            if cstates.get(n.name) != "running":
                continue
            try:
                started = (cluster.container(n).attrs.get("State") or {}).get("StartedAt", "")
            except Exception:
                continue
            if self._clusterlog_applied.get(n.name) not in (None, started):
                self._apply_clusterlog(cluster, n)

    # -- recovery -----------------------------------------------------------------------------
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
                self._wait_mgm(cluster, n, MGMD_START_BOUND)
                self._apply_clusterlog(cluster, n)
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
        code, out, src = self.mgm(cluster, f"{node.nodeid} STOP", timeout=timeout + 10)
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
        code, out = self._exec(cluster, node, list(self._DATA_PROCESSES), timeout=10)
        return code == 0 and out.strip().isdigit() and int(out.strip()) < 2

    def excluded_running(self, cluster, nodes) -> list:
        """Data nodes among ``nodes`` whose container runs (or is paused) while the management
        server reports them ``not connected``: the cluster declared them dead (heartbeats) while
        they were frozen or cut off."""
        data = [n for n in nodes if n.role == TP.DATA]
        if not data:
            return []
        rep, _ = self.mgm_report(cluster)
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
            ids.update(started_ids(self.sql_probe(n).get("nodes", [])))
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
