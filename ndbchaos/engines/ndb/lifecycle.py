"""The Lifecycle part of the NDB engine (``NdbLifecycle``): the images and the Compose project
(the layouts part's), start and readiness, the first preparation.

Start order: management nodes, then data nodes (until every one is ``started`` in
``ndb_mgm -e "all status"``), the cluster log levels, then SQL nodes (until the real server
answers), then the client user and database. No image healthcheck is used (ndb.md section 10).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...runtimes import docker
from ... import topology as TP
from ...errors import ClusterNotReady, NdbChaosError
from ...vocabulary import ClusterOptions
from ...waiting import Deadline, wait_until
from ..parts import Account, LifecyclePart
from .layout import NdbLayouts
from .mgm import all_started
from .shell import NdbShell
from .spec import SPARE, available_mib, check_free

if TYPE_CHECKING:  # pragma: no cover
    from ...runtimes.compose.cluster import ComposeCluster


class NdbLifecycle(LifecyclePart):
    """Start, readiness and the first preparation, through the commands of ``shell``; the images
    and the Compose project are the layouts part's. ``account``: the client account created on
    every SQL node."""

    def __init__(self, layouts: NdbLayouts, shell: NdbShell, account: Account):
        self.layouts, self.shell, self.account = layouts, shell, account

    # -- images and compose: the layout's ----------------------------------------------------
    def image(self, options: ClusterOptions) -> str:
        return self.layouts.image(options)

    def images(self, options: ClusterOptions) -> list[str]:
        return self.layouts.images(options)

    def ensure_images(self, options: ClusterOptions) -> None:
        self.layouts.ensure_images(options)

    def compose_files(self, options: ClusterOptions) -> list[Path]:
        return self.layouts.compose_files(options)

    def compose_env(self, options: ClusterOptions) -> dict[str, str]:
        return self.layouts.compose_env(options)

    def options_from_topology(self, topology) -> ClusterOptions:
        return self.layouts.options_from_topology(topology)

    # -- start ------------------------------------------------------------------------------
    def start(self, cluster: ComposeCluster) -> None:
        """Management nodes first, then data nodes (wait until all are started), then SQL nodes
        (wait until each answers SQL), then the client user and database."""
        budget = float(cluster.options.ndb_start_timeout or 600)
        deadline = Deadline(budget)
        if self.layouts.layout(cluster.options) != "default":  # what the machine holds now (spec.py)
            check_free(self.layouts.layout_spec(cluster.options), available_mib())
        self._check_subnet_free(cluster)
        svc = self.layouts.services(cluster.options)
        up = ["up", "-d", "--pull", "never", "--no-deps"]
        cluster.compose(*up, *svc.get(TP.MGM, []))
        cluster.discover()
        for n in cluster.topology.role(TP.MGM):
            self.shell.wait_mgm(cluster, n, min(90.0, deadline.remaining()))
        # Spare data nodes (a generated layout's, in no node group) start with the others: no
        # data node then waits StartNoNodegroupTimeout for them (ndb-operations 1.1).
        cluster.compose(*up, *svc.get(TP.DATA, []), *svc.get(SPARE, []))
        cluster.discover()
        self.wait_data_started(cluster, deadline)
        for n in cluster.topology.role(TP.MGM):
            self.shell.apply_clusterlog(cluster, n)
        cluster.compose(*up, *svc.get(TP.SQL, []))
        cluster.discover()
        for n in cluster.topology.role(TP.SQL):
            self.wait_local_sql(cluster, n, deadline)
            self._ensure_client(cluster, n, deadline)
        extra = self.layouts.overlay_services(cluster.options)
        if extra:  # overlays (toxiproxy in front of the SQL nodes): once the SQL nodes answer
            cluster.compose(*up, *extra)
        cluster.discover()
        # Readiness within our own budget (an NDB start can outlast Cluster.up's default timeout;
        # its wait_healthy then returns at once).
        cluster.wait_healthy(max(5.0, deadline.remaining()))

    def _check_subnet_free(self, cluster) -> None:
        net = self.layouts.subnet(cluster.options) + ".0/24"
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

    def wait_data_started(self, cluster, deadline: Deadline) -> None:
        expected = [n.nodeid for n in cluster.topology.data_nodes]
        problems: list[str] = ["no report yet"]

        def started():
            for n in cluster.topology.data_nodes:
                self.shell.raise_if_exited(cluster, n)
            rep, _ = self.shell.mgm_report(cluster)
            if rep is None:
                return False
            ok, problems[:] = all_started(rep, expected)
            return ok

        wait_until(started, deadline.remaining(), poll=1.0, on_timeout=lambda: ClusterNotReady(
            "data nodes not started: " + "; ".join(problems[:4])))

    def wait_local_sql(self, cluster, node: TP.Node, deadline: Deadline) -> None:
        """Wait for the real server: the image's entrypoint first runs a temporary server for
        its initialisation, with --skip-networking, on the same socket."""
        last = [""]

        def networking():
            self.shell.raise_if_exited(cluster, node)
            code, out = self.shell.root_sql(cluster, node, "SELECT @@skip_networking", timeout=10)
            lines = out.strip().splitlines()
            last[0] = out.strip()[-200:]
            return code == 0 and lines and lines[-1].strip() == "0"

        wait_until(networking, deadline.remaining(), poll=1.0, on_timeout=lambda: ClusterNotReady(
            f"{node.name} did not accept SQL in time ({last[0]})"))

    def _ensure_client(self, cluster, node: TP.Node, deadline: Deadline | None = None) -> None:
        """The client user (per SQL node: users are local to each mysqld) and the database
        (distributed to the other SQL nodes by NDB schema distribution; IF NOT EXISTS everywhere)."""
        u, p, db = self.account.user, self.account.password, self.account.database
        sql = (f"CREATE USER IF NOT EXISTS '{u}'@'%' IDENTIFIED BY '{p}'; "
               f"ALTER USER '{u}'@'%' IDENTIFIED BY '{p}'; "
               f"GRANT ALL PRIVILEGES ON *.* TO '{u}'@'%'; "
               f"CREATE DATABASE IF NOT EXISTS `{db}`")
        last = [""]

        def created():
            code, out = self.shell.root_sql(cluster, node, sql, timeout=60)
            last[0] = out.strip()[-240:]
            return code == 0

        wait_until(created, (deadline or Deadline(120)).remaining(), poll=2.0, on_timeout=lambda: NdbChaosError(
            f"creating the client user on {node.name} failed: {last[0]}"))

    def prepare(self, cluster) -> None:
        """Idempotent: the client user and database on every SQL node, cluster log levels."""
        for n in cluster.topology.role(TP.SQL):
            self._ensure_client(cluster, n)
        for n in cluster.topology.role(TP.MGM):
            self.shell.apply_clusterlog(cluster, n)

