"""What a fault must do, derived from the fault's actual targets and the engine's rules.

A ``Plan`` is the engine's ``Expectation`` plus what the driver needs to observe it: the nodes
the engine must exclude (``lost``), the SQL nodes that must stop serving and those that may be
disturbed, every SQL endpoint, whether the engine reacts at all (a client-path fault does not
touch it), and extra objectives (latency). Plans come from three builders, chosen by the
scenario family (``ndbchaos.families``):

* ``node_loss``: nodes lost (killed, stopped, frozen): ``Rules.expectation(family, nodes=...)``;
* ``partition``: a network partition: ``Rules.partition_outcome`` of its components;
* ``client_path``: a fault between clients and one SQL node: the engine is not involved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import topology as TP
from .vocabulary import Expectation
from .errors import UsageError
from .workload.contract import ClientOptions

if TYPE_CHECKING:  # pragma: no cover (a plan asks the engine its rules only)
    from .engines.protocols import Rules


@dataclass
class Plan:
    exp: Expectation
    lost: list[str]  # nodes the engine must exclude before the survivors serve (loss_detected)
    stopped_sql: list[str]  # SQL endpoints expected to stop serving during the fault
    sql_nodes: list[str]  # every SQL endpoint of the run
    affected: list[str] = field(default_factory=list)  # SQL endpoints with no requirement during the fault
    engine_reacts: bool = True
    latency: dict | None = None  # {"node", "min_p50_ms", "others_max_p50_ms"}: a latency fault's objectives
    failover: dict | None = None  # {"nodes", "clients_fail_over", "bound_s"}: the lost SQL nodes' clients

    @property
    def serving(self) -> list[str]:
        return [n for n in self.sql_nodes if n not in self.stopped_sql and n not in self.affected]

    def to_record(self) -> dict:
        return {**self.exp.to_dict(), "serving": self.serving, "stopped_sql": self.stopped_sql,
                "sql_nodes": self.sql_nodes, "affected": self.affected, "engine_reacts": self.engine_reacts,
                **({"latency": self.latency} if self.latency else {}),
                **({"failover": self.failover} if self.failover else {})}


def sql_nodes_on(cluster, names) -> list[str]:
    """SQL endpoints that live in (or are) the given nodes' containers (Galera: a data node is
    its own SQL endpoint)."""
    containers = {cluster.topology.node(n).container for n in names}
    return [n.name for n in cluster.topology.sql_nodes if n.name in names or n.container in containers]


def _sql(cluster) -> list[str]:
    return [n.name for n in cluster.topology.sql_nodes]


def node_loss(cluster, family: str, fault, expectation: str | None = None, **kw) -> Plan:
    """The fault's targets are lost: the engine's expectation for exactly those nodes
    (``expectation`` names the engine's family when it is finer than the scenario's, e.g.
    ``two_datanodes_different_ng``). A fault that only takes an SQL node's client path away
    (Galera's sqlnode_loss, where the SQL endpoint is the data node) leaves the engine alone."""
    engine: Rules = cluster.engine
    names = [t.name for t in fault.targets]
    fam = expectation or family
    if fam == "nodegroup_loss":
        groups = {cluster.topology.node(n).nodegroup for n in names}
        if len(groups) == 1:
            kw.setdefault("nodegroup", groups.pop())
    if len(names) > 1 and not getattr(fault, "simultaneous", True):
        kw.setdefault("simultaneous", False)  # lost one after the other: a check each
    exp = engine.expectation(fam, cluster, nodes=names, lost=len(names), **kw)
    client_path_only = getattr(fault, "client_path", False)
    stopped = _sql(cluster) if not exp.cluster_survives else sql_nodes_on(cluster, names)
    # ``excluded``: the nodes the engine must have let go once the fault is in place, when not
    # all targets (a rolling restart brings every target back during the fault itself)
    lost = list(exp.details.get("excluded", names))
    return Plan(exp, [] if client_path_only else lost, stopped, _sql(cluster), engine_reacts=not client_path_only)


def failover(plan: Plan, clients_fail_over: bool) -> dict:
    """What the clients of the SQL nodes a fault takes away must see. With failover (the
    connector's list of servers: ``ClientOptions.failover``) each is served again by another SQL
    node within what our client needs to move once it has noticed (its first error): at most
    backoff_max before the next attempt, connect_timeout to the next server, 2 s of slack for a
    loaded machine. Without it they wait for their own node to come back: measured, not bounded
    here."""
    o = ClientOptions()
    bound = o.backoff_max + o.connect_timeout + 2.0 if clients_fail_over else None
    return {"nodes": list(plan.stopped_sql), "clients_fail_over": clients_fail_over, "bound_s": bound,
            "bound_from": "from the client's first error: ClientOptions backoff_max + connect_timeout + 2 s"
            if bound else None}


def partition(cluster, family: str, fault) -> Plan:
    """The engine's verdict on the fault's components (``Rules.partition_outcome``): the data
    nodes of stopped components must be excluded by the others (when any serve), the SQL nodes
    with them stop; when no component keeps data nodes running, every SQL node stops. A split
    whose outcome is a race (NDB: several sides ask an arbitrator that reaches them all) is a
    UsageError: what it would judge is not decided by the rules."""
    engine: Rules = cluster.engine
    components = fault.window.params["components"]
    out = engine.partition_outcome(cluster, components)
    if out.get("race"):
        # NDB: an even split whose arbitrator reaches every side gives its yes to the first side
        # that asks; which one is timing, not a rule: no plan can say which nodes must be excluded
        raise UsageError(
            f"partition {' | '.join(','.join(c) for c in components)}: the sides "
            f"{' and '.join('{' + ','.join(c) + '}' for c in out['race'])} each need the arbitrator (node "
            f"{out.get('arbitrator')}), which reaches them all and says yes to whichever asks first: which side "
            "keeps running is a race the engine's rules do not decide; put the arbitrator with one side or cut it "
            "off from every side")
    stopped = sorted({n for comp in out["stopped"] for n in comp})
    base = engine.expectation("datanode_loss", cluster, lost=1)
    survives = bool(out["serving"]) and any(
        cluster.topology.node(n).role == TP.DATA for comp in out["serving"] for n in comp)
    recovery_bound = base.recovery_bound_s if survives else \
        engine.expectation("nodegroup_loss", cluster).recovery_bound_s
    exp = Expectation(family=family, survivors_serve=survives, cluster_survives=survives, rule=out["rule"],
                      detection_bound_s=out.get("detection_bound_s") or base.detection_bound_s,
                      recovery_bound_s=recovery_bound,
                      recovery="partition healed, then " + (base.recovery if survives else "restart"),
                      details={"components": components, **out})
    data_stopped = [n for n in stopped if cluster.topology.node(n).role == TP.DATA]
    if survives and data_stopped:
        # who is master afterwards: as for the same data nodes lost (NDB: the succession order)
        lost = engine.expectation("datanode_loss", cluster, nodes=data_stopped, lost=len(data_stopped))
        exp.details.update({k: v for k, v in lost.details.items()
                            if k in ("master_before", "master_after", "succession", "master_lost")})
    sql = _sql(cluster)
    return Plan(exp, data_stopped, sql_nodes_on(cluster, stopped) if survives else sql, sql)


def client_path(cluster, fault, latency_ms: float | None = None) -> Plan:
    """A fault between the clients and one SQL node (toxiproxy): the engine is not involved. The
    other endpoints keep serving; the target's clients are disturbed during the fault and served
    again after the heal within what our client takes to notice and reconnect (a statement in
    flight waits up to read_timeout, then connect_timeout and at most backoff_max between
    attempts; 2 s of slack for a loaded machine). With ``latency_ms``: the target's median
    latency during the fault is at least 95 % of it (every statement is at least one round trip
    through the proxy) and the others' stays under half of it."""
    o = ClientOptions()
    bound = o.read_timeout + o.connect_timeout + o.backoff_max + 2.0
    target = [t.name for t in fault.targets]
    exp = Expectation(family="client_path", survivors_serve=True, cluster_survives=True,
                      rule=f"client path only ({fault.kind} on {', '.join(target)}): the engine is not involved; "
                           "the other SQL endpoints are unaffected",
                      detection_bound_s=bound, recovery_bound_s=bound, recovery="heal the client path",
                      details={"bound_from": "ClientOptions read_timeout + connect_timeout + backoff_max + 2 s"})
    latency = None
    if latency_ms is not None:
        latency = {"node": target[0], "min_p50_ms": 0.95 * latency_ms, "others_max_p50_ms": latency_ms / 2}
    return Plan(exp, [], [], _sql(cluster), affected=[] if latency_ms is not None else target,
                engine_reacts=False, latency=latency)


__all__ = ["Plan", "client_path", "failover", "node_loss", "partition", "sql_nodes_on"]
