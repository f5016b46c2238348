"""MariaDB Galera Cluster with garbd: the engine built from Debian packages, on which this
repository proves end to end everything outside the engine adapter.

Roles: ``data`` = mariadbd (also the SQL endpoint, same container), ``arbitrator`` = garbd.
Facts used here are in reference/galera-and-python.md (A1 quorum, A2 status, A3 client errors,
A4 recovery).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from .. import runtime
from .. import topology as T
from ..errors import ClusterNotReady, NdbChaosError, UsageError
from ..sqlconn import error_fields
from .base import COMPOSE_DIR, REPO, ClusterStatus, Engine, Expectation, NodeStatus

BUILD = REPO / "cluster" / "images" / "build.sh"

# Timers from cluster/compose/galera/galera.cnf (keep in sync; a unit test checks it).
SUSPECT_TIMEOUT = 3.0  # evs.suspect_timeout
INACTIVE_CHECK = 0.5  # evs.inactive_check_period
INACTIVE_TIMEOUT = 6.0  # evs.inactive_timeout
INSTALL_TIMEOUT = 6.0  # evs.install_timeout
WAIT_PRIM_TIMEOUT = 30.0  # pc.wait_prim_timeout (default): a joiner with no primary aborts after it

def _put_file(container, path: str, data: bytes) -> None:
    """Write a file into a (possibly stopped) container."""
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(path.rsplit("/", 1)[1])
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    container.put_archive(path.rsplit("/", 1)[0], buf.getvalue())


def _get_file(container, path: str) -> bytes:
    """Read a file from a (possibly stopped) container; empty if it does not exist."""
    import io
    import tarfile
    try:
        stream, _ = container.get_archive(path)
    except Exception:
        return b""
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        member = tar.getmembers()[0]
        return tar.extractfile(member).read()


STATUS_VARS = ("wsrep_cluster_status", "wsrep_local_state_comment", "wsrep_ready", "wsrep_connected",
               "wsrep_cluster_size", "wsrep_cluster_conf_id", "wsrep_cluster_state_uuid",
               "wsrep_last_committed", "wsrep_local_state", "wsrep_evs_state")
STATUS_SQL = "SHOW GLOBAL STATUS WHERE Variable_name IN (" + ",".join(f"'{v}'" for v in STATUS_VARS) + ")"


class GaleraEngine(Engine):
    name = "galera"
    table_engine = "InnoDB"
    sql_roles = (T.DATA,)
    monitor_init = ("SET SESSION wsrep_sync_wait=0",)  # a status read must never block

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
        """Expected outcome of a fault family, from the quorum rule and the configured timers.

        Families map to lost votes: ``datanode_loss`` ``lost`` data nodes (default 1);
        ``nodegroup_loss`` every data node (Galera has one group holding every replica);
        ``mgmnode_loss`` / ``all_mgmnodes_loss`` garbd. ``members`` overrides the size of the last
        primary component (e.g. after an earlier loss); ``graceful`` counts leavers as the quorum
        rule does. Partitions: see ``partition_outcome``.
        """
        members = int(kw.get("members") or self.expected_members(cluster))
        data = self.data_count(cluster.options)
        lost = {"nodegroup_loss": data, "mgmnode_loss": 1, "all_mgmnodes_loss": 1}.get(family, kw.get("lost", 1))
        lost = int(lost)
        remaining = members - lost
        # Quorum rule (pc_proto.cpp have_quorum): 2*W(remaining) + W(left gracefully) > W(last PC).
        graceful = bool(kw.get("graceful", False))
        quorum = 2 * remaining + (lost if graceful else 0) > members
        # With no data node left, garbd alone may keep a component but there is nothing to serve.
        data_left = data - (0 if family in ("mgmnode_loss", "all_mgmnodes_loss") else lost)
        survives = quorum and data_left > 0
        rule = (f"Galera quorum (reference/galera-and-python.md A1): 2*W(remaining)+W(left gracefully) > "
                f"W(last primary); 2*{remaining}{' + ' + str(lost) if graceful else ''} "
                f"{'>' if quorum else '<='} {members}" + ("" if data_left > 0 else "; no data node left"))
        # A silent or killed member is detected after evs.suspect_timeout (+ one check period);
        # if members disagree, evs.inactive_timeout is the hard limit, then install_timeout for the
        # new view. Writes everywhere can stall for that long (recovery.rst).
        detection = INACTIVE_TIMEOUT + INSTALL_TIMEOUT + INACTIVE_CHECK
        if family == "sqlnode_loss":
            # No separate SQL node: the fault is on the client path (the engine is untouched), so
            # the other endpoints must not notice; 2 s is 4x the smallest gap the availability
            # checker calls an outage on an idle-free load.
            return Expectation(
                family=family, survivors_serve=True, cluster_survives=True,
                rule="Galera has no separate SQL node; the lost SQL endpoint's client path does not "
                     "involve the engine, so every other endpoint is unaffected",
                detection_bound_s=2.0, recovery_bound_s=WAIT_PRIM_TIMEOUT, recovery="reconnect",
                details={"members": members})
        if survives:
            # A restarted node must reach a primary within pc.wait_prim_timeout or it aborts;
            # then a state transfer (IST for a short absence; rsync SST of a test dataset).
            recovery, how = WAIT_PRIM_TIMEOUT + 30.0, "node_restart"
        else:
            # Bootstrap (GaleraEngine.bootstrap): a --wsrep-recover start per data node, the most
            # advanced one forms the primary, the others join within pc.wait_prim_timeout each.
            recovery, how = WAIT_PRIM_TIMEOUT * (data + 1) + 30.0, "bootstrap"
        return Expectation(
            family=family, survivors_serve=survives, cluster_survives=survives, rule=rule,
            detection_bound_s=detection, recovery_bound_s=recovery, recovery=how,
            details={"members": members, "lost": lost, "graceful": graceful,
                     "suspect_timeout_s": SUSPECT_TIMEOUT, "inactive_timeout_s": INACTIVE_TIMEOUT,
                     "install_timeout_s": INSTALL_TIMEOUT, "wait_prim_timeout_s": WAIT_PRIM_TIMEOUT},
        )

    def recover_nodes(self, cluster, nodes) -> None:
        """Node restart: start the container again; mariadbd rejoins (IST or SST) from a serving
        peer by itself. When no data node is left serving, that cannot work: the restarted nodes
        re-form a component (with garbd, if it lived) that has no synced donor and wait for one
        forever ("No donor candidates temporarily available"). Then the documented whole-cluster
        procedure runs instead: ``bootstrap()``."""
        names = {n.name for n in nodes}
        others = [n for n in cluster.topology.data_nodes if n.name not in names]
        serving = [n for n in others if self._serving(cluster, n)]
        if any(n.role == T.DATA for n in nodes) and not serving:
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
            if runtime.container_state(cluster.container(node)) != "running":
                return False
        except Exception:
            return False
        v = self.node_vars(node) if node.sql_port else {}
        return v.get("wsrep_cluster_status", "").lower() == "primary" and v.get("wsrep_ready") == "ON"

    def bootstrap(self, cluster, timeout: float = 180) -> dict:
        """Whole-cluster recovery (reference/galera-and-python.md A4): stop every member, find
        each data node's last committed position with ``mariadbd --wsrep-recover``, bootstrap the
        most advanced one (safe_to_bootstrap=1, --wsrep-new-cluster), start the others (they
        join by IST/SST), then garbd. Returns the positions and the chosen node."""
        t0 = time.monotonic()
        data = cluster.topology.data_nodes
        members = data + cluster.topology.role(T.ARBITRATOR)
        cluster.note("galera_bootstrap_begin")
        for n in members:
            self._drop_monitor(n.name)
            c = cluster.container(n)
            if runtime.container_state(c) == "paused":
                c.unpause()
            if runtime.container_state(c) == "running":
                c.kill()  # nothing to save: the node is not serving, and a kill is what crashed it
            c.wait(timeout=30)
        positions = {}
        for n in data:
            c = cluster.container(n)
            _put_file(c, "/var/lib/mysql/ndbchaos-recover", b"")
            c.start()
            c.wait(timeout=120)
            pos = _get_file(c, "/var/lib/mysql/ndbchaos-recovered-position").decode().strip()
            uuid, _, seqno = pos.rpartition(":")
            if not uuid or not seqno.lstrip("-").isdigit():
                # Bootstrapping without every position could pick a node that lacks the last
                # commits (and state transfer would then erase them from the others): refuse.
                tail = _get_file(c, "/var/lib/mysql/ndbchaos-recover.log").decode("utf-8", "replace")
                last = [ln for ln in tail.splitlines() if "ERROR" in ln][-1:] or tail.strip().splitlines()[-1:]
                raise ClusterNotReady(f"bootstrap: --wsrep-recover on {n.name} gave no position "
                                      f"({pos!r}): {' '.join(last)[-240:]}")
            positions[n.name] = int(seqno)
        best = max(data, key=lambda n: (positions[n.name], -data.index(n)))
        c = cluster.container(best)
        _put_file(c, "/var/lib/mysql/ndbchaos-bootstrap", b"")
        c.start()
        cluster.discover()
        deadline = time.monotonic() + timeout
        while not self._serving(cluster, cluster.topology.node(best.name)):
            if time.monotonic() > deadline:
                raise ClusterNotReady(f"bootstrap of {best.name} did not form a primary component")
            if runtime.container_state(c) in ("exited", "dead"):
                raise ClusterNotReady(f"bootstrap of {best.name} failed: {c.logs(tail=5).decode()[-300:]}")
            time.sleep(0.5)
        for n in members:
            if n.name != best.name:
                cluster.container(n).start()
        cluster.discover()
        info = {"positions": positions, "bootstrapped": best.name, "seconds": round(time.monotonic() - t0, 2)}
        cluster.note("galera_bootstrap_done", **info)
        return info

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
