"""A checker's verdict (``Verdict``), a run's (``RunVerdict``: every checker's, composed) and how
verdicts compose: validity follows Jepsen, ``True`` < ``"unknown"`` < ``False``; ``compose``
returns the worst. Every checker returns a ``Verdict``; ``ndbchaos.checks.check_history`` composes
them into a ``RunVerdict``, whose typed figures (``ndbchaos.checks.figures``) the report, the gate,
the summary and the terminal read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable

from .figures import (FIGURES, Availability, Backup, Durability, Errors, Expectation, Faults, Latency,
                      Procedure, Transactions)

UNKNOWN = "unknown"
_RANK = {True: 0, UNKNOWN: 1, False: 2}


@dataclass
class Verdict:
    """One checker's judgement.

    JSON form: ``{"name", "valid", "summary", <headline figures>, "details": {...}}``; the
    headline figures (``lift``) are copies of the most used ``details`` entries (e.g. ``lost``),
    so a gate can read ``verdict["checks"]["durability"]["lost"]``."""

    name: str
    valid: bool | str  # True, False or "unknown"
    summary: str
    details: dict = field(default_factory=dict)
    lift: tuple = ()

    def __post_init__(self):
        if not (self.valid is True or self.valid is False or self.valid == UNKNOWN):
            raise ValueError(f"valid must be True, False or 'unknown', not {self.valid!r}")
        clash = {"name", "valid", "summary", "details"} & set(self.lift)
        if clash:
            raise ValueError(f"headline figures may not use the keys {sorted(clash)}")

    def to_json(self) -> dict:
        out = {"name": self.name, "valid": self.valid, "summary": self.summary}
        for k in self.lift:
            if k in self.details:
                out[k] = self.details[k]
        out["details"] = self.details
        return out

    @classmethod
    def from_json(cls, d: dict) -> "Verdict":
        lift = tuple(k for k in d if k not in ("name", "valid", "summary", "details"))
        return cls(d["name"], d.get("valid", UNKNOWN), d.get("summary", ""), dict(d.get("details") or {}), lift)


@dataclass(frozen=True)
class RunVerdict:
    """The verdict of a run (a history and its record): every checker's ``Verdict`` by name, their
    composed validity, and the typed figures of each (``availability``, ``latency``, ...,
    ``procedure``, ``backup``; None where that checker did not run). JSON form (``to_json``):
    ``{"valid", "workload", "ops", "summary": [one line per checker], "phases", "windows",
    "checks": {name: Verdict JSON}}``, what ``ndbchaos check`` prints and the report saves;
    ``from_json`` reads it back."""

    valid: bool | str
    workload: str
    ops: int
    summary: list[str]
    phases: dict
    windows: list[dict]
    checks: dict[str, Verdict]

    @classmethod
    def of(cls, verdicts: list[Verdict], workload: str, ops: int, phases: dict, windows: list[dict]) -> "RunVerdict":
        return cls(compose(verdicts), workload, ops, [f"{v.name}: {word(v.valid)}: {v.summary}" for v in verdicts],
                   phases, windows, {v.name: v for v in verdicts})

    def adding(self, v: Verdict) -> "RunVerdict":
        """This verdict with one more checker's."""
        return replace(self, valid=compose([self.valid, v.valid]),
                       summary=[*self.summary, f"{v.name}: {word(v.valid)}: {v.summary}"],
                       checks={**self.checks, v.name: v})

    def validity(self, name: str) -> bool | str | None:
        """A checker's validity, or None when it did not run."""
        v = self.checks.get(name)
        return None if v is None else v.valid

    def figures(self, name: str):
        """The typed figures of checker ``name`` (``figures.FIGURES``), or None when it did not run."""
        v = self.checks.get(name)
        return None if v is None else FIGURES[name].of(v.details)

    @property
    def availability(self) -> Availability | None:
        return self.figures("availability")

    @property
    def latency(self) -> Latency | None:
        return self.figures("latency")

    @property
    def errors(self) -> Errors | None:
        return self.figures("errors")

    @property
    def expectation(self) -> Expectation | None:
        return self.figures("expectation")

    @property
    def durability(self) -> Durability | None:
        return self.figures("durability")

    @property
    def transactions(self) -> Transactions | None:
        return self.figures("transactions")

    @property
    def faults(self) -> Faults | None:
        return self.figures("faults")

    @property
    def procedure(self) -> Procedure | None:
        return self.figures("procedure")

    @property
    def backup(self) -> Backup | None:
        return self.figures("backup")

    def failed(self) -> list[str]:
        """The checkers whose verdict is not valid."""
        return [k for k, v in self.checks.items() if v.valid is not True]

    def to_json(self) -> dict:
        return {"valid": self.valid, "workload": self.workload, "ops": self.ops, "summary": list(self.summary),
                "phases": self.phases, "windows": self.windows,
                "checks": {k: v.to_json() for k, v in self.checks.items()}}

    @classmethod
    def from_json(cls, d: dict) -> "RunVerdict":
        checks = {k: Verdict.from_json({"name": k, **v}) for k, v in (d.get("checks") or {}).items()}
        return cls(d.get("valid", UNKNOWN), d.get("workload", ""), int(d.get("ops") or 0), list(d.get("summary") or []),
                   d.get("phases") or {}, list(d.get("windows") or []), checks)


def _valid_of(v) -> bool | str:
    if isinstance(v, (Verdict, RunVerdict)):
        return v.valid
    if isinstance(v, dict):
        return v.get("valid", UNKNOWN)
    return v


def compose(verdicts: Iterable) -> bool | str:
    """The worst validity of verdicts (Verdict objects, verdict dicts or bare values).

    ``True`` < ``"unknown"`` < ``False``; an empty input is ``True``. Anything that is not one
    of those three values counts as ``"unknown"``.
    """
    worst = True
    for v in verdicts:
        x = _valid_of(v)
        if x is not True and x is not False and x != UNKNOWN:
            x = UNKNOWN
        if _RANK[x] > _RANK[worst]:
            worst = x
    return worst


def word(valid) -> str:
    return {True: "valid", False: "INVALID"}.get(valid, "unknown")
