"""NDB's rules as pure functions: the timing facts and where they come from, the arbitration
check (docs/facts.md NDB 5.1), the partition bounds of the heartbeat ring and the outcome of a
clean partition.

Everything here is a function of the topology, config.ini (``NdbConfig``), the arbitrator in
effect and keywords: no Docker, no SQL. ``NdbEngine`` finds the arbitrator in effect (ndbinfo,
container states) and calls these with what it found. The expectation of each fault family is
in ``expectations`` (built on these rules).
"""

from __future__ import annotations

from ... import topology as TP
from ...errors import UsageError
from .config import NdbConfig

# -- timing facts (seconds) and where they come from -------------------------------------------
#: "After missing four heartbeat intervals in a row, the node is declared dead. Thus, the maximum
#: time for discovering a failure through the heartbeat mechanism is five times the heartbeat
#: interval." (8.4 manual, HeartbeatIntervalDbDb; docs/facts.md NDB 5.2). Applies to HeartbeatIntervalDbApi too.
HEARTBEATS_TO_DETECT = 5
#: The NDB test framework waits waitClusterStarted(120) around every restart
#: (NdbRestarts.cpp::executeRestart, docs/facts.md NDB 7) and 60 s more per loop when no timeout is given.
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


def timings(cfg: NdbConfig) -> dict:
    """The timing settings of config.ini the bounds derive from, in seconds."""
    return {
        "heartbeat_db_s": cfg.data_param_ms("HeartbeatIntervalDbDb", 5000) / 1000.0,
        "heartbeat_api_s": cfg.data_param_ms("HeartbeatIntervalDbApi", 1500) / 1000.0,
        "arbitration_timeout_s": cfg.data_param_ms("ArbitrationTimeout", 7500) / 1000.0,
        # Commits newer than the last global checkpoint may be lost when the whole cluster
        # crashes (docs/facts.md NDB 7); the checker reports such losses apart.
        "gcp_interval_s": cfg.data_param_ms("TimeBetweenGlobalCheckpoints", 2000) / 1000.0,
        # GCP stop (docs/facts.md NDB 11): TimeBetweenEpochsTimeout 0 (the default) disables it
        # ("unlimited lags allowed"; 9.7.2 logs "GCP_SAVE lag 60 sec (no max lag)" and stops
        # nobody: finding 37); otherwise a global checkpoint held up past
        # TimeBetweenGlobalCheckpointsTimeout (a minimum, default 120000) stops the node behind it
        "epochs_timeout_s": cfg.data_param_ms("TimeBetweenEpochsTimeout", 0) / 1000.0,
        "gcp_timeout_s": cfg.data_param_ms("TimeBetweenGlobalCheckpointsTimeout", 120000) / 1000.0,
    }


def crash_loss_window_s(tm: dict) -> float:
    """A system restart recovers the cluster to its last completed global checkpoint
    (docs/facts.md NDB 7): a commit is durable once the GCP of its epoch completes, every
    TimeBetweenGlobalCheckpoints. One interval, plus one for a GCP in flight when the cluster
    stopped. Measured on 9.7.2: the lost acknowledged commits lay within 1.5 s (node group
    killed) and 0.6 s (even split, arbitrator isolated) before clients stopped being served."""
    return 2 * tm["gcp_interval_s"]


def arbitrator_candidates(cfg: NdbConfig) -> list[int]:
    """Arbitrator candidates in the order the president picks them: rank 1 before rank 2
    (8.4 manual, ArbitrationRank) [UNVERIFIED: lowest node id first within a rank]."""
    cands = [n for n in cfg.nodes if n.type in ("MGM", "API") and n.arbitration_rank > 0]
    return [n.node_id for n in sorted(cands, key=lambda n: (n.arbitration_rank, n.node_id))]


# -- the survival rule (docs/facts.md NDB 5.1) ------------------------------------------------------
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

    The real engine confirms this order where docs/facts.md NDB 5.1 lists another: on MySQL
    Cluster 9.7.2 (default layout, 2 node groups of 2), SIGKILL of node 11 made the president log
    ``Arbitration check won - node group majority`` (node group 1 was complete), not the published order's
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
      Heartbeat failure" 4.3 s later) but find it by heartbeat, and the one that finds it runs
      the check again, loses ("missing node group") and shuts down in turn: a chain of one
      round per further data node of the side. Measured on 9.7.2, 8 data nodes split 4/4 with
      the arbitrator cut off: the president decided 20.2 s after the cut (4 rounds), its three
      peers shut down 25.2, 27.9 and 32.6 s after it (each found by heartbeat or by the
      connection closing); a 2/2 split is the old single round.
    """
    round_s = HEARTBEATS_TO_DETECT * tm["heartbeat_db_s"]
    detection = unreachable * round_s + tm["arbitration_timeout_s"] + OBSERVATION_SLACK
    decision = (unreachable + max(members - 1, 0)) * round_s + tm["arbitration_timeout_s"] + OBSERVATION_SLACK
    return detection, decision


# -- a clean partition (docs/facts.md NDB 5.1) -------------------------------------------------------
def check_partition(topology: TP.Topology, cfg: NdbConfig, components: list[list[str]]) -> None:
    """Raise UsageError unless ``components`` is a clean partition of the topology's nodes and
    config.ini uses the arbitration method ``partition_outcome`` models (Arbitration=Default)."""
    method = str(cfg.data_param("Arbitration", "Default")).strip().lower()
    if method != "default":
        raise UsageError(f"partition_outcome models Arbitration=Default only (config.ini has {method})")
    by_name = {n.name: n for n in topology.nodes}
    seen: set[str] = set()
    for comp in components:
        for name in comp:
            if name not in by_name:
                raise UsageError(f"partition_outcome: no node named {name!r} (nodes: {', '.join(by_name)})")
            if name in seen:
                raise UsageError(f"partition_outcome: {name} is in two components (not a clean partition)")
            seen.add(name)


def partition_outcome(topology: TP.Topology, cfg: NdbConfig, components: list[list[str]],
                      alive: list[str] | None = None, arbitrator=None, arbitrator_source: str = "given") -> dict:
    """Which components of a clean partition keep running, by NDB's arbitration (ndb.md 5.1).

    Every component with data nodes checks, against the data nodes alive before (``alive``,
    default: all of the topology; alive data nodes in no component count as lost), in the
    order of QmgrMain.cpp handleArbitCheck (``arbitration_check``): a node group
    with no member here -> lost; a node group complete here -> won (node-group majority);
    more than half -> won; fewer than half -> lost; exactly half with every node group
    present and none complete -> arbitration: the component that holds the arbitrator
    in effect (``arbitrator``: name, node id or None; ``arbitrator_source`` says where it comes
    from) gets the yes, every other one shuts down with 2305; an arbitrator in no component
    reaches every side and says yes to the first requester: the one component that asks gets it,
    and when several ask it is a ``race`` (exactly one of them keeps running, which one NDB's
    rules do not say: ``plans.partition`` refuses to judge it). Management and SQL nodes do not
    vote; an SQL node serves only in a component whose data nodes keep running (or, in no
    component, when any component does).

    Returns ``{"serving": [...], "stopped": [...], "rule": "...", "race": [...],
    "decisions": [...], "arbitrator": id|None, "sql_serving": [...]}``.
    """
    check_partition(topology, cfg, components)
    topo = topology
    by_name = {n.name: n for n in topo.nodes}
    by_id = {n.nodeid: n for n in topo.nodes if n.nodeid is not None}
    seen = {name for comp in components for name in comp}
    groups = {g: {m.nodeid for m in ms} for g, ms in topo.nodegroups().items()}
    all_data = {n.nodeid for n in topo.data_nodes}
    before = ({by_name[x].nodeid for x in alive} & all_data) if alive is not None else set(all_data)
    candidates = [i for i in arbitrator_candidates(cfg) if i in by_id]
    rank = {c.node_id: c.arbitration_rank for c in cfg.nodes}
    if arbitrator is None or isinstance(arbitrator, int):
        arb = arbitrator
    elif str(arbitrator) in by_name:
        arb = by_name[str(arbitrator)].nodeid
    else:
        raise UsageError(f"partition_outcome: arbitrator {arbitrator!r} is not a node of the topology")
    arb_source = arbitrator_source
    arb_name = by_id[arb].name if arb in by_id else None
    arb_comp = next((i for i, c in enumerate(components) if arb_name in c), None)

    def cmp(n: int, prev: int) -> str:
        return f"2*{n} {'>' if 2 * n > prev else '=' if 2 * n == prev else '<'} {prev}"

    decisions, terms = [], []
    arbitrating = []
    for i, comp in enumerate(components):
        ids = {by_name[x].nodeid for x in comp if by_name[x].role == TP.DATA} & before
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
    if len(arbitrating) == 1:
        # The only side that asks: the others lost their checks and ask nobody, so the
        # arbitrator's yes (to the first requester) is this side's, whatever the timing.
        i = arbitrating.pop()
        decisions[i].update(outcome="serving", arbitration=f"Arbitration won - positive reply from node {arb}")
        terms[i] += f"; the only side that asks -> 'Arbitration won - positive reply from node {arb}'"
    serving = [list(components[i]) for i, d in enumerate(decisions) if d["outcome"] == "serving"]
    stopped = [list(components[i]) for i, d in enumerate(decisions) if d["outcome"] == "stopped"]
    race = [list(components[i]) for i in arbitrating]
    lost = sorted(before - {by_name[x].nodeid for x in seen if x in by_name})
    sql_serving = sorted(x for c in serving for x in c if by_name[x].role == TP.SQL)
    if serving or race:
        sql_serving += sorted(n.name for n in topo.role(TP.SQL) if n.name not in seen)
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
    tm = timings(cfg)
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
    rule = ("docs/facts.md NDB 5.1 (arbitration check per component of data nodes, in the order of "
            "QmgrMain.cpp handleArbitCheck; alive before: "
            f"{len(before)}; node groups {'; '.join(f'{g}:{sorted(m)}' for g, m in groups.items())}; "
            f"arbitrator {arb_name or 'none'}{f' (node {arb})' if arb is not None else ''}, {arb_source}): "
            + "; ".join(terms) + ". " + "; ".join(notes))
    exit_codes = {by_id[x].name: d["exit_code"] for d in decisions if d["outcome"] == "stopped"
                  for x in d.get("data_nodes", []) if d.get("exit_code")}
    # What the nodes log (measured on 9.7.2, tests/unit/fixtures/ndb-9.7): a serving side that
    # lost data nodes logs the check it won, or the arbitration it won; a stopped side logs why
    # in one of four ways, depending on whether the arbitrator's loss or the peers' came first
    # (an even split with the arbitrator cut off logged 'Lost arbitrator' then 'no arbitrator
    # available' on one node and 'Arbitration check lost' on another), then the forced shutdown.
    events = []
    for d in decisions:
        if d["outcome"] == "serving" and len(d.get("data_nodes", [])) < len(before):
            events.append("arbitration_won" if "arbitration" in d else "arbitration_check_won")
    if any(d["outcome"] == "stopped" and d.get("data_nodes") for d in decisions):
        events += ["arbitration_check_lost|no_arbitrator|arbitration_lost|arbitrator_lost", "forced_shutdown"]
    return {"serving": serving, "stopped": stopped, "race": race, "rule": rule, "decisions": decisions,
            "arbitrator": arb, "arbitrator_source": arb_source, "lost_data_nodes": lost,
            "sql_serving": sql_serving, "shut_down": sorted(shut_down), "exit_codes": exit_codes,
            "expected_events": list(dict.fromkeys(events)),
            "decision_bound_s": round(decision_bound, 3) if shut_down else None,
            "detection_bound_s": round(detection_bound, 3) if detection_bound else None}
