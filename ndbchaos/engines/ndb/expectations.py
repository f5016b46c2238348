"""The expected outcome of each NDB fault family, as pure functions of the topology, config.ini,
the arbitrator in effect and the scenario's keywords (no Docker, no SQL): ``expectation``.

``NdbEngine.expectation`` looks up the arbitrator in effect (ndbinfo, container states) and
calls ``expectation`` with it. The rules and timing facts used here are in ``rules``; each
family's rule is in ``expect_data`` (data nodes) or ``expect_restarts`` (management and SQL
nodes, restarts), on the ``Facts`` of ``expect_facts``.
"""

from __future__ import annotations

from ... import topology as TP
from ...errors import UsageError
from ...vocabulary import Expectation
from .config import NdbConfig
from .expect_data import datanode_loss, halves, nodegroup_loss, two_datanodes_different_ng
from .expect_facts import Facts
from .expect_storage import disk_full, disk_stall, failing_io, power_loss, slow_disk
from .expect_restarts import (all_mgmnodes_loss, mgmnode_loss, restart_without_mgm, rolling_restart, sqlnode_loss,
                              system_restart)

FAMILIES = ("datanode_loss", "two_datanodes_different_ng", "nodegroup_loss", "partition_halves_arbitrator_side",
            "arbitrator_isolated", "mgmnode_loss", "all_mgmnodes_loss", "datanode_restart_without_mgm",
            "sqlnode_loss", "system_restart", "rolling_restart", "disk_full", "slow_disk", "disk_stall", "failing_io",
            "power_loss")

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
    "disk_full": ("nodes", "lost", "arbitrator", "succession"),
    "slow_disk": ("nodes", "delay_ms"),
    "disk_stall": ("nodes", "arbitrator", "succession"),
    "failing_io": ("nodes", "arbitrator", "succession", "call"),
    "power_loss": ("arbitrator",),
}

LOST_CHOICE = {
    "datanode_loss": ("a count only: one data node per node group first (round-robin in node id order); "
                      "a different choice of as many nodes can have another outcome on NDB (ndb.md 5.1)"),
    "mgmnode_loss": "a count only: the running arbitrator first, then by ArbitrationRank and node id",
    "sqlnode_loss": "a count only: SQL nodes in node id order",
}


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
    f = Facts(family, topology, cfg)
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
    exp = FAMILY_RULES[family](f, arbitrator, kw)
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



FAMILY_RULES = {
    "datanode_loss": datanode_loss,
    "two_datanodes_different_ng": two_datanodes_different_ng,
    "nodegroup_loss": nodegroup_loss,
    "partition_halves_arbitrator_side": halves,
    "arbitrator_isolated": halves,
    "mgmnode_loss": mgmnode_loss,
    "all_mgmnodes_loss": all_mgmnodes_loss,
    "datanode_restart_without_mgm": restart_without_mgm,
    "sqlnode_loss": sqlnode_loss,
    "system_restart": system_restart,
    "rolling_restart": rolling_restart,
    "disk_full": disk_full,
    "slow_disk": slow_disk,
    "disk_stall": disk_stall,
    "failing_io": failing_io,
    "power_loss": power_loss,
}
