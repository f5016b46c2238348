"""What the metrics endpoint and the Pushgateway show of a run: a prometheus_client collector read
at each scrape (or push) from the run itself, never copied: the load's figures from its runner's
shared arrays (``ndbchaos.workload.figures``), the phase from its recorder (the innermost phase
still open), the active faults from its cluster's journal, and, once the run is judged, its
measurements (``ndbchaos.outcome``).

Every series carries the scenario's name (``scenario``); the client series the SQL node
(``node``). See docs/metrics.md for the list with types and labels.
"""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, InfoMetricFamily

from ..workload.figures import BOUNDS, TYPES

PREFIX = "ndbchaos"
#: the phase value while no phase of the run is open (starting the load, the verdict)
NO_PHASE = "none"


def scenario_name(run) -> str:
    """The scenario's name (its declaration's; else the run's title)."""
    sc = getattr(run, "scenario", None)
    return sc.name if sc is not None else (getattr(run, "title", "") or "run")


def current_phase(run) -> str:
    """The innermost phase of ``run`` still open (``Recorder.phases``), else NO_PHASE."""
    for ph in reversed(list(run.rec.phases)):
        if ph.end is None:
            return ph.name
    return NO_PHASE


def open_faults(run) -> list[tuple[str, str, str]]:
    """(fault, kind, target) of each fault open on the run's cluster (its journal)."""
    out = []
    for f in run.cluster.journal.open_faults():
        targets = getattr(getattr(f, "window", None), "targets", None) or [t.name for t in f.targets]
        out.append((type(f).__name__, f.kind, ",".join(targets)))
    return out


def families(run) -> list:
    """The metric families of ``run`` now."""
    name = scenario_name(run)
    sc = getattr(run, "scenario", None)
    info = InfoMetricFamily(f"{PREFIX}_scenario", "The scenario being played (1 while it is the session's current run)",
                            labels=["scenario", "family", "test", "engine", "project"])
    info.add_metric([name, sc.family if sc is not None else "", sc.test if sc is not None else "",
                     run.cluster.engine.name, run.cluster.project], {})
    phase = GaugeMetricFamily(f"{PREFIX}_phase", "The run's current phase (1; 'none' between phases)",
                              labels=["scenario", "phase"])
    phase.add_metric([name, current_phase(run)], 1)
    faults = open_faults(run)
    active = GaugeMetricFamily(f"{PREFIX}_fault_active", "A fault in place on the cluster (1 while it is open)",
                               labels=["scenario", "fault", "kind", "target"])
    for fault, kind, target in faults:
        active.add_metric([name, fault, kind, target], 1)
    n_open = GaugeMetricFamily(f"{PREFIX}_faults_open", "How many faults are in place", labels=["scenario"])
    n_open.add_metric([name], len(faults))
    out = [info, phase, active, n_open, *client_families(name, run.runner.figures.snapshot())]
    result = getattr(run, "result", None)
    if result is not None:
        out.append(measurements(name, result.measurements))
    return out


def client_families(scenario: str, snap: dict) -> list:
    """The load's figures (``ClientFigures.snapshot()``) as counters and a histogram."""
    ops = CounterMetricFamily(f"{PREFIX}_client_ops", "Client operations that ended, by SQL node and outcome "
                              "(the history's types: ok, fail, info = indeterminate)",
                              labels=["scenario", "node", "type"])
    errors = CounterMetricFamily(f"{PREFIX}_client_errors", "Failed client operations by SQL node, type and error "
                                 "class (ndbchaos.classify; application = declined by the workload)",
                                 labels=["scenario", "node", "type", "class"])
    latency = HistogramMetricFamily(f"{PREFIX}_client_latency_seconds", "Latency of successful client operations",
                                    labels=["scenario", "node"])
    les = [repr(float(b)) for b in BOUNDS] + ["+Inf"]
    for node, f in snap.items():
        ops.add_metric([scenario, node, "ok"], f["ok"])
        for typ in TYPES:
            ops.add_metric([scenario, node, typ], sum(n for (t, _c), n in f["errors"].items() if t == typ))
        for (typ, cls), n in f["errors"].items():
            errors.add_metric([scenario, node, typ, cls], n)
        latency.add_metric([scenario, node], list(zip(les, f["buckets"])), f["sum"])
    return [ops, errors, latency]


def measurements(scenario: str, found: dict) -> GaugeMetricFamily:
    """The judged run's numeric figures (``Result.measurements``: outage, recovery, detection...)."""
    g = GaugeMetricFamily(f"{PREFIX}_run_measurement", "A figure the judged run measured (as in its report)",
                          labels=["scenario", "name", "unit"])
    for key, m in sorted(found.items()):
        if isinstance(m.value, (int, float)) and not isinstance(m.value, bool):
            g.add_metric([scenario, key, m.unit or ""], float(m.value))
    return g


class RunCollector:
    """A prometheus_client collector of the session's current run (``watch``); nothing before the
    first. The endpoint's registry holds one; a push makes one of the finished run."""

    def __init__(self, run=None):
        self.run = run

    def watch(self, run) -> None:
        self.run = run

    def collect(self):
        run = self.run
        if run is None:
            return []
        return families(run)

    def describe(self):
        return []  # the families depend on the run: registered without a description


__all__ = ["NO_PHASE", "RunCollector", "client_families", "current_phase", "families", "scenario_name"]
