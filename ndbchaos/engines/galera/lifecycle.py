"""Images, compose, start and recovery of the Galera cluster (mariadbd + garbd), including the
whole-cluster bootstrap of docs/facts.md Galera A4: the Lifecycle part (``GaleraLifecycle``) and
the Recovery part (``GaleraRecovery``)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ...runtimes import docker
from ... import topology as TP
from ...errors import ClusterNotReady, NdbChaosError
from ...resources import BUILD, COMPOSE_DIR
from ...settings import current
from ...vocabulary import ClusterOptions
from ...waiting import wait_until
from ..parts import Account, LifecyclePart, Monitor, RecoveryPart
from .rules import data_count

if TYPE_CHECKING:  # pragma: no cover
    from ...runtimes.compose.cluster import ComposeCluster
    from .status import GaleraStatus



class GaleraLifecycle(LifecyclePart):
    """The Lifecycle part: image, compose files and environment, start, prepare."""

    def __init__(self, account: Account):
        self.account = account

    # -- images and compose ---------------------------------------------------------------
    def image(self, options: ClusterOptions) -> str:
        override = options.galera_image or current().galera_image
        if override:
            return override
        r = subprocess.run(["bash", str(BUILD), "--tag", "galera"], capture_output=True, text=True)
        return r.stdout.strip()

    def images(self, options: ClusterOptions) -> list[str]:
        return [self.image(options)]

    def ensure_images(self, options: ClusterOptions) -> None:
        img = self.image(options)
        if docker.image_present(img):
            return
        if options.galera_image:
            raise NdbChaosError(f"image {img} is not present locally")
        r = subprocess.run(["bash", str(BUILD), "galera"], text=True)
        if r.returncode != 0 or not docker.image_present(img):
            raise NdbChaosError(f"building {img} failed (see the output above)")

    def compose_files(self, options: ClusterOptions) -> list[Path]:
        return [COMPOSE_DIR / "galera.yml"] + [Path(p) for p in options.overlays]

    def compose_env(self, options: ClusterOptions) -> dict[str, str]:
        n = data_count(options)
        env = {
            "NDBCHAOS_GALERA_IMAGE": self.image(options),
            "GALERA_PEERS": ",".join(f"data{i}" for i in range(1, n + 1)),
        }
        for k, v in options.ports.items():
            env[f"NDBCHAOS_PORT_{k.upper()}"] = str(v)
        return env

    def compose_profiles(self, options: ClusterOptions) -> list[str]:
        return ["three"] if data_count(options) == 3 else []

    # -- start ------------------------------------------------------------------------------
    def start(self, cluster: ComposeCluster) -> None:
        cluster.compose("up", "-d", "--pull", "never", "data1")
        cluster.discover()
        self._wait_local_sql(cluster, "data1", 90)
        a = self.account
        self._exec_sql(cluster, "data1",
                       f"CREATE USER IF NOT EXISTS '{a.user}'@'%' IDENTIFIED BY '{a.password}';"
                       f"GRANT ALL PRIVILEGES ON *.* TO '{a.user}'@'%';"
                       f"CREATE DATABASE IF NOT EXISTS {a.database};")
        # Joiners get the user and database by state transfer from data1.
        cluster.compose("up", "-d", "--pull", "never")

    def _exec_sql(self, cluster, node: str, sql: str, timeout: float = 30) -> str:
        c = cluster.container(cluster.topology.node(node))
        code, out = docker.exec_in(c, ["mariadb", "-uroot", "-N", "-e", sql], timeout=timeout)
        if code != 0:
            raise NdbChaosError(f"SQL on {node} failed: {out.strip()[-300:]}")
        return out

    def _wait_local_sql(self, cluster, node: str, timeout: float) -> None:
        c = cluster.container(cluster.topology.node(node))
        last = [""]

        def ready():
            if docker.container_state(c) in ("exited", "dead"):
                tail = c.logs(tail=15).decode("utf-8", "replace")
                raise ClusterNotReady(f"{node} exited during start: {tail.strip().splitlines()[-1:]}")
            code, last[0] = docker.exec_in(c, ["mariadb", "-uroot", "-N", "-e",
                                                "SHOW STATUS LIKE 'wsrep_ready'"], timeout=5)
            return code == 0 and "ON" in last[0]

        wait_until(ready, timeout, poll=0.5, on_timeout=lambda: ClusterNotReady(
            f"{node} did not accept SQL within {timeout:.0f}s ({last[0].strip()[-200:]})"))

    def prepare(self, cluster) -> None:
        pass  # the user and database were created in start(); nothing else to do

    def options_from_topology(self, topology) -> ClusterOptions:
        return ClusterOptions(galera_data_nodes=len(topology.data_nodes))


class GaleraRecovery(RecoveryPart):
    """The Recovery part: a node restart, or the whole-cluster bootstrap when no data node is
    left serving. Asks the Status part whether a node serves."""

    def __init__(self, state: GaleraStatus, monitor: Monitor):
        self.state, self.monitor = state, monitor

    def recover_nodes(self, cluster, nodes) -> None:
        """Node restart: start the container again; mariadbd rejoins (IST or SST) from a serving
        peer by itself. When no data node is left serving, that cannot work: the restarted nodes
        re-form a component (with garbd, if it lived) that has no synced donor and wait for one
        forever ("No donor candidates temporarily available"). Then the documented whole-cluster
        procedure runs instead: ``bootstrap()``."""
        names = {n.name for n in nodes}
        others = [n for n in cluster.topology.data_nodes if n.name not in names]
        serving = [n for n in others if self._serving(cluster, n)]
        if any(n.role == TP.DATA for n in nodes) and not serving:
            self.bootstrap(cluster)
            return
        for n in nodes:
            c = cluster.container(n)
            c.reload()
            if c.status == "paused":
                c.unpause()
            elif c.status != "running":
                c.start()
        cluster.discover()

    def _serving(self, cluster, node) -> bool:
        try:
            if docker.container_state(cluster.container(node)) != "running":
                return False
        except Exception:
            return False
        v = self.state.node_vars(node) if node.sql_port else {}
        return v.get("wsrep_cluster_status", "").lower() == "primary" and v.get("wsrep_ready") == "ON"

    def bootstrap(self, cluster, timeout: float = 180) -> dict:
        """Whole-cluster recovery (docs/facts.md Galera A4): stop every member, find
        each data node's last committed position with ``mariadbd --wsrep-recover``, bootstrap the
        most advanced one (safe_to_bootstrap=1, --wsrep-new-cluster), start the others (they
        join by IST/SST), then garbd. Returns the positions and the chosen node."""
        t0 = time.monotonic()
        data = cluster.topology.data_nodes
        members = data + cluster.topology.role(TP.ARBITRATOR)
        cluster.note("galera_bootstrap_begin")
        for n in members:
            self.monitor.drop(n.name)
            c = cluster.container(n)
            if docker.container_state(c) == "paused":
                c.unpause()
            if docker.container_state(c) == "running":
                c.kill()  # nothing to save: the node is not serving, and a kill is what crashed it
            c.wait(timeout=30)
        positions = {}
        for n in data:
            c = cluster.container(n)
            docker.put_file(c, "/var/lib/mysql/ndbchaos-recover", b"")
            c.start()
            c.wait(timeout=120)
            pos = docker.get_file(c, "/var/lib/mysql/ndbchaos-recovered-position").decode().strip()
            uuid, _, seqno = pos.rpartition(":")
            if not uuid or not seqno.lstrip("-").isdigit():
                # Bootstrapping without every position could pick a node that lacks the last
                # commits (and state transfer would then erase them from the others): refuse.
                tail = docker.get_file(c, "/var/lib/mysql/ndbchaos-recover.log").decode("utf-8", "replace")
                last = [ln for ln in tail.splitlines() if "ERROR" in ln][-1:] or tail.strip().splitlines()[-1:]
                raise ClusterNotReady(f"bootstrap: --wsrep-recover on {n.name} gave no position "
                                      f"({pos!r}): {' '.join(last)[-240:]}")
            positions[n.name] = int(seqno)
        best = max(data, key=lambda n: (positions[n.name], -data.index(n)))
        c = cluster.container(best)
        docker.put_file(c, "/var/lib/mysql/ndbchaos-bootstrap", b"")
        c.start()
        cluster.discover()

        def primary():
            if docker.container_state(c) in ("exited", "dead"):
                raise ClusterNotReady(f"bootstrap of {best.name} failed: {c.logs(tail=5).decode()[-300:]}")
            return self._serving(cluster, cluster.topology.node(best.name))

        wait_until(primary, timeout, poll=0.5, on_timeout=lambda: ClusterNotReady(
            f"bootstrap of {best.name} did not form a primary component"))
        for n in members:
            if n.name != best.name:
                cluster.container(n).start()
        cluster.discover()
        info = {"positions": positions, "bootstrapped": best.name, "seconds": round(time.monotonic() - t0, 2)}
        cluster.note("galera_bootstrap_done", **info)
        return info
