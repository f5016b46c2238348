"""A scenario run: steady load, phases, faults, observation, checks and the report.

    run = ScenarioRun(cluster, workload="ledger")
    with run.phase("baseline"):
        run.start_load(); run.hold(5)
    with run.phase("fault"):
        fault = run.inject(Kill(cluster, [target]))
        ...
    with run.phase("recovery"):
        run.heal(fault); run.wait_healthy(bound)
    result = run.finish()          # stop load, final reads, checks, attachments

Phases are Allure steps; every measurement is stamped on the run clock and shown in the report.
``close()`` (called by the fixture on every path out) stops the load and the observer and heals
open faults even when the scenario failed half-way.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import time
from dataclasses import dataclass, field

from .errors import ClusterNotReady
from .history import History
from .observer import Observer
from .workload import get_workload
from .workload.runner import ClientOptions, Endpoint, WorkloadRunner

log = logging.getLogger("ndbchaos")

try:
    import allure
except ImportError:  # pragma: no cover - allure-pytest is a dependency
    allure = None


def _step(title: str):
    return allure.step(title) if allure else contextlib.nullcontext()


def attach_json(obj, name: str) -> None:
    if allure:
        allure.attach(json.dumps(obj, indent=2, default=str), name=name,
                      attachment_type=allure.attachment_type.JSON)


def attach_text(text: str, name: str) -> None:
    if allure:
        allure.attach(text, name=name, attachment_type=allure.attachment_type.TEXT)


def _md(text) -> str:
    """Text safe inside a Markdown table cell."""
    s = str(text)
    for ch in "\\*_`|<>[]":
        s = s.replace(ch, "\\" + ch)
    return s


@dataclass
class Measurement:
    name: str
    value: float | int | str | None
    unit: str = ""
    note: str = ""
    bound: float | None = None


@dataclass
class Result:
    history: History
    verdict: dict
    measurements: dict[str, Measurement]
    windows: list[dict]
    phases: list[dict]
    status_before: dict | None
    status_after: dict | None
    events: list[dict] = field(default_factory=list)

    def m(self, name: str):
        return self.measurements[name].value


class ScenarioRun:
    def __init__(self, cluster, workload: str = "ledger", workload_params: dict | None = None,
                 processes: int = 2, connections: int = 2, client: ClientOptions | None = None,
                 seed: int | None = None, title: str = "", via_proxy: bool = False):
        self.cluster = cluster
        self.clock = cluster.clock
        self.seed = seed if seed is not None else random.randrange(1 << 30)
        self.rng = random.Random(self.seed)
        self.title = title
        eng = cluster.engine
        # The engine's settings first (e.g. NDB's locking reads for the bank), the caller's over them.
        self.workload = get_workload(workload, **{**eng.workload_params(workload), **(workload_params or {})})
        self.client = client or ClientOptions()
        self.client.engine = eng.name
        self.client.user, self.client.password, self.client.database = eng.sql_user, eng.sql_password, eng.sql_database
        self.client.seed = self.seed
        if via_proxy:  # clients go through toxiproxy (the client-path overlay)
            from .faults import toxiproxy
            self.endpoints = [Endpoint(name, port) for name, port in toxiproxy.proxy_ports(cluster).items()]
        else:
            self.endpoints = [Endpoint(n.name, n.sql_port) for n in cluster.topology.sql_nodes]
        self.runner = WorkloadRunner(self.workload, self.endpoints, self.clock, processes, connections, self.client)
        self.observer = Observer(cluster)
        self.phases: list[dict] = []
        self.measurements: dict[str, Measurement] = {}
        self.faults: list = []
        self.status_before = self.status_after = None
        self.result: Result | None = None
        self._load_running = False
        self._t0 = self.clock.now()
        if allure and title:
            allure.dynamic.title(title)

    # -- phases -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def phase(self, name: str, description: str = ""):
        ph = {"name": name, "start": self.clock.now(), "end": None, "description": description}
        self.phases.append(ph)
        with _step(f"{name}" + (f": {description}" if description else "")):
            try:
                yield ph
            finally:
                ph["end"] = self.clock.now()

    def step(self, title: str):
        return _step(title)

    def measure(self, name: str, value, unit: str = "", note: str = "", bound: float | None = None) -> Measurement:
        """Record a measured figure; it is shown in the report's description table and as a
        test parameter named "<name> [<unit>]"."""
        m = Measurement(name, round(value, 3) if isinstance(value, float) else value, unit, note, bound)
        self.measurements[name] = m
        log.info("measured %s = %s %s %s", name, m.value, unit, note)
        return m

    # -- load ---------------------------------------------------------------------------------
    def start_load(self) -> None:
        with _step(f"start {self.workload.name} load: {self.runner.processes} processes x "
                   f"{self.runner.connections} connections over {', '.join(e.node for e in self.endpoints)}"):
            st = self.cluster.status()
            self.status_before = st.to_dict()
            attach_json(self.status_before, "node states before")
            attach_json(self.cluster.topology.to_dict(), "topology")
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
        with _step(f"inject {fault.kind} on {', '.join(t.name for t in fault.targets)}"):
            self.faults.append(fault)
            w = fault.inject()
            attach_json(w.to_dict(), f"fault window {fault.kind}")
            return fault

    def heal(self, fault):
        with _step(f"heal {fault.kind} on {', '.join(t.name for t in fault.targets)}"):
            return fault.heal()

    def recover_exited(self) -> list[str]:
        """The operator's action after a fault that made nodes exit (NDB StopOnError, an
        arbitration shutdown): restart them (node restart, or the engine's whole-cluster
        procedure when no data node is left)."""
        from . import runtime
        self.cluster.discover()
        dead = [n for n in self.cluster.topology.nodes
                if runtime.container_state(self.cluster.container(n)) in ("exited", "dead", "created")]
        if dead:
            with _step(f"restart exited nodes: {', '.join(n.name for n in dead)}"):
                self.cluster.engine.recover_nodes(self.cluster, dead)
        return [n.name for n in dead]

    def wait_status(self, predicate, timeout: float, what: str):
        """Wait until the cluster status satisfies ``predicate``; return (status, seconds)."""
        with _step(f"wait for {what} (bound {timeout:.0f} s)"):
            return self.cluster.wait_for(predicate, timeout, what=what)

    def wait_healthy(self, timeout: float):
        return self.wait_status(lambda st: st.healthy, timeout, "every node healthy")

    # -- finish -------------------------------------------------------------------------------
    def finish(self, check_options: dict | None = None) -> Result:
        from .checks import check_history
        with _step("stop load, final reads, checks"):
            history = self.runner.stop()
            self._load_running = False
            healthy = [e for e in self.endpoints]
            self.runner.final_reads(history, healthy)
            self.observer.stop()
            st = self.cluster.status()
            self.status_after = st.to_dict()
            windows = [w.to_dict() for w in self.cluster.fault_windows if w.start is not None and w.start >= self._t0]
            verdict = check_history(history, windows=windows, options=check_options or {})
            self.result = Result(history, verdict, self.measurements, windows, self.phases,
                                 self.status_before, self.status_after)
            self._measure_availability(verdict)
            try:
                self.result.events = self.cluster.engine.collect_events(self.cluster, self._t0)
            except Exception as e:  # logs are evidence, not a precondition
                log.warning("collecting engine log events failed: %s", e)
        self.attach()
        return self.result

    def _measure_availability(self, verdict: dict) -> None:
        avail = (verdict.get("checks") or {}).get("availability") or {}
        d = avail.get("details") or {}
        if "longest_outage_s" in d:
            self.measure("outage (all SQL nodes)", d["longest_outage_s"], "s",
                         note="longest time with no successful operation on any SQL node")
        targets = {t for w in self.cluster.fault_windows if w.start is not None and w.start >= self._t0
                   for t in w.targets}
        for node, nd in sorted((d.get("per_node") or {}).items()):
            self.measure(f"outage on {node}", nd.get("longest_outage_s", 0.0), "s",
                         note="longest time with no successful operation on this SQL node"
                         + ("; a fault target, so its own downtime is included" if node in targets else ""))
        if d.get("throughput_recovered_s") is not None:
            self.measure("throughput back to 90%", d["throughput_recovered_s"], "s",
                         note="after the last heal, until throughput is back to 90% of baseline")

    def outage_on(self, node: str) -> float:
        """Longest outage seen by clients of one SQL node (after finish())."""
        d = self.result.verdict["checks"]["availability"]["details"]
        return d["per_node"][node]["longest_outage_s"]

    def attach(self) -> None:
        r = self.result
        if r is None or allure is None:
            return
        from .report.plot import timeline_png
        attach_json(r.status_after, "node states after")
        rows = "\n".join(
            f"| {m.name} | {_md(f'{m.value} {m.unit}')} | {'' if m.bound is None else f'{m.bound:g} {m.unit}'} | {_md(m.note)} |"
            for m in r.measurements.values())
        allure.dynamic.description(
            (self.title + "\n\n" if self.title else "")
            + f"engine **{self.cluster.engine.name}**, project `{self.cluster.project}`, seed {self.seed}, "
            f"{len(r.history)} operations\n\n| measurement | value | bound | note |\n|---|---|---|---|\n{rows}\n")
        for m in r.measurements.values():
            if isinstance(m.value, (int, float)):
                allure.dynamic.parameter(f"{m.name} [{m.unit}]" if m.unit else m.name, m.value)
        try:
            png = timeline_png(r.history, r.windows, self.observer.lanes(),
                               title=self.title or self.workload.name, events=r.events, phases=r.phases)
            allure.attach(png, name="timeline", attachment_type=allure.attachment_type.PNG)
        except Exception as e:  # a plot failure must not hide the verdict
            attach_text(f"timeline plot failed: {e}", "timeline error")
        attach_json(r.verdict, "verdict")
        attach_json(r.phases, "phases")
        attach_json({k: m.__dict__ for k, m in r.measurements.items()}, "measurements")
        attach_json(self.observer.to_json(), "status samples")
        attach_json(self.cluster.events, "framework events")
        attach_json(r.events, f"{self.cluster.engine.name} log events")
        import io
        buf = io.StringIO()
        r.history.dump(buf)
        allure.attach(buf.getvalue(), name="history.jsonl", attachment_type=allure.attachment_type.TEXT,
                      extension="jsonl")

    def close(self) -> None:
        """Every path out: stop the load and the observer, heal what is open. A run that did not
        reach ``finish()`` (an assertion failed, an error) still leaves its evidence in the
        report: the history so far, the fault windows, status samples and the engine's events."""
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
        if self.result is None and allure is not None and self.faults:
            try:
                self._attach_incomplete(history)
            except Exception as e:  # evidence is best effort on a failed run
                log.warning("attaching the evidence of the incomplete run failed: %s", e)

    def _attach_incomplete(self, history) -> None:
        windows = [w.to_dict() for w in self.cluster.fault_windows if w.start is not None and w.start >= self._t0]
        attach_json(windows, "fault windows (incomplete run)")
        attach_json(self.phases, "phases (incomplete run)")
        attach_json({k: m.__dict__ for k, m in self.measurements.items()}, "measurements (incomplete run)")
        attach_json(self.observer.to_json(), "status samples (incomplete run)")
        attach_json(self.cluster.events, "framework events (incomplete run)")
        try:
            events = self.cluster.engine.collect_events(self.cluster, self._t0)
        except Exception as e:
            events = [{"error": f"collecting engine log events failed: {e}"}]
        attach_json(events, f"{self.cluster.engine.name} log events (incomplete run)")
        if history is not None:
            import io
            buf = io.StringIO()
            history.dump(buf)
            allure.attach(buf.getvalue(), name="history.jsonl (incomplete run)",
                          attachment_type=allure.attachment_type.TEXT, extension="jsonl")
