"""What an NDB cluster looks like right now: ``status()`` from ndb_mgm (SHOW + ALL STATUS, exec'd
in the first management container that answers) and from ndbinfo through every SQL node, the
judgement of a loss and of a rejoin, the master and the arbitrator in effect: the Status part
(``NdbStatus``); and the events of the nodes' logs: the Logs part (``NdbLogs``).

Healthy (ndb.md section 10): every data node ``started`` in ndb_mgm, every SQL node answering and
listing every data node as STARTED in ``ndbinfo.nodes``, and exactly one agreed, connected
arbitrator in ``ndbinfo.arbitrator_validity_summary``.
"""

from __future__ import annotations

from ...runtimes import docker
from ... import topology as TP
from ...events import merge_streams
from ...vocabulary import ClusterStatus, NodeStatus
from ..parts import LogsPart, Monitor, StatusPart
from .clusterlog import ClusterLogFollower
from .layout import NdbLayouts
from .mgm import parse_show
from .shell import NdbShell
from .ndbinfo import arbitrator_summary, arbitrator_validity_summary, nodes_ready, president, started_ids, succession
from .ndbinfo import membership as read_membership
from .ndbinfo import nodes as read_nodes
from .rules import arbitrator_candidates


class NdbStatus(StatusPart):
    """status, sql_probe, expected_members, node_failed, loss_detected, node_rejoining,
    master_node, succession, arbitrator_in_effect: read through the monitoring connections, the
    management client (``shell``) and the layout's configuration (``layouts``)."""

    def __init__(self, monitor: Monitor, shell: NdbShell, layouts: NdbLayouts):
        super().__init__(monitor)
        self.shell, self.layouts = shell, layouts

    def expected_members(self, cluster) -> int:
        """Data nodes of the layout: what ndbinfo.nodes must list."""
        return len(self.layouts.config(cluster.options).data_nodes)

    # -- status -------------------------------------------------------------------------------
    def sql_probe(self, node: TP.Node, full: bool = False) -> dict:
        """What one SQL node sees: ``{"nodes": [...]}`` (+ ``arbitrator``, ``membership`` when
        ``full``), or ``{"error": "errno: message"}``."""
        def query(cur):
            out = {"nodes": read_nodes(cur)}
            if full:
                out["arbitrator"] = arbitrator_validity_summary(cur)
                out["membership"] = read_membership(cur)
            return out

        return self.monitor_query(node, query)

    def status(self, cluster) -> ClusterStatus:
        topo = cluster.topology
        expected_ids = [n.nodeid for n in topo.data_nodes]
        cstates = {}
        for n in topo.nodes:
            try:
                cstates[n.name] = docker.container_state(cluster.container(n))
            except Exception:
                cstates[n.name] = "gone"
        rep, mgm_source = self.shell.mgm_report(cluster)
        if rep is not None:
            self.shell.reapply_clusterlog(cluster, cstates)
        nodes: list[NodeStatus] = []
        problems: list[str] = []
        # SQL nodes first: their view of ndbinfo is the fallback when no management node answers.
        sql_views: dict[str, dict] = {}
        full_done = False
        for n in topo.role(TP.SQL):
            if cstates[n.name] == "running" and n.sql_port is None:
                cluster.discover()
                topo = cluster.topology
                n = topo.node(n.name)
            if cstates[n.name] != "running" or not n.sql_port:
                self.monitor.drop(n.name)
                sql_views[n.name] = {"error": f"container {cstates[n.name]}"}
                continue
            v = self.sql_probe(n, full=not full_done)
            if "error" not in v and not full_done:
                full_done = True
            sql_views[n.name] = v
        answering = {k: v for k, v in sql_views.items() if "error" not in v}
        arb = arbitrator_summary(next((v["arbitrator"] for v in answering.values() if "arbitrator" in v), []))
        membership = next((v["membership"] for v in answering.values() if "membership" in v), [])
        ndbinfo_rows = next((v["nodes"] for v in answering.values()), None)
        # Each answering SQL node's view of its cluster: the data nodes STARTED in ndbinfo.nodes.
        # In a partition the management servers see only their own side (loss_detected).
        sql_started = {k: started_ids(v["nodes"]) for k, v in answering.items()}

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

        for n in topo.role(TP.MGM):
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

        for n in topo.role(TP.SQL):
            cstate = cstates[n.name]
            v = sql_views.get(n.name, {})
            details = {"nodeid": n.nodeid, "sql_port": n.sql_port}
            if "error" in v:
                state = "down" if cstate != "running" else "unreachable"
                ok = False
                details["error"] = v["error"]
            else:
                ready, why = nodes_ready(v["nodes"], expected_ids)
                details["ndbinfo_nodes"] = v["nodes"]
                state = "ready" if ready else "no cluster" if not v["nodes"] else "partial cluster"
                ok = ready
                if not ready:
                    details["why"] = why
            if rep is not None and rep.node(n.nodeid) is not None:
                details["mgm_state"] = rep.node(n.nodeid).status
            nodes.append(NodeStatus(n.name, n.role, cstate, state, ok, details))
            if not ok:
                why = f" ({v['error']})" if "error" in v else (
                    f" ({'; '.join(details.get('why', [])[:2])})" if details.get("why") else "")
                problems.append(f"{n.name}: SQL {state}{why}")

        if answering and not arb["agreed"]:
            problems.append(f"no agreed arbitrator (arbitrator_validity_summary: {arb['rows']} row(s), "
                            f"arbitrator {arb['arbitrator']}, connected {arb['arb_connected']})")

        by_id = {n.nodeid: n.name for n in topo.nodes if n.nodeid is not None}
        summary = {
            "expected_members": len(expected_ids),
            "data_started": sum(1 for s in nodes if s.role == TP.DATA and s.healthy),
            "nodegroups": (rep.nodegroups() if rep is not None and rep.nodegroups()
                           else {g: [m.nodeid for m in ms] for g, ms in topo.nodegroups().items()}),
            "master": rep.master if rep is not None else None,
            "president": president(membership) if membership else None,
            "arbitrator": arb["arbitrator"],
            "arbitrator_node": by_id.get(arb["arbitrator"]),
            "arbitrator_agreed": arb["agreed"],
            "arbitrator_rows": arb["rows"],
            "mgm_source": mgm_source,
            "sql_answering": sorted(answering),
            "sql_started": sql_started,
        }
        return ClusterStatus(cluster.clock.now(), nodes, not problems, problems, summary)

    #: data node states (ndb_mgm status_string / ndbinfo.nodes.status, lower case) in which the
    #: management server still counts the node as a member of the running cluster
    MEMBER_STATES = ("started", "single user mode", "singleuser", "shutting down", "stopping_1", "stopping_2",
                     "stopping_3", "stopping_4")

    def _excluded(self, ns: NodeStatus) -> bool:
        """Has the cluster let go of this (lost) node? docs/facts.md NDB 5: a failed data node shows ``not
        connected`` in ndb_mgm (no row in ndbinfo.nodes); an API/SQL or management node likewise
        once its heartbeats stop. A node whose container is paused or cut off but which the
        management server still reports as a member (``started``, an API ``connected``) is not
        excluded yet: that is the heartbeat window (ndb.md 5.2)."""
        if ns.healthy:
            return False
        state = (ns.state or "").split(" (", 1)[0].strip().lower()
        if ns.role == TP.DATA:
            return state not in self.MEMBER_STATES and state not in ("unknown", "not reported")
        if ns.role == TP.SQL:
            return (ns.details or {}).get("mgm_state") in (None, "not connected")
        if ns.role == TP.MGM:
            return state != "connected"
        return True

    def node_failed(self, node) -> bool:
        """A data node has failed when it is not started, a management node when it is not
        connected, an SQL node when its container does not run or it does not answer: a mysqld
        that sees only part of the data nodes (not healthy: "partial cluster") has not failed,
        the data nodes it misses have."""
        if node.role == TP.SQL:
            return node.container != "running" or node.state in ("down", "unreachable")
        return not node.healthy

    def loss_detected(self, status: ClusterStatus, lost: list[str]) -> bool:
        """docs/facts.md NDB 5: the lost nodes are out (a data node ``not connected`` in ndb_mgm, or no
        ndbinfo.nodes row; not merely a stopped container that ndb_mgm still lists as started)
        and every surviving data node is ``started``."""
        lost_set = set(lost)
        data = [n for n in status.nodes if n.role == TP.DATA]
        gone = [n for n in status.nodes if n.node in lost_set]
        survivors = [n for n in data if n.node not in lost_set]
        if not survivors:
            return False
        if all(n.healthy for n in survivors):
            return all(self._excluded(n) for n in gone)
        return self._survivors_view_excludes(status, survivors, gone)

    def _survivors_view_excludes(self, status: ClusterStatus, survivors: list, gone: list) -> bool:
        """When the management server does not see every survivor started, the same seen from
        the survivors' side: an SQL node whose ndbinfo.nodes lists every survivor STARTED and
        none of the lost data nodes, and every other lost node excluded. A partition can leave
        every ndb_mgmd with the side that shuts down (one node group of 3 split 1/2, the
        arbitrator with the 1): the management servers then report the survivors "not
        connected" and the lost node "started" until it stops by its own decision, while the
        survivors excluded it a heartbeat round after the cut (9.7.2: 4.7 s, its shutdown
        10.3 s). Where the management server sees the survivors, its view decides."""
        want = {n.details.get("nodeid") for n in survivors}
        lost_ids = {n.details.get("nodeid") for n in gone if n.role == TP.DATA}
        if not all(n.container == "running" for n in survivors) or \
                not all(self._excluded(n) for n in gone if n.role != TP.DATA):
            return False
        views = (set(ids) for ids in (status.summary.get("sql_started") or {}).values())
        return any(want <= ids and not (lost_ids & ids) for ids in views)

    # -- roles in effect -------------------------------------------------------------------
    def master_node(self, cluster):
        """The master (president) data node: the ``*`` of ``ndb_mgm -e show`` (ndb.md 2.1) from
        the first management node that answers; else ``ndbinfo.membership.president`` (ndb.md 4)
        as an SQL node sees it, when every row agrees. None when neither answers or the id is
        not a data node of the topology."""
        topo = cluster.topology
        data = {n.nodeid: n for n in topo.data_nodes}
        try:
            code, out, _ = self.shell.mgm(cluster, "show")
        except Exception:  # no Docker, a container vanished: no answer, not an error
            code, out = -1, ""
        if code == 0 and "Cluster Configuration" in out:
            nid = parse_show(out).master
            if nid in data:
                return data[nid]
        for n in sorted(topo.role(TP.SQL), key=lambda n: n.nodeid or 0):
            if not n.sql_port:
                continue
            v = self.sql_probe(n, full=True)
            if "error" in v or not v.get("membership"):
                continue
            nid = president(v["membership"])
            if nid in data:
                return data[nid]
        return None

    def succession(self, cluster) -> list:
        """Data nodes in the order they become master (president first), from
        ``ndbinfo.membership`` through the first SQL node that answers (``ndbinfo.succession``);
        empty when none answers."""
        data = {n.nodeid: n for n in cluster.topology.data_nodes}
        for n in sorted(cluster.topology.role(TP.SQL), key=lambda n: n.nodeid or 0):
            if not n.sql_port:
                continue
            v = self.sql_probe(n, full=True)
            if "error" in v or not v.get("membership"):
                continue
            order = [data[i] for i in succession(v["membership"]) if i in data]
            if order:
                return order
        return []

    def arbitrator_in_effect(self, cluster):
        """The management node the data nodes use as arbitrator now: ndbinfo's
        arbitrator_validity_summary through an SQL node; else the first running candidate by
        ArbitrationRank (``running_arbitrator``)."""
        cfg = self.layouts.config(cluster.options)
        by_id = {n.nodeid: n for n in cluster.topology.nodes if n.nodeid is not None}
        nid, _ = self.running_arbitrator(cluster, [i for i in arbitrator_candidates(cfg) if i in by_id], by_id)
        return by_id.get(nid)

    def running_arbitrator(self, cluster, candidates: list[int], by_id: dict) -> tuple[int | None, str]:
        """The arbitrator in effect: what ndbinfo.arbitrator_validity_summary says through an SQL
        node; else the first candidate by ArbitrationRank whose container runs; else, when no
        container state can be read (no Docker), the first candidate of the configuration."""
        for n in sorted(cluster.topology.role(TP.SQL), key=lambda n: n.nodeid or 0):
            if not n.sql_port:
                continue
            try:
                v = self.sql_probe(n, full=True)
            except Exception:
                continue
            if "error" not in v and v.get("arbitrator"):
                arb = arbitrator_summary(v["arbitrator"])
                if arb["agreed"] and arb["arbitrator"] in by_id:
                    return arb["arbitrator"], f"ndbinfo.arbitrator_validity_summary via {n.name}"
        states = {}
        for i in candidates:
            try:
                states[i] = docker.container_state(cluster.container(by_id[i]))
            except Exception:
                states[i] = "gone"
        running = [i for i in candidates if states[i] == "running"]
        if running:
            return running[0], "lowest ArbitrationRank among the running candidates"
        if candidates and all(s == "gone" for s in states.values()):
            return candidates[0], "lowest ArbitrationRank in config.ini (container states unknown)"
        return None, "no arbitrator candidate is running"

    def node_rejoining(self, status, node: str) -> bool:
        """Is ``node`` in the middle of recovery, as the NDB status shows it?

        * data node: its container runs and it is in a start phase: ``starting`` in ndb_mgm
          (``Node N: starting (Last completed phase P)``, docs/facts.md NDB 2.2) or ndbinfo.nodes
          ``start_phase`` > 0 / status STARTING (ndb.md 4, 7);
        * SQL node: mysqld runs but does not yet see every data node that the status shows
          started: it answers SQL and its ndbinfo.nodes misses one of them, or it does not answer
          SQL yet while ndb_mgm already lists its API node id as connected (mysqld accepts clients
          only after ndb-wait-connected, docs/facts.md NDB 6.3);
        * management node: the base rule (container running, not healthy, not down).
        """
        ns = status.node(node)
        if ns.container != "running" or ns.healthy:
            return False
        d = ns.details or {}
        state = (ns.state or "").lower()
        if ns.role == TP.DATA:
            phase = d.get("start_phase")
            return state.startswith("starting") or (isinstance(phase, int) and phase > 0
                                                     and not state.startswith(self.MEMBER_STATES))
        if ns.role == TP.SQL:
            started = {x.details.get("nodeid") for x in status.nodes if x.role == TP.DATA and x.healthy}
            started.discard(None)
            if "ndbinfo_nodes" in d:
                sees = {int(r["node_id"]) for r in d["ndbinfo_nodes"] if str(r.get("status")) == "STARTED"}
                return bool(started - sees)
            return state == "unreachable" and d.get("mgm_state") == "connected"
        return super().node_rejoining(status, node)


class NdbLogs(LogsPart):
    """The events of a run: every data node's own log and the cluster log of every management
    node, merged; and a follower of a management node's cluster log (the ability ``ClusterLog``)."""

    def collect_events(self, cluster, since: float) -> list[dict]:
        """Events from run time ``since``: the cluster log of every running management node
        (each gets every data node's reports; a killed ndb_mgmd misses what happened while it was
        down) and every data node's own log (its container output). The node's own log is not
        optional: a node that shuts itself down may never get its last reports to ndb_mgmd (9.7.2,
        whole node group killed: "Arbitration check lost - missing node group" appeared only in
        the survivors' own logs). Duplicates across logs are merged (``events.merge_streams``)."""
        # the data nodes' own logs first: their stamps are when it happened
        streams = [self.node_log_events(cluster, n, since, reporter=n.nodeid)
                   for n in sorted(cluster.topology.data_nodes, key=lambda n: n.nodeid or 0)]
        for mgm in sorted(cluster.topology.role(TP.MGM), key=lambda n: n.nodeid or 0):
            streams.append(self.cluster_log_follower(cluster, mgm).poll())
        # A cluster log's copy can be late by as long as the node could not reach that ndb_mgmd
        # (a partition; 9.7.2: a forced shutdown logged 5 s later by ndb_mgmd after the heal).
        merged = merge_streams(streams, window=2.0, late=self.CLUSTER_LOG_LATE_S)
        return [e for e in merged if e.get("t") is None or e["t"] >= since - 1]

    #: how much later than the node's own log a cluster log may list the same report: the
    #: longest a node is cut off from ndb_mgmd in our scenarios (a partition's hold), our bound
    CLUSTER_LOG_LATE_S = 60.0

    def cluster_log_follower(self, cluster, node: TP.Node | None = None, keep_other: bool = False):
        """A follower of a management node's cluster log (see ndbchaos.engines.ndb.clusterlog)."""
        return ClusterLogFollower(cluster, node, keep_other=keep_other)

