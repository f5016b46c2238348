"""The run record, typed: what a scenario run saves with its history (``History.run``) so that the
checkers judge it again and the report is rebuilt from the file alone (docs/history-format.md,
"the run record").

``ndbchaos.recording.Recorder`` is its one producer: it builds a ``RunRecord`` when the run ends.
It holds everything the run measured: phases, marks, fault windows, the driver's measurements,
status samples and node states, the steps as they were taken, a soak's or an operation's own
record. The checkers, the gate and ``ndbchaos check`` read the saved form (``to_json``: a
JSON-safe copy); ``RunRecord.from_json`` reads it back for the report (``ndbchaos report``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

#: the version of the record's JSON form (2: measurements, node states, outline, workload, wall0)
VERSION = 2


def plain(obj):
    """JSON-safe copy (sets, tuples, dataclasses' dicts) for the run record."""
    return json.loads(json.dumps(obj, default=lambda o: sorted(o) if isinstance(o, (set, frozenset)) else str(o)))


@dataclass(frozen=True)
class ScenarioId:
    """Who a run is: the scenario declaration's name and family, the pytest test (its name and
    node id) and the test's markers (what a gate entry matches)."""
    name: str
    family: str
    test: str = ""
    nodeid: str = ""
    markers: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"name": self.name, "family": self.family, "test": self.test, "nodeid": self.nodeid,
                "markers": list(self.markers)}

    @classmethod
    def of(cls, d: dict | None) -> "ScenarioId | None":
        """From a saved record's ``scenario`` (None when it has none: a bare history, a hand run)."""
        if not d:
            return None
        return cls(d.get("name") or "", d.get("family") or "", d.get("test") or "", d.get("nodeid") or "",
                   tuple(d.get("markers") or ()))


@dataclass(frozen=True)
class Measurement:
    """A figure the run measured: shown in the report's description table and as a test
    parameter "<name> [<unit>]"; ``bound`` is the limit it was judged against, when one was."""
    name: str
    value: float | int | str | None
    unit: str = ""
    note: str = ""
    bound: float | None = None

    def to_json(self) -> dict:
        return {"name": self.name, "value": self.value, "unit": self.unit, "note": self.note, "bound": self.bound}

    @classmethod
    def of(cls, d: dict) -> "Measurement":
        return cls(str(d.get("name") or ""), d.get("value"), str(d.get("unit") or ""), str(d.get("note") or ""),
                   d.get("bound"))


@dataclass
class Phase:
    """A phase of a run (baseline, fault, recovery, a soak's pause): its span on the run clock
    (``end`` None while it lasts)."""
    name: str
    start: float
    end: float | None
    description: str = ""

    def to_json(self) -> dict:
        return {"name": self.name, "start": self.start, "end": self.end, "description": self.description}


@dataclass(frozen=True)
class RunRecord:
    """Everything the verdict needs, and what the report shows of a run.

    ``expectation``: the engine's plan (``ndbchaos.plans.Plan.to_record``); ``windows``: the
    fault windows on the run clock; ``marks``: the moments the driver observed
    (``ndbchaos.checks.expectation``); ``check_options``: what the checkers must apply (an engine's
    crash window, the error classes a fault allows, the promised consistency models);
    ``cluster_samples``: status samples (health, arbitrator, master); ``events``: the engine's
    log events (None when they could not be read); ``steps``/``soak``/``memory``: a soak's faults,
    declaration and resident memory samples; ``procedure``: an operation's steps (each with its
    span, outcome and the outcomes the engine allows), what it had to achieve and, for a backup,
    what the restore held (docs/history-format.md)."""
    engine: str
    project: str
    title: str
    seed: int
    scenario: ScenarioId | None
    topology: dict
    via_proxy: bool
    expectation: dict | None
    windows: list[dict]
    phases: list[Phase]
    marks: dict[str, float | None]
    check_options: dict
    cluster_samples: list[dict]
    status_before: dict | None
    status_after: dict | None
    events: list[dict] | None
    framework_events: list[dict]
    steps: list[dict] | None = None
    soak: dict | None = None
    memory: list[dict] = field(default_factory=list)
    procedure: dict | None = None  # an operation's steps, outcomes and backup (ndbchaos.operations)
    workload: str = ""  # the workload's name
    measurements: dict[str, Measurement] = field(default_factory=dict)  # the driver's, in order
    node_states: dict[str, list] = field(default_factory=dict)  # per node [t, state, healthy] at each change
    outline: list[dict] = field(default_factory=list)  # the steps taken: {title, start, stop, failed, steps}
    wall0: float | None = None  # the wall-clock time (epoch s) of run time 0

    def to_json(self) -> dict:
        return plain({
            "version": VERSION, "engine": self.engine, "project": self.project, "title": self.title,
            "seed": self.seed, "scenario": self.scenario.to_json() if self.scenario else {},
            "topology": self.topology, "via_proxy": self.via_proxy, "expectation": self.expectation,
            "windows": self.windows, "phases": [p.to_json() for p in self.phases], "marks": self.marks,
            "check_options": self.check_options, "cluster_samples": self.cluster_samples,
            "status": {"before": self.status_before, "after": self.status_after},
            "events": self.events, "framework_events": self.framework_events,
            **({"steps": self.steps, "soak": self.soak, "memory": self.memory} if self.soak is not None else
               {"steps": self.steps} if self.steps is not None else {}),
            **({"procedure": self.procedure} if self.procedure is not None else {}),
            "workload": self.workload, "measurements": [m.to_json() for m in self.measurements.values()],
            "node_states": self.node_states, "outline": self.outline, "wall0": self.wall0,
        })

    @classmethod
    def from_json(cls, d: dict) -> "RunRecord":
        """A saved record read back (``History.run``); ValueError naming the field of a wrong
        shape. A record of version 1 has no measurements, node states or outline: empty."""
        if not isinstance(d, dict):
            raise ValueError(f"the run record must be an object, not {type(d).__name__}")

        def get(key, types, default=None):
            v = d.get(key, default)
            if v is not None and not isinstance(v, types):
                raise ValueError(f"run record: {key} must be {_names(types)}, not {type(v).__name__}")
            return v

        status = get("status", dict, {}) or {}
        ms = get("measurements", list, []) or []
        if not all(isinstance(m, dict) for m in ms):
            raise ValueError("run record: measurements must be a list of objects")
        phases = get("phases", list, []) or []
        if not all(isinstance(p, dict) and isinstance(p.get("name"), str) for p in phases):
            raise ValueError('run record: phases must be a list of {"name", "start", "end"} objects')
        return cls(
            engine=get("engine", str, "") or "", project=get("project", str, "") or "",
            title=get("title", str, "") or "", seed=get("seed", int, 0) or 0,
            scenario=ScenarioId.of(get("scenario", dict)), topology=get("topology", dict, {}) or {},
            via_proxy=bool(d.get("via_proxy")), expectation=get("expectation", dict),
            windows=get("windows", list, []) or [],
            phases=[Phase(p["name"], p.get("start"), p.get("end"), p.get("description") or "") for p in phases],
            marks=get("marks", dict, {}) or {}, check_options=get("check_options", dict, {}) or {},
            cluster_samples=get("cluster_samples", list, []) or [],
            status_before=status.get("before"), status_after=status.get("after"), events=get("events", list),
            framework_events=get("framework_events", list, []) or [], steps=get("steps", list),
            soak=get("soak", dict), memory=get("memory", list, []) or [], procedure=get("procedure", dict),
            workload=get("workload", str, "") or "",
            measurements={m.name: m for m in map(Measurement.of, ms)},
            node_states=get("node_states", dict, {}) or {}, outline=get("outline", list, []) or [],
            wall0=get("wall0", (int, float)))


def _names(types) -> str:
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join({"dict": "an object", "list": "a list", "str": "a string", "int": "an integer",
                        "float": "a number"}[t.__name__] for t in types)


__all__ = ["Measurement", "Phase", "RunRecord", "ScenarioId", "VERSION", "plain"]
