"""The expected outcome of the data node families (a node or several lost, a node group lost,
the halves of a partition), as pure functions of ``Facts``, the arbitrator in effect and the
scenario's keywords.
"""

from __future__ import annotations

from ...errors import UsageError
from ...vocabulary import Expectation
from .expect_facts import ALONE_THAW_EXIT, BACKUP_ABORTED_BY_NODE_FAILURE, DECLARED_DEAD_EXIT, SEC51, Facts
from .rules import HEARTBEATS_TO_DETECT, arbitration_check, crash_loss_window_s, partition_bounds


def master_after(f: Facts, lost: set[int], succession) -> dict:
    """Who is master after the loss (``succession``: data node ids in the order they take over,
    the master first, as ``ndbinfo.membership`` gives it before the fault). NDB's rule: the next
    master is the oldest surviving node, the one that joined the cluster first (lowest dynamic
    id), which is not the lowest node id. Empty without a succession order."""
    order = [int(i) for i in succession or [] if int(i) in f.data_ids]
    if not order:
        return {}
    after = next((i for i in order if i not in lost), None)
    if after is None:
        return {}
    return {"master_before": order[0], "master_after": after, "succession": order,
            "master_lost": order[0] in lost}


def data_loss(f: Facts, arbitrator, lost: set[int], simultaneous: bool, fam: str,
               succession=None) -> Expectation:
    """Data nodes lost together (one arbitration check) or one after the other (a check each)."""
    names = f.names
    survivors = f.data_ids - lost
    steps = []
    if simultaneous or len(lost) <= 1:
        outcome, text = arbitration_check(f.groups, f.data_ids, survivors)
        steps.append({"lost": names(lost), "survivors": names(survivors), "check": text})
    else:  # one at a time: each check is against the nodes alive just before it
        alive = set(f.data_ids)
        outcome, text = "win", ""
        for nid in sorted(lost):
            outcome, text = arbitration_check(f.groups, alive, alive - {nid})
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
        master = master_after(f, lost, succession)
        master_rule = ""
        if master.get("master_lost"):
            master_rule = (f"; the master (node {master['master_before']}) is lost: node {master['master_after']}, "
                           "the oldest survivor by the order the nodes joined (ndbinfo.membership.succession_order), "
                           "takes over")
        events = ["node_disconnected", "arbitration_check_won" if outcome == "win" else "arbitration_required",
                  *(["arbitration_won"] if outcome == "arbitrate" else []), "node_failure_completed"]
        return Expectation(
            family=fam, survivors_serve=True, cluster_survives=True,
            rule=f"{SEC51}: {text}" + (f"; arbitrator node {arbitrator} says yes" if outcome == "arbitrate" else "")
            + master_rule,
            detection_bound_s=f.det_data_arb if outcome == "arbitrate" else f.det_data,
            recovery_bound_s=f.rec_node, recovery="node_restart",
            details={"decision": steps, "lost": names(lost), "survivors": names(survivors),
                     "arbitrator": arbitrator, "expected_events": events, **master,
                     # a majority needs no arbitrator: asking it would be another rule at work
                     **({"unexpected_events": ["arbitration_required"]} if outcome == "win" else {}),
                     "client_errors": {"during_failover": "temporary (NR class, e.g. 286, 4025, 1204; 1297); "
                                                         "4010 of unknown outcome (finding 22)",
                                       "after": "none"},
                     "timing": f.timing})
    if not survivors:
        return everyone_lost(f, arbitrator, lost, steps, fam)
    return Expectation(
        family=fam, survivors_serve=False, cluster_survives=False,
        rule=(f"{SEC51}: {text} -> every remaining data node shuts down (2305); "
              "the cluster needs a system restart"),
        detection_bound_s=f.det_data_arb, recovery_bound_s=f.rec_system, recovery="system_restart",
        details={"decision": steps, "lost": names(lost), "shut_down": names(survivors),
                 # a kill closes TCP connections: the survivors learn at once and decide
                 "decision_bound_s": f.det_data_arb,
                 "exit_code": 2305, "exit_codes": {x: 2305 for x in names(survivors)},
                 "arbitrator": arbitrator,
                 "gcp_loss_window_s": crash_loss_window_s(f.tm),
                 "expected_events": ["arbitration_check_lost", "forced_shutdown"],
                 "client_errors": {"expected": [4009], "class": "unknown",
                                   "text": "ERROR 1296: Got error 4009 'Cluster Failure' from NDBCLUSTER "
                                           "(or 157 / connection errors); NR-class 1297 errors while it shuts down"},
                 "timing": f.timing})


def everyone_lost(f: Facts, arbitrator, lost: set[int], steps: list, fam: str) -> Expectation:
    """Every data node lost at once (a one-group layout's node group): no survivor is left to
    make an arbitration check or shut down, so none of the events of a lost check can appear
    (measured on 9.7.2, nodegroups=1,replicas=3: the expectation that asked for them failed);
    what the nodes log is the system restart after the heal, as when every data node is killed
    (``system_restart`` how=kill)."""
    return Expectation(
        family=fam, survivors_serve=False, cluster_survives=False,
        rule=(f"{SEC51}: {steps[0]['check']}: every data node is lost, none is left to check or shut down; "
              "the cluster needs a system restart"),
        # the API nodes lose every data node's connection at once (a kill closes them)
        detection_bound_s=f.det_data, recovery_bound_s=f.rec_system, recovery="system_restart",
        details={"decision": steps, "lost": f.names(lost), "shut_down": [], "arbitrator": arbitrator,
                 "gcp_loss_window_s": crash_loss_window_s(f.tm),
                 "expected_events": ["system_restart", "restart_gci"],
                 "client_errors": {"expected": [4009], "class": "unknown",
                                   "text": "4009 'Cluster Failure' and connection errors while no data node runs"},
                 "timing": f.timing})


def datanode_loss(f: Facts, arbitrator, kw: dict) -> Expectation:
    """``frozen``: the nodes were frozen past the heartbeat timeout, so on the thaw each shuts
    itself down with 2315 (then a node restart); ``held_s``: restarted with ``-n``, the nodes wait
    in ``not started`` until the heal starts them (judged over at least ``held_s`` s)."""
    lost = f.ids_of(kw.get("nodes") or [f.topo.data_nodes[0].name])
    exp = data_loss(f, arbitrator, lost, bool(kw.get("simultaneous", True)), f.family, kw.get("succession"))
    return how_lost(f, exp, lost, kw)


def how_lost(f: Facts, exp: Expectation, lost: set[int], kw: dict) -> Expectation:
    """What the way the nodes were lost adds: ``frozen`` (exit on heal), ``held_s`` (held down),
    ``during_backup`` (the backup is aborted: an expected event)."""
    if kw.get("frozen") and exp.cluster_survives:
        exp.details["exit_on_heal"] = {n: [DECLARED_DEAD_EXIT, ALONE_THAW_EXIT] for n in f.names(lost)}
        exp.rule += (f"; frozen longer than {HEARTBEATS_TO_DETECT} heartbeats, the nodes are declared dead and, "
                     f"once thawed, shut themselves down: {DECLARED_DEAD_EXIT} when they first learn they were "
                     f"declared dead, {ALONE_THAW_EXIT} when they first find their peers' connections closed and "
                     "lose their own arbitration check (a race; both seen on 9.7.2)")
    if kw.get("during_backup") and exp.cluster_survives:
        # measured on 9.7.2: "Backup 1 started from 1 has been aborted. Error: 1326", 0.18 s after
        # the SIGKILL of a data node during START BACKUP (tests/unit/fixtures/ndb-9.7)
        exp.details["expected_events"] = [*exp.details.get("expected_events", []), "backup_aborted"]
        exp.details["backup"] = {"aborted_with": BACKUP_ABORTED_BY_NODE_FAILURE}
        exp.rule += (f"; the online backup running on every data node is aborted by the node failure "
                     f"(error {BACKUP_ABORTED_BY_NODE_FAILURE}); the data stays served")
    if kw.get("held_s") is not None and exp.cluster_survives:
        exp.details["held_down"] = {"nodes": f.names(lost), "min_s": float(kw["held_s"]),
                                    "why": "restarted with -n, a node waits in 'not started' until 'N START'"}
    return exp


def two_datanodes_different_ng(f: Facts, arbitrator, kw: dict) -> Expectation:
    if kw.get("nodes"):
        lost = f.ids_of(kw["nodes"])
    else:
        if len(f.groups) < 2:
            raise UsageError("two_datanodes_different_ng needs at least two node groups (default layout)")
        lost = {min(m) for m in list(f.groups.values())[:2]}
    ngs = {f.by_id[i].nodegroup for i in lost}
    if len(lost) != 2 or len(ngs) != 2:
        raise UsageError(f"two_datanodes_different_ng: expected two data nodes of different node groups, "
                         f"got {f.names(lost)}")
    exp = data_loss(f, arbitrator, lost, bool(kw.get("simultaneous", True)), f.family, kw.get("succession"))
    exp.rule += " (NdbRestarts TwoNodeFailure)"
    return how_lost(f, exp, lost, kw)


def nodegroup_loss(f: Facts, arbitrator, kw: dict) -> Expectation:
    ng = int(kw.get("nodegroup", 0))
    if ng not in f.groups:
        raise UsageError(f"nodegroup_loss: no node group {ng} (have {sorted(f.groups)})")
    exp = data_loss(f, arbitrator, set(f.groups[ng]), True, f.family)
    exp.details["nodegroup"] = ng
    return exp


def halves(f: Facts, arbitrator, kw: dict) -> Expectation:
    """``partition_halves_arbitrator_side`` and ``arbitrator_isolated``: an even split with
    every node group on both sides; ``side`` holds the arbitrator (default: the first node of
    each node group)."""
    family, names, data_ids, by_id = f.family, f.names, f.data_ids, f.by_id
    side_a = f.ids_of(kw["side"]) & data_ids if kw.get("side") else {min(m) for m in f.groups.values()}
    side_b = data_ids - side_a
    oa, ta = arbitration_check(f.groups, data_ids, side_a)
    ob, tb = arbitration_check(f.groups, data_ids, side_b)
    if (oa, ob) != ("arbitrate", "arbitrate"):
        raise UsageError(f"{family}: sides {names(side_a)} / {names(side_b)} are not an even split with every "
                         f"node group on both sides ({ta}; {tb})")
    det = f.det_data_arb
    if family == "partition_halves_arbitrator_side":
        return Expectation(
            family=family, survivors_serve=True, cluster_survives=True,
            rule=(f"{SEC51} step 5: both halves find '{ta}'; the arbitrator (node {arbitrator}) answers yes "
                  f"to the first requester only, which is the side it can reach"),
            detection_bound_s=det, recovery_bound_s=f.rec_node, recovery="node_restart",
            details={"winners": names(side_a), "losers": names(side_b), "arbitrator": arbitrator,
                     "arbitrator_node": by_id[arbitrator].name if arbitrator in by_id else None,
                     "loser_exit_code": 2305,
                     "expected_events": {"winners": ["arbitration_required", "arbitration_won"],
                                         # measured: a loser logs 'Lost arbitrator' (or 'Arbitration
                                         # check lost' once its peer is gone), never a reply
                                         "losers": ["arbitrator_lost|no_arbitrator|arbitration_lost"
                                                    "|arbitration_check_lost", "forced_shutdown"]},
                     "sql_nodes": ("SQL nodes that reach a winner keep serving; an SQL node cut off "
                                   "with the losers gets 4009 until the partition heals"),
                     "client_errors": {"during_failover": "temporary (NR class) on the winning side",
                                       "losing_side": [4009]},
                     "timing": f.timing})
    return Expectation(
        family=family, survivors_serve=False, cluster_survives=False,
        rule=(f"{SEC51} step 5: both halves need arbitration ('{ta}') and neither reaches the arbitrator "
              f"(node {arbitrator}) within ArbitrationTimeout -> both shut down with 2305 "
              "(ndb.md 10.4: 50/50 with the arbitrator isolated from both)"),
        detection_bound_s=det, recovery_bound_s=f.rec_system, recovery="system_restart",
        details={"halves": [names(side_a), names(side_b)], "shut_down": names(data_ids), "exit_code": 2305,
                 "exit_codes": {x: 2305 for x in names(data_ids)},
                 # each half finds the other half's nodes one after the other around the
                 # heartbeat ring, then its president decides, then its peers find that out
                 "decision_bound_s": max(partition_bounds(f.tm, len(side_b), len(side_a))[1],
                                         partition_bounds(f.tm, len(side_a), len(side_b))[1]),
                 "arbitrator": arbitrator, "gcp_loss_window_s": crash_loss_window_s(f.tm),
                 "assumption": ("the split and the arbitrator's isolation start together; if the data "
                                "nodes lose the arbitrator first, they elect the next candidate "
                                f"({f.candidates[1:2] or 'none'}) and the side that reaches it survives"),
                 # measured: no node logs 'Arbitration required' here: they lose the arbitrator
                 # first ('Lost arbitrator'), then find 'no arbitrator available' or, once their
                 # peer has gone, 'Arbitration check lost'
                 "expected_events": ["arbitrator_lost", "no_arbitrator|arbitration_check_lost", "forced_shutdown"],
                 "client_errors": {"expected": [4009], "class": "unknown"},
                 "timing": f.timing})

