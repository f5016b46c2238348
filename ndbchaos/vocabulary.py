"""The engines' vocabulary, on the ground floor: what a cluster looks like (``ClusterStatus`` of
``NodeStatus``), what a fault must do (``Expectation``) and what a transactional workload may see
(``TxnModels``).

Engines produce these values; runtimes, faults, the driver, checks and reports read them. The
module imports nothing of the project, so every layer can name them without reaching an engine
or a runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class NodeStatus:
    """What one node looks like right now.

    ``state`` is engine vocabulary (Galera: Synced/Joining/...; NDB: started/starting/not connected);
    ``healthy`` is the engine's judgement of that state; ``details`` carries the raw fields.
    """

    node: str
    role: str
    container: str  # running | paused | exited | gone ...
    state: str
    healthy: bool
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"node": self.node, "role": self.role, "container": self.container,
                "state": self.state, "healthy": self.healthy, "details": self.details}


@dataclass
class ClusterStatus:
    t: float  # run clock
    nodes: list[NodeStatus]
    healthy: bool
    problems: list[str]
    summary: dict = field(default_factory=dict)  # engine-level facts (component size, arbitrator...)

    def node(self, name: str) -> NodeStatus:
        for n in self.nodes:
            if n.node == name:
                return n
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {"t": round(self.t, 3), "healthy": self.healthy, "problems": self.problems,
                "summary": self.summary, "nodes": [n.to_dict() for n in self.nodes]}


@dataclass
class Expectation:
    """The outcome a fault must have, and the rule it is derived from."""

    family: str
    survivors_serve: bool  # do clients on surviving SQL nodes keep succeeding?
    cluster_survives: bool  # does a primary/running cluster remain?
    rule: str  # where the expectation comes from (reference section, formula)
    detection_bound_s: float  # fault start -> engine reacts (membership change), upper bound
    recovery_bound_s: float  # heal/restart -> node healthy again, upper bound
    recovery: str  # node_restart | system_restart | bootstrap | none
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class TxnModels:
    """The consistency models an engine promises for a transactional workload variant, where
    that promise comes from, and what it allows (what the checker may report without failing)."""

    models: tuple[str, ...]
    source: str
    allows: str = ""

    def to_dict(self) -> dict:
        return {"models": list(self.models), "source": self.source, "allows": self.allows}


__all__ = ["ClusterStatus", "Expectation", "NodeStatus", "TxnModels"]
