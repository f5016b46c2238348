"""The kill switch: stop a run whose cluster has gone beyond what its scenario planned to break.

A scenario plans what it breaks (``ndbchaos.plans.Plan``: the nodes the engine must exclude, the
SQL nodes that stop serving, the nodes the engine's rules shut down, whether the cluster itself
stops). Anything else going wrong while it runs is not the experiment: a second node group lost
to an unrelated failure, an SQL node nobody touched failing its clients. On a cluster people care
about the run must stop there, heal, and say why, not carry on for its planned minutes.

    guard = Guard(conditions=parse_conditions(["no_success:sql2 > 20", "down > 2"]))
    reason = guard.check(status, plan, targets, last_ok)   # each status sample (the observer's)

``Allowance.of(plan, targets)`` is what the plan allows: the nodes that may be unhealthy, the SQL
nodes that may stop serving (none may while no plan is in force: the baseline, a soak's pause),
and how long a serving SQL node may go without a success. ``Guard.check`` returns the reason to
abort once a condition has held for ``grace_s`` (one status poll can catch a node mid-change),
else None. The player (``ndbchaos.scenario.ScenarioRun``) runs it on every sample and raises
``RunAborted`` at its next wait; the fixture heals everything and fails the scenario with the
reason (docs/staging.md).

User conditions (``--abort-when``, repeatable), each ``NAME[:NODE] OP NUMBER``:

    down > N             more than N nodes failed (down, not answering, out of the cluster), planned or not
    unplanned > N        more than N nodes failed that the plan did not touch (built in: > 0)
    groups_lost > N      more than N node groups with every data node failed (Galera: its one group)
    no_success > S       no successful operation on any SQL node for more than S seconds
    no_success:NODE > S  none on SQL node NODE for more than S seconds
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from .errors import NdbChaosError, UsageError

if TYPE_CHECKING:  # pragma: no cover (a sample and the engine's word on a node: engines.protocols.Status)
    from .vocabulary import ClusterStatus, NodeStatus

#: how long a condition must hold before the run stops: a status poll (0.5 s) can catch a node
#: between two states, and a single sample must not abort a run
GRACE_S = 2.0
#: the least time a serving SQL node may go without a success before the run stops, whatever
#: the plan's bounds: an engine's own failover (NDB's takeover, Galera's view change) stalls
#: survivors for up to the detection bound, which the verdict judges; this is beyond it
MIN_QUIET_S = 30.0


class RunAborted(NdbChaosError):
    """The kill switch stopped the run: the cluster went beyond what the scenario planned."""


@dataclass(frozen=True)
class Allowance:
    """What a run may break now: nodes that may be unhealthy, SQL nodes that may stop serving,
    or everything (the plan stops the cluster); how long any other SQL node may go unserved."""
    nodes: frozenset[str] = frozenset()
    quiet_sql: frozenset[str] = frozenset()
    everything: bool = False
    quiet_bound_s: float = MIN_QUIET_S

    @classmethod
    def of(cls, plan, targets=()) -> "Allowance":
        """From the run's plan in force (None: nothing may break) and the nodes its fault windows
        name (a fault's own targets may always be down: a kill, a pause, an error insert)."""
        if plan is None:
            return cls(frozenset(targets))
        exp = plan.exp
        det = float(exp.detection_bound_s)
        bound = max(MIN_QUIET_S, 2 * (det + min(0.5 * det, 30.0) + 2.0))
        if not exp.cluster_survives:
            return cls(everything=True, quiet_bound_s=bound)
        nodes = set(targets) | set(plan.lost) | set(exp.details.get("shut_down") or ())
        quiet = set(plan.stopped_sql) | set(plan.affected) | (nodes & set(plan.sql_nodes))
        return cls(frozenset(nodes | quiet), frozenset(quiet), False, bound)


@dataclass(frozen=True)
class Condition:
    """One ``--abort-when`` condition: ``name`` (``node`` for ``no_success:NODE``) ``op`` ``value``."""
    name: str
    op: str
    value: float
    node: str = ""

    def __str__(self) -> str:
        return f"{self.name}{':' + self.node if self.node else ''} {self.op} {self.value:g}"

    def holds(self, measured: float) -> bool:
        return _OPS[self.op](measured, self.value)


_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
NAMES = ("down", "unplanned", "groups_lost", "no_success")
_SYNTAX = re.compile(r"^\s*([a-z_]+)(?::([A-Za-z0-9_.-]+))?\s*(>=|<=|>|<)\s*([0-9.eE+-]+)\s*$")


def parse_conditions(texts) -> tuple[Condition, ...]:
    """The user's ``--abort-when`` conditions; UsageError, one line naming the bad one."""
    out = []
    for text in texts or ():
        m = _SYNTAX.match(str(text))
        if not m:
            raise UsageError(f"--abort-when {text!r}: not NAME[:NODE] OP NUMBER (e.g. 'no_success:sql2 > 20', "
                             f"'down > 2'; names: {', '.join(NAMES)})")
        name, node, op, number = m.groups()
        if name not in NAMES:
            raise UsageError(f"--abort-when {text!r}: unknown name {name!r} (known: {', '.join(NAMES)})")
        if node and name != "no_success":
            raise UsageError(f"--abort-when {text!r}: only no_success takes a node (no_success:NODE)")
        try:
            value = float(number)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"--abort-when {text!r}: {number!r} is not a finite number >= 0")
        out.append(Condition(name, op, value, node or ""))
    return tuple(out)


@dataclass
class Guard:
    """Checks each status sample against the plan in force and the user's conditions; a
    condition must hold ``grace_s`` before it aborts (``since``: when each began holding)."""
    conditions: tuple[Condition, ...] = ()
    grace_s: float = GRACE_S
    since: dict[str, float] = field(default_factory=dict)

    def check(self, status: ClusterStatus, plan, targets, last_ok, sql_nodes, groups: dict[str, int | None],
              served_since: float, failed: Callable[[NodeStatus], bool] = lambda node: not node.healthy) -> str | None:
        """The reason to abort now, or None. ``status``: a ClusterStatus; ``plan``: the plan in
        force (None in a baseline or a pause); ``targets``: the nodes the open and recent fault
        windows name; ``last_ok(node)``: the run time of the last success on an SQL node;
        ``groups``: each data node's node group (None: none); ``served_since``: when the
        load was serving (a quiet SQL node counts from then); ``failed(node_status)``: whether a
        node itself has failed, the engine's word (``Status.node_failed``: not merely short of a
        member around it)."""
        t = status.t
        allow = Allowance.of(plan, targets)
        down = sorted(n.node for n in status.nodes if failed(n))
        unplanned = [] if allow.everything else [n for n in down if n not in allow.nodes]
        lost = _groups_lost(groups, set(down))
        found: dict[str, str] = {}
        if unplanned:
            found["unplanned"] = (f"{', '.join(unplanned)} failed, which the plan did not touch "
                                  f"({_states(status, unplanned)})")
        if lost and not allow.everything and not set(n for g in lost for n in _members(groups, g)) <= allow.nodes:
            found["groups_lost"] = f"node group {', '.join(map(str, lost))} lost, which the plan did not lose"
        if not allow.everything:
            for node in sql_nodes:
                if node in allow.quiet_sql:
                    continue
                quiet = t - max(last_ok(node), served_since)
                if quiet > allow.quiet_bound_s:
                    found[f"quiet:{node}"] = (f"no successful operation on {node} for {quiet:.1f} s (beyond "
                                              f"{allow.quiet_bound_s:g} s), and the plan has it serving")
        measured = {"down": len(down), "unplanned": len(unplanned), "groups_lost": len(lost),
                    "no_success": t - max(max((last_ok(n) for n in sql_nodes), default=served_since),
                                          served_since)}
        for c in self.conditions:
            value = (t - max(last_ok(c.node), served_since)) if c.node else measured[c.name]
            if c.holds(value):
                found[f"user:{c}"] = f"--abort-when {c}: {value:.1f}"
        for key in [k for k in self.since if k not in found]:
            del self.since[key]
        for key, why in found.items():
            began = self.since.setdefault(key, t)
            if key.startswith("quiet:") or t - began >= self.grace_s:
                return why
        return None


def _members(groups, g) -> list[str]:
    return [n for n, grp in (groups or {}).items() if grp == g]


def _groups_lost(groups: dict[str, int | None] | None, down: set[str]) -> list[int]:
    """Node groups whose every data node is down."""
    by: dict[int, list[str]] = {}
    for n, g in (groups or {}).items():
        if g is not None:
            by.setdefault(g, []).append(n)
    return sorted(g for g, members in by.items() if members and all(m in down for m in members))


def _states(status, names) -> str:
    return ", ".join(f"{n.node}: {n.state if n.container == 'running' else n.container}"
                     for n in status.nodes if n.node in names)


__all__ = ["Allowance", "Condition", "GRACE_S", "Guard", "MIN_QUIET_S", "NAMES", "RunAborted", "parse_conditions"]
