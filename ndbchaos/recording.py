"""The recorder: the one writer of what a run observed, and the ``Run`` the drivers play on.

    rec = Recorder(clock, windows=journal_windows, listeners=[AllureSteps()])
    with rec.phase("fault", "kill data2"):
        rec.mark("fault", t); rec.measure("detection", 1.2, "s", bound=6)
    record = rec.record(...)                 # one immutable RunRecord

A driver (``ndbchaos.driver``, ``ndbchaos.soak``, ``ndbchaos.operations.driver``) writes the run's
phases, steps, marks, measurements, expectation and check options here, through ``run.rec``, and
reads them back through read-only views (``plan``, ``marks``, ``measurements``,
``check_options``). Nothing else writes them; the record it builds is what the checkers, the gate,
the trend, the summary and the report read, live or from the saved file.

Steps (``step``, and each ``phase``) are kept in the record as its outline (title, span on the run
clock, whether it failed) and told to the listeners as they open and close: the Allure steps of a
live run come from a listener (``ndbchaos.report.allure.AllureSteps``), the rebuilt report's from
the outline.

``Run`` is the protocol the drivers type against: the player (``ndbchaos.scenario.ScenarioRun``)
offers it, and so can anything a test or an extension plays on.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, ContextManager, Iterator, Protocol

from .record import Measurement, Phase, RunRecord, ScenarioId, plain

log = logging.getLogger("ndbchaos")

#: the marks a driver records (see ndbchaos.checks.expectation)
MARKS = ("fault", "in_place", "reacted", "stopped_serving", "shut_down", "heal", "healthy")


class StepListener(Protocol):
    """Told of every step as it opens (a context manager around it): e.g. the live Allure steps."""

    def step(self, title: str) -> ContextManager: ...


@dataclass
class _Scope:
    """What a fault is judged with: its plan, the marks and measurements of its run (or of its
    step, in a run of several) and the check options it asks for."""
    plan: object = None  # ndbchaos.plans.Plan
    marks: dict = field(default_factory=dict)
    measurements: dict = field(default_factory=dict)
    check_options: dict = field(default_factory=dict)


class Recorder:
    """Phases, steps, marks, measurements, the expectation and check options of one run, and
    a soak's or an operation's own record; ``record()`` makes them one ``RunRecord``.

    ``windows(since)``: the fault windows (as dicts) opened since a run time, from the cluster's
    journal; ``listeners``: told of each step."""

    def __init__(self, clock, windows: Callable[[float], list[dict]] = lambda since: [],
                 listeners: tuple[StepListener, ...] = ()):
        self.clock = clock
        self._windows = windows
        self.listeners = tuple(listeners)
        self.phases: list[Phase] = []
        self._scope = _Scope()
        self.steps: list[dict] = []  # the faults of a run with several (a soak), each its own record
        self.soak: dict | None = None  # a soak's declaration, seed and schedule (``declare_soak``)
        self.memory: list[dict] = []  # resident memory samples of a soak (``keep_memory``)
        self.procedure: dict | None = None  # an operation's record (``record_procedure``)
        self.outline: list[dict] = []  # the steps taken, nested
        self._open: list[list[dict]] = [self.outline]
        self.scope_began = round(clock.now(), 6)  # when the plan in force began: the run, or its fault step

    # -- read-only views ------------------------------------------------------------------------
    @property
    def plan(self):
        """The expectation this run (or its current fault step) is judged against."""
        return self._scope.plan

    @property
    def marks(self):
        return MappingProxyType(self._scope.marks)

    @property
    def measurements(self):
        return MappingProxyType(self._scope.measurements)

    @property
    def check_options(self):
        return MappingProxyType(self._scope.check_options)

    # -- steps and phases -----------------------------------------------------------------------
    @contextlib.contextmanager
    def step(self, title: str) -> Iterator[dict]:
        """A step of the run: in the record's outline, and told to every listener."""
        node = {"title": title, "start": round(self.clock.now(), 6), "stop": None, "failed": False, "steps": []}
        self._open[-1].append(node)
        self._open.append(node["steps"])
        try:
            with contextlib.ExitStack() as stack:
                for listener in self.listeners:
                    stack.enter_context(listener.step(title))
                yield node
        except BaseException:
            node["failed"] = True
            raise
        finally:
            self._open.pop()
            node["stop"] = round(self.clock.now(), 6)

    @contextlib.contextmanager
    def phase(self, name: str, description: str = "") -> Iterator[Phase]:
        ph = Phase(name, round(self.clock.now(), 6), None, description)
        self.phases.append(ph)
        with self.step(f"{name}" + (f": {description}" if description else "")):
            try:
                yield ph
            finally:
                ph.end = round(self.clock.now(), 6)

    # -- marks, measurements, expectation, options ----------------------------------------------
    def mark(self, name: str, t: float | None) -> float | None:
        """Record a moment of the run (run clock), or None when it was never reached."""
        if name not in MARKS:
            raise ValueError(f"unknown mark {name!r} (known: {', '.join(MARKS)})")
        self._scope.marks[name] = None if t is None else round(float(t), 6)
        return t

    def measure(self, name: str, value, unit: str = "", note: str = "", bound: float | None = None) -> Measurement:
        """Record a measured figure; it is shown in the report's description table and as a
        test parameter named "<name> [<unit>]"."""
        m = Measurement(name, round(value, 3) if isinstance(value, float) else value, unit, note, bound)
        self._scope.measurements[name] = m
        log.info("measured %s = %s %s %s", name, m.value, unit, note)
        return m

    def expect(self, plan) -> None:
        """The expectation this run is judged against (``ndbchaos.plans.Plan``)."""
        self._scope.plan = plan
        self.measure("expectation", plan.exp.rule)
        self.measure("expected serving", ", ".join(plan.serving) or "none")

    def set_check_options(self, **options) -> None:
        """Options the checkers must apply to this run (or its current fault step): an engine's
        crash window, the error classes a fault allows (``ndbchaos.checks.DEFAULT_OPTIONS``)."""
        self._scope.check_options.update(options)

    # -- a soak's, an operation's own record ----------------------------------------------------
    def declare_soak(self, declaration: dict) -> None:
        """This run is a soak (``ndbchaos.soak``): its declaration, seed and menu, in the record;
        its schedule is the fault steps as they are played (``fault_step``)."""
        self.soak = plain({**declaration, "schedule": []})

    def keep_memory(self, samples: list[dict]) -> None:
        """A soak's resident memory samples (``ndbchaos.soak.MemoryProbe``), in the record."""
        self.memory = plain(samples)

    def record_procedure(self, procedure: dict) -> None:
        """This run is an operation (``ndbchaos.operations``): its steps, outcomes and backup, in
        the record, judged by the procedure and backup checkers."""
        self.procedure = plain(procedure)

    @contextlib.contextmanager
    def fault_step(self, info: dict, plan) -> Iterator[dict]:
        """One fault of several in a run (a soak; an operation's fault during a step): inside, the
        plan, marks, measurements and check options are this fault's own; on the way out they
        become a step of the run record (with the fault windows and the time span it covers),
        judged on its own by ``check_run``."""
        if self.soak is not None:
            self.soak["schedule"].append(plain(info))
        outer, self._scope = self._scope, _Scope(plan)
        step = {**info, "begin": round(self.clock.now(), 6)}
        outer_began, self.scope_began = self.scope_began, step["begin"]
        try:
            yield step
        finally:
            inner, self._scope = self._scope, outer
            self.scope_began = outer_began
            step.update(end=round(self.clock.now(), 6), expectation=plan.to_record(), marks=inner.marks,
                        measurements={k: m.to_json() for k, m in inner.measurements.items()},
                        check_options=inner.check_options, windows=self._windows(step["begin"]))
            self.steps.append(plain(step))

    # -- the record -----------------------------------------------------------------------------
    def record(self, *, engine: str, project: str, title: str, seed: int, scenario: ScenarioId | None,
               topology: dict, via_proxy: bool, workload: str, t0: float, cluster_samples: list[dict],
               node_states: dict[str, list], status_before: dict | None, status_after: dict | None,
               events: list[dict] | None, framework_events: list[dict]) -> RunRecord:
        """The run record saved with the history (``History.run`` is its JSON form): what this
        recorder kept, with what the player observed (status, events, the cluster's identity)."""
        plan = self._scope.plan
        return RunRecord(
            engine=engine, project=project, title=title, seed=seed, scenario=scenario, topology=topology,
            via_proxy=via_proxy, expectation=plan.to_record() if plan is not None else None,
            windows=self._windows(t0), phases=[Phase(p.name, p.start, p.end, p.description) for p in self.phases],
            marks=dict(self._scope.marks), check_options=dict(self._scope.check_options),
            cluster_samples=cluster_samples, status_before=status_before, status_after=status_after,
            events=events, framework_events=framework_events,
            steps=list(self.steps) if self.soak is not None or self.steps else None, soak=self.soak,
            memory=list(self.memory), procedure=self.procedure, workload=workload,
            measurements=dict(self._scope.measurements), node_states=plain(node_states),
            outline=plain(self.outline), wall0=getattr(self.clock, "wall0", None))


class Run(Protocol):
    """What a driver plays on: the cluster and its clock, the run's seeded random generator, the
    workload and its runner, the recorder, and the player's actions. ``finish()`` returns the
    judged run (``ndbchaos.outcome.Result``)."""
    cluster: object
    clock: object
    rng: object
    seed: int
    workload: object
    runner: object
    via_proxy: bool
    rec: Recorder

    def start_load(self) -> None: ...

    def hold(self, seconds: float) -> None: ...

    def poll(self, predicate, timeout: float, poll: float = 0.1): ...

    def inject(self, fault): ...

    def heal(self, fault): ...

    def recover_exited(self) -> list[str]: ...

    def wait_status(self, predicate, timeout: float, what: str): ...

    def wait_healthy(self, timeout: float): ...

    def finish(self): ...


__all__ = ["MARKS", "Recorder", "Run", "StepListener"]
