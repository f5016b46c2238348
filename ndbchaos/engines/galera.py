"""MariaDB Galera Cluster with garbd: the engine built from Debian packages, on which this
repository proves end to end everything outside the engine adapter.

Roles: ``data`` = mariadbd (also the SQL endpoint, same container), ``arbitrator`` = garbd.
Facts used here are in reference/galera-and-python.md (A1 quorum, A2 status, A3 client errors,
A4 recovery).
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from .. import runtime
from .. import topology as T
from ..errors import ClusterNotReady, NdbChaosError, UsageError
from ..sqlconn import connect, error_fields
from .base import COMPOSE_DIR, REPO, ClusterStatus, Engine, Expectation, NodeStatus

BUILD = REPO / "cluster" / "images" / "build.sh"

# Timers from cluster/compose/galera/galera.cnf (keep in sync; a unit test checks it).
SUSPECT_TIMEOUT = 3.0  # evs.suspect_timeout
INACTIVE_CHECK = 0.5  # evs.inactive_check_period
INACTIVE_TIMEOUT = 6.0  # evs.inactive_timeout
INSTALL_TIMEOUT = 6.0  # evs.install_timeout
WAIT_PRIM_TIMEOUT = 30.0  # pc.wait_prim_timeout (default): a joiner with no primary aborts after it

STATUS_VARS = ("wsrep_cluster_status", "wsrep_local_state_comment", "wsrep_ready", "wsrep_connected",
               "wsrep_cluster_size", "wsrep_cluster_conf_id", "wsrep_cluster_state_uuid",
               "wsrep_last_committed", "wsrep_local_state", "wsrep_evs_state")
STATUS_SQL = "SHOW GLOBAL STATUS WHERE Variable_name IN (" + ",".join(f"'{v}'" for v in STATUS_VARS) + ")"


class GaleraEngine(Engine):
    name = "galera"
    table_engine = "InnoDB"
    sql_roles = (T.DATA,)

    def __init__(self):
        self._mon: dict[str, object] = {}
        self._mon_lock = threading.Lock()

    # -- images and compose ---------------------------------------------------------------
    def image(self, options: dict) -> str:
        import os
        override = options.get("galera_image") or os.environ.get("NDBCHAOS_GALERA_IMAGE")
        if override:
            return override
        r = subprocess.run(["bash", str(BUILD), "--tag", "galera"], capture_output=True, text=True)
        return r.stdout.strip()

    def images(self, options: dict) -> list[str]:
        return [self.image(options)]

    def ensure_images(self, options: dict) -> None:
        img = self.image(options)
        if runtime.image_present(img):
            return
        if options.get("galera_image"):
            raise NdbChaosError(f"image {img} is not present locally")
        r = subprocess.run(["bash", str(BUILD), "galera"], text=True)
        if r.returncode != 0 or not runtime.image_present(img):
            raise NdbChaosError(f"building {img} failed (see the output above)")

    def data_count(self, options: dict) -> int:
        n = int(options.get("galera_data_nodes") or 2)
        if n not in (2, 3):
            raise UsageError(f"--galera-data-nodes must be 2 or 3, not {n}")
        return n

    def compose_files(self, options: dict) -> list[Path]:
        return [COMPOSE_DIR / "galera.yml"] + [Path(p) for p in options.get("overlays", [])]

    def compose_env(self, options: dict) -> dict[str, str]:
        n = self.data_count(options)
        env = {
            "NDBCHAOS_GALERA_IMAGE": self.image(options),
            "GALERA_PEERS": ",".join(f"data{i}" for i in range(1, n + 1)),
        }
        for k, v in (options.get("ports") or {}).items():
            env[f"NDBCHAOS_PORT_{k.upper()}"] = str(v)
        return env

    def compose_profiles(self, options: dict) -> list[str]:
        return ["three"] if self.data_count(options) == 3 else []

    def expected_members(self, cluster) -> int:
        return self.data_count(cluster.options) + 1  # garbd votes and counts in wsrep_cluster_size

    def loss_detected(self, status: ClusterStatus, lost: list[str]) -> bool:
        members = status.summary.get("expected_members", 0)
        lost_votes = len(lost)
        survivors = [n for n in status.nodes if n.role == T.DATA and n.node not in lost]
        return bool(survivors) and all(
            n.details.get("wsrep_cluster_status", "").lower() == "primary"
            and n.details.get("wsrep_ready") == "ON"
            and int(n.details.get("wsrep_cluster_size") or 0) == members - lost_votes
            for n in survivors)

    # -- start ------------------------------------------------------------------------------
    def start(self, cluster) -> None:
        cluster.compose("up", "-d", "--pull", "never", "data1")
        cluster.discover()
        self._wait_local_sql(cluster, "data1", 90)
        self._exec_sql(cluster, "data1",
                       f"CREATE USER IF NOT EXISTS '{self.sql_user}'@'%' IDENTIFIED BY '{self.sql_password}';"
                       f"GRANT ALL PRIVILEGES ON *.* TO '{self.sql_user}'@'%';"
                       f"CREATE DATABASE IF NOT EXISTS {self.sql_database};")
        # Joiners get the user and database by state transfer from data1.
        cluster.compose("up", "-d", "--pull", "never")

    def _exec_sql(self, cluster, node: str, sql: str, timeout: float = 30) -> str:
        c = cluster.container(cluster.topology.node(node))
        code, out = runtime.exec_in(c, ["mariadb", "-uroot", "-N", "-e", sql], timeout=timeout)
        if code != 0:
            raise NdbChaosError(f"SQL on {node} failed: {out.strip()[-300:]}")
        return out

    def _wait_local_sql(self, cluster, node: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        c = cluster.container(cluster.topology.node(node))
        last = ""
        while time.monotonic() < deadline:
            st = runtime.container_state(c)
            if st in ("exited", "dead"):
                tail = c.logs(tail=15).decode("utf-8", "replace")
                raise ClusterNotReady(f"{node} exited during start: {tail.strip().splitlines()[-1:]}")
            code, last = runtime.exec_in(c, ["mariadb", "-uroot", "-N", "-e",
                                             "SHOW STATUS LIKE 'wsrep_ready'"], timeout=5)
            if code == 0 and "ON" in last:
                return
            time.sleep(0.5)
        raise ClusterNotReady(f"{node} did not accept SQL within {timeout:.0f}s ({last.strip()[-200:]})")

    def prepare(self, cluster) -> None:
        pass  # the user and database were created in start(); nothing else to do

    # -- status -------------------------------------------------------------------------------
    def _monitor(self, node: T.Node):
        conn = self._mon.get(node.name)
        if conn is not None:
            return conn
        conn = connect(node.sql_port, self.sql_user, self.sql_password,
                       connect_timeout=1.0, read_timeout=2.0, write_timeout=2.0)
        cur = conn.cursor()
        cur.execute("SET SESSION wsrep_sync_wait=0")  # a status read must never block
        cur.close()
        self._mon[node.name] = conn
        return conn

    def _drop_monitor(self, name: str) -> None:
        conn = self._mon.pop(name, None)
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def node_vars(self, node: T.Node) -> dict:
        with self._mon_lock:
            try:
                conn = self._monitor(node)
                cur = conn.cursor()
                cur.execute(STATUS_SQL)
                rows = dict(cur.fetchall())
                cur.close()
                return rows
            except Exception as e:
                self._drop_monitor(node.name)
                errno, msg = error_fields(e)
                return {"error": f"{errno}: {msg}"}

    def status(self, cluster) -> ClusterStatus:
        topo = cluster.topology
        expected = self.expected_members(cluster)
        nodes, problems = [], []
        data_vars = {}
        for n in topo.nodes:
            try:
                c = cluster.container(n)
                cstate = runtime.container_state(c)
            except Exception:
                cstate = "gone"
            if n.role == T.DATA:
                if cstate == "running" and n.sql_port is None:
                    cluster.discover()
                    n = cluster.topology.node(n.name)
                v = self.node_vars(n) if cstate == "running" and n.sql_port else {}
                if cstate != "running":
                    self._drop_monitor(n.name)
                if "error" in v or not v:
                    state = "down" if cstate != "running" else "unreachable"
                    ok = False
                else:
                    data_vars[n.name] = v
                    state = v.get("wsrep_local_state_comment", "?")
                    ok = (v.get("wsrep_cluster_status", "").lower() == "primary" and state == "Synced"
                          and v.get("wsrep_ready") == "ON" and v.get("wsrep_connected") == "ON"
                          and int(v.get("wsrep_cluster_size") or 0) == expected)
                    if v.get("wsrep_cluster_status", "").lower() != "primary":
                        state = f"{state}/{v.get('wsrep_cluster_status')}"
                nodes.append(NodeStatus(n.name, n.role, cstate, state, ok, v))
                if not ok:
                    problems.append(f"{n.name}: {state} (container {cstate}"
                                    + (f", size {v.get('wsrep_cluster_size')}/{expected}" if v.get("wsrep_cluster_size") else "")
                                    + (f", {v['error']}" if 'error' in v else "") + ")")
            elif n.role == T.ARBITRATOR:
                ok = cstate == "running"
                nodes.append(NodeStatus(n.name, n.role, cstate, "running" if ok else "down", ok, {}))
                if not ok:
                    problems.append(f"{n.name}: garbd container {cstate}")
        confs = {v.get("wsrep_cluster_conf_id") for v in data_vars.values()}
        uuids = {v.get("wsrep_cluster_state_uuid") for v in data_vars.values()}
        if len(confs) > 1:
            problems.append(f"data nodes disagree on the view (conf_id {sorted(map(str, confs))})")
        if len(uuids) > 1:
            problems.append("data nodes disagree on the cluster state uuid")
        primary = [k for k, v in data_vars.items() if v.get("wsrep_cluster_status", "").lower() == "primary"]
        summary = {
            "expected_members": expected,
            "primary_nodes": primary,
            "component_size": max((int(v.get("wsrep_cluster_size") or 0) for k, v in data_vars.items()
                                   if k in primary), default=0),
        }
        return ClusterStatus(cluster.clock.now(), nodes, not problems, problems, summary)

    # -- expectations and recovery ----------------------------------------------------------
    def expectation(self, family: str, cluster, **kw) -> Expectation:
        members = self.expected_members(cluster)
        lost = int(kw.get("lost", 1))
        remaining = members - lost
        # Quorum rule (pc_proto.cpp have_quorum): 2*W(remaining) + W(left gracefully) > W(last PC).
        graceful = bool(kw.get("graceful", False))
        quorum = 2 * remaining + (lost if graceful else 0) > members
        rule = (f"Galera quorum: 2*W(remaining)+W(left gracefully) > W(last primary); "
                f"2*{remaining}{' + ' + str(lost) if graceful else ''} {'>' if quorum else '<='} {members}")
        # A silent or killed member is detected after evs.suspect_timeout (+ one check period);
        # if members disagree, evs.inactive_timeout is the hard limit, then install_timeout for the
        # new view. Writes everywhere can stall for that long (recovery.rst).
        detection = INACTIVE_TIMEOUT + INSTALL_TIMEOUT + INACTIVE_CHECK
        # A restarted node must reach a primary within pc.wait_prim_timeout or it aborts; then a
        # state transfer (IST for a short absence; rsync SST of a test-sized dataset otherwise).
        recovery = WAIT_PRIM_TIMEOUT + 30.0
        return Expectation(
            family=family, survivors_serve=quorum, cluster_survives=quorum, rule=rule,
            detection_bound_s=detection, recovery_bound_s=recovery,
            recovery="node_restart" if quorum else "bootstrap",
            details={"members": members, "lost": lost, "graceful": graceful,
                     "suspect_timeout_s": SUSPECT_TIMEOUT, "inactive_timeout_s": INACTIVE_TIMEOUT,
                     "install_timeout_s": INSTALL_TIMEOUT, "wait_prim_timeout_s": WAIT_PRIM_TIMEOUT},
        )

    def recover_nodes(self, cluster, nodes) -> None:
        """Node restart: start the container again; mariadbd rejoins (IST or SST) by itself.
        If no data node is left running the cluster needs a bootstrap, which pc.recovery does by
        itself once every member of the last primary component is back (A4)."""
        for n in nodes:
            c = cluster.container(n)
            c.reload()
            if c.status == "paused":
                c.unpause()
            elif c.status != "running":
                c.start()
        cluster.discover()

    # -- facts for the fault catalogue (ndbchaos.faults) -------------------------------------------
    GCOMM_PORT = 4567  # data nodes and garbd alike listen for gcomm here

    def probe_ports(self, node) -> list[int]:
        """gcomm first (the peer traffic a partition must cut), then SQL on data nodes."""
        return [self.GCOMM_PORT, 3306] if node.role == T.DATA else [self.GCOMM_PORT]

    def options_from_topology(self, topology) -> dict:
        return {"galera_data_nodes": len(topology.data_nodes)}

    def partition_outcome(self, cluster, components) -> dict:
        """Galera quorum on a clean partition of a healthy cluster: a component keeps (or forms)
        a Primary Component iff 2*W(component) > W(last primary); all weights are 1 (pc.weight
        default), nobody left gracefully, garbd votes. Members in no component count as lost."""
        members = [n.name for n in cluster.topology.nodes if n.role in (T.DATA, T.ARBITRATOR)]
        total = len(members)
        serving, stopped, terms = [], [], []
        for comp in components:
            w = len([n for n in comp if n in members])
            ok = 2 * w > total
            (serving if ok else stopped).append(list(comp))
            terms.append(f"{{{','.join(comp)}}}: 2*{w} {'>' if ok else '<='} {total}")
        rule = ("Galera quorum (pc_proto.cpp have_quorum): 2*W(component) > W(last primary) = "
                f"{total}; " + ", ".join(terms))
        return {"serving": serving, "stopped": stopped, "rule": rule}

    def node_rejoining(self, status, node: str) -> bool:
        """A restarted mariadbd answers SQL only once it has (nearly) caught up, but it is back
        in the survivors' view (component size = all members) seconds before: that is the
        rejoin, state transfer included."""
        ns = status.node(node)
        if ns.container != "running" or ns.healthy:
            return False
        if ns.state not in ("down", "unreachable", "gone"):
            return True
        s = status.summary or {}
        return (node not in s.get("primary_nodes", [])
                and s.get("component_size") == s.get("expected_members"))
