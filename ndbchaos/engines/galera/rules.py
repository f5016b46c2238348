"""Galera's rules as pure functions: the configured timers, the quorum expectation of each fault
family and the outcome of a clean partition (docs/facts.md Galera A1). Functions of the
number of data nodes, the members and the scenario's keywords: no Docker, no SQL.
"""

from __future__ import annotations

from ...errors import UsageError
from ...vocabulary import ClusterOptions, Expectation

# Timers from ndbchaos/data/compose/galera/galera.cnf (keep in sync; a unit test checks it).
SUSPECT_TIMEOUT = 3.0  # evs.suspect_timeout
INACTIVE_CHECK = 0.5  # evs.inactive_check_period
INACTIVE_TIMEOUT = 6.0  # evs.inactive_timeout
INSTALL_TIMEOUT = 6.0  # evs.install_timeout
WAIT_PRIM_TIMEOUT = 30.0  # pc.wait_prim_timeout (default): a joiner with no primary aborts after it


def data_count(options: ClusterOptions) -> int:
    """The number of mariadbd nodes of the layout (2 or 3; ``--galera-data-nodes``)."""
    n = int(options.galera_data_nodes or 2)
    if n not in (2, 3):
        raise UsageError(f"--galera-data-nodes must be 2 or 3, not {n}")
    return n


def expectation(family: str, data: int, **kw) -> Expectation:
    """Expected outcome of a fault family, from the quorum rule and the configured timers, for a
    cluster of ``data`` data nodes and garbd.

    Families map to lost votes: ``datanode_loss`` ``lost`` data nodes (default 1);
    ``nodegroup_loss`` every data node (Galera has one group holding every replica);
    ``mgmnode_loss`` / ``all_mgmnodes_loss`` garbd. ``members`` overrides the size of the last
    primary component (default: every data node and garbd, e.g. less after an earlier loss);
    ``graceful`` counts leavers as the quorum rule does. Partitions: see ``partition_outcome``.
    """
    members = int(kw.get("members") or data + 1)  # garbd votes and counts in wsrep_cluster_size
    lost = {"nodegroup_loss": data, "mgmnode_loss": 1, "all_mgmnodes_loss": 1}.get(family, kw.get("lost", 1))
    lost = int(lost)
    remaining = members - lost
    # Quorum rule (pc_proto.cpp have_quorum): 2*W(remaining) + W(left gracefully) > W(last PC).
    graceful = bool(kw.get("graceful", False))
    quorum = 2 * remaining + (lost if graceful else 0) > members
    # With no data node left, garbd alone may keep a component but there is nothing to serve.
    data_left = data - (0 if family in ("mgmnode_loss", "all_mgmnodes_loss") else lost)
    survives = quorum and data_left > 0
    rule = (f"Galera quorum (docs/facts.md Galera A1): 2*W(remaining)+W(left gracefully) > "
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
                 # the remaining members install a new view (Primary or not) once they agree
                 "expected_events": ["view_change"],
                 "suspect_timeout_s": SUSPECT_TIMEOUT, "inactive_timeout_s": INACTIVE_TIMEOUT,
                 "install_timeout_s": INSTALL_TIMEOUT, "wait_prim_timeout_s": WAIT_PRIM_TIMEOUT},
    )


def partition_outcome(members: list[str], components: list[list[str]]) -> dict:
    """Galera quorum on a clean partition of a healthy cluster: a component keeps (or forms)
    a Primary Component iff 2*W(component) > W(last primary); all weights are 1 (pc.weight
    default), nobody left gracefully, garbd votes. ``members``: the voting nodes (data nodes
    and garbd); members in no component count as lost."""
    total = len(members)
    serving, stopped, terms = [], [], []
    for comp in components:
        w = len([n for n in comp if n in members])
        ok = 2 * w > total
        (serving if ok else stopped).append(list(comp))
        terms.append(f"{{{','.join(comp)}}}: 2*{w} {'>' if ok else '<='} {total}")
    rule = ("Galera quorum (pc_proto.cpp have_quorum): 2*W(component) > W(last primary) = "
            f"{total}; " + ", ".join(terms))
    # every component installs a view of its own members (Primary or non-Primary)
    return {"serving": serving, "stopped": stopped, "rule": rule, "expected_events": ["view_change"]}
