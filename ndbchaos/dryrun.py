"""A dry run: what a scenario, an operation or a soak would do to a live cluster, touching nothing.

    for line in scenario_plan(sc, cluster, seed=7): print(line)

Each declaration's fault is built against the cluster as it is (its targets resolved and drawn
with the run's seed, exactly as ``play`` draws them: a session with the same ``--seed`` and the
same scenarios in the same order plays these targets), its plan derived, and the run described:
the phases in order with their durations, the fault with its targets and parameters, the
expectation the verdict will judge (its rule and bounds, which SQL nodes must serve), and the
kill switch's guard (what may break, what stops the run). Building a fault reads the cluster (its
topology, the node handles) and never acts on it: faults act in ``inject``, which a dry run
never calls.

``record_plan`` says the same of a saved run (``ndbchaos plan RUN``): a soak's schedule as it was
played, an operation's steps, a scenario's fault.
"""

from __future__ import annotations

import random
from typing import Iterable

from .driver import Scenario, margin
from .killswitch import Allowance, Condition
from .operations.driver import Operation
from .record import RunRecord
from .soak import Soak, menu_on, schedule


def _names(xs) -> str:
    return ", ".join(xs) or "none"


def _params(params: dict) -> str:
    shown = {k: v for k, v in params.items() if k not in ("selection", "picked") and v not in (None, {}, [])}
    return ", ".join(f"{k}={v}" for k, v in sorted(shown.items()))


def _guard(plan, targets, conditions: Iterable[Condition]) -> list[str]:
    a = Allowance.of(plan, targets)
    if a.everything:
        may = "the plan stops the cluster: every node may go down"
    else:
        may = f"may be down: {_names(sorted(a.nodes))}; may stop serving: {_names(sorted(a.quiet_sql))}"
    lines = [f"  kill switch  {may}; anything else down for its grace, or a serving SQL node with no success "
             f"for {a.quiet_bound_s:g} s, stops the run and heals"]
    lines += [f"               --abort-when {c}" for c in conditions]
    return lines


def _fault_lines(sc: Scenario, cluster, fault, plan, hold_s: float, after_s: float) -> list[str]:
    exp = plan.exp
    det, rec = exp.detection_bound_s, exp.recovery_bound_s
    w = fault.window
    params = _params(w.params)
    return [
        f"  fault        {fault.kind} on {_names(w.targets)}" + (f" ({params})" if params else ""),
        f"               the engine reacts within {det:g} s (waited up to {det + margin(det):g} s), then "
        f"{hold_s:g} s held",
        f"  recovery     heal ({exp.recovery}); every node healthy within {rec:g} s (waited up to "
        f"{rec + margin(rec):g} s); then {after_s:g} s of load",
        f"  expectation  {exp.rule}",
        f"               cluster {'survives' if exp.cluster_survives else 'stops'}; serving: {_names(plan.serving)}"
        f"; stopped: {_names(plan.stopped_sql)}" + (f"; no requirement: {_names(plan.affected)}" if plan.affected
                                                     else ""),
    ]


def scenario_plan(sc: Scenario, cluster, seed: int, load: str = "", conditions=()) -> list[str]:
    """What playing ``sc`` on ``cluster`` with ``seed`` would do (an Operation's steps too)."""
    rng = random.Random(seed)
    head = [f"{sc.name} ({sc.family}): {sc.title}", f"  seed         {seed}"]
    if isinstance(sc, Operation):
        return head + _operation_lines(sc, cluster, rng, load, conditions)
    fault = sc.fault(cluster, rng)
    plan = sc.plan(cluster, fault)
    return (head + [f"  baseline     {sc.baseline_s:g} s of {sc.workload} load{load}"]
            + _fault_lines(sc, cluster, fault, plan, sc.hold_s, sc.after_s)
            + _guard(plan, fault.window.targets, conditions))


def _operation_lines(op: Operation, cluster, rng, load: str, conditions) -> list[str]:
    proc = op.procedure(cluster, rng)
    fault = op.fault(cluster, rng) if op.fault_step is not None else None
    lines = [f"  baseline     {op.baseline_s:g} s of {op.workload} load{load}", f"  procedure    {proc.name}"]
    for i, st in enumerate(proc.steps, 1):
        bound = f"; clients may go {st.max_outage_s:g} s without a success" if st.max_outage_s is not None else ""
        lines.append(f"    {i}. {st.name}: expected {' or '.join(st.expected)}{bound}"
                     + (f" ({st.description})" if st.description else ""))
        if fault is not None and st.name == op.fault_step:
            plan = op.plan(cluster, fault)
            lines.append(f"       during it, {op.fault_delay_s:g} s in:")
            lines += ["     " + x for x in _fault_lines(op, cluster, fault, plan, op.hold_s, op.after_s)]
    lines += [f"  outcome      {o.name}" for o in proc.outcomes]
    lines.append(f"  after        {op.after_s:g} s of load")
    lines.append("  kill switch  the procedure's own steps may restart any node; only --abort-when conditions apply")
    lines += [f"               --abort-when {c}" for c in conditions]
    return lines


def soak_plan(sk: Soak, cluster, seed: int, duration_s: float, load: str = "", conditions=()) -> list[str]:
    """A soak's seeded schedule on ``cluster``: the faults whose pause and hold fit ``duration_s``
    (each also takes its engine's reaction and recovery, so fewer may fit in the run itself)."""
    on = menu_on(sk, cluster)
    menu = {sc.name: sc for sc in on.scenarios}
    lines = [f"{sk.name} (soak): {sk.title}", f"  seed         {seed} (the schedule's; --seed {seed} plays it)",
             f"  load         {sk.workload}{load}, clients {on.route}; {duration_s:g} s in all",
             f"  menu         {_names(sorted(menu))}"]
    lines += [f"  left out     {x.scenario}: {x.why}" for x in on.left_out]
    t = 0.0
    for step in schedule(sk, seed, cluster):
        if t + step.pause_s >= duration_s:
            break
        sc = menu[step.scenario]
        fault = sc.fault(cluster, random.Random(step.seed))
        plan = sc.plan(cluster, fault)
        lines.append(f"  {step.index:>3}. at >= {t + step.pause_s:>7.1f} s  {sc.name}: {fault.kind} on "
                     f"{_names(fault.window.targets)}, held {step.hold_s:g} s, recovery within "
                     f"{plan.exp.recovery_bound_s:g} s")
        t += step.pause_s + step.hold_s + sk.after_s
    lines.append("  kill switch  each fault's own plan while it is in force (as for its scenario); a soak stops "
                 "at the first abort")
    lines += [f"               --abort-when {c}" for c in conditions]
    return lines


def record_plan(record: RunRecord) -> list[str]:
    """What a saved run did, in the order it did it: a soak's schedule as played, an operation's
    steps, a scenario's fault windows; the seed that replays it."""
    sc = record.scenario
    lines = [f"{sc.name if sc else record.title} ({record.engine}, project {record.project}): {record.title}",
             f"  seed         {record.seed} (the run's own random choices; a target selector's seed is in its "
             "fault window)"]
    lines += [f"  phase        {p.name}: {p.start:.1f} -> {'' if p.end is None else f'{p.end:.1f}'} s"
              + (f" ({p.description})" if p.description else "") for p in record.phases]
    if record.soak is not None:
        lines.append(f"  soak         {record.soak.get('name')}: {record.soak.get('duration_s')} s, menu "
                     f"{_names(record.soak.get('menu') or [])}")
        for s in record.steps or []:
            lines.append(f"  {s.get('index', '?'):>3}. {s.get('begin', 0):>7.1f} s  {s.get('scenario')}: "
                         f"{_names(s.get('targets') or [])}, pause {s.get('pause_s')} s, hold {s.get('hold_s')} s, "
                         f"seed {s.get('seed')}")
    if record.procedure is not None:
        for i, st in enumerate(record.procedure.get("steps") or [], 1):
            lines.append(f"    {i}. {st.get('name')}: {st.get('outcome')} (expected "
                         f"{' or '.join(st.get('expected') or [])})" + (f"; fault {st['fault']}" if st.get("fault")
                                                                        else ""))
    for w in record.windows:
        lines.append(f"  fault        {w.get('kind')} on {_names(w.get('targets') or [])}: "
                     f"{w.get('start')} -> {w.get('end')} s")
    return lines


__all__ = ["record_plan", "scenario_plan", "soak_plan"]
