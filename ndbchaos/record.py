"""The run record, typed: what a scenario run saves with its history (``History.run``) so that the
checkers judge it again from the file alone (docs/history-format.md, "the run header").

``ScenarioRun`` (ndbchaos.scenario) is its one producer: it builds a ``RunRecord`` when the run
ends (``ScenarioRun.record``). The checkers, the gate and ``ndbchaos check`` read the saved form
(``to_json``: a JSON-safe copy); ``ScenarioId.of`` reads back who the run was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

#: the version of the record's JSON form
VERSION = 1


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
        })


__all__ = ["Phase", "RunRecord", "ScenarioId", "VERSION", "plain"]
