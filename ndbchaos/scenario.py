"""A scenario run, the player: the load, the faults, the observation; the recorder keeps the rest.

    run = ScenarioRun(cluster, workload="ledger")
    run.rec.expect(plan)                    # the engine's expectation (ndbchaos.plans)
    with run.rec.phase("baseline"):
        run.start_load(); run.hold(5)
    with run.rec.phase("fault"):
        fault = run.inject(Kill(cluster, [target])); run.rec.mark("reacted", ...)
    with run.rec.phase("recovery"):
        run.heal(fault); run.rec.mark("healthy", ...)
    result = run.finish()                   # stop load, final reads, the record, the verdict

``ndbchaos.driver.play`` runs a scenario declaration this way, typed against the ``Run`` protocol
(``ndbchaos.recording``). What the run observed is written to its recorder (``run.rec``: phases,
steps, marks, measurements, the expectation, check options), and ``finish()`` makes it one
immutable ``RunRecord`` saved with the history (``History.run``), judges it (``check_run``) and
returns the ``Result`` (``ndbchaos.outcome``) that the report, the gate and the trend read: so
``ndbchaos check`` judges a saved run again and ``ndbchaos report`` rebuilds its report. The
player writes no report: the Allure steps come from a listener on the recorder
(``ndbchaos.report.allure.AllureSteps``, given by the fixture), and the fixture renders the
result. ``close()`` (called by the fixture on every path out) stops the load and the observer
and heals open faults even when the run failed half-way, and returns the evidence of a run that
never reached its verdict (``Incomplete``).
"""

from __future__ import annotations

import logging
import random
import threading
from typing import TYPE_CHECKING

from .runtimes import docker
from .checks import check_run
from .errors import ClusterNotReady
from .faults import toxiproxy
from .killswitch import Guard, RunAborted
from .observer import Observer
from .outcome import Incomplete, Result
from .record import RunRecord, ScenarioId
from .recording import Recorder
from .workload import get_workload
from .waiting import wait_until
from .workload.runner import ClientOptions, Endpoint, WorkloadRunner

if TYPE_CHECKING:  # pragma: no cover (the watch reads the engine's status, the evidence its logs)
    from .engines.protocols import Logs, Status

log = logging.getLogger("ndbchaos")


class ScenarioRun:
    """The player of one run (``ndbchaos.recording.Run``): ``rec`` is its recorder."""

    def __init__(self, cluster, workload: str = "ledger", workload_params: dict | None = None,
                 processes: int = 2, connections: int = 2, client: ClientOptions | None = None,
                 seed: int | None = None, title: str = "", via_proxy: bool = False,
                 scenario: ScenarioId | None = None, listeners: tuple = (), guard: Guard | None = None):
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
        self.guard = guard  # the kill switch (None: off); the reason once it fired
        self.aborted: str | None = None
        self._abort = threading.Event()
        self._served_since: float | None = None
        self.observer = Observer(cluster, on_sample=self._watch if guard is not None else None)
        self.t0 = self.clock.now()
        self.rec = Recorder(self.clock, lambda since: [w.to_dict() for w in cluster.journal.windows(since=since)],
                            listeners)
        if self.workload.model:  # a transactional workload: judged against the engine's promise
            promise = eng.consistency_models(self.workload.name, self.workload.params)
            self.rec.set_check_options(consistency_models=list(promise.models), consistency_source=promise.source,
                                       consistency_allows=promise.allows)
        self.faults: list = []
        self.status_before = None
        self.result: Result | None = None
        self._load_running = False
        self._closed = False

    # -- load ---------------------------------------------------------------------------------
    def start_load(self) -> None:
        with self.rec.step(f"start {self.workload.name} load: {self.runner.processes} processes x "
                           f"{self.runner.connections} connections over {', '.join(e.node for e in self.endpoints)}"
                           + (" (through toxiproxy)" if self.via_proxy else "")):
            st = self.cluster.status()
            self.status_before = st.to_dict()
            self.runner.setup(table_engine=self.cluster.engine.table_engine)
            self.observer.start()
            self.runner.start()
            self._load_running = True
            # Wait until every endpoint has served at least one op: the baseline starts warm.
            t = self.clock.now()
            for e in self.endpoints:
                if self.runner.wait_ok(e.node, t - 1e9, 30) is None:
                    raise ClusterNotReady(f"no successful operation on {e.node} within 30 s of starting the load")
            self._served_since = self.clock.now()

    def hold(self, seconds: float) -> None:
        """Let the run go on for ``seconds``; RunAborted at once when the kill switch fires."""
        if self._abort.wait(seconds):
            raise RunAborted(self.aborted)

    def poll(self, predicate, timeout: float, poll: float = 0.1):
        """``wait_until(predicate, timeout, poll)``, stopped by the kill switch (RunAborted)."""
        return wait_until(lambda: self._unless_aborted() or predicate(), timeout, poll)

    def _unless_aborted(self) -> None:
        """RunAborted once the kill switch fired: every wait of the player asks at each poll."""
        if self._abort.is_set():
            raise RunAborted(self.aborted)

    def _watch(self, st) -> None:
        """Each status sample (the observer's thread): the kill switch's check against the plan
        in force, from the first fault window of its scope (the baseline plans nothing down)."""
        if self._served_since is None or self._abort.is_set():
            return
        engine: Status = self.cluster.engine
        windows = self.cluster.journal.windows(since=self.rec.scope_began)
        plan = self.rec.plan if windows else None
        # each data node's group, as the topology labels it (NDB's node groups; Galera's one group
        # holding every replica): a group whose every node failed is lost
        groups = {n.name: n.nodegroup for n in self.cluster.topology.data_nodes}
        why = self.guard.check(st, plan, {t for w in windows for t in w.targets}, self.runner.last_ok,
                               [e.node for e in self.endpoints], groups, self._served_since,
                               engine.node_failed)
        if why is not None:
            self.aborted = f"at {st.t:.1f} s: {why}"
            log.warning("kill switch: %s", self.aborted)
            self.cluster.note("kill_switch", reason=why)
            self._abort.set()

    # -- faults -------------------------------------------------------------------------------
    def inject(self, fault):
        with self.rec.step(f"inject {fault.kind} on {', '.join(t.name for t in fault.targets)}"):
            self.faults.append(fault)
            fault.inject()
            return fault

    def heal(self, fault):
        with self.rec.step(f"heal {fault.kind} on {', '.join(t.name for t in fault.targets)}"):
            return fault.heal()

    def recover_exited(self) -> list[str]:
        """The operator's action after a fault that made nodes exit (NDB StopOnError, an
        arbitration shutdown): restart them (node restart, or the engine's whole-cluster
        procedure when no data node is left)."""
        self.cluster.discover()
        dead = [n for n in self.cluster.topology.nodes
                if docker.container_state(self.cluster.container(n)) in ("exited", "dead", "created")]
        if dead:
            with self.rec.step(f"restart exited nodes: {', '.join(n.name for n in dead)}"):
                self.cluster.engine.recover_nodes(self.cluster, dead)
        return [n.name for n in dead]

    def wait_status(self, predicate, timeout: float, what: str):
        """Wait until the cluster status satisfies ``predicate``; (status, seconds), or
        (None, None) when it did not within ``timeout`` (the verdict judges, not this wait)."""
        with self.rec.step(f"wait for {what} (up to {timeout:.0f} s)"):
            try:
                return self.cluster.wait_for(lambda st: self._unless_aborted() or predicate(st), timeout, what=what)
            except ClusterNotReady as e:
                log.warning("%s", e)
                return None, None

    def wait_healthy(self, timeout: float):
        """Wait until every node is healthy; (status, seconds) or (None, None)."""
        return self.wait_status(lambda st: st.healthy, timeout, "every node healthy")

    # -- the record and the verdict -----------------------------------------------------------
    def _record(self, events: list[dict] | None, status_after: dict | None) -> RunRecord:
        """The run record saved with the history (``History.run`` is its JSON form)."""
        c = self.cluster
        return self.rec.record(
            engine=c.engine.name, project=c.project, title=self.title, seed=self.seed, scenario=self.scenario,
            topology=c.topology.to_dict(), via_proxy=self.via_proxy, workload=self.workload.name, t0=self.t0,
            cluster_samples=[_sample_record(t, ok, s or {}) for t, ok, s in self.observer.cluster_samples],
            node_states={k: [list(x) for x in v] for k, v in self.observer.lanes().items()},
            status_before=self.status_before, status_after=status_after, events=events,
            framework_events=c.journal.events(since=self.t0))

    def _events(self) -> list[dict] | None:
        """The engine's log events since the run began; None when they could not be read (logs
        are evidence: a failure to read them is said, not fatal)."""
        try:
            engine: Logs = self.cluster.engine
            return engine.collect_events(self.cluster, self.t0)
        except Exception as e:
            log.warning("collecting engine log events failed: %s", e)
            return None

    def finish(self) -> Result:
        """Stop the load, run the final reads, build the record and judge it (``check_run``)."""
        with self.rec.step("stop load, final reads, verdict"):
            history = self.runner.stop()
            self._load_running = False
            self.runner.final_reads(history, list(self.endpoints))
            self.observer.stop()
            status_after = self.cluster.status().to_dict()
            record = self._record(self._events(), status_after)
            history.run = record.to_json()
            self.result = Result(history, check_run(history), record)
        return self.result

    def close(self) -> Incomplete | None:
        """Every path out: stop the load and the observer, heal what is open. A run that did not
        reach ``finish()`` returns its evidence so far (the record, and the history when the
        load ran), for the report. A second call does nothing."""
        if self._closed:
            return None
        self._closed = True
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
                record = self._record(self._events(), None)
                if history is not None:
                    history.run = record.to_json()
                return Incomplete(record, history)
            except Exception as e:  # evidence is best effort on a failed run
                log.warning("recording the evidence of the incomplete run failed: %s", e)
        return None


def _sample_record(t: float, healthy: bool, summary: dict) -> dict:
    """One status sample in the run record: health, the arbitrator and master in effect (node
    ids; None where the engine has none) and the nodes not healthy."""
    master = summary.get("master") if summary.get("master") is not None else summary.get("president")
    return {"t": round(t, 3), "healthy": healthy, "arbitrator": summary.get("arbitrator"), "master": master,
            "unhealthy": list(summary.get("unhealthy") or [])}
