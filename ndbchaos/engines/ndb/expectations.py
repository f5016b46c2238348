"""The expected outcome of each NDB fault family, as pure functions of the topology, config.ini,
the arbitrator in effect and the scenario's keywords (no Docker, no SQL): ``expectation``.

``NdbEngine.expectation`` looks up the arbitrator in effect (ndbinfo, container states) and
calls ``expectation`` with it. The rules and timing facts used here are in ``rules``.
"""

from __future__ import annotations

from ... import topology as TP
from ...errors import UsageError
from ..base import Expectation
from .config import NdbConfig
from .rules import (CONTAINER_START_SLACK, HEARTBEATS_TO_DETECT, MGMD_START_BOUND, NDB_WAIT_CONNECTED,
                    NDB_WAIT_SETUP, NDBT_EXTRA_WAIT, NDBT_WAIT_CLUSTER_STARTED, OBSERVATION_SLACK,
                    arbitration_check, arbitrator_candidates, crash_loss_window_s, partition_bounds, timings)

FAMILIES = ("datanode_loss", "two_datanodes_different_ng", "nodegroup_loss", "partition_halves_arbitrator_side",
            "arbitrator_isolated", "mgmnode_loss", "all_mgmnodes_loss", "datanode_restart_without_mgm",
            "sqlnode_loss", "system_restart", "rolling_restart")

#: keywords each family reads (others are accepted, ignored and listed in
#: ``details["ignored_keywords"]``, so a scenario written for any engine never crashes here)
FAMILY_KEYWORDS = {
    "datanode_loss": ("nodes", "lost", "simultaneous", "arbitrator", "succession", "frozen", "held_s",
                      "during_backup"),
    "two_datanodes_different_ng": ("nodes", "simultaneous", "arbitrator", "succession", "frozen", "held_s"),
    "nodegroup_loss": ("nodegroup", "arbitrator"),
    "partition_halves_arbitrator_side": ("side", "arbitrator"),
    "arbitrator_isolated": ("side", "arbitrator"),
    "mgmnode_loss": ("nodes", "lost", "arbitrator"),
    "all_mgmnodes_loss": ("arbitrator",),
    "datanode_restart_without_mgm": ("nodes", "held_s"),
    "sqlnode_loss": ("nodes", "lost"),
    "system_restart": ("how",),
    "rolling_restart": ("nodes",),
}

#: Forced shutdown of a data node that learns, on waking, that the others declared it dead
#: (heartbeat failure while it was frozen): measured on 9.7.2, "We(12) have been declared dead by
#: 13 ... Heartbeat failure", 0.3 s after the thaw.
DECLARED_DEAD_EXIT = 2315
#: ... or, as often, it first finds its transporters to the others closed while it slept: it
#: handles that as connection failures of every other node ("Node 12 leaving cluster due to
#: Connection failure ... Members : 11"), finds itself alone and loses its own check ("Arbitration
#: check lost - missing node group", "Arbitrator decided to shutdown this node"): 2305, 0.35 s
#: after the thaw. Which comes first is a race (docs/ndb.md finding 28: 3 of 13 thaws gave 2305,
#: the master and other nodes alike); either way the woken node never rejoins on its own.
ALONE_THAW_EXIT = 2305

#: the error a backup is aborted with when a data node fails during it (measured on 9.7.2)
BACKUP_ABORTED_BY_NODE_FAILURE = 1326

LOST_CHOICE = {
    "datanode_loss": ("a count only: one data node per node group first (round-robin in node id order); "
                      "a different choice of as many nodes can have another outcome on NDB (ndb.md 5.1)"),
    "mgmnode_loss": "a count only: the running arbitrator first, then by ArbitrationRank and node id",
    "sqlnode_loss": "a count only: SQL nodes in node id order",
}

SEC51 = "docs/facts.md NDB 5.1"


def check_family(family: str) -> None:
    if family not in FAMILIES:
        raise UsageError(f"no NDB expectation for fault family {family!r} (known: {', '.join(FAMILIES)})")


def expectation(family: str, topology: TP.Topology, cfg: NdbConfig, arbitrator_in_effect: int | None = None,
                **kw) -> Expectation:
    """The expected outcome of a fault family (see ``FAMILIES``).

    ``arbitrator_in_effect``: the node id of the arbitrator the data nodes use now (None: none);
    ``arbitrator=`` (name, node id or None) overrides it, e.g. when the management node was lost
    first. ``lost=<int>`` (the engine-neutral way scenarios say how many nodes a loss takes) is a
    count for ``datanode_loss``, ``mgmnode_loss`` and ``sqlnode_loss`` when ``nodes`` is not
    given: data nodes are then chosen one per node group first (round-robin in node id
    order: data1, data3, data2, data4 on the default layout), management nodes the running
    arbitrator first, SQL nodes in node id order. The outcome is computed for that choice and
    ``details["lost_choice"]`` says so (another choice of the same count can differ on NDB).
    Keywords a family does not read are ignored and listed in ``details["ignored_keywords"]``.
    """
    check_family(family)
    kw = dict(kw)
    used = FAMILY_KEYWORDS.get(family, ())
    ignored = sorted(k for k in kw if k not in used)
    choice = None
    if "lost" in used and kw.get("lost") is not None:
        try:
            count = int(kw["lost"])
        except (TypeError, ValueError):
            raise UsageError(f"{family}: lost={kw['lost']!r} is not a node count") from None
        pool = lost_pool(family, topology, cfg, kw["arbitrator"] if "arbitrator" in kw else arbitrator_in_effect)
        if count < 1 or count > len(pool):
            raise UsageError(f"{family}: lost={count}, but the layout has {len(pool)} such node(s)")
        if kw.get("nodes"):
            if len(kw["nodes"]) != count:
                raise UsageError(f"{family}: lost={count} but {len(kw['nodes'])} node(s) given")
        else:
            kw["nodes"] = pool[:count]
            choice = {"count": count, "nodes": list(kw["nodes"]), "rule": LOST_CHOICE[family]}
    f = _Facts(family, topology, cfg)
    # ``arbitrator=None`` says there is none (e.g. the management node was killed first).
    # Default: the one in effect. The data nodes prefer rank 1, but they choose among the
    # candidates connected to the president when it selects, and keep that one until it is
    # lost: on 9.7.2 a start chose mgm2 (rank 2) although mgm1 (rank 1) was up.
    if "arbitrator" in kw:
        arbitrator = kw["arbitrator"]
        if arbitrator is not None and not isinstance(arbitrator, int):
            arbitrator = f.by_name[f.name_of(arbitrator)].nodeid
    else:
        arbitrator = arbitrator_in_effect
    exp = _FAMILY_RULES[family](f, arbitrator, kw)
    if choice is not None:
        exp.details["lost_choice"] = choice
    if ignored:
        exp.details["ignored_keywords"] = ignored
    return exp


def lost_pool(family: str, topology: TP.Topology, cfg: NdbConfig, arbitrator) -> list[str]:
    """Node names in the order ``lost=<count>`` takes them (see ``expectation``); ``arbitrator``:
    the one in effect (or given), first among the management nodes."""
    topo = topology
    if family == "datanode_loss":
        groups = [sorted(ms, key=lambda n: n.nodeid or 0) for _, ms in sorted(topo.nodegroups().items())]
        out = []
        for i in range(max((len(g) for g in groups), default=0)):
            out += [g[i].name for g in groups if i < len(g)]
        return out
    if family == "mgmnode_loss":
        arb = arbitrator
        if isinstance(arb, str):
            arb = next((n.nodeid for n in topo.role(TP.MGM) if n.name == arb), None)
        rank = {n.node_id: n.arbitration_rank or 99 for n in cfg.mgm_nodes}
        mgms = sorted(topo.role(TP.MGM), key=lambda n: (n.nodeid != arb, rank.get(n.nodeid, 99), n.nodeid or 0))
        return [n.name for n in mgms]
    return [n.name for n in sorted(topo.role(TP.SQL), key=lambda n: n.nodeid or 0)]


class _Facts:
    """What every family's rule reads: the topology and config.ini, and the bounds derived from
    their timing settings."""

    def __init__(self, family: str, topology: TP.Topology, cfg: NdbConfig):
        topo = topology
        self.family, self.topo, self.cfg = family, topo, cfg
        self.tm = tm = timings(cfg)
        hb, hb_api, arb_to = tm["heartbeat_db_s"], tm["heartbeat_api_s"], tm["arbitration_timeout_s"]
        self.arb_to = arb_to
        self.groups = {g: {m.nodeid for m in ms} for g, ms in topo.nodegroups().items()}
        self.by_name = {n.name: n for n in topo.nodes}
        self.by_id = {n.nodeid: n for n in topo.nodes if n.nodeid is not None}
        self.data_ids = {n.nodeid for n in topo.data_nodes}
        self.candidates = [i for i in arbitrator_candidates(cfg) if i in self.by_id]
        self.sqls = [n.name for n in topo.role(TP.SQL)]
        # Detection bounds (derivation):
        #  * data node failure, silent case: declared dead after 4 missed HeartbeatIntervalDbDb,
        #    at most 5 intervals (manual); a kill closes the TCP connection and is seen at once,
        #    so 5 x interval is an upper bound for both;
        #  * + ArbitrationTimeout when the survivors must ask the arbitrator (ndb.md 5.1 step 5);
        #  * API/management links: the same rule with HeartbeatIntervalDbApi;
        #  * + our observation slack (poll period, exec latency).
        self.det_data = HEARTBEATS_TO_DETECT * hb + OBSERVATION_SLACK
        self.det_data_arb = self.det_data + arb_to
        self.det_api = HEARTBEATS_TO_DETECT * hb_api + OBSERVATION_SLACK
        # Recovery bounds (derivation):
        #  * node restart: the NDB test framework's own bound, waitClusterStarted(120) around every
        #    restart (NdbRestarts.cpp), + the container start;
        #  * system restart: waitClusterStarted(120) + the 60 s the framework adds per loop, + the
        #    SQL nodes reconnecting (ndb-wait-connected), + the container starts;
        #  * SQL node restart: mysqld waits ndb-wait-connected then ndb-wait-setup at most;
        #  * management node: [UNVERIFIED] no documented figure, MGMD_START_BOUND.
        self.rec_node = NDBT_WAIT_CLUSTER_STARTED + CONTAINER_START_SLACK
        self.rec_system = NDBT_WAIT_CLUSTER_STARTED + NDBT_EXTRA_WAIT + NDB_WAIT_CONNECTED + CONTAINER_START_SLACK
        self.rec_sql = NDB_WAIT_CONNECTED + NDB_WAIT_SETUP + CONTAINER_START_SLACK
        self.timing = {**tm, "heartbeats_to_detect": HEARTBEATS_TO_DETECT, "observation_slack_s": OBSERVATION_SLACK,
                       "ndbt_wait_cluster_started_s": NDBT_WAIT_CLUSTER_STARTED,
                       "ndb_wait_connected_s": NDB_WAIT_CONNECTED, "ndb_wait_setup_s": NDB_WAIT_SETUP}

    def name_of(self, x) -> str:
        if isinstance(x, TP.Node):
            return x.name
        if isinstance(x, str):
            if x not in self.by_name:
                raise UsageError(f"{self.family}: no node named {x!r} (nodes: {', '.join(self.by_name)})")
            return x
        return self.by_id[int(x)].name

    def names(self, ids) -> list[str]:
        return [self.by_id[i].name for i in sorted(ids)]

    def ids_of(self, nodes) -> set[int]:
        return {self.by_name[self.name_of(x)].nodeid for x in nodes}


def _master_after(f: _Facts, lost: set[int], succession) -> dict:
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


def _data_loss(f: _Facts, arbitrator, lost: set[int], simultaneous: bool, fam: str,
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
        master = _master_after(f, lost, succession)
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


def _datanode_loss(f: _Facts, arbitrator, kw: dict) -> Expectation:
    """``frozen``: the nodes were frozen past the heartbeat timeout, so on the thaw each shuts
    itself down with 2315 (then a node restart); ``held_s``: restarted with ``-n``, the nodes wait
    in ``not started`` until the heal starts them (judged over at least ``held_s`` s)."""
    lost = f.ids_of(kw.get("nodes") or [f.topo.data_nodes[0].name])
    exp = _data_loss(f, arbitrator, lost, bool(kw.get("simultaneous", True)), f.family, kw.get("succession"))
    return _how_lost(f, exp, lost, kw)


def _how_lost(f: _Facts, exp: Expectation, lost: set[int], kw: dict) -> Expectation:
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


def _two_datanodes_different_ng(f: _Facts, arbitrator, kw: dict) -> Expectation:
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
    exp = _data_loss(f, arbitrator, lost, bool(kw.get("simultaneous", True)), f.family, kw.get("succession"))
    exp.rule += " (NdbRestarts TwoNodeFailure)"
    return _how_lost(f, exp, lost, kw)


def _nodegroup_loss(f: _Facts, arbitrator, kw: dict) -> Expectation:
    ng = int(kw.get("nodegroup", 0))
    if ng not in f.groups:
        raise UsageError(f"nodegroup_loss: no node group {ng} (have {sorted(f.groups)})")
    exp = _data_loss(f, arbitrator, set(f.groups[ng]), True, f.family)
    exp.details["nodegroup"] = ng
    return exp


def _halves(f: _Facts, arbitrator, kw: dict) -> Expectation:
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


def _mgmnode_loss(f: _Facts, arbitrator, kw: dict) -> Expectation:
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


def _all_mgmnodes_loss(f: _Facts, arbitrator, kw: dict) -> Expectation:
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


def _restart_without_mgm(f: _Facts, arbitrator, kw: dict) -> Expectation:
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
    exp = _data_loss(f, None, data, True, f.family)
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


def _sqlnode_loss(f: _Facts, arbitrator, kw: dict) -> Expectation:
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


def _system_restart(f: _Facts, arbitrator, kw: dict) -> Expectation:
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


def _rolling_restart(f: _Facts, arbitrator, kw: dict) -> Expectation:
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


_FAMILY_RULES = {
    "datanode_loss": _datanode_loss,
    "two_datanodes_different_ng": _two_datanodes_different_ng,
    "nodegroup_loss": _nodegroup_loss,
    "partition_halves_arbitrator_side": _halves,
    "arbitrator_isolated": _halves,
    "mgmnode_loss": _mgmnode_loss,
    "all_mgmnodes_loss": _all_mgmnodes_loss,
    "datanode_restart_without_mgm": _restart_without_mgm,
    "sqlnode_loss": _sqlnode_loss,
    "system_restart": _system_restart,
    "rolling_restart": _rolling_restart,
}
