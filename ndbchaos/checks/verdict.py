"""A checker's verdict (``Verdict``) and how verdicts compose: validity follows Jepsen, ``True`` <
``"unknown"`` < ``False``; ``compose`` returns the worst. Every checker returns one; the
checkers' package (``ndbchaos.checks``) composes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

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
        return cls(d["name"], d["valid"], d.get("summary", ""), dict(d.get("details") or {}), lift)


def _valid_of(v) -> bool | str:
    if isinstance(v, Verdict):
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
