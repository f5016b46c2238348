"""The figures of each checker, typed: what the report, the gate, the summary and the terminal
read from a verdict (``RunVerdict.availability``, ``.latency``, ...), instead of digging into the
JSON form's dicts.

A checker writes its figures as its verdict's JSON ``details`` (the form saved in the report and
printed by ``ndbchaos check``; docs/history-format.md); this module is the one place that reads
that form back, field by field, with the default a missing field means (a verdict saved by an
older version, a checker that could not decide). Everything downstream reads these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


@dataclass(frozen=True)
class Series:
    """The availability series: per bucket of ``bucket_s`` from ``t0``, ok ops (all, and per
    SQL node), failed and indeterminate ops."""
    bucket_s: float = 0.1
    t0: float = 0.0
    ok: list = field(default_factory=list)
    ok_by_node: dict = field(default_factory=dict)
    fail: list = field(default_factory=list)
    info: list = field(default_factory=list)

    @classmethod
    def of(cls, d: dict | None) -> "Series":
        d = d or {}
        return cls(float(d.get("bucket_s") or 0.1), float(d.get("t0") or 0.0), list(d.get("ok") or []),
                   dict(d.get("ok_by_node") or {}), list(d.get("fail") or []), list(d.get("info") or []))


@dataclass(frozen=True)
class Availability:
    longest_outage_s: float | None
    per_node: dict[str, float | None]  # SQL node -> its longest outage (s)
    throughput_recovered_s: float | None
    recovery_fraction: float
    success_rate: float | None
    series: Series

    @classmethod
    def of(cls, d: dict) -> "Availability":
        return cls(_num(d.get("longest_outage_s")),
                   {n: _num((nd or {}).get("longest_outage_s")) for n, nd in (d.get("per_node") or {}).items()},
                   _num(d.get("throughput_recovered_s")), float(d.get("recovery_fraction") or 0.9),
                   _num(d.get("success_rate")), Series.of(d.get("series")))


@dataclass(frozen=True)
class LatencyStats:
    count: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    by_f: dict[str, "LatencyStats"]  # per operation kind, where the history has several

    @classmethod
    def of(cls, d: dict | None) -> "LatencyStats":
        d = d or {}
        return cls(int(d.get("count") or 0), _num(d.get("p50_ms")), _num(d.get("p99_ms")), _num(d.get("max_ms")),
                   {f: cls.of(x) for f, x in (d.get("by_f") or {}).items()})

    def quantile(self, q: str) -> float | None:
        """``q``: "p50", "p99" or "max"."""
        return {"p50": self.p50_ms, "p99": self.p99_ms, "max": self.max_ms}[q]


@dataclass(frozen=True)
class Latency:
    phases: dict[str, LatencyStats]
    all: LatencyStats

    @classmethod
    def of(cls, d: dict) -> "Latency":
        return cls({p: LatencyStats.of(x) for p, x in (d.get("phases") or {}).items()}, LatencyStats.of(d.get("all")))


@dataclass(frozen=True)
class ErrorCode:
    errno: int | None
    engine_code: int | None
    count: int
    klass: str | None  # temporary, permanent, unknown, or None (unclassified)

    @property
    def label(self) -> str:
        """``errno`` or ``errno/engine code`` (e.g. 1297/4010)."""
        return f"{self.errno}" + (f"/{self.engine_code}" if self.engine_code else "")


@dataclass(frozen=True)
class ErrorStats:
    ops: int
    fail: int
    info: int
    by_class: dict[str, int]
    codes: list[ErrorCode]

    @classmethod
    def of(cls, d: dict | None) -> "ErrorStats":
        d = d or {}
        return cls(int(d.get("ops") or 0), int(d.get("fail") or 0), int(d.get("info") or 0),
                   dict(d.get("by_class") or {}),
                   [ErrorCode(c.get("errno"), c.get("engine_code"), int(c.get("count") or 0), c.get("class"))
                    for c in d.get("codes") or []])


@dataclass(frozen=True)
class Errors:
    phases: dict[str, ErrorStats]
    all: ErrorStats

    @classmethod
    def of(cls, d: dict) -> "Errors":
        return cls({p: ErrorStats.of(x) for p, x in (d.get("phases") or {}).items()}, ErrorStats.of(d.get("all")))


@dataclass(frozen=True)
class Objective:
    """One objective of the engine's expectation: its measured value against its bound."""
    name: str
    valid: bool | str
    measured: object = None
    bound: object = None
    note: str = ""

    @classmethod
    def of(cls, d: dict) -> "Objective":
        return cls(d["name"], d.get("valid", "unknown"), d.get("measured"), d.get("bound"), d.get("note") or "")


@dataclass(frozen=True)
class Expectation:
    objectives: list[Objective]

    @classmethod
    def of(cls, d: dict) -> "Expectation":
        return cls([Objective.of(o) for o in d.get("objectives") or []])

    def objective(self, name: str) -> Objective | None:
        return next((o for o in self.objectives if o.name == name), None)


@dataclass(frozen=True)
class Durability:
    """The ledger's: acknowledged inserts, those lost (and how many the engine's crash window
    explains), and those of unknown outcome."""
    acknowledged: int
    lost: int | None
    explained_by_gcp: int
    indeterminate: int

    @classmethod
    def of(cls, d: dict) -> "Durability":
        lost = d.get("lost")
        return cls(int(d.get("acknowledged") or 0), None if lost is None else int(lost),
                   int(d.get("explained_by_gcp") or 0), int(d.get("indeterminate") or 0))


@dataclass(frozen=True)
class Transactions:
    """The transactional checker's: the anomalies found (type -> count), the models promised and
    whether the history held them, the transactions by outcome, lost appends, one example of
    each anomaly type (its explanation and cycle picture). ``decided`` is False when the checker
    could not read the history as transactions (its summary says why)."""
    decided: bool
    model: str | None = None
    consistency_models: list[str] = field(default_factory=list)
    promise: str | None = None
    valid_models: bool | str | None = None
    found: dict[str, int] = field(default_factory=dict)
    not_: list[str] = field(default_factory=list)
    also_not: list[str] = field(default_factory=list)
    txns: dict[str, int] = field(default_factory=dict)  # ok, fail, info
    lost: int = 0
    examples: list[dict] = field(default_factory=list)  # {"type", "explanation", "svg"}

    @classmethod
    def of(cls, d: dict) -> "Transactions":
        if "model" not in d:
            return cls(False)
        return cls(True, d["model"], list(d.get("consistency_models") or []), d.get("promise"),
                   d.get("valid_models"), dict(d.get("found") or {}), list(d.get("not") or []),
                   list(d.get("also_not") or []), dict(d.get("txns") or {}), int(d.get("lost") or 0),
                   list(d.get("examples") or []))

    def found_text(self) -> str:
        return ", ".join(f"{k} x{n}" for k, n in self.found.items()) or "no anomaly"


@dataclass(frozen=True)
class FaultStep:
    """One fault of a soak, judged on its own span."""
    index: int
    scenario: str
    family: str | None
    targets: list[str]
    begin: float
    end: float
    ops: int
    valid: bool | str
    summary: list[str]
    objectives: list[Objective]

    @classmethod
    def of(cls, d: dict) -> "FaultStep":
        return cls(d.get("index"), d.get("scenario"), d.get("family"), list(d.get("targets") or []), d["begin"],
                   d["end"], int(d.get("ops") or 0), d.get("valid", "unknown"), list(d.get("summary") or []),
                   [Objective.of(o) for o in d.get("objectives") or []])


@dataclass(frozen=True)
class Faults:
    steps: list[FaultStep]

    @classmethod
    def of(cls, d: dict) -> "Faults":
        return cls([FaultStep.of(s) for s in d.get("steps") or []])


#: checker name -> the type of its figures
FIGURES = {"availability": Availability, "latency": Latency, "errors": Errors, "expectation": Expectation,
           "durability": Durability, "transactions": Transactions, "faults": Faults}

__all__ = ["Availability", "Durability", "ErrorCode", "ErrorStats", "Errors", "Expectation", "FIGURES", "FaultStep",
           "Faults", "Latency", "LatencyStats", "Objective", "Series", "Transactions"]
