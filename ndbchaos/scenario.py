"""A scenario run: the load, the phases, the faults, the observation, and the run record.

    run = ScenarioRun(cluster, workload="ledger")
    run.expect(plan)                        # the engine's expectation (ndbchaos.plans)
    with run.phase("baseline"):
        run.start_load(); run.hold(5)
    with run.phase("fault"):
        fault = run.inject(Kill(cluster, [target])); run.mark("reacted", ...)
    with run.phase("recovery"):
        run.heal(fault); run.mark("healthy", ...)
    result = run.finish()                   # stop load, final reads, the record, the verdict

``ndbchaos.driver.play`` runs a scenario declaration this way. Everything the verdict needs is
in the run record (``ndbchaos.record.RunRecord``, saved as ``History.run``: engine, topology,
expectation, fault windows, phases, marks, status samples, engine events, check options) saved
with the history, so ``ndbchaos check`` on the saved file judges the run again and gets the same
verdict. ``close()`` (called by the fixture on every path out) stops the load and the observer
and heals open faults even when the run failed half-way, and keeps the evidence of a run that
never reached its verdict.

The run owns its state: drivers write it through its methods (``mark``, ``measure``, ``expect``,
``set_check_options``, ``fault_step``, ``declare_soak``, ``keep_memory``, ``record_procedure``) and read it through
read-only views (``marks``, ``measurements``, ``check_options``).
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from dataclasses import dataclass, field
from types import MappingProxyType

from . import runtime
from .checks import RunVerdict, check_run
from .errors import ClusterNotReady
from .faults import toxiproxy
from .history import History
from .observer import Observer
from .record import Phase, RunRecord, ScenarioId, plain
from .report import allure as report
from .workload import get_workload
from .workload.runner import ClientOptions, Endpoint, WorkloadRunner

log = logging.getLogger("ndbchaos")

#: the marks a driver records (see ndbchaos.checks.expectation)
MARKS = ("fault", "in_place", "reacted", "stopped_serving", "shut_down", "heal", "healthy")


@dataclass
class Measurement:
    name: str
    value: float | int | str | None
    unit: str = ""
    note: str = ""
    bound: float | None = None


@dataclass(frozen=True)
class Result:
    history: History  # its ``run`` is the record's JSON form
    verdict: RunVerdict
    record: RunRecord
    events: list[dict] = field(default_factory=list)

    @property
    def valid(self):
        return self.verdict.valid

    @property
    def windows(self) -> list[dict]:
        return self.record.windows

    @property
    def phases(self) -> list[Phase]:
        return self.record.phases

    @property
    def status_after(self) -> dict | None:
        return self.record.status_after


@dataclass
class _Scope:
    """What a fault is judged with: its plan, the marks and measurements of its run (or of its
    step, in a run of several) and the check options it asks for."""
    plan: object = None  # ndbchaos.plans.Plan
    marks: dict = field(default_factory=dict)
    measurements: dict = field(default_factory=dict)
    check_options: dict = field(default_factory=dict)


class ScenarioRun:
    def __init__(self, cluster, workload: str = "ledger", workload_params: dict | None = None,
                 processes: int = 2, connections: int = 2, client: ClientOptions | None = None,
                 seed: int | None = None, title: str = "", via_proxy: bool = False,
                 scenario: ScenarioId | None = None):
        self.cluster = cluster
        self.clock = cluster.clock
        self.seed = seed if seed is not None else random.randrange(1 << 30)
        self.rng = random.Random(self.seed)
        self.title = title
        self.scenario = scenario  # who the run is (the play fixture's test): in the record
        eng = cluster.engine
        # The engine's settings first (e.g. NDB's locking reads for the bank), the caller's over them.
        self.workload = get_workload(workload, **{**eng.workload_params(workload), **(workload_params or {})})
        self.client = client or ClientOptions()
        self.client.engine = eng.name
        self.client.user, self.client.password, self.client.database = eng.sql_user, eng.sql_password, eng.sql_database
        self.client.seed = self.seed
        self.via_proxy = bool(via_proxy)  # the clients' route (in the record): a client-path fault acts on no other
        if via_proxy:  # clients go through toxiproxy (the client-path overlay)
            self.endpoints = [Endpoint(name, port) for name, port in toxiproxy.proxy_ports(cluster).items()]
        else:
            self.endpoints = [Endpoint(n.name, n.sql_port, n.sql_host) for n in cluster.topology.sql_nodes]
        self.runner = WorkloadRunner(self.workload, self.endpoints, self.clock, processes, connections, self.client)
        self.observer = Observer(cluster)
        self.phases: list[Phase] = []
        self._scope = _Scope()
        if self.workload.model:  # a transactional workload: judged against the engine's promise
            promise = eng.consistency_models(self.workload.name, self.workload.params)
            self.set_check_options(consistency_models=list(promise.models), consistency_source=promise.source,
                                   consistency_allows=promise.allows)
        self.faults: list = []
        self.steps: list[dict] = []  # the faults of a run with several (a soak), each its own record
        self.soak: dict | None = None  # a soak's declaration, seed and schedule (``declare_soak``)
        self.memory: list[dict] = []  # resident memory samples of a soak (``keep_memory``)
        self.procedure: dict | None = None  # an operation's record (``record_procedure``)
        self.status_before = None
        self.result: Result | None = None
        self._load_running = False
        self.t0 = self.clock.now()
        report.title(title)

    # -- what the run's drivers read: views, never written from outside ------------------------
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

    # -- phases, marks, measurements ----------------------------------------------------------
    @contextlib.contextmanager
    def phase(self, name: str, description: str = ""):
        ph = Phase(name, round(self.clock.now(), 6), None, description)
        self.phases.append(ph)
        with report.step(f"{name}" + (f": {description}" if description else "")):
            try:
                yield ph
            finally:
                ph.end = round(self.clock.now(), 6)

    def step(self, title: str):
        return report.step(title)

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
    def fault_step(self, info: dict, plan):
        """One fault of several in a run (a soak; an operation's fault during a step): inside, the
        plan, marks, measurements and check options are this fault's own; on the way out they
        become a step of the run record (with the fault windows and the time span it covers),
        judged on its own by ``check_run``."""
        if self.soak is not None:
            self.soak["schedule"].append(plain(info))
        outer, self._scope = self._scope, _Scope(plan)
        step = {**info, "begin": round(self.clock.now(), 6)}
        try:
            yield step
        finally:
            inner, self._scope = self._scope, outer
            step.update(end=round(self.clock.now(), 6), expectation=plan.to_record(), marks=inner.marks,
                        measurements={k: m.__dict__ for k, m in inner.measurements.items()},
                        check_options=inner.check_options,
                        windows=[w.to_dict() for w in self.cluster.journal.windows(since=step["begin"])])
            self.steps.append(plain(step))

    # -- load ---------------------------------------------------------------------------------
    def start_load(self) -> None:
        with report.step(f"start {self.workload.name} load: {self.runner.processes} processes x "
                         f"{self.runner.connections} connections over {', '.join(e.node for e in self.endpoints)}"
                         + (" (through toxiproxy)" if self.via_proxy else "")):
            st = self.cluster.status()
            self.status_before = st.to_dict()
            report.attach_json(self.status_before, "node states before")
            report.attach_json(self.cluster.topology.to_dict(), "topology")
            self.runner.setup(table_engine=self.cluster.engine.table_engine)
            self.observer.start()
            self.runner.start()
            self._load_running = True
            # Wait until every endpoint has served at least one op: the baseline starts warm.
            t = self.clock.now()
            for e in self.endpoints:
                if self.runner.wait_ok(e.node, t - 1e9, 30) is None:
                    raise ClusterNotReady(f"no successful operation on {e.node} within 30 s of starting the load")

    def hold(self, seconds: float) -> None:
        time.sleep(seconds)

    # -- faults -------------------------------------------------------------------------------
    def inject(self, fault):
        with report.step(f"inject {fault.kind} on {', '.join(t.name for t in fault.targets)}"):
            self.faults.append(fault)
            w = fault.inject()
            report.attach_json(w.to_dict(), f"fault window {fault.kind}")
            return fault

    def heal(self, fault):
        with report.step(f"heal {fault.kind} on {', '.join(t.name for t in fault.targets)}"):
            return fault.heal()

    def recover_exited(self) -> list[str]:
        """The operator's action after a fault that made nodes exit (NDB StopOnError, an
        arbitration shutdown): restart them (node restart, or the engine's whole-cluster
        procedure when no data node is left)."""
        self.cluster.discover()
        dead = [n for n in self.cluster.topology.nodes
                if runtime.container_state(self.cluster.container(n)) in ("exited", "dead", "created")]
        if dead:
            with report.step(f"restart exited nodes: {', '.join(n.name for n in dead)}"):
                self.cluster.engine.recover_nodes(self.cluster, dead)
        return [n.name for n in dead]

    def wait_status(self, predicate, timeout: float, what: str):
        """Wait until the cluster status satisfies ``predicate``; (status, seconds), or
        (None, None) when it did not within ``timeout`` (the verdict judges, not this wait)."""
        with report.step(f"wait for {what} (up to {timeout:.0f} s)"):
            try:
                return self.cluster.wait_for(predicate, timeout, what=what)
            except ClusterNotReady as e:
                log.warning("%s", e)
                return None, None

    def wait_healthy(self, timeout: float):
        """Wait until every node is healthy; (status, seconds) or (None, None)."""
        return self.wait_status(lambda st: st.healthy, timeout, "every node healthy")

    # -- the record and the verdict -----------------------------------------------------------
    def record(self, events: list[dict] | None, status_after: dict | None) -> RunRecord:
        """The run record saved with the history (``History.run`` is its JSON form)."""
        plan = self._scope.plan
        return RunRecord(
            engine=self.cluster.engine.name, project=self.cluster.project, title=self.title, seed=self.seed,
            scenario=self.scenario, topology=self.cluster.topology.to_dict(), via_proxy=self.via_proxy,
            expectation=plan.to_record() if plan is not None else None,
            windows=[w.to_dict() for w in self.cluster.journal.windows(since=self.t0)],
            phases=[Phase(p.name, p.start, p.end, p.description) for p in self.phases],
            marks=dict(self._scope.marks), check_options=dict(self._scope.check_options),
            cluster_samples=[_sample_record(t, ok, s or {}) for t, ok, s in self.observer.cluster_samples],
            status_before=self.status_before, status_after=status_after, events=events,
            framework_events=self.cluster.journal.events(since=self.t0),
            steps=list(self.steps) if self.soak is not None or self.steps else None, soak=self.soak,
            memory=list(self.memory), procedure=self.procedure)

    def finish(self) -> Result:
        """Stop the load, run the final reads, build the record and judge it (``check_run``)."""
        with report.step("stop load, final reads, verdict"):
            history = self.runner.stop()
            self._load_running = False
            self.runner.final_reads(history, list(self.endpoints))
            self.observer.stop()
            status_after = self.cluster.status().to_dict()
            try:
                events = self.cluster.engine.collect_events(self.cluster, self.t0)
            except Exception as e:  # logs are evidence: a failure to read them is said, not fatal
                log.warning("collecting engine log events failed: %s", e)
                events = None
            record = self.record(events, status_after)
            history.run = record.to_json()
            verdict = check_run(history)
            self.result = Result(history, verdict, record, events or [])
            self._measure_availability(verdict)
        report.attach_result(self, self.result)
        return self.result

    def _measure_availability(self, verdict: RunVerdict) -> None:
        av = verdict.availability
        if av is not None and av.longest_outage_s is not None:
            self.measure("outage (all SQL nodes)", av.longest_outage_s, "s",
                         note="longest time with no successful operation on any SQL node")
        targets = {t for w in self.cluster.journal.windows(since=self.t0) for t in w.targets}
        for node, longest in sorted((av.per_node if av is not None else {}).items()):
            self.measure(f"outage on {node}", longest if longest is not None else 0.0, "s",
                         note="longest time with no successful operation on this SQL node"
                         + ("; a fault target, so its own downtime is included" if node in targets else ""))
        exp = verdict.expectation
        fo = exp.objective("clients served again") if exp is not None else None
        if fo is not None and isinstance(fo.measured, (int, float)):
            self.measure("clients served again", fo.measured, "s", bound=fo.bound,
                         note="the slowest of the lost SQL node's clients: its first error -> its next success "
                         + ("(failover to the next SQL node)" if fo.bound is not None
                            else "(no failover: on their own node, once it was back)"))
        if av is not None and av.throughput_recovered_s is not None:
            self.measure("throughput back to 90%", av.throughput_recovered_s, "s",
                         note="after the last heal, until throughput is back to 90% of baseline")

    def close(self) -> None:
        """Every path out: stop the load and the observer, heal what is open. A run that did not
        reach ``finish()`` still leaves its evidence in the report."""
        history = None
        if self._load_running:
            try:
                history = self.runner.stop(timeout=20)  # workers finish the operation in flight
            except BaseException:
                self.runner.kill()
            self._load_running = False
        self.observer.stop()
        for f in self.faults:
            try:
                f.heal()
            except Exception as e:
                log.warning("heal of %s failed: %s", f.kind, e)
        if self.result is None and self.faults:
            try:
                try:
                    events = self.cluster.engine.collect_events(self.cluster, self.t0)
                except Exception as e:
                    events = [{"error": f"collecting engine log events failed: {e}"}]
                if history is not None:
                    history.run = self.record(events, None).to_json()
                report.attach_incomplete(self, history, events)
            except Exception as e:  # evidence is best effort on a failed run
                log.warning("attaching the evidence of the incomplete run failed: %s", e)


def _sample_record(t: float, healthy: bool, summary: dict) -> dict:
    """One status sample in the run record: health, the arbitrator and master in effect (node
    ids; None where the engine has none) and the nodes not healthy."""
    master = summary.get("master") if summary.get("master") is not None else summary.get("president")
    return {"t": round(t, 3), "healthy": healthy, "arbitrator": summary.get("arbitrator"), "master": master,
            "unhealthy": list(summary.get("unhealthy") or [])}

