"""Playing an operation: an operator's procedure under steady load, step by step, with a fault
injected during one of its steps when the declaration names one.

    Operation("add_column_under_load", "operations", "online schema change: ADD COLUMN and CREATE INDEX",
              procedure=lambda c, rng: c.engine.procedures.online_schema_change(c))

    baseline   steady load on every SQL node
    step: <n>  each step of the procedure, one phase each (its span is what the clients felt
               during it); with ``fault_step``, the step's action runs in a thread while the
               fault's cycle (``ndbchaos.driver.cycle``: inject, the engine's reaction, heal,
               recovery) runs beside it, judged by the fault's plan on its own span (a fault
               step of the record, as a soak's faults are)
    after      every node healthy, the procedure's outcomes observed, ``after_s`` of load
    verdict    the run record (with ``procedure``: steps, outcomes, backup) judged by every
               checker, the procedure's and the backup's among them

The cleanup (``Procedure.cleanup``) runs on every path out, after the verdict or an error.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable

from ..driver import AFTER_S, BASELINE_S, HOLD_S, Scenario, cycle, margin
from ..recording import Run
from ..waiting import wait_until
from .procedure import Context, Procedure, StepRecord, act, one_line

log = logging.getLogger("ndbchaos")

#: how long the driver waits for a step's action when a fault ran beside it, after the fault's
#: recovery: DDL that a node failure interrupted is retried or rolled forward by the engine
STEP_JOIN_S = 300.0


def _no_fault(cluster, rng):
    return None


@dataclass(frozen=True, repr=False)  # Scenario's repr: the name (the report's stable parameter)
class Operation(Scenario):
    """A procedure under load (``procedure(cluster, rng) -> Procedure``), optionally with a fault
    (``fault(cluster, rng)``, as a scenario's) injected ``fault_delay_s`` into step
    ``fault_step`` and judged as the family ``expectation`` names (e.g. ``datanode_loss``).
    ``needs(cluster)`` (a scenario's): why this cluster cannot play it (None: it can)."""
    fault: Callable = _no_fault
    procedure: Callable | None = None
    fault_step: str | None = None
    fault_delay_s: float = 1.0
    fault_when: Callable | None = None  # (Context) -> bool: the fault waits for it, then fault_delay_s


def play(run: Run, op: Operation):
    """Run one operation on ``run`` (a ``Run`` made for it); returns its Result."""
    cluster = run.cluster
    proc: Procedure = op.procedure(cluster, run.rng)
    if op.fault_step is not None:
        proc.step(op.fault_step)  # a declaration naming no step of its procedure is refused here
    ctx = Context(cluster, run.clock)
    try:
        if proc.prepare is not None:
            with run.rec.step(f"prepare {proc.name}"):
                proc.prepare(ctx)
        # the fault's targets are drawn now (recorded with the seed); its plan when its step
        # begins, from the cluster as the procedure has made it (a new node group counts)
        fault = op.fault(cluster, run.rng) if op.fault_step is not None else None
        with run.rec.phase("baseline", f"steady {run.workload.name} load"):
            run.start_load()
            run.hold(op.baseline_s)
        records: list[StepRecord] = []
        stopped = None
        for step in proc.steps:
            if stopped is not None:
                now = run.clock.now()
                records.append(StepRecord(step.name, now, now, "skipped", step.expected, f"not run: {stopped}",
                                          max_outage_s=step.max_outage_s))
                continue
            with_fault = fault if step.name == op.fault_step else None
            with run.rec.phase(f"step: {step.name}", step.description):
                rec = _play_step(run, ctx, step, with_fault, op)
            records.append(rec)
            log.info("step %s: %s (%s)", step.name, rec.outcome, rec.detail)
            if rec.outcome != "done" and step.stop_if_not_done:
                stopped = f"{step.name} {rec.outcome}"
        with run.rec.phase("after", "every node healthy, the procedure's outcomes, load"):
            run.recover_exited()
            run.wait_healthy(120.0)
            outcomes = []
            if op.fault_step is not None:  # the fault must have hit the step it was declared for
                faulted = next((r for r in records if r.name == op.fault_step), None)
                outcomes.append({"name": f"the fault hit step {op.fault_step!r} while it ran",
                                 "holds": bool(faulted is not None and faulted.fault_hit),
                                 "detail": (faulted.fault if faulted is not None else None) or "the step was not run"})
            for o in proc.outcomes:
                with run.rec.step(f"observe: {o.name}"):
                    try:
                        holds, detail = o.observe(ctx)
                    except Exception as e:  # an observation that fails is not a verdict of False
                        holds, detail = None, f"could not be observed: {type(e).__name__}: {one_line(str(e))}"
                outcomes.append({"name": o.name, "holds": holds, "detail": detail})
            run.hold(op.after_s)
        run.rec.record_procedure({"name": proc.name, "steps": [r.to_json() for r in records], "outcomes": outcomes,
                              **({"backup": ctx.backup} if ctx.backup is not None else {})})
        for r in records:
            run.rec.measure(f"step {r.name}", r.end - r.start, "s", note=f"{r.outcome}: {r.detail}")
        return run.finish()
    finally:
        if proc.cleanup is not None:
            with run.rec.step(f"clean up after {proc.name}"):
                try:
                    proc.cleanup(ctx)
                except Exception as e:  # said, and the next test's reset finds what is left
                    log.warning("cleanup of %s failed: %s", proc.name, e)


def _play_step(run: Run, ctx: Context, step, fault, op: Operation) -> StepRecord:
    start = run.clock.now()
    if fault is None:
        outcome, detail = act(step, ctx)
        return StepRecord(step.name, start, run.clock.now(), outcome, step.expected, detail,
                          max_outage_s=step.max_outage_s)
    plan = op.plan(run.cluster, fault)
    box: dict = {}

    def work():
        box["outcome"], box["detail"] = act(step, ctx)
        box["end"] = run.clock.now()

    worker = threading.Thread(target=work, name=f"step {step.name}", daemon=True)
    # the fault is judged on its own span, as a soak's are (``checks.steps``): from the step's
    # start (the clients' operations before the fault say which SQL node each was on) to after
    # its recovery and ``after_s`` (its span holds the clients of a lost SQL node served again);
    # the procedure's steps before it (a lock on the issuing SQL node's table) are not its doing
    info = {"index": 1, "scenario": op.name, "family": op.expectation or op.family,
            "targets": [t.name for t in fault.targets], "during": step.name}
    with run.rec.fault_step(info, plan):
        worker.start()
        if op.fault_when is not None:
            wait_until(lambda: not worker.is_alive() or bool(op.fault_when(ctx)), STEP_JOIN_S, poll=0.1)
        worker.join(op.fault_delay_s)
        if worker.is_alive():
            cycle(run, fault, plan, op.hold_s, op.after_s)
    bound = plan.exp.recovery_bound_s
    worker.join(STEP_JOIN_S + bound + margin(bound))
    if worker.is_alive():
        box.update(outcome="failed", detail=f"still running {STEP_JOIN_S:.0f} s after the fault's recovery")
    end = box.get("end", run.clock.now())
    # the fault hit the step when it began before the step's action ended (a kill's effect can
    # end the action before the kill is stamped applied: the client's connection dies first)
    began = fault.window.start
    what = f"{fault.kind} {', '.join(t.name for t in fault.targets)}"
    hit = began is not None and began < end
    if hit:
        note = f"{what}, begun {began - start:.1f} s into the step, which ran {end - start:.1f} s"
    else:  # the step was over first: the fault did not hit it, and the record says so
        note = f"none: the step ended {end - start:.1f} s in, before {what} was due ({op.fault_delay_s:g} s)"
    return StepRecord(step.name, start, end, box.get("outcome", "failed"), step.expected,
                      box.get("detail", ""), fault=note, max_outage_s=step.max_outage_s, fault_hit=hit)


__all__ = ["AFTER_S", "BASELINE_S", "HOLD_S", "Operation", "play"]
