"""The expected outcome of the management and SQL node families and of the restarts (a data
node restarted without a management node, the whole cluster, one node after the other), as pure
functions of ``Facts``, the arbitrator in effect and the scenario's keywords.
"""

from __future__ import annotations

from ... import topology as TP
from ...errors import UsageError
from ...vocabulary import Expectation
from .expect_data import data_loss
from .expect_facts import Facts
from .rules import CONTAINER_START_SLACK, MGMD_START_BOUND, crash_loss_window_s


def mgmnode_loss(f: Facts, arbitrator, kw: dict) -> Expectation:
    by_id = f.by_id
    mgms = [n for n in f.topo.role(TP.MGM)]
    lost = f.ids_of(kw.get("nodes") or ([by_id[arbitrator].name] if arbitrator in by_id else [mgms[0].name]))
    remaining = [i for i in f.candidates if i not in lost]
    was_arbitrator = arbitrator in lost
    new_arb = remaining[0] if was_arbitrator and remaining else (arbitrator if not was_arbitrator else None)
    rule = ("docs/facts.md NDB 5.1 (management node loss): mgmd is not needed for data traffic; "
            + (f"the arbitrator moves to the next candidate, node {new_arb}" if was_arbitrator and new_arb
               else "no other arbitrator candidate: the cluster runs without one" if was_arbitrator
               else f"the arbitrator (node {arbitrator}) is unaffected"))
    return Expectation(
        family=f.family, survivors_serve=True, cluster_survives=True, rule=rule,
        detection_bound_s=f.det_api + (f.arb_to if was_arbitrator else 0.0),
        recovery_bound_s=MGMD_START_BOUND + CONTAINER_START_SLACK, recovery="node_restart",
        details={"lost": f.names(lost), "arbitrator_before": arbitrator, "arbitrator_after": new_arb,
                 "arbitrator_after_node": by_id[new_arb].name if new_arb in by_id else None,
                 "expected_events": (["arbitrator_lost", "arbitrator_prepared", "arbitrator_started"]
                                     if was_arbitrator and new_arb else
                                     ["arbitrator_lost"] if was_arbitrator else []),
                 "client_errors": {"expected": "none"},
                 "recovery_bound_note": "[UNVERIFIED] no documented ndb_mgmd start time",
                 "timing": f.timing})


def all_mgmnodes_loss(f: Facts, arbitrator, kw: dict) -> Expectation:
    lost = {n.nodeid for n in f.topo.role(TP.MGM)}
    others = [i for i in f.candidates if i not in lost]
    return Expectation(
        family=f.family, survivors_serve=True, cluster_survives=True,
        rule=("docs/facts.md NDB 5.1 (management node loss): data traffic continues; "
              + ("no arbitrator candidate is left (SQL nodes have ArbitrationRank 0), so the cluster "
                 "runs without an arbitrator and the next even split or half loss stops it"
                 if not others else f"arbitration moves to API node {others[0]}")),
        detection_bound_s=f.det_api + f.arb_to,
        recovery_bound_s=MGMD_START_BOUND + CONTAINER_START_SLACK, recovery="node_restart",
        details={"lost": f.names(lost), "arbitrator_before": arbitrator,
                 "arbitrator_after": others[0] if others else None,
                 "expected_events": ["arbitrator_lost"],
                 "status_note": "no ndb_mgm answers: data node states come from ndbinfo through the SQL nodes",
                 "client_errors": {"expected": "none"},
                 "timing": f.timing})


def restart_without_mgm(f: Facts, arbitrator, kw: dict) -> Expectation:
    """Every management node and a data node killed together; the data node is started again at
    once and must wait for a management server (it fetches its configuration from one before it
    starts). The survivors decide without an arbitrator: the loss of one data node of four needs
    none."""
    nodes = [f.name_of(x) for x in kw.get("nodes") or
             [f.topo.data_nodes[0].name, *(n.name for n in f.topo.role(TP.MGM))]]
    data = {f.by_name[n].nodeid for n in nodes if f.by_name[n].role == TP.DATA}
    mgms = {n.nodeid for n in f.topo.role(TP.MGM)}
    if not data or {f.by_name[n].nodeid for n in nodes} - data != mgms:
        raise UsageError("datanode_restart_without_mgm: give data node(s) and every management node, "
                         f"got {', '.join(nodes) or 'none'}")
    exp = data_loss(f, None, data, True, f.family)
    if not exp.cluster_survives:
        raise UsageError(f"datanode_restart_without_mgm: losing {f.names(data)} with no arbitrator stops "
                         "the cluster; choose fewer data nodes")
    exp.rule += ("; every management node is down, so the data node's restart waits for one (a data node "
                 "gets its configuration from a management server before it starts) and completes only "
                 "after the heal starts them; data traffic never needs them")
    exp.recovery_bound_s = MGMD_START_BOUND + f.rec_node
    exp.details.update(lost=f.names(data | mgms), arbitrator=None, arbitrator_after=None,
                       held_down={"nodes": f.names(data), "min_s": float(kw.get("held_s") or 0.0),
                                  "why": "started again at once, it must stay unstarted until a management "
                                         "node runs (measured on 9.7.2: waited > 100 s, started 19 s after "
                                         "the management nodes)"},
                       recovery_bound_note="[UNVERIFIED] ndb_mgmd start (MGMD_START_BOUND) + the node restart bound")
    return exp


def sqlnode_loss(f: Facts, arbitrator, kw: dict) -> Expectation:
    lost_sql = [f.name_of(x) for x in (kw.get("nodes") or f.sqls[:1])]
    others = [s for s in f.sqls if s not in lost_sql]
    return Expectation(
        family=f.family, survivors_serve=bool(others), cluster_survives=True,
        rule=("docs/facts.md NDB 5.1 and NDB 10: an SQL node is an API node; its loss affects only its own clients "
              "(the data nodes declare it dead after HeartbeatIntervalDbApi x 4-5 and clean up its "
              "transactions); the other SQL nodes are unaffected"),
        detection_bound_s=f.det_api, recovery_bound_s=f.rec_sql, recovery="node_restart",
        details={"lost": lost_sql, "unaffected": others,
                 # every data node reports the API node's disconnection (measured on 9.7.2)
                 "expected_events": ["node_disconnected"],
                 "client_errors": {"lost_node": "connection errors (2013/2006/2003; unknown result when in flight)",
                                   "other_nodes": "none"},
                 "timing": f.timing})


def system_restart(f: Facts, arbitrator, kw: dict) -> Expectation:
    """Every data node stops and the cluster restarts from its last completed global checkpoint
    (docs/facts.md NDB 7). ``how``: ``graceful`` (ALL RESTART: the shutdown completes a global
    checkpoint first, so no acknowledged commit may be lost), ``abort`` (ALL RESTART -a) or
    ``kill`` (SIGKILL of every data node at once): acknowledged commits of the last
    2 x TimeBetweenGlobalCheckpoints may be lost. ALL RESTART leaves the data nodes' angels
    running, so they start again by themselves; after a kill the heal starts the containers."""
    how = kw.get("how") or "graceful"
    if how not in ("graceful", "abort", "kill"):
        raise UsageError(f"system_restart: how={how!r} (graceful, abort or kill)")
    window = 0.0 if how == "graceful" else crash_loss_window_s(f.tm)
    what = {"graceful": "ALL RESTART: a graceful cluster shutdown (a last global checkpoint, then every data "
                        "node stops), then a system restart by the angels",
            "abort": "ALL RESTART -a: every data node stops at once without a last checkpoint, then a system "
                     "restart by the angels",
            "kill": "every data node killed at the same moment: a system restart once they are started again"}[how]
    return Expectation(
        family=f.family, survivors_serve=False, cluster_survives=False,
        rule=f"docs/facts.md NDB 7: {what}; recovered to the last completed global checkpoint",
        # clients are told at once: the API nodes lose every data node (a kill closes the
        # connections; a shutdown tells them), so the last success is within one detection bound
        detection_bound_s=f.det_data, recovery_bound_s=f.rec_system, recovery="system_restart",
        details={"how": how, "lost": f.names(f.data_ids), "arbitrator": arbitrator,
                 "gcp_loss_window_s": window,
                 "durability": ("no acknowledged commit lost: a graceful shutdown completes a global checkpoint"
                                if how == "graceful" else
                                f"acknowledged commits of the last {window:g} s before the stop may be lost "
                                "(2 x TimeBetweenGlobalCheckpoints)"),
                 # measured on 9.7.2: ALL RESTART logs "Cluster shutdown initiated" and "Node shutdown
                 # completed, restarting" on every node; -a only the latter; every way ends in
                 # "System Restart: master node ..., gci: N" and "Restarting cluster to GCI: N"
                 "expected_events": {"graceful": ["shutdown_initiated", "shutdown_completed"],
                                     "abort": ["shutdown_completed"], "kill": []}[how]
                 + ["system_restart", "restart_gci"],
                 **({"unexpected_events": ["forced_shutdown"]} if how != "kill" else {}),
                 "client_errors": {"expected": [4009], "class": "unknown",
                                   "text": "4009 'Cluster Failure', connection errors and NR-class errors "
                                           "while the data nodes are down"},
                 "timing": f.timing})


def rolling_restart(f: Facts, arbitrator, kw: dict) -> Expectation:
    """Every data node restarted through the management server, one at a time, each only once the
    previous is started again: at every moment each node group has a live member and the
    restarting node hands its work over first, so the cluster never stops. Zero outage:
    ``max_outage_s`` 0, i.e. no SQL node has an outage at all as the availability checker
    defines one (a gap between successes longer than max(0.2 s, 3 x the baseline's p99 gap));
    temporary errors are allowed, a pause is not."""
    nodes = f.names(f.ids_of(kw.get("nodes") or [n.name for n in f.topo.data_nodes]))
    return Expectation(
        family=f.family, survivors_serve=True, cluster_survives=True,
        rule=("docs/facts.md NDB 7: node restarts one at a time: each node group keeps a live member and a "
              "graceful restart hands the node's work over first, so the cluster never stops"),
        detection_bound_s=f.det_data, recovery_bound_s=f.rec_node, recovery="node_restart",
        details={"order": nodes, "lost": nodes, "excluded": [], "max_outage_s": 0.0,
                 "client_errors": {"during_restart": "temporary (NR class) only"},
                 "timing": f.timing})

