"""An operator's procedure, typed: named steps run one after the other, what the procedure must
achieve (outcomes observed after it), and the cleanup that puts the cluster back.

    Procedure("online_schema_change", steps=[
        Step("add column", lambda ctx: sql(ctx, "ALTER TABLE ... ALGORITHM=INPLACE, ADD COLUMN ...")),
        Step("create index", ...)],
        outcomes=[Outcome("every SQL node sees the new schema", check_schema)])

A step's action returns the engine's own words (one line) when it did its work, and raises
``StepFailed`` (outcome ``failed``, or ``aborted``) with them when it did not. ``expected`` lists
the outcomes the engine's documentation allows for the step as it is played (with a fault during
it, often either): the procedure checker (``ndbchaos.checks.procedure``) judges the recorded
outcome against it. ``max_outage_s``: the longest time the clients may go without a successful
operation during the step, with the reason in the declaration.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from ..errors import NdbChaosError

log = logging.getLogger("ndbchaos")

OUTCOMES = ("done", "failed", "aborted", "skipped")


class StepFailed(NdbChaosError):
    """A step did not do its work: the engine's words, and whether it was ``failed`` (refused,
    an error) or ``aborted`` (the engine gave it up, e.g. a backup on a node failure)."""

    def __init__(self, detail: str, outcome: str = "failed"):
        super().__init__(detail)
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown step outcome {outcome!r}")
        self.outcome = outcome


@dataclass
class Context:
    """What a procedure's steps share: the cluster, the run clock, and what one step leaves for
    the next (a backup's id, the nodes of a new node group) and for the record (``backup``)."""
    cluster: object
    clock: object
    state: dict = field(default_factory=dict)
    backup: dict | None = None  # a backup procedure's record (docs/history-format.md)


@dataclass(frozen=True)
class Step:
    name: str
    action: Callable[[Context], str]
    expected: tuple[str, ...] = ("done",)
    max_outage_s: float | None = None
    description: str = ""
    stop_if_not_done: bool = True  # the procedure cannot go on without it (the rest are skipped)


@dataclass(frozen=True)
class Outcome:
    """What the procedure must have achieved: ``observe(ctx)`` -> (holds, detail); holds None
    when it could not be observed."""
    name: str
    observe: Callable[[Context], tuple[bool | None, str]]


@dataclass(frozen=True)
class Procedure:
    name: str
    steps: tuple[Step, ...]
    outcomes: tuple[Outcome, ...] = ()
    prepare: Callable[[Context], None] | None = None  # before the load: refuse bad input here
    cleanup: Callable[[Context], None] | None = None  # every path out: the cluster as it was

    def step(self, name: str) -> Step:
        for s in self.steps:
            if s.name == name:
                return s
        raise ValueError(f"procedure {self.name} has no step {name!r} (steps: {', '.join(s.name for s in self.steps)})")


@dataclass
class StepRecord:
    name: str
    start: float
    end: float
    outcome: str
    expected: tuple[str, ...]
    detail: str
    fault: str | None = None
    max_outage_s: float | None = None
    fault_hit: bool | None = None  # a fault played during the step began before it ended (None: no fault)

    def to_json(self) -> dict:
        return {"name": self.name, "start": round(self.start, 6), "end": round(self.end, 6), "outcome": self.outcome,
                "expected": list(self.expected), "detail": self.detail, "fault": self.fault,
                "max_outage_s": self.max_outage_s}


def one_line(text: str, limit: int = 300) -> str:
    """The engine's words on one line (a step's detail)."""
    s = " ".join(ln.strip() for ln in (text or "").splitlines() if ln.strip())
    return s if len(s) <= limit else s[:limit - 3] + "..."


def act(step: Step, ctx: Context) -> tuple[str, str]:
    """(outcome, detail) of a step's action. Anything it raises besides ``StepFailed`` (a lost
    connection to Docker, an engine's unexpected answer) fails the step with what was raised: the
    procedure goes on to what follows it (the outcomes, the verdict, the cleanup)."""
    try:
        return "done", one_line(step.action(ctx))
    except StepFailed as e:
        return e.outcome, one_line(str(e))
    except Exception as e:
        log.warning("step %s raised %s: %s", step.name, type(e).__name__, e)
        return "failed", one_line(f"{type(e).__name__}: {e}")


__all__ = ["Context", "OUTCOMES", "Outcome", "Procedure", "Step", "StepFailed", "StepRecord", "act", "one_line"]
