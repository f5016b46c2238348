"""MySQL NDB Cluster: the primary engine.

Roles: ``mgm`` = ndb_mgmd (management node and arbitrator, by ArbitrationRank), ``data`` = ndbmtd
in node groups, ``sql`` = mysqld (the client endpoint, a container of its own). The containers run
the official image (never built or faked here); the topology and the test settings are ours:
cluster/compose/ndb.yml (+ ndb/config.ini, ndb/my.cnf) and the small layout ndb-small.yml.

Facts used here are in reference/ndb.md: section 2 (ndb_mgm output), 3 (cluster log), 4 (ndbinfo),
5 (arbitration and survival rules, timeouts), 7 (restart semantics).

Readiness (ndb.md section 10, no image healthcheck): every data node ``started`` in
``ndb_mgm -e "all status"`` (exec'd in a management container), every SQL node answering and
listing every data node as STARTED in ``ndbinfo.nodes``, and exactly one agreed, connected
arbitrator in ``ndbinfo.arbitrator_validity_summary``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from pathlib import Path

from .. import runtime
from .. import topology as T
from ..errors import ClusterNotReady, NdbChaosError, UsageError
from ..ndb import image as ndb_image
from ..ndb import ndbinfo
from ..ndb.image import DEFAULT_IMAGE, missing_image_message  # noqa: F401 (public names)
from ..ndb.config import NdbConfig, read_config, replace_prefix
from ..ndb.mgm import MgmReport, parse_mgm
from ..ndb.mgm import answered as mgm_answered
from ..sqlconn import error_fields
from .base import COMPOSE_DIR, ClusterStatus, Engine, Expectation, NodeStatus

log = logging.getLogger("ndbchaos")

DEFAULT_ROOT_PASSWORD = "ndbchaos-root"

LAYOUTS = {
    # compose file, config.ini, my.cnf, default subnet prefix (first three octets of a /24)
    "default": ("ndb.yml", "ndb/config.ini", "ndb/my.cnf", "10.213.77"),
    "small": ("ndb-small.yml", "ndb/config-small.ini", "ndb/my-small.cnf", "10.213.78"),
}

#: Cluster log levels of ndb_mgmd. They are not config.ini parameters: ndb_mgmd starts with 7 for
#: every category, ERROR 15, CONNECTION 8, BACKUP 15 (MgmtSrvr.cpp constructor), which hides the
#: threshold-8 NodeRestart events (NODE_FAILREP "has failed", NodeFailCompleted "completed failure
#: of") that the expectations look for. Each ndb_mgmd has its own cluster log and its own levels,
#: and they reset when it restarts, so they are applied to each management node after it starts.
CLUSTERLOG = "ALL CLUSTERLOG STARTUP=15 SHUTDOWN=15 NODERESTART=15 CONNECTION=15 ERROR=15"

# -- timing facts (seconds) and where they come from -------------------------------------------
#: "After missing four heartbeat intervals in a row, the node is declared dead. Thus, the maximum
#: time for discovering a failure through the heartbeat mechanism is five times the heartbeat
#: interval." (8.4 manual, HeartbeatIntervalDbDb; ndb.md 5.2). Applies to HeartbeatIntervalDbApi too.
HEARTBEATS_TO_DETECT = 5
#: The NDB test framework waits waitClusterStarted(120) around every restart
#: (NdbRestarts.cpp::executeRestart, ndb.md 7) and 60 s more per loop when no timeout is given.
NDBT_WAIT_CLUSTER_STARTED = 120.0
NDBT_EXTRA_WAIT = 60.0
#: my.cnf: ndb-wait-connected / ndb-wait-setup (a unit test keeps these in sync with the file).
NDB_WAIT_CONNECTED = 60.0
NDB_WAIT_SETUP = 60.0
#: Our own margin for what the engine does not decide: the observer's poll period (0.5 s), an
#: exec into a container (~0.2 s), a container start (process exec, volume mount) [measured on
#: the Galera containers here; not an NDB fact].
OBSERVATION_SLACK = 2.0
CONTAINER_START_SLACK = 10.0
#: Management node start to "answering ndb_mgm" [UNVERIFIED: no documented figure; generous].
MGMD_START_BOUND = 60.0

FAMILIES = ("datanode_loss", "two_datanodes_different_ng", "nodegroup_loss", "partition_halves_arbitrator_side",
            "arbitrator_isolated", "mgmnode_loss", "all_mgmnodes_loss", "sqlnode_loss")

_MGM = ["ndb_mgm", "-c", "127.0.0.1:1186"]


def normalize_subnet(value: str) -> str:
    """``10.1.2`` / ``10.1.2.0`` / ``10.1.2.0/24`` -> ``10.1.2`` (the first three octets of a /24)."""
    v = value.strip()
    m = re.fullmatch(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\.0)?(?:/(\d+))?", v)
    if not m or any(int(x) > 255 for x in m.groups()[:3]):
        raise UsageError(f"NDBCHAOS_NDB_SUBNET={value!r}: expected the first three octets of a /24, e.g. 10.213.77")
    if m.group(4) not in (None, "24"):
        raise UsageError(f"NDBCHAOS_NDB_SUBNET={value!r}: only a /24 is supported")
    return ".".join(m.groups()[:3])


# -- the survival rule (reference/ndb.md 5.1) ------------------------------------------------------
def arbitration_check(groups: dict[int, set[int]], before: set[int], survivors: set[int]) -> tuple[str, str]:
    """What one set of surviving data nodes decides after losing the others.

    ``groups``: node group -> its data node ids; ``before``: the data nodes that were alive before
    the failure; ``survivors``: the set that checks. Returns (outcome, ArbitResult text) with
    outcome ``win`` | ``lose`` | ``arbitrate``.

    The order of ``Qmgr::handleArbitCheck`` (storage/ndb/src/kernel/blocks/qmgr/QmgrMain.cpp):
    1) a node group with no survivor -> lose (missing node group); 2) else a node group whose
    every member survives -> win (node group majority), whatever the count; 3) else more than
    half of the previously alive -> win (all node groups and more than 1/2); 4) fewer than half ->
    lose (less than 1/2); 5) exactly half -> arbitration.

    The real engine confirms this order where reference/ndb.md 5.1 lists another: on MySQL
    Cluster 9.7.2 (default layout, 2 node groups of 2), SIGKILL of node 11 made the president log
    ``Arbitration check won - node group majority`` (node group 1 was complete), not ndb.md's
    "all node groups and more than 1/2 nodes left" (tests/unit/fixtures/ndb-9.7, kill-data-node).
    With NoOfReplicas=2 and every node alive before, both orders give the same outcome; with
    three replicas they can differ (7 of 15 with one complete group: Qmgr wins). "Every member" is
    every configured member [UNVERIFIED: DBDIH's CHECKNODEGROUPSREQ with the before-failure mask
    was not read].
    """
    if any(not (set(m) & survivors) for m in groups.values()):
        return "lose", "Arbitration check lost - missing node group"
    if any(set(m) <= survivors for m in groups.values()):
        return "win", "Arbitration check won - node group majority"
    n, prev = len(survivors & before), len(before)
    if 2 * n < prev:
        return "lose", "Arbitration check lost - less than 1/2 nodes left"
    if 2 * n > prev:
        return "win", "Arbitration check won - all node groups and more than 1/2 nodes left"
    return "arbitrate", "Network partitioning - arbitration required"


def partition_bounds(tm: dict, unreachable: int, members: int) -> tuple[float, float]:
    """(detection, decision) bounds in seconds for one side of a network partition: the side
    has ``members`` data nodes and cannot reach ``unreachable`` data nodes that were alive.

    Data nodes watch each other around a heartbeat ring, one neighbour each (the logs' "our left
    neighbour is Node N"): a node found dead is replaced by the next one, so a side finds the
    nodes it cannot reach one after the other, each after up to HEARTBEATS_TO_DETECT intervals
    of HeartbeatIntervalDbDb. Measured on 9.7.2 with 1 s: an isolated node declared its three
    peers dead 5 s apart; a half of a 2/2 split found the other half at 5 s and 10 s.

    * detection (a side that survives): every unreachable node found, then ArbitrationTimeout
      when the side must ask the arbitrator, plus our observation slack;
    * decision (a side that stops): the same for the side's president; its peers on the same
      side do not take the president's shutdown as a node failure when the connection closes
      (9.7.2: "transporter to node 11 disconnected", then "Node 11 leaving cluster due to
      Heartbeat failure" 4.3 s later) but find it by heartbeat: one more round per side with
      more than one data node.
    """
    round_s = HEARTBEATS_TO_DETECT * tm["heartbeat_db_s"]
    detection = unreachable * round_s + tm["arbitration_timeout_s"] + OBSERVATION_SLACK
    decision = (unreachable + (1 if members > 1 else 0)) * round_s + tm["arbitration_timeout_s"] + OBSERVATION_SLACK
    return detection, decision


class NdbEngine(Engine):
    name = "ndb"
    table_engine = "NDBCLUSTER"
    sql_roles = (T.SQL,)

    def __init__(self):
        super().__init__()
        self._clusterlog_applied: dict[str, str] = {}  # mgm node -> container StartedAt
        self._shipped_cfg: dict[str, NdbConfig] = {}  # layout -> its shipped config.ini, for probe_ports

    # -- images and compose ---------------------------------------------------------------
    def image(self, options: dict) -> str:
        """The image of this run: ``ndbchaos.ndb.image.choose`` (explicit, else an official
        image present locally, else one built from NDBCHAOS_NDB_DIST)."""
        return ndb_image.choose(options).image

    def images(self, options: dict) -> list[str]:
        return [self.image(options)]

    def ensure_images(self, options: dict) -> None:
        """Build the image of NDBCHAOS_NDB_DIST when it is the one chosen and missing; refuse, in
        one line, any other missing image. Never pulls."""
        ndb_image.ensure(ndb_image.choose(options))

    def layout(self, options: dict) -> str:
        lay = (options.get("ndb_layout") or os.environ.get("NDBCHAOS_NDB_LAYOUT") or "default").strip().lower()
        if lay not in LAYOUTS:
            raise UsageError(f"unknown NDB layout {lay!r} (expected {' or '.join(LAYOUTS)})")
        return lay

    def subnet(self, options: dict) -> str:
        v = options.get("ndb_subnet") or os.environ.get("NDBCHAOS_NDB_SUBNET")
        return normalize_subnet(v) if v else LAYOUTS[self.layout(options)][3]

    def config_files(self, options: dict) -> tuple[Path, Path]:
        """(config.ini, my.cnf) in use: the shipped files, or copies rendered for another subnet."""
        _, ini, cnf, default_net = LAYOUTS[self.layout(options)]
        ini_p, cnf_p = COMPOSE_DIR / ini, COMPOSE_DIR / cnf
        net = self.subnet(options)
        if net == default_net:
            return ini_p, cnf_p
        out = []
        for src in (ini_p, cnf_p):
            text = replace_prefix(src.read_text(), default_net, net)
            digest = hashlib.sha256(text.encode()).hexdigest()[:12]
            dst = runtime.TOOLS_DIR.parent / "ndb" / f"{src.stem}-{net}-{digest}{src.suffix}"
            if not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                tmp = dst.with_suffix(dst.suffix + ".tmp")
                tmp.write_text(text)
                tmp.replace(dst)
            out.append(dst)
        return out[0], out[1]

    def config(self, options: dict) -> NdbConfig:
        return read_config(self.config_files(options)[0])

    def root_password(self, options: dict) -> str:
        return options.get("ndb_root_password") or os.environ.get("NDBCHAOS_NDB_ROOT_PASSWORD") or DEFAULT_ROOT_PASSWORD

    def compose_files(self, options: dict) -> list[Path]:
        return [COMPOSE_DIR / LAYOUTS[self.layout(options)][0]] + [Path(p) for p in options.get("overlays", [])]

    def compose_env(self, options: dict) -> dict[str, str]:
        ini, cnf = self.config_files(options)
        env = {
            "NDBCHAOS_NDB_IMAGE": self.image(options),
            "NDBCHAOS_NDB_SUBNET": self.subnet(options),
            "NDBCHAOS_NDB_CONFIG": str(ini),
            "NDBCHAOS_NDB_MYCNF": str(cnf),
            "NDBCHAOS_NDB_ROOT_PASSWORD": self.root_password(options),
        }
        for k, v in (options.get("ports") or {}).items():
            env[f"NDBCHAOS_PORT_{k.upper()}"] = str(v)
        return env

    def compose_profiles(self, options: dict) -> list[str]:
        return []

    def services(self, options: dict) -> dict[str, list[str]]:
        """role -> compose service names of the layout, in node id order."""
        import yaml
        doc = yaml.safe_load(self.compose_files(options)[0].read_text())
        out: dict[str, list[tuple[int, str]]] = {}
        for name, svc in (doc.get("services") or {}).items():
            labels = svc.get("labels") or {}
            role = labels.get(T.ROLE)
            nid = int(labels.get(T.NODEID) or 0)
            out.setdefault(role, []).append((nid, name))
        return {r: [n for _, n in sorted(v)] for r, v in out.items()}

    def _overlay_services(self, options: dict) -> list[str]:
        """Services the overlay compose files add (e.g. toxiproxy), in file order."""
        import yaml
        out: list[str] = []
        for p in self.compose_files(options)[1:]:
            doc = yaml.safe_load(Path(p).read_text()) or {}
            out += [name for name in (doc.get("services") or {}) if name not in out]
        return out

    def expected_members(self, cluster) -> int:
        """Data nodes of the layout: what ndbinfo.nodes must list."""
        return len(self.config(cluster.options).data_nodes)

    # -- start ------------------------------------------------------------------------------
    def start(self, cluster) -> None:
        """Management nodes first, then data nodes (wait until all are started), then SQL nodes
        (wait until each answers SQL), then the client user and database."""
        budget = float(cluster.options.get("ndb_start_timeout") or 600)
        deadline = time.monotonic() + budget
        self._check_subnet_free(cluster)
        svc = self.services(cluster.options)
        up = ["up", "-d", "--pull", "never", "--no-deps"]
        cluster.compose(*up, *svc.get(T.MGM, []))
        cluster.discover()
        for n in cluster.topology.role(T.MGM):
            self._wait_mgm(cluster, n, min(90.0, deadline - time.monotonic()))
        cluster.compose(*up, *svc.get(T.DATA, []))
        cluster.discover()
        self._wait_data_started(cluster, deadline)
        for n in cluster.topology.role(T.MGM):
            self._apply_clusterlog(cluster, n)
        cluster.compose(*up, *svc.get(T.SQL, []))
        cluster.discover()
        for n in cluster.topology.role(T.SQL):
            self._wait_local_sql(cluster, n, deadline)
            self._ensure_client(cluster, n, deadline)
        extra = self._overlay_services(cluster.options)
        if extra:  # overlays (toxiproxy in front of the SQL nodes): once the SQL nodes answer
            cluster.compose(*up, *extra)
        cluster.discover()
        # Readiness within our own budget (an NDB start can outlast Cluster.up's default timeout;
        # its wait_healthy then returns at once).
        cluster.wait_healthy(max(5.0, deadline - time.monotonic()))

    def _check_subnet_free(self, cluster) -> None:
        net = self.subnet(cluster.options) + ".0/24"
        try:
            networks = runtime.docker_client().networks.list()
        except Exception:
            return
        for nw in networks:
            labels = (nw.attrs.get("Labels") or {})
            if labels.get(T.PROJECT) == cluster.project:
                continue
            for cfg in ((nw.attrs.get("IPAM") or {}).get("Config") or []):
                if cfg.get("Subnet") == net:
                    other = labels.get(T.PROJECT)
                    raise NdbChaosError(
                        f"subnet {net} is already used by network {nw.name}"
                        + (f" (ndbchaos project {other}: `ndbchaos reap --project {other}`)" if other else "")
                        + "; set NDBCHAOS_NDB_SUBNET to another /24")

    def _deadline_left(self, deadline: float, what: str) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ClusterNotReady(f"NDB start budget exhausted before {what}")
        return left

    def _raise_if_exited(self, cluster, node: T.Node) -> None:
        c = cluster.container(node)
        st = runtime.container_state(c)
        if st in ("exited", "dead"):
            tail = c.logs(tail=20).decode("utf-8", "replace").strip().splitlines()
            last = [ln for ln in tail if ln.strip()][-1:] or ["(no output)"]
            raise ClusterNotReady(f"{node.name} exited during start: {last[0][-240:]}")

    def _wait_mgm(self, cluster, node: T.Node, timeout: float) -> None:
        deadline = time.monotonic() + max(timeout, 1)
        last = ""
        while time.monotonic() < deadline:
            self._raise_if_exited(cluster, node)
            code, out = self._exec(cluster, node, _MGM + ["-e", "show"], timeout=10)
            if code == 0 and "Cluster Configuration" in out:
                return
            last = out.strip().splitlines()[-1:] if out.strip() else []
            time.sleep(1.0)
        raise ClusterNotReady(f"{node.name}: ndb_mgmd did not answer within {timeout:.0f}s ({' '.join(last)[-200:]})")

    def _wait_data_started(self, cluster, deadline: float) -> None:
        expected = [n.nodeid for n in cluster.topology.data_nodes]
        last_problems: list[str] = ["no report yet"]
        while True:
            for n in cluster.topology.data_nodes:
                self._raise_if_exited(cluster, n)
            rep, _ = self.mgm_report(cluster)
            if rep is not None:
                from ..ndb.mgm import all_started
                ok, last_problems = all_started(rep, expected)
                if ok:
                    return
            if time.monotonic() >= deadline:
                raise ClusterNotReady("data nodes not started: " + "; ".join(last_problems[:4]))
            time.sleep(1.0)

    def _wait_local_sql(self, cluster, node: T.Node, deadline: float) -> None:
        """Wait for the real server: the image's entrypoint first runs a temporary server for
        its initialisation, with --skip-networking, on the same socket."""
        last = ""
        while True:
            self._raise_if_exited(cluster, node)
            code, out = self.root_sql(cluster, node, "SELECT @@skip_networking", timeout=10)
            lines = out.strip().splitlines()
            if code == 0 and lines and lines[-1].strip() == "0":
                return
            last = out.strip()[-200:]
            if time.monotonic() >= deadline:
                raise ClusterNotReady(f"{node.name} did not accept SQL in time ({last})")
            time.sleep(1.0)

    def _ensure_client(self, cluster, node: T.Node, deadline: float | None = None) -> None:
        """The client user (per SQL node: users are local to each mysqld) and the database
        (distributed to the other SQL nodes by NDB schema distribution; IF NOT EXISTS everywhere)."""
        u, p, db = self.sql_user, self.sql_password, self.sql_database
        sql = (f"CREATE USER IF NOT EXISTS '{u}'@'%' IDENTIFIED BY '{p}'; "
               f"ALTER USER '{u}'@'%' IDENTIFIED BY '{p}'; "
               f"GRANT ALL PRIVILEGES ON *.* TO '{u}'@'%'; "
               f"CREATE DATABASE IF NOT EXISTS `{db}`")
        end = deadline if deadline is not None else time.monotonic() + 120
        while True:
            code, out = self.root_sql(cluster, node, sql, timeout=60)
            if code == 0:
                return
            if time.monotonic() >= end:
                raise NdbChaosError(f"creating the client user on {node.name} failed: {out.strip()[-240:]}")
            time.sleep(2.0)

    def prepare(self, cluster) -> None:
        """Idempotent: the client user and database on every SQL node, cluster log levels."""
        for n in cluster.topology.role(T.SQL):
            self._ensure_client(cluster, n)
        for n in cluster.topology.role(T.MGM):
            self._apply_clusterlog(cluster, n)

    # -- exec helpers -------------------------------------------------------------------------
    def _exec(self, cluster, node: T.Node, cmd: list[str] | str, timeout: float = 10) -> tuple[int, str]:
        try:
            c = cluster.container(node)
            return runtime.exec_in(c, cmd, timeout=timeout)
        except Exception as e:  # paused, gone, docker error: an answer, not an exception
            return -1, f"{type(e).__name__}: {e}"

    def root_sql(self, cluster, node: T.Node, sql: str, timeout: float = 30) -> tuple[int, str]:
        """Run SQL as root@localhost inside an SQL node's container, through the server's socket
        (the image sets MYSQL_UNIX_PORT); the password is the container's MYSQL_ROOT_PASSWORD.
        Returns (exit code, output)."""
        cmd = ["sh", "-c", 'MYSQL_PWD="$MYSQL_ROOT_PASSWORD" exec mysql -uroot -N -B -e "$0"', sql]
        return self._exec(cluster, node, cmd, timeout=timeout)

    def mgm(self, cluster, command: str, node: T.Node | None = None, timeout: float = 10) -> tuple[int, str, str | None]:
        """Run one ndb_mgm command in a management container (the given one, or the first
        running one in node id order); (exit code, output, node name that answered)."""
        candidates = [node] if node is not None else sorted(cluster.topology.role(T.MGM), key=lambda n: n.nodeid or 0)
        last = (-1, "no management node container is running", None)
        for n in candidates:
            try:
                if runtime.container_state(cluster.container(n)) != "running":
                    continue
            except Exception:
                continue
            code, out = self._exec(cluster, n, _MGM + ["-e", command], timeout=timeout)
            if code == 0 and mgm_answered(out):
                return code, out, n.name
            last = (code, out, n.name)
        return last

    def mgm_report(self, cluster) -> tuple[MgmReport | None, str | None]:
        """SHOW + ALL STATUS from the first management node that answers, parsed together."""
        script = " ".join(_MGM) + " -e show; echo; " + " ".join(_MGM) + " -e 'all status'"
        for n in sorted(cluster.topology.role(T.MGM), key=lambda n: n.nodeid or 0):
            try:
                if runtime.container_state(cluster.container(n)) != "running":
                    continue
            except Exception:
                continue
            _, out = self._exec(cluster, n, ["sh", "-c", script], timeout=20)
            if "Cluster Configuration" not in out:
                continue
            rep = parse_mgm(out)
            if rep.nodes:
                return rep, n.name
        return None, None

    def _apply_clusterlog(self, cluster, node: T.Node) -> bool:
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

    def collect_events(self, cluster, since: float) -> list[dict]:
        """Events from run time ``since``: the cluster log of every running management node
        (each gets every data node's reports; a killed ndb_mgmd misses what happened while it was
        down) and every data node's own log (its container output). The node's own log is not
        optional: a node that shuts itself down may never get its last reports to ndb_mgmd (9.7.2,
        whole node group killed: "Arbitration check lost - missing node group" appeared only in
        the survivors' own logs). Duplicates across logs are merged (``events.merge_streams``)."""
        from ..events import merge_streams
        # the data nodes' own logs first: their stamps are when it happened
        streams = [self.node_log_events(cluster, n, since, reporter=n.nodeid)
                   for n in sorted(cluster.topology.data_nodes, key=lambda n: n.nodeid or 0)]
        for mgm in sorted(cluster.topology.role(T.MGM), key=lambda n: n.nodeid or 0):
            streams.append(self.cluster_log_follower(cluster, mgm).poll())
        # A cluster log's copy can be late by as long as the node could not reach that ndb_mgmd
        # (a partition; 9.7.2: a forced shutdown logged 5 s later by ndb_mgmd after the heal).
        merged = merge_streams(streams, window=2.0, late=self.CLUSTER_LOG_LATE_S)
        return [e for e in merged if e.get("t") is None or e["t"] >= since - 1]

    #: how much later than the node's own log a cluster log may list the same report: the
    #: longest a node is cut off from ndb_mgmd in our scenarios (a partition's hold), our bound
    CLUSTER_LOG_LATE_S = 60.0

    def cluster_log_follower(self, cluster, node: T.Node | None = None, keep_other: bool = False):
        """A follower of a management node's cluster log (see ndbchaos.ndb.clusterlog)."""
        from ..ndb.clusterlog import ClusterLogFollower
        return ClusterLogFollower(cluster, node, keep_other=keep_other)

    # -- status -------------------------------------------------------------------------------
    def sql_probe(self, node: T.Node, full: bool = False) -> dict:
        """What one SQL node sees: ``{"nodes": [...]}`` (+ ``arbitrator``, ``membership`` when
        ``full``), or ``{"error": "errno: message"}``."""
        with self._mon_lock:
            try:
                conn = self._monitor(node)
                cur = conn.cursor()
                out = {"nodes": ndbinfo.nodes(cur)}
                if full:
                    out["arbitrator"] = ndbinfo.arbitrator_validity_summary(cur)
                    out["membership"] = ndbinfo.membership(cur)
                cur.close()
                return out
            except Exception as e:
                self._drop_monitor(node.name)
                errno, msg = error_fields(e)
                return {"error": f"{errno}: {msg}"}

    def status(self, cluster) -> ClusterStatus:
        topo = cluster.topology
        expected_ids = [n.nodeid for n in topo.data_nodes]
        cstates = {}
        for n in topo.nodes:
            try:
                cstates[n.name] = runtime.container_state(cluster.container(n))
            except Exception:
                cstates[n.name] = "gone"
        rep, mgm_source = self.mgm_report(cluster)
        if rep is not None:
            self._reapply_clusterlog(cluster, cstates)
        nodes: list[NodeStatus] = []
        problems: list[str] = []
        # SQL nodes first: their view of ndbinfo is the fallback when no management node answers.
        sql_views: dict[str, dict] = {}
        full_done = False
        for n in topo.role(T.SQL):
            if cstates[n.name] == "running" and n.sql_port is None:
                cluster.discover()
                topo = cluster.topology
                n = topo.node(n.name)
            if cstates[n.name] != "running" or not n.sql_port:
                self._drop_monitor(n.name)
                sql_views[n.name] = {"error": f"container {cstates[n.name]}"}
                continue
            v = self.sql_probe(n, full=not full_done)
            if "error" not in v and not full_done:
                full_done = True
            sql_views[n.name] = v
        answering = {k: v for k, v in sql_views.items() if "error" not in v}
        arb = ndbinfo.arbitrator_summary(next((v["arbitrator"] for v in answering.values() if "arbitrator" in v), []))
        membership = next((v["membership"] for v in answering.values() if "membership" in v), [])
        ndbinfo_rows = next((v["nodes"] for v in answering.values()), None)

        for n in topo.data_nodes:
            cstate = cstates[n.name]
            details: dict = {"nodeid": n.nodeid, "nodegroup": n.nodegroup}
            if rep is not None:
                m = rep.node(n.nodeid)
                state = m.status if m else "not reported"
                if m and m.start_phase is not None:
                    state += f" (phase {m.start_phase})"
                if m:
                    details.update(version=m.version, master=m.master, reported_nodegroup=m.nodegroup,
                                   start_phase=m.start_phase, address=m.address)
                ok = cstate == "running" and m is not None and m.started
                details["source"] = "ndb_mgm"
            elif ndbinfo_rows is not None:
                row = next((r for r in ndbinfo_rows if int(r["node_id"]) == n.nodeid), None)
                state = (str(row["status"]).lower() if row else "not connected")
                ok = cstate == "running" and row is not None and row["status"] == "STARTED"
                details["source"] = "ndbinfo"
                if row is not None and row.get("start_phase") is not None:
                    details["start_phase"] = int(row["start_phase"])
            else:
                state, ok = ("unknown" if cstate == "running" else "down"), False
                details["source"] = "none"
            if cstate != "running" and state in ("unknown", "not reported"):
                state = "down"
            nodes.append(NodeStatus(n.name, n.role, cstate, state, ok, details))
            if not ok:
                problems.append(f"{n.name}: {state} (container {cstate})")

        for n in topo.role(T.MGM):
            cstate = cstates[n.name]
            m = rep.node(n.nodeid) if rep is not None else None
            if mgm_source == n.name:
                state, ok = "connected", cstate == "running"
            elif m is not None:
                state = m.status
                ok = cstate == "running" and m.connected
            else:
                state, ok = ("unknown" if cstate == "running" else "down"), False
            details = {"nodeid": n.nodeid, "answered_status": mgm_source == n.name,
                       "arbitrator": arb.get("arbitrator") == n.nodeid}
            nodes.append(NodeStatus(n.name, n.role, cstate, state, ok, details))
            if not ok:
                problems.append(f"{n.name}: management node {state} (container {cstate})")
        if rep is None:
            problems.append("no management server answers ndb_mgm")

        for n in topo.role(T.SQL):
            cstate = cstates[n.name]
            v = sql_views.get(n.name, {})
            details = {"nodeid": n.nodeid, "sql_port": n.sql_port}
            if "error" in v:
                state = "down" if cstate != "running" else "unreachable"
                ok = False
                details["error"] = v["error"]
            else:
                ready, why = ndbinfo.nodes_ready(v["nodes"], expected_ids)
                details["ndbinfo_nodes"] = v["nodes"]
                state = "ready" if ready else "no cluster" if not v["nodes"] else "partial cluster"
                ok = ready
                if not ready:
                    details["why"] = why
            if rep is not None and rep.node(n.nodeid) is not None:
                details["mgm_state"] = rep.node(n.nodeid).status
            nodes.append(NodeStatus(n.name, n.role, cstate, state, ok, details))
            if not ok:
                problems.append(f"{n.name}: SQL {state}" + (f" ({v['error']})" if "error" in v else
                                                            f" ({'; '.join(details.get('why', [])[:2])})" if details.get("why") else ""))

        if answering and not arb["agreed"]:
            problems.append(f"no agreed arbitrator (arbitrator_validity_summary: {arb['rows']} row(s), "
                            f"arbitrator {arb['arbitrator']}, connected {arb['arb_connected']})")

        by_id = {n.nodeid: n.name for n in topo.nodes if n.nodeid is not None}
        summary = {
            "expected_members": len(expected_ids),
            "data_started": sum(1 for s in nodes if s.role == T.DATA and s.healthy),
            "nodegroups": (rep.nodegroups() if rep is not None and rep.nodegroups()
                           else {g: [m.nodeid for m in ms] for g, ms in topo.nodegroups().items()}),
            "master": rep.master if rep is not None else None,
            "president": ndbinfo.president(membership) if membership else None,
            "arbitrator": arb["arbitrator"],
            "arbitrator_node": by_id.get(arb["arbitrator"]),
            "arbitrator_agreed": arb["agreed"],
            "arbitrator_rows": arb["rows"],
            "mgm_source": mgm_source,
            "sql_answering": sorted(answering),
        }
        return ClusterStatus(cluster.clock.now(), nodes, not problems, problems, summary)

    def _reapply_clusterlog(self, cluster, cstates: dict) -> None:
        """A management node that restarted since its levels were applied gets them again."""
        for n in cluster.topology.role(T.MGM):
            if cstates.get(n.name) != "running":
                continue
            try:
                started = (cluster.container(n).attrs.get("State") or {}).get("StartedAt", "")
            except Exception:
                continue
            if self._clusterlog_applied.get(n.name) not in (None, started):
                self._apply_clusterlog(cluster, n)

    #: data node states (ndb_mgm status_string / ndbinfo.nodes.status, lower case) in which the
    #: management server still counts the node as a member of the running cluster
    MEMBER_STATES = ("started", "single user mode", "singleuser", "shutting down", "stopping_1", "stopping_2",
                     "stopping_3", "stopping_4")

    def _excluded(self, ns: NodeStatus) -> bool:
        """Has the cluster let go of this (lost) node? ndb.md 5: a failed data node shows ``not
        connected`` in ndb_mgm (no row in ndbinfo.nodes); an API/SQL or management node likewise
        once its heartbeats stop. A node whose container is paused or cut off but which the
        management server still reports as a member (``started``, an API ``connected``) is not
        excluded yet: that is the heartbeat window (ndb.md 5.2)."""
        if ns.healthy:
            return False
        state = (ns.state or "").split(" (", 1)[0].strip().lower()
        if ns.role == T.DATA:
            return state not in self.MEMBER_STATES and state not in ("unknown", "not reported")
        if ns.role == T.SQL:
            return (ns.details or {}).get("mgm_state") in (None, "not connected")
        if ns.role == T.MGM:
            return state != "connected"
        return True

    def loss_detected(self, status: ClusterStatus, lost: list[str]) -> bool:
        """ndb.md 5: the lost nodes are out (a data node ``not connected`` in ndb_mgm, or no
        ndbinfo.nodes row; not merely a stopped container that ndb_mgm still lists as started)
        and every surviving data node is ``started``."""
        lost_set = set(lost)
        data = [n for n in status.nodes if n.role == T.DATA]
        gone = [n for n in status.nodes if n.node in lost_set]
        survivors = [n for n in data if n.node not in lost_set]
        return (bool(survivors) and all(self._excluded(n) for n in gone)
                and all(n.healthy for n in survivors))

    # -- what NDB promises to clients --------------------------------------------------------
    def workload_params(self, workload: str) -> dict:
        """NDB supports only READ COMMITTED (manual, "Limitations relating to transaction
        handling"): a plain SELECT over several rows reads each row's latest committed value as
        the scan reaches it, not a snapshot, so a transfer that commits mid-scan makes the bank's
        total look wrong (measured on 9.7.2: 174 of 2,886 plain reads of 8 accounts, in steady
        state as much as during a kill). A consistent read of several rows takes shared locks in
        one transaction (``SELECT ... FOR SHARE``): a transfer cannot commit between two rows of
        the read, so every total a read returns is one the bank actually had."""
        return {"read_lock": "share"} if workload == "bank" else {}

    def crash_loss_window_s(self, options: dict) -> float | None:
        """A system restart recovers the cluster to its last completed global checkpoint
        (reference/ndb.md 7): a commit is durable once the GCP of its epoch completes, every
        TimeBetweenGlobalCheckpoints. One interval, plus one for a GCP in flight when the cluster
        stopped. Measured on 9.7.2: the lost acknowledged commits lay within 1.5 s (node group
        killed) and 0.6 s (even split, arbitrator isolated) before clients stopped being served."""
        return 2 * self.timings(options)["gcp_interval_s"]

    # -- expectations ---------------------------------------------------------------------------
    def timings(self, options: dict) -> dict:
        cfg = self.config(options)
        return {
            "heartbeat_db_s": cfg.data_param_ms("HeartbeatIntervalDbDb", 5000) / 1000.0,
            "heartbeat_api_s": cfg.data_param_ms("HeartbeatIntervalDbApi", 1500) / 1000.0,
            "arbitration_timeout_s": cfg.data_param_ms("ArbitrationTimeout", 7500) / 1000.0,
            # Commits newer than the last global checkpoint may be lost when the whole cluster
            # crashes (reference/ndb.md 7); the checker reports such losses apart.
            "gcp_interval_s": cfg.data_param_ms("TimeBetweenGlobalCheckpoints", 2000) / 1000.0,
        }

    def _arbitrators(self, cfg: NdbConfig) -> list[int]:
        """Arbitrator candidates in the order the president picks them: rank 1 before rank 2
        (8.4 manual, ArbitrationRank) [UNVERIFIED: lowest node id first within a rank]."""
        cands = [n for n in cfg.nodes if n.type in ("MGM", "API") and n.arbitration_rank > 0]
        return [n.node_id for n in sorted(cands, key=lambda n: (n.arbitration_rank, n.node_id))]

    #: keywords each family reads (others are accepted, ignored and listed in
    #: ``details["ignored_keywords"]``, so a scenario written for any engine never crashes here)
    FAMILY_KEYWORDS = {
        "datanode_loss": ("nodes", "lost", "simultaneous", "arbitrator"),
        "two_datanodes_different_ng": ("nodes", "simultaneous", "arbitrator"),
        "nodegroup_loss": ("nodegroup", "arbitrator"),
        "partition_halves_arbitrator_side": ("side", "arbitrator"),
        "arbitrator_isolated": ("side", "arbitrator"),
        "mgmnode_loss": ("nodes", "lost", "arbitrator"),
        "all_mgmnodes_loss": ("arbitrator",),
        "sqlnode_loss": ("nodes", "lost"),
    }

    def expectation(self, family: str, cluster, **kw) -> Expectation:
        """The expected outcome of a fault family (see ``FAMILIES``).

        ``lost=<int>`` (the engine-neutral way scenarios say how many nodes a loss takes) is a
        count for ``datanode_loss``, ``mgmnode_loss`` and ``sqlnode_loss`` when ``nodes`` is not
        given: data nodes are then chosen one per node group first (round-robin in node id
        order: data1, data3, data2, data4 on the default layout), management nodes the running
        arbitrator first, SQL nodes in node id order. The outcome is computed for that choice and
        ``details["lost_choice"]`` says so (another choice of the same count can differ on NDB).
        Keywords a family does not read are ignored and listed in ``details["ignored_keywords"]``.
        """
        if family not in FAMILIES:
            raise UsageError(f"no NDB expectation for fault family {family!r} (known: {', '.join(FAMILIES)})")
        kw = dict(kw)
        used = self.FAMILY_KEYWORDS.get(family, ())
        ignored = sorted(k for k in kw if k not in used)
        choice = None
        if "lost" in used and kw.get("lost") is not None:
            try:
                count = int(kw["lost"])
            except (TypeError, ValueError):
                raise UsageError(f"{family}: lost={kw['lost']!r} is not a node count") from None
            pool = self._lost_pool(family, cluster, kw)
            if count < 1 or count > len(pool):
                raise UsageError(f"{family}: lost={count}, but the layout has {len(pool)} such node(s)")
            if kw.get("nodes"):
                if len(kw["nodes"]) != count:
                    raise UsageError(f"{family}: lost={count} but {len(kw['nodes'])} node(s) given")
            else:
                kw["nodes"] = pool[:count]
                choice = {"count": count, "nodes": list(kw["nodes"]), "rule": self._LOST_CHOICE[family]}
        exp = self._expectation(family, cluster, **kw)
        if choice is not None:
            exp.details["lost_choice"] = choice
        if ignored:
            exp.details["ignored_keywords"] = ignored
        return exp

    _LOST_CHOICE = {
        "datanode_loss": ("a count only: one data node per node group first (round-robin in node id order); "
                          "a different choice of as many nodes can have another outcome on NDB (ndb.md 5.1)"),
        "mgmnode_loss": "a count only: the running arbitrator first, then by ArbitrationRank and node id",
        "sqlnode_loss": "a count only: SQL nodes in node id order",
    }

    def _lost_pool(self, family: str, cluster, kw: dict) -> list[str]:
        """Node names in the order ``lost=<count>`` takes them (see ``expectation``)."""
        topo = cluster.topology
        if family == "datanode_loss":
            groups = [sorted(ms, key=lambda n: n.nodeid or 0) for _, ms in sorted(topo.nodegroups().items())]
            out = []
            for i in range(max((len(g) for g in groups), default=0)):
                out += [g[i].name for g in groups if i < len(g)]
            return out
        if family == "mgmnode_loss":
            cfg = self.config(cluster.options)
            by_id = {n.nodeid: n for n in topo.role(T.MGM)}
            arb = kw["arbitrator"] if "arbitrator" in kw else self._running_arbitrator(
                cluster, [i for i in self._arbitrators(cfg) if i in by_id], by_id)[0]
            if isinstance(arb, str):
                arb = next((n.nodeid for n in topo.role(T.MGM) if n.name == arb), None)
            rank = {n.node_id: n.arbitration_rank or 99 for n in cfg.mgm_nodes}
            mgms = sorted(topo.role(T.MGM), key=lambda n: (n.nodeid != arb, rank.get(n.nodeid, 99), n.nodeid or 0))
            return [n.name for n in mgms]
        return [n.name for n in sorted(topo.role(T.SQL), key=lambda n: n.nodeid or 0)]

    def _expectation(self, family: str, cluster, **kw) -> Expectation:
        if family not in FAMILIES:
            raise UsageError(f"no NDB expectation for fault family {family!r} (known: {', '.join(FAMILIES)})")
        topo = cluster.topology
        cfg = self.config(cluster.options)
        tm = self.timings(cluster.options)
        hb, hb_api, arb_to = tm["heartbeat_db_s"], tm["heartbeat_api_s"], tm["arbitration_timeout_s"]
        groups = {g: {m.nodeid for m in ms} for g, ms in topo.nodegroups().items()}
        by_name = {n.name: n for n in topo.nodes}
        by_id = {n.nodeid: n for n in topo.nodes if n.nodeid is not None}
        data_ids = {n.nodeid for n in topo.data_nodes}
        candidates = [i for i in self._arbitrators(cfg) if i in by_id]
        sqls = [n.name for n in topo.role(T.SQL)]

        def name_of(x) -> str:
            if isinstance(x, T.Node):
                return x.name
            if isinstance(x, str):
                if x not in by_name:
                    raise UsageError(f"{family}: no node named {x!r} (nodes: {', '.join(by_name)})")
                return x
            return by_id[int(x)].name

        def names(ids) -> list[str]:
            return [by_id[i].name for i in sorted(ids)]

        def ids_of(nodes) -> set[int]:
            return {by_name[name_of(x)].nodeid for x in nodes}

        # ``arbitrator=None`` says there is none (e.g. the management node was killed first).
        # Default: the one in effect. The data nodes prefer rank 1, but they choose among the
        # candidates connected to the president when it selects, and keep that one until it is
        # lost: on 9.7.2 a start chose mgm2 (rank 2) although mgm1 (rank 1) was up.
        if "arbitrator" in kw:
            arbitrator = kw["arbitrator"]
            if arbitrator is not None and not isinstance(arbitrator, int):
                arbitrator = by_name[name_of(arbitrator)].nodeid
        else:
            arbitrator = self._running_arbitrator(cluster, candidates, by_id)[0]

        # Detection bounds (derivation):
        #  * data node failure, silent case: declared dead after 4 missed HeartbeatIntervalDbDb,
        #    at most 5 intervals (manual); a kill closes the TCP connection and is seen at once,
        #    so 5 x interval is an upper bound for both;
        #  * + ArbitrationTimeout when the survivors must ask the arbitrator (ndb.md 5.1 step 5);
        #  * API/management links: the same rule with HeartbeatIntervalDbApi;
        #  * + our observation slack (poll period, exec latency).
        det_data = HEARTBEATS_TO_DETECT * hb + OBSERVATION_SLACK
        det_data_arb = det_data + arb_to
        det_api = HEARTBEATS_TO_DETECT * hb_api + OBSERVATION_SLACK
        # Recovery bounds (derivation):
        #  * node restart: the NDB test framework's own bound, waitClusterStarted(120) around every
        #    restart (NdbRestarts.cpp), + the container start;
        #  * system restart: waitClusterStarted(120) + the 60 s the framework adds per loop, + the
        #    SQL nodes reconnecting (ndb-wait-connected), + the container starts;
        #  * SQL node restart: mysqld waits ndb-wait-connected then ndb-wait-setup at most;
        #  * management node: [UNVERIFIED] no documented figure, MGMD_START_BOUND.
        rec_node = NDBT_WAIT_CLUSTER_STARTED + CONTAINER_START_SLACK
        rec_system = NDBT_WAIT_CLUSTER_STARTED + NDBT_EXTRA_WAIT + NDB_WAIT_CONNECTED + CONTAINER_START_SLACK
        rec_sql = NDB_WAIT_CONNECTED + NDB_WAIT_SETUP + CONTAINER_START_SLACK
        timing = {**tm, "heartbeats_to_detect": HEARTBEATS_TO_DETECT, "observation_slack_s": OBSERVATION_SLACK,
                  "ndbt_wait_cluster_started_s": NDBT_WAIT_CLUSTER_STARTED, "ndb_wait_connected_s": NDB_WAIT_CONNECTED,
                  "ndb_wait_setup_s": NDB_WAIT_SETUP}
        sec51 = "reference/ndb.md 5.1"

        def data_loss(lost: set[int], simultaneous: bool, fam: str) -> Expectation:
            survivors = data_ids - lost
            steps = []
            if simultaneous or len(lost) <= 1:
                outcome, text = arbitration_check(groups, data_ids, survivors)
                steps.append({"lost": names(lost), "survivors": names(survivors), "check": text})
            else:  # one at a time: each check is against the nodes alive just before it
                alive = set(data_ids)
                outcome, text = "win", ""
                for nid in sorted(lost):
                    outcome, text = arbitration_check(groups, alive, alive - {nid})
                    steps.append({"lost": names({nid}), "survivors": names(alive - {nid}), "check": text})
                    if outcome != "win":
                        break
                    alive -= {nid}
            survive = outcome == "win" or (outcome == "arbitrate" and arbitrator is not None)
            if outcome == "arbitrate":
                steps.append({"arbitration": (f"survivors ask arbitrator node {arbitrator} and get "
                                              "'Arbitration won - positive reply'") if arbitrator is not None
                              else "no arbitrator: 'Network partitioning - no arbitrator available' -> shutdown 2305"})
            if survive:
                events = ["node_disconnected", "arbitration_check_won" if outcome == "win" else "arbitration_required",
                          *(["arbitration_won"] if outcome == "arbitrate" else []), "node_failure_completed"]
                return Expectation(
                    family=fam, survivors_serve=True, cluster_survives=True,
                    rule=f"{sec51}: {text}" + (f"; arbitrator node {arbitrator} says yes" if outcome == "arbitrate" else ""),
                    detection_bound_s=det_data_arb if outcome == "arbitrate" else det_data,
                    recovery_bound_s=rec_node, recovery="node_restart",
                    details={"decision": steps, "lost": names(lost), "survivors": names(survivors),
                             "arbitrator": arbitrator, "expected_events": events,
                             "client_errors": {"during_failover": "temporary (NR class, e.g. 4010, 4025, 286; 1297)",
                                               "after": "none"},
                             "timing": timing})
            return Expectation(
                family=fam, survivors_serve=False, cluster_survives=False,
                rule=(f"{sec51}: {text} -> every remaining data node shuts down (2305); "
                      "the cluster needs a system restart"),
                detection_bound_s=det_data_arb, recovery_bound_s=rec_system, recovery="system_restart",
                details={"decision": steps, "lost": names(lost), "shut_down": names(survivors),
                         # a kill closes TCP connections: the survivors learn at once and decide
                         "decision_bound_s": det_data_arb,
                         "exit_code": 2305, "exit_codes": {x: 2305 for x in names(survivors)},
                         "arbitrator": arbitrator,
                         "gcp_loss_window_s": self.crash_loss_window_s(cluster.options),
                         "expected_events": ["arbitration_check_lost", "forced_shutdown"],
                         "client_errors": {"expected": [4009], "class": "unknown",
                                           "text": "ERROR 1296: Got error 4009 'Cluster Failure' from NDBCLUSTER "
                                                   "(or 157 / connection errors); NR-class 1297 errors while it shuts down"},
                         "timing": timing})

        if family == "datanode_loss":
            lost = ids_of(kw.get("nodes") or [topo.data_nodes[0].name])
            return data_loss(lost, bool(kw.get("simultaneous", True)), family)

        if family == "two_datanodes_different_ng":
            if kw.get("nodes"):
                lost = ids_of(kw["nodes"])
            else:
                if len(groups) < 2:
                    raise UsageError("two_datanodes_different_ng needs at least two node groups (default layout)")
                lost = {min(m) for m in list(groups.values())[:2]}
            ngs = {by_id[i].nodegroup for i in lost}
            if len(lost) != 2 or len(ngs) != 2:
                raise UsageError(f"two_datanodes_different_ng: expected two data nodes of different node groups, got {names(lost)}")
            exp = data_loss(lost, bool(kw.get("simultaneous", True)), family)
            exp.rule += " (NdbRestarts TwoNodeFailure)"
            return exp

        if family == "nodegroup_loss":
            ng = int(kw.get("nodegroup", 0))
            if ng not in groups:
                raise UsageError(f"nodegroup_loss: no node group {ng} (have {sorted(groups)})")
            exp = data_loss(set(groups[ng]), True, family)
            exp.details["nodegroup"] = ng
            return exp

        if family in ("partition_halves_arbitrator_side", "arbitrator_isolated"):
            side_a = ids_of(kw["side"]) & data_ids if kw.get("side") else {min(m) for m in groups.values()}
            side_b = data_ids - side_a
            oa, ta = arbitration_check(groups, data_ids, side_a)
            ob, tb = arbitration_check(groups, data_ids, side_b)
            if (oa, ob) != ("arbitrate", "arbitrate"):
                raise UsageError(f"{family}: sides {names(side_a)} / {names(side_b)} are not an even split with every "
                                 f"node group on both sides ({ta}; {tb})")
            det = det_data_arb
            if family == "partition_halves_arbitrator_side":
                return Expectation(
                    family=family, survivors_serve=True, cluster_survives=True,
                    rule=(f"{sec51} step 5: both halves find '{ta}'; the arbitrator (node {arbitrator}) answers yes "
                          f"to the first requester only, which is the side it can reach"),
                    detection_bound_s=det, recovery_bound_s=rec_node, recovery="node_restart",
                    details={"winners": names(side_a), "losers": names(side_b), "arbitrator": arbitrator,
                             "arbitrator_node": by_id[arbitrator].name if arbitrator in by_id else None,
                             "loser_exit_code": 2305,
                             "expected_events": {"winners": ["arbitration_required", "arbitration_won"],
                                                 "losers": ["arbitration_required", "no_arbitrator|arbitration_lost",
                                                            "forced_shutdown"]},
                             "sql_nodes": ("SQL nodes that reach a winner keep serving; an SQL node cut off "
                                           "with the losers gets 4009 until the partition heals"),
                             "client_errors": {"during_failover": "temporary (NR class) on the winning side",
                                               "losing_side": [4009]},
                             "timing": timing})
            return Expectation(
                family=family, survivors_serve=False, cluster_survives=False,
                rule=(f"{sec51} step 5: both halves need arbitration ('{ta}') and neither reaches the arbitrator "
                      f"(node {arbitrator}) within ArbitrationTimeout -> both shut down with 2305 "
                      "(ndb.md 10.4: 50/50 with the arbitrator isolated from both)"),
                detection_bound_s=det, recovery_bound_s=rec_system, recovery="system_restart",
                details={"halves": [names(side_a), names(side_b)], "shut_down": names(data_ids), "exit_code": 2305,
                         "exit_codes": {x: 2305 for x in names(data_ids)},
                         # each half finds the other half's nodes one after the other around the
                         # heartbeat ring, then its president decides, then its peers find that out
                         "decision_bound_s": max(partition_bounds(tm, len(side_b), len(side_a))[1],
                                                 partition_bounds(tm, len(side_a), len(side_b))[1]),
                         "arbitrator": arbitrator, "gcp_loss_window_s": self.crash_loss_window_s(cluster.options),
                         "assumption": ("the split and the arbitrator's isolation start together; if the data "
                                        "nodes lose the arbitrator first, they elect the next candidate "
                                        f"({candidates[1:2] or 'none'}) and the side that reaches it survives"),
                         "expected_events": ["arbitration_required", "no_arbitrator", "forced_shutdown"],
                         "client_errors": {"expected": [4009], "class": "unknown"},
                         "timing": timing})

        if family == "mgmnode_loss":
            mgms = [n for n in topo.role(T.MGM)]
            lost = ids_of(kw.get("nodes") or ([by_id[arbitrator].name] if arbitrator in by_id else [mgms[0].name]))
            remaining = [i for i in candidates if i not in lost]
            was_arbitrator = arbitrator in lost
            new_arb = remaining[0] if was_arbitrator and remaining else (arbitrator if not was_arbitrator else None)
            rule = ("reference/ndb.md 5.1 (management node loss): mgmd is not needed for data traffic; "
                    + (f"the arbitrator moves to the next candidate, node {new_arb}" if was_arbitrator and new_arb
                       else "no other arbitrator candidate: the cluster runs without one" if was_arbitrator
                       else f"the arbitrator (node {arbitrator}) is unaffected"))
            return Expectation(
                family=family, survivors_serve=True, cluster_survives=True, rule=rule,
                detection_bound_s=det_api + (arb_to if was_arbitrator else 0.0),
                recovery_bound_s=MGMD_START_BOUND + CONTAINER_START_SLACK, recovery="node_restart",
                details={"lost": names(lost), "arbitrator_before": arbitrator, "arbitrator_after": new_arb,
                         "arbitrator_after_node": by_id[new_arb].name if new_arb in by_id else None,
                         "expected_events": (["arbitrator_lost", "arbitrator_prepared", "arbitrator_started"]
                                             if was_arbitrator and new_arb else
                                             ["arbitrator_lost"] if was_arbitrator else []),
                         "client_errors": {"expected": "none"},
                         "recovery_bound_note": "[UNVERIFIED] no documented ndb_mgmd start time",
                         "timing": timing})

        if family == "all_mgmnodes_loss":
            lost = {n.nodeid for n in topo.role(T.MGM)}
            others = [i for i in candidates if i not in lost]
            return Expectation(
                family=family, survivors_serve=True, cluster_survives=True,
                rule=("reference/ndb.md 5.1 (management node loss): data traffic continues; "
                      + ("no arbitrator candidate is left (SQL nodes have ArbitrationRank 0), so the cluster "
                         "runs without an arbitrator and the next even split or half loss stops it"
                         if not others else f"arbitration moves to API node {others[0]}")),
                detection_bound_s=det_api + arb_to,
                recovery_bound_s=MGMD_START_BOUND + CONTAINER_START_SLACK, recovery="node_restart",
                details={"lost": names(lost), "arbitrator_before": arbitrator,
                         "arbitrator_after": others[0] if others else None,
                         "expected_events": ["arbitrator_lost"],
                         "status_note": "no ndb_mgm answers: data node states come from ndbinfo through the SQL nodes",
                         "client_errors": {"expected": "none"},
                         "timing": timing})

        # sqlnode_loss
        lost_sql = [name_of(x) for x in (kw.get("nodes") or sqls[:1])]
        others = [s for s in sqls if s not in lost_sql]
        return Expectation(
            family=family, survivors_serve=bool(others), cluster_survives=True,
            rule=("reference/ndb.md 5.1/10.4: an SQL node is an API node; its loss affects only its own clients "
                  "(the data nodes declare it dead after HeartbeatIntervalDbApi x 4-5 and clean up its "
                  "transactions); the other SQL nodes are unaffected"),
            detection_bound_s=det_api, recovery_bound_s=rec_sql, recovery="node_restart",
            details={"lost": lost_sql, "unaffected": others,
                     "client_errors": {"lost_node": "connection errors (2013/2006/2003; unknown result when in flight)",
                                       "other_nodes": "none"},
                     "timing": timing})

    # -- recovery -----------------------------------------------------------------------------
    def recover_nodes(self, cluster, nodes) -> None:
        """Node restart = start the container again (the data node keeps its file system, so it
        runs a node restart). If no data node is running at all, every data node is started:
        the cluster needs all of them for a system restart (ndb.md 7). Management nodes first
        (data and SQL nodes fetch their configuration from them), then data, then SQL nodes."""
        topo = cluster.topology
        order = {T.MGM: 0, T.DATA: 1, T.SQL: 2}
        wanted = sorted(nodes, key=lambda n: (order.get(n.role, 3), n.nodeid or 0))
        started_mgm = []

        def start(n: T.Node) -> bool:
            c = cluster.container(n)
            st = runtime.container_state(c)
            if st == "paused":
                c.unpause()
                return False
            if st != "running":
                c.start()
                return True
            return False

        for n in [x for x in wanted if x.role == T.MGM]:
            if start(n):
                started_mgm.append(n)
        for n in started_mgm:
            try:
                self._wait_mgm(cluster, n, MGMD_START_BOUND)
                self._apply_clusterlog(cluster, n)
            except NdbChaosError as e:
                log.warning("management node %s: %s", n.name, e)
        data_want = [x for x in wanted if x.role == T.DATA]
        if data_want:
            running = [d for d in topo.data_nodes
                       if runtime.container_state(cluster.container(d)) == "running"]
            targets = topo.data_nodes if not running else data_want  # system restart: all of them
            for n in targets:
                start(n)
        for n in [x for x in wanted if x.role not in (T.MGM, T.DATA)]:
            start(n)
        cluster.discover()

    #: How long a data node that the others declared dead while it was frozen or cut off may take
    #: to notice and shut itself down once it can talk again. Measured on 9.7.2: 0.3 s after the
    #: unpause or the heal (error 2315); the bound is our margin, not an NDB setting.
    THAW_SHUTDOWN_BOUND = 30.0

    def stop_node(self, cluster, node: T.Node, timeout: float) -> str:
        """A data node's graceful stop is ``ndb_mgm -e "N STOP"``: the node hands its work over and
        the angel exits (measured on 9.7.2: 15 s under no load). ``docker stop`` is not one: the
        angel runs as the container's PID 1 and ignores SIGTERM, so Docker SIGKILLs it after the
        grace period; and SIGTERM to the data node process itself is a fast stop without handover
        ("Received signal 15. Performing stop."). Management and SQL nodes stop on SIGTERM."""
        if node.role != T.DATA:
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
    _DATA_PROCESSES = ("sh", "-c", 'grep -l "^Name:[[:space:]]*ndb\\(mt\\)\\{0,1\\}d$" /proc/[0-9]*/status 2>/dev/null | wc -l')

    def process_stopped(self, cluster, node: T.Node) -> bool:
        """A data node has stopped when its container has exited, or when only the angel is left.
        The second happens after a forced shutdown while the node cannot reach any ndb_mgmd
        (a partition): the angel then tries for 120 s to report the shutdown reason before it
        exits (9.7.2: "Unable to report shutdown reason to '10.213.77.101 1186'" 120.1 s after
        "Forced node shutdown completed"), so the container stays up while the node is down."""
        if super().process_stopped(cluster, node):
            return True
        if node.role != T.DATA:
            return False
        code, out = self._exec(cluster, node, list(self._DATA_PROCESSES), timeout=10)
        return code == 0 and out.strip().isdigit() and int(out.strip()) < 2

    def excluded_running(self, cluster, nodes) -> list:
        """Data nodes among ``nodes`` whose container runs (or is paused) while the management
        server reports them ``not connected``: the cluster declared them dead (heartbeats) while
        they were frozen or cut off."""
        data = [n for n in nodes if n.role == T.DATA]
        if not data:
            return []
        rep, _ = self.mgm_report(cluster)
        if rep is None:
            return []
        out = []
        for n in data:
            m = rep.node(n.nodeid)
            if (m is None or not m.connected) and \
                    runtime.container_state(cluster.container(n)) in ("running", "paused"):
                out.append(n)
        return out

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
            t0 = time.monotonic()
            while runtime.container_state(c) not in ("exited", "dead"):
                if time.monotonic() - t0 > self.THAW_SHUTDOWN_BOUND:
                    raise NdbChaosError(f"{n.name} was declared dead while unreachable but still runs "
                                        f"{self.THAW_SHUTDOWN_BOUND:.0f}s after it could reach the cluster again")
                time.sleep(0.1)
            notes.append(f"{n.name} shut itself down {time.monotonic() - t0:.1f}s after it could reach the cluster")
        self.recover_nodes(cluster, nodes)
        return "; ".join(notes + ["node restart of " + ", ".join(n.name for n in nodes)])

    # -- facts for the fault catalogue (ndbchaos.faults) -------------------------------------------
    #: ndb_mgmd's PortNumber default (8.4 manual; ndb.md 1.1: the image EXPOSEs 1186)
    MGM_PORT_DEFAULT = 1186
    #: the conventional data node ServerPort (ndb.md 1.1: the image EXPOSEs 2202); used only when
    #: config.ini sets none (then the port is allocated dynamically and this one answers "refused",
    #: which a probe still counts as reachable)
    SERVER_PORT_DEFAULT = 2202

    def _config_node(self, node: T.Node):
        """The config.ini section of ``node`` (by node id and type), searching the layout in use
        (NDBCHAOS_NDB_LAYOUT, else default) first, then the other layouts. Ports do not depend on
        the subnet, so the shipped files are read as they are. (config node, its NdbConfig)."""
        want = {T.MGM: "MGM", T.DATA: "NDB", T.SQL: "API"}.get(node.role)
        try:
            first = self.layout({})
        except UsageError:
            first = "default"
        cache = self._shipped_cfg
        for lay in [first] + [x for x in LAYOUTS if x != first]:
            cfg = cache.get(lay)
            if cfg is None:
                cfg = cache[lay] = read_config(COMPOSE_DIR / LAYOUTS[lay][1])
            if node.nodeid is not None:
                cn = cfg.node(node.nodeid)
                if cn is not None and cn.type == want:
                    return cn, cfg
        return None, cache[first]

    def probe_ports(self, node) -> list[int]:
        """Peer-facing port first (``network.py`` verifies a partition with a connect to ports[0]):

        * management node: its ``PortNumber`` in config.ini (default 1186): data, SQL and the other
          management node connect there;
        * data node: its ``ServerPort`` in config.ini (2202 in ours, set in [ndbd default]): the
          transporter port other data nodes and API/SQL nodes connect to;
        * SQL node: the MySQL port 3306. A mysqld opens no NDB port of its own (it connects out to
          1186 and the data nodes' ServerPort), so 3306 is the only port a peer can probe.
        Only ports the process listens on are listed: probing a port nobody listens on answers
        "refused", which the probe counts as reachable and would prove nothing about the path.
        """
        cn, cfg = self._config_node(node)
        if node.role == T.MGM:
            v = (cn.get("PortNumber") if cn is not None else None) or cfg.defaults.get("MGM", {}).get("portnumber")
            return [int(v) if v else self.MGM_PORT_DEFAULT]
        if node.role == T.DATA:
            v = (cn.get("ServerPort") if cn is not None else None) or cfg.data_param("ServerPort")
            return [int(v) if v else self.SERVER_PORT_DEFAULT]
        if node.role == T.SQL:
            return [self.sql_private_port]
        raise UsageError(f"{node.name}: role {node.role!r} is not a node of an NDB cluster (no port to probe)")

    def master_node(self, cluster):
        """The master (president) data node: the ``*`` of ``ndb_mgm -e show`` (ndb.md 2.1) from
        the first management node that answers; else ``ndbinfo.membership.president`` (ndb.md 4)
        as an SQL node sees it, when every row agrees. None when neither answers or the id is
        not a data node of the topology."""
        topo = cluster.topology
        data = {n.nodeid: n for n in topo.data_nodes}
        try:
            code, out, _ = self.mgm(cluster, "show")
        except Exception:  # no Docker, a container vanished: no answer, not an error
            code, out = -1, ""
        if code == 0 and "Cluster Configuration" in out:
            from ..ndb.mgm import parse_show
            nid = parse_show(out).master
            if nid in data:
                return data[nid]
        for n in sorted(topo.role(T.SQL), key=lambda n: n.nodeid or 0):
            if not n.sql_port:
                continue
            v = self.sql_probe(n, full=True)
            if "error" in v or not v.get("membership"):
                continue
            nid = ndbinfo.president(v["membership"])
            if nid in data:
                return data[nid]
        return None

    def arbitrator_in_effect(self, cluster):
        """The management node the data nodes use as arbitrator now: ndbinfo's
        arbitrator_validity_summary through an SQL node; else the first running candidate by
        ArbitrationRank (``_running_arbitrator``)."""
        cfg = self.config(cluster.options)
        by_id = {n.nodeid: n for n in cluster.topology.nodes if n.nodeid is not None}
        nid, _ = self._running_arbitrator(cluster, [i for i in self._arbitrators(cfg) if i in by_id], by_id)
        return by_id.get(nid)

    def options_from_topology(self, topology) -> dict:
        """The options of the layout whose config.ini has exactly the topology's data node ids
        (default 11-14, small 2-3; management and SQL node ids must belong to it too), plus
        ``ndb_subnet`` when the nodes' addresses ("last octet = 100 + NodeId") are on another /24
        than the layout's default. Raises UsageError for a shape no layout has."""
        labelled = {(n.role, n.nodeid) for n in topology.nodes if n.role in (T.MGM, T.DATA, T.SQL)}
        data_ids = {i for r, i in labelled if r == T.DATA}
        if not data_ids or None in data_ids:
            raise UsageError(f"project {topology.project}: no data nodes with an {T.NODEID} label; "
                             "cannot tell the NDB layout")
        kind = {"MGM": T.MGM, "NDB": T.DATA, "API": T.SQL}
        found = None
        for lay, (_, ini, _, net) in LAYOUTS.items():
            cfg = read_config(COMPOSE_DIR / ini)
            ids = {(kind[c.type], c.node_id) for c in cfg.nodes}
            if {c.node_id for c in cfg.data_nodes} == data_ids and labelled <= ids:
                found = (lay, net)
                break
        if found is None:
            raise UsageError(f"project {topology.project}: node ids {sorted((r, i) for r, i in labelled)} match no "
                             f"NDB layout ({', '.join(LAYOUTS)})")
        lay, default_net = found
        opts: dict = {"ndb_layout": lay}
        prefixes = {n.ip.rsplit(".", 1)[0] for n in topology.nodes
                    if n.ip and n.nodeid is not None and n.role in (T.MGM, T.DATA, T.SQL)
                    and n.ip.rsplit(".", 1)[-1] == str(100 + n.nodeid)}
        if len(prefixes) == 1:
            net = prefixes.pop()
            if net != default_net:
                opts["ndb_subnet"] = normalize_subnet(net)
        return opts

    _NO_ARB = object()  # partition_outcome(arbitrator=...) not given: find the one in effect

    def _running_arbitrator(self, cluster, candidates: list[int], by_id: dict) -> tuple[int | None, str]:
        """The arbitrator in effect: what ndbinfo.arbitrator_validity_summary says through an SQL
        node; else the first candidate by ArbitrationRank whose container runs; else, when no
        container state can be read (no Docker), the first candidate of the configuration."""
        for n in sorted(cluster.topology.role(T.SQL), key=lambda n: n.nodeid or 0):
            if not n.sql_port:
                continue
            try:
                v = self.sql_probe(n, full=True)
            except Exception:
                continue
            if "error" not in v and v.get("arbitrator"):
                arb = ndbinfo.arbitrator_summary(v["arbitrator"])
                if arb["agreed"] and arb["arbitrator"] in by_id:
                    return arb["arbitrator"], f"ndbinfo.arbitrator_validity_summary via {n.name}"
        states = {}
        for i in candidates:
            try:
                states[i] = runtime.container_state(cluster.container(by_id[i]))
            except Exception:
                states[i] = "gone"
        running = [i for i in candidates if states[i] == "running"]
        if running:
            return running[0], "lowest ArbitrationRank among the running candidates"
        if candidates and all(s == "gone" for s in states.values()):
            return candidates[0], "lowest ArbitrationRank in config.ini (container states unknown)"
        return None, "no arbitrator candidate is running"

    def partition_outcome(self, cluster, components: list[list[str]], alive: list[str] | None = None,
                          arbitrator=_NO_ARB) -> dict:
        """Which components of a clean partition keep running, by NDB's arbitration (ndb.md 5.1).

        Every component with data nodes checks, against the data nodes alive before (``alive``,
        default: all of the topology; alive data nodes in no component count as lost), in the
        order of QmgrMain.cpp handleArbitCheck (``arbitration_check``): a node group
        with no member here -> lost; a node group complete here -> won (node-group majority);
        more than half -> won; fewer than half -> lost; exactly half with every node group
        present and none complete -> arbitration: the component that holds the arbitrator
        in effect (``arbitrator=`` name/id/None, default: see ``_running_arbitrator``) gets the
        yes, every other one shuts down with 2305; an arbitrator in no component reaches every
        side and says yes to the first requester (``race``: exactly one of them keeps running).
        Management and SQL nodes do not vote; an SQL node serves only in a component whose data
        nodes keep running (or, in no component, when any component does).

        Returns ``{"serving": [...], "stopped": [...], "rule": "...", "race": [...],
        "decisions": [...], "arbitrator": id|None, "sql_serving": [...]}``.
        """
        topo = cluster.topology
        cfg = self.config(cluster.options)
        method = str(cfg.data_param("Arbitration", "Default")).strip().lower()
        if method != "default":
            raise UsageError(f"partition_outcome models Arbitration=Default only (config.ini has {method})")
        by_name = {n.name: n for n in topo.nodes}
        by_id = {n.nodeid: n for n in topo.nodes if n.nodeid is not None}
        seen: set[str] = set()
        for comp in components:
            for name in comp:
                if name not in by_name:
                    raise UsageError(f"partition_outcome: no node named {name!r} (nodes: {', '.join(by_name)})")
                if name in seen:
                    raise UsageError(f"partition_outcome: {name} is in two components (not a clean partition)")
                seen.add(name)
        groups = {g: {m.nodeid for m in ms} for g, ms in topo.nodegroups().items()}
        all_data = {n.nodeid for n in topo.data_nodes}
        before = ({by_name[x].nodeid for x in alive} & all_data) if alive is not None else set(all_data)
        candidates = [i for i in self._arbitrators(cfg) if i in by_id]
        rank = {c.node_id: c.arbitration_rank for c in cfg.nodes}
        if arbitrator is self._NO_ARB:
            arb, arb_source = self._running_arbitrator(cluster, candidates, by_id)
        else:
            if arbitrator is None or isinstance(arbitrator, int):
                arb = arbitrator
            elif str(arbitrator) in by_name:
                arb = by_name[str(arbitrator)].nodeid
            else:
                raise UsageError(f"partition_outcome: arbitrator {arbitrator!r} is not a node of the topology")
            arb_source = "given"
        arb_name = by_id[arb].name if arb in by_id else None
        arb_comp = next((i for i, c in enumerate(components) if arb_name in c), None)

        def cmp(n: int, prev: int) -> str:
            return f"2*{n} {'>' if 2 * n > prev else '=' if 2 * n == prev else '<'} {prev}"

        decisions, terms = [], []
        arbitrating = []
        for i, comp in enumerate(components):
            ids = {by_name[x].nodeid for x in comp if by_name[x].role == T.DATA} & before
            label = "{" + ",".join(comp) + "}"
            if not ids:
                decisions.append({"component": list(comp), "outcome": "stopped", "check": "no data nodes"})
                terms.append(f"{label}: no live data node -> nothing runs here "
                             "(its SQL nodes get 4009 'Cluster Failure' for NDB tables)")
                continue
            present = sorted(g for g, m in groups.items() if m & ids)
            complete = sorted(g for g, m in groups.items() if m and m <= ids)
            facts = (f"data nodes {','.join(str(x) for x in sorted(ids))} = {len(ids)} of {len(before)} "
                     f"({cmp(len(ids), len(before))}), node groups present {present or 'none'}, "
                     f"complete {complete or 'none'}")
            if ids == before:
                outcome, text = "win", "no data node lost: no arbitration check"
            else:
                outcome, text = arbitration_check(groups, before, ids)
            d = {"component": list(comp), "data_nodes": sorted(ids), "check": text}
            if outcome == "arbitrate":
                if arb is None:
                    d.update(outcome="stopped", arbitration="Network partitioning - no arbitrator available",
                             exit_code=2305)
                    terms.append(f"{label}: {facts} -> '{text}'; no arbitrator -> "
                                 "'Network partitioning - no arbitrator available' -> shutdown (2305)")
                elif arb_comp == i:
                    d.update(outcome="serving", arbitration=f"Arbitration won - positive reply from node {arb}")
                    terms.append(f"{label}: {facts} -> '{text}'; arbitrator {arb_name} (node {arb}, rank "
                                 f"{rank.get(arb)}) is here -> 'Arbitration won - positive reply from node {arb}'")
                elif arb_comp is None and arb_name not in seen:
                    d.update(outcome="race", arbitration=f"arbitrator node {arb} reaches every side: yes to the "
                                                         "first requester only")
                    arbitrating.append(i)
                    terms.append(f"{label}: {facts} -> '{text}'; arbitrator {arb_name} (node {arb}) is in no "
                                 "component and reaches every side -> yes only if this side asks first")
                else:
                    d.update(outcome="stopped", exit_code=2305,
                             arbitration=(f"arbitrator node {arb} unreachable: 'Network partitioning - no "
                                          "arbitrator available' or 'Arbitration lost - negative reply'"))
                    terms.append(f"{label}: {facts} -> '{text}'; arbitrator {arb_name} (node {arb}) is not here "
                                 "-> shutdown (2305)")
            else:
                d.update(outcome="serving" if outcome == "win" else "stopped",
                         **({} if outcome == "win" else {"exit_code": 2305}))
                terms.append(f"{label}: {facts} -> '{text}'" + (" -> shutdown (2305)" if outcome == "lose" else ""))
            decisions.append(d)
        serving = [list(components[i]) for i, d in enumerate(decisions) if d["outcome"] == "serving"]
        stopped = [list(components[i]) for i, d in enumerate(decisions) if d["outcome"] == "stopped"]
        race = [list(components[i]) for i in arbitrating]
        lost = sorted(before - {by_name[x].nodeid for x in seen if x in by_name})
        sql_serving = sorted(x for c in serving for x in c if by_name[x].role == T.SQL)
        if serving or race:
            sql_serving += sorted(n.name for n in topo.role(T.SQL) if n.name not in seen)
        notes = ["management and SQL nodes do not vote; an SQL node serves only in a component whose data "
                 "nodes keep running"]
        if lost:
            notes.append(f"live data nodes in no component count as lost: {','.join(map(str, lost))}")
        untouched = {n.name for n in topo.nodes if n.name not in seen}
        for comp in serving:
            if arb is not None and arb_name not in comp and arb_name not in untouched:
                nxt = [c for c in candidates if c != arb and (by_id[c].name in comp or by_id[c].name in untouched)]
                after = f"node {nxt[0]}" if nxt else "none: it runs without one"
                notes.append(f"{{{','.join(comp)}}} no longer reaches arbitrator node {arb}: its president selects "
                             f"the next candidate it reaches ({after})")
        if arb is not None and len(candidates) > 1 and any("arbitration" in d for d in decisions):
            notes.append(f"assumes the data nodes see the split before they notice the loss of arbitrator node {arb} "
                         "[UNVERIFIED timing: management/API links and data node links have their own heartbeats]; "
                         "if the president loses the arbitrator first it selects the next candidate it reaches and "
                         "the side that holds that one wins instead")
        # Timing, from the heartbeat ring (measured on 9.7.2, see partition_bounds):
        tm = self.timings(cluster.options)
        shut_down, decision_bound, detection_bound = [], 0.0, 0.0
        for d in decisions:
            if not d.get("data_nodes"):
                continue
            lost_here = len(before - set(d["data_nodes"]))
            if d["outcome"] == "stopped":
                shut_down += [by_id[x].name for x in d["data_nodes"]]
                decision_bound = max(decision_bound, partition_bounds(tm, lost_here, len(d["data_nodes"]))[1])
            elif d["outcome"] == "serving" and lost_here:
                detection_bound = max(detection_bound, partition_bounds(tm, lost_here, len(d["data_nodes"]))[0])
        if shut_down:
            notes.append(f"the data nodes of stopped components ({', '.join(sorted(shut_down))}) shut down once they "
                         f"have found every unreachable data node around the heartbeat ring: within "
                         f"{decision_bound:.0f} s of the cut")
        rule = ("reference/ndb.md 5.1 (arbitration check per component of data nodes, in the order of "
                "QmgrMain.cpp handleArbitCheck; alive before: "
                f"{len(before)}; node groups {'; '.join(f'{g}:{sorted(m)}' for g, m in groups.items())}; "
                f"arbitrator {arb_name or 'none'}{f' (node {arb})' if arb is not None else ''}, {arb_source}): "
                + "; ".join(terms) + ". " + "; ".join(notes))
        exit_codes = {by_id[x].name: d["exit_code"] for d in decisions if d["outcome"] == "stopped"
                      for x in d.get("data_nodes", []) if d.get("exit_code")}
        return {"serving": serving, "stopped": stopped, "race": race, "rule": rule, "decisions": decisions,
                "arbitrator": arb, "arbitrator_source": arb_source, "lost_data_nodes": lost,
                "sql_serving": sql_serving, "shut_down": sorted(shut_down), "exit_codes": exit_codes,
                "decision_bound_s": round(decision_bound, 3) if shut_down else None,
                "detection_bound_s": round(detection_bound, 3) if detection_bound else None}

    def node_rejoining(self, status, node: str) -> bool:
        """Is ``node`` in the middle of recovery, as the NDB status shows it?

        * data node: its container runs and it is in a start phase: ``starting`` in ndb_mgm
          (``Node N: starting (Last completed phase P)``, ndb.md 2.2) or ndbinfo.nodes
          ``start_phase`` > 0 / status STARTING (ndb.md 4, 7);
        * SQL node: mysqld runs but does not yet see every data node that the status shows
          started: it answers SQL and its ndbinfo.nodes misses one of them, or it does not answer
          SQL yet while ndb_mgm already lists its API node id as connected (mysqld accepts clients
          only after ndb-wait-connected, ndb.md 6.3);
        * management node: the base rule (container running, not healthy, not down).
        """
        ns = status.node(node)
        if ns.container != "running" or ns.healthy:
            return False
        d = ns.details or {}
        state = (ns.state or "").lower()
        if ns.role == T.DATA:
            phase = d.get("start_phase")
            return state.startswith("starting") or (isinstance(phase, int) and phase > 0
                                                     and not state.startswith(self.MEMBER_STATES))
        if ns.role == T.SQL:
            started = {x.details.get("nodeid") for x in status.nodes if x.role == T.DATA and x.healthy}
            started.discard(None)
            if "ndbinfo_nodes" in d:
                sees = {int(r["node_id"]) for r in d["ndbinfo_nodes"] if str(r.get("status")) == "STARTED"}
                return bool(started - sees)
            return state == "unreachable" and d.get("mgm_state") == "connected"
        return super().node_rejoining(status, node)
