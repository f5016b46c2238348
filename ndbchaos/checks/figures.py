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


def _int(v) -> int | None:
    return None if v is None else int(v)


@dataclass(frozen=True)
class ProcedureStep:
    """One step of an operator's procedure: how it ended against what the engine allows there,
    and what the clients saw while it ran (the operations that ended in its span)."""
    index: int
    name: str
    start: float
    end: float
    outcome: str
    expected: list[str]
    valid: bool
    detail: str = ""
    fault: str | None = None
    max_outage_s: float | None = None
    ok: int = 0
    fail: int = 0
    info: int = 0
    error_classes: dict[str, int] = field(default_factory=dict)  # class (as the errors checker) -> count
    longest_outage_s: float | None = None
    p99_ms: float | None = None
    throughput_ops_s: float | None = None
    throughput_ratio: float | None = None  # to the baseline's; None without a baseline
    notes: list[str] = field(default_factory=list)  # why the step is not valid

    @classmethod
    def of(cls, d: dict) -> "ProcedureStep":
        return cls(int(d.get("index") or 0), d.get("name") or "", float(d.get("start") or 0.0),
                   float(d.get("end") or 0.0), d.get("outcome") or "", list(d.get("expected") or []),
                   d.get("valid") is True, d.get("detail") or "", d.get("fault"), _num(d.get("max_outage_s")),
                   int(d.get("ok") or 0), int(d.get("fail") or 0), int(d.get("info") or 0),
                   dict(d.get("error_classes") or {}), _num(d.get("longest_outage_s")), _num(d.get("p99_ms")),
                   _num(d.get("throughput_ops_s")), _num(d.get("throughput_ratio")), list(d.get("notes") or []))

    @property
    def as_expected(self) -> bool:
        return self.outcome in self.expected


@dataclass(frozen=True)
class ProcedureOutcome:
    """What the procedure must achieve: ``holds`` True, False or None (not observed)."""
    name: str
    holds: bool | None
    detail: str = ""


@dataclass(frozen=True)
class Procedure:
    """The operator's procedure of an ``operations`` run: its steps, its outcomes, and the
    baseline throughput the steps' are compared with."""
    name: str
    steps: list[ProcedureStep]
    outcomes: list[ProcedureOutcome]
    steps_failed: int = 0
    outcomes_missed: int = 0
    outcomes_unknown: int = 0
    longest_outage_s: float | None = None
    baseline_throughput_ops_s: float | None = None

    @classmethod
    def of(cls, d: dict) -> "Procedure":
        return cls(d.get("procedure") or "", [ProcedureStep.of(s) for s in d.get("steps") or []],
                   [ProcedureOutcome(o.get("name") or "", o.get("holds"), o.get("detail") or "")
                    for o in d.get("outcomes") or []],
                   int(d.get("steps_failed") or 0), int(d.get("outcomes_missed") or 0),
                   int(d.get("outcomes_unknown") or 0), _num(d.get("longest_outage_s")),
                   _num(d.get("baseline_throughput_ops_s")))

    def step(self, name: str) -> ProcedureStep | None:
        return next((s for s in self.steps if s.name == name), None)


@dataclass(frozen=True)
class Backup:
    """What the restore of a backup holds against what it must (the ledger's ids). ``restored``
    is False when the restore did not happen: the anomaly counts are then None."""
    restored: bool
    id: int | None = None
    snapshot: str = "end"  # "end" (SNAPSHOTEND) or "start" (SNAPSHOTSTART)
    issued: float | None = None
    started: float | None = None
    completed: float | None = None
    bound: float | None = None  # the consistency bound: nothing started after it may be restored
    loose_bound: bool = False  # SNAPSHOTSTART bounded by the completion (the start not observed)
    must_have: int = 0
    between: int = 0  # acknowledged between the two bounds ...
    between_restored: int | None = None  # ... and of those, restored: where the snapshot fell
    indeterminate: int = 0
    indeterminate_restored: int | None = None
    ids: int | None = None  # ids read back
    rows: int | None = None  # the restored table's row count
    rows_match: bool | None = None
    missing: int | None = None
    too_late: int | None = None
    not_a_cut: int | None = None
    phantom: int | None = None
    failed_present: int | None = None
    duplicates: int | None = None

    @classmethod
    def of(cls, d: dict) -> "Backup":
        r = d.get("restored")
        return cls(r is not None, _int(d.get("id")), d.get("snapshot") or "end", _num(d.get("issued")),
                   _num(d.get("started")), _num(d.get("completed")), _num(d.get("bound")),
                   bool(d.get("loose_bound")), int(d.get("must_have") or 0), int(d.get("between") or 0),
                   _int(d.get("between_restored")), int(d.get("indeterminate") or 0),
                   _int(d.get("indeterminate_restored")), _int((r or {}).get("ids")), _int((r or {}).get("rows")),
                   d.get("rows_match"), _int(d.get("missing")), _int(d.get("too_late")), _int(d.get("not_a_cut")),
                   _int(d.get("phantom")), _int(d.get("failed_present")), _int(d.get("duplicates")))


#: checker name -> the type of its figures
FIGURES = {"availability": Availability, "latency": Latency, "errors": Errors, "expectation": Expectation,
           "durability": Durability, "transactions": Transactions, "faults": Faults, "procedure": Procedure,
           "backup": Backup}

__all__ = ["Availability", "Backup", "Durability", "ErrorCode", "ErrorStats", "Errors", "Expectation", "FIGURES",
           "FaultStep", "Faults", "Latency", "LatencyStats", "Objective", "Procedure", "ProcedureOutcome",
           "ProcedureStep", "Series", "Transactions"]
