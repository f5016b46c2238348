"""What a Galera cluster looks like right now: the wsrep status variables of every data node
(docs/facts.md Galera A2), and the judgement of a loss and of a rejoin."""

from __future__ import annotations

from ...runtimes import docker
from ... import topology as TP
from ...vocabulary import ClusterStatus, NodeStatus
from ..parts import StatusPart
from .rules import data_count

STATUS_VARS = ("wsrep_cluster_status", "wsrep_local_state_comment", "wsrep_ready", "wsrep_connected",
               "wsrep_cluster_size", "wsrep_cluster_conf_id", "wsrep_cluster_state_uuid",
               "wsrep_last_committed", "wsrep_local_state", "wsrep_evs_state")
STATUS_SQL = "SHOW GLOBAL STATUS WHERE Variable_name IN (" + ",".join(f"'{v}'" for v in STATUS_VARS) + ")"


class GaleraStatus(StatusPart):
    """The Status part: node_vars, status, expected_members, node_failed, loss_detected,
    node_rejoining."""

    # -- status -------------------------------------------------------------------------------
    def node_vars(self, node: TP.Node) -> dict:
        def query(cur):
            cur.execute(STATUS_SQL)
            return dict(cur.fetchall())

        return self.monitor_query(node, query)

    def expected_members(self, cluster) -> int:
        return data_count(cluster.options) + 1  # garbd votes and counts in wsrep_cluster_size

    def status(self, cluster) -> ClusterStatus:
        topo = cluster.topology
        expected = self.expected_members(cluster)
        nodes, problems = [], []
        data_vars = {}
        for n in topo.nodes:
            try:
                c = cluster.container(n)
                cstate = docker.container_state(c)
            except Exception:
                cstate = "gone"
            if n.role == TP.DATA:
                if cstate == "running" and n.sql_port is None:
                    cluster.discover()
                    n = cluster.topology.node(n.name)
                v = self.node_vars(n) if cstate == "running" and n.sql_port else {}
                if cstate != "running":
                    self.monitor.drop(n.name)
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
                                    + (f", size {v.get('wsrep_cluster_size')}/{expected}"
                                       if v.get("wsrep_cluster_size") else "")
                                    + (f", {v['error']}" if 'error' in v else "") + ")")
            elif n.role == TP.ARBITRATOR:
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

    def node_failed(self, node) -> bool:
        """A data node has failed when its container does not run, it does not answer, or it is
        out of the primary component; a Synced member of a primary component short of a member
        (not healthy: its size is not the expected one) has not. garbd: its container."""
        if node.container != "running" or node.state in ("down", "unreachable", "gone"):
            return True
        if node.role != TP.DATA:
            return False
        d = node.details or {}
        return d.get("wsrep_cluster_status", "").lower() != "primary" or d.get("wsrep_connected") != "ON"

    def loss_detected(self, status: ClusterStatus, lost: list[str]) -> bool:
        members = status.summary.get("expected_members", 0)
        lost_votes = len(lost)
        survivors = [n for n in status.nodes if n.role == TP.DATA and n.node not in lost]
        return bool(survivors) and all(
            n.details.get("wsrep_cluster_status", "").lower() == "primary"
            and n.details.get("wsrep_ready") == "ON"
            and int(n.details.get("wsrep_cluster_size") or 0) == members - lost_votes
            for n in survivors)


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
