"""Checkers: judge a History (plus fault windows) and return verdicts that compose.

    from ndbchaos.checks import check_history
    result = check_history(history, windows=[{"kind": "kill", "start": 10.0, "end": 25.0,
                                              "targets": ["ndbd-1"]}])
    result["valid"]            # True | "unknown" | False, the worst of all checkers
    result["checks"]["durability"]["lost"]            # headline figure (also under "details")
    result["checks"]["availability"]["details"]["per_node"]["sql1"]["longest_outage_s"]

Validity follows Jepsen: ``True`` < ``"unknown"`` < ``False``; ``compose`` returns the worst.
Every checker is a function ``(frame, options) -> Verdict``; ``check_history`` runs the generic
ones (availability, latency, errors) for every workload and the workload's own (ledger:
durability; bank: invariant). See docs/history-format.md for the verdict fields and options.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..history import History

UNKNOWN = "unknown"
_RANK = {True: 0, UNKNOWN: 1, False: 2}

#: Options every checker understands, with their defaults (see docs/history-format.md).
DEFAULT_OPTIONS: dict[str, Any] = {
    "bucket_ms": 100,            # availability series bucket width
    "min_outage_s": 0.2,         # a gap between successes shorter than this is never an outage
    "outage_gap_factor": 3.0,    # ... nor one shorter than factor x the baseline p99 gap
    "max_outage_s": None,        # when set, a longer global outage makes availability invalid
    "recovery_fraction": 0.9,    # throughput counts as recovered at this fraction of baseline
    "recovery_window_s": 1.0,    # measured over a sliding window of this length
    "examples": 20,              # bound of every example list in a verdict
    "co_correction": None,       # None: from params["rate"]; False: never; True: require rate
    "gcp_loss_window_s": None,   # NDB: commits acked this long before ...
    "cluster_crash_at": None,    # ... a whole-cluster crash (run seconds, or a list) may be lost
    "allowed_error_classes": None,  # None: temporary and unknown; others make errors invalid
    "max_p99_ms": None,          # latency: None (measured only), ms for every phase, or {phase: ms}
    # transactional workloads (checks.transactions): the models the history must satisfy, where
    # that promise comes from and what it allows (Engine.consistency_models), and the cycle
    # search's budget per strongly connected component
    "consistency_models": None,  # None: strict-serializable, as Elle
    "consistency_source": None,
    "consistency_allows": None,
    "txn_cycle_search_timeout_ms": 1000,
}


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


Checker = Callable[["Frame", dict], Verdict]  # noqa: F821 (frame type from .frame)

#: Checkers run for every history, in this order.
GENERIC: list[tuple[str, Checker]] = []
#: Extra checkers per workload name.
BY_WORKLOAD: dict[str, list[tuple[str, Checker]]] = {}


def register(name: str, fn: Checker, workload: str | None = None) -> None:
    """Add a checker (for every history when ``workload`` is None)."""
    target = GENERIC if workload is None else BY_WORKLOAD.setdefault(workload, [])
    target[:] = [(n, f) for n, f in target if n != name] + [(name, fn)]


def workload_checkers(history: History) -> list[tuple[str, Checker]]:
    """The workload's own checkers: registered for its name, or, for a project's workload
    (``ndbchaos.workload.app``), those its recorded declaration asks for (``checks.app``)."""
    found = BY_WORKLOAD.get(history.workload)
    if found is None:
        from . import app
        found = app.checkers(history)
    return found


def resolve_options(options: dict | None) -> dict:
    opts = dict(DEFAULT_OPTIONS)
    for k, v in (options or {}).items():
        if k not in DEFAULT_OPTIONS:
            raise ValueError(f"unknown check option {k!r} (known: {', '.join(sorted(DEFAULT_OPTIONS))})")
        opts[k] = v
    bucket = opts["bucket_ms"]
    if not isinstance(bucket, (int, float)) or isinstance(bucket, bool) or not bucket > 0 or not math.isfinite(bucket):
        raise ValueError(f"bucket_ms must be a positive number, not {bucket!r}")
    return opts


def check_history(history: History, windows=None, options: dict | None = None, run: dict | None = None,
                  workload_checks: bool = True) -> dict:
    """Run every checker relevant to the history's workload and compose the verdicts.

    ``windows``: ``[{"kind": str, "start": float, "end": float|None, "targets": [str]}]`` on
    the history's clock (or ``{"windows": [...]}``). ``options``: see ``DEFAULT_OPTIONS``.
    ``run``: a scenario's run record (``History.run``); when it holds an expectation, the
    expectation checker judges the run against it too. ``workload_checks=False`` leaves out the
    workload's own checkers (a span of a run, without its final reads). Raises ``ValueError`` (``WindowError``)
    for unusable windows or options, and ``HistoryFormatError`` for operation values that do
    not fit the workload.
    """
    from .frame import build_frame
    opts = resolve_options(options)
    fr = build_frame(history, windows)
    verdicts = []
    for name, fn in GENERIC + (workload_checkers(history) if workload_checks else []):
        v = _guarded(name, fn, fr, opts)
        if v.name != name:
            v.name = name
        verdicts.append(v)
    if run and run.get("expectation"):
        from . import expectation
        avail = next((v.details for v in verdicts if v.name == "availability"), None)
        verdicts.append(_guarded("expectation", expectation.check, fr, opts, run, avail))
    return {
        "valid": compose(verdicts),
        "workload": history.workload,
        "ops": fr.n,
        "summary": [f"{v.name}: {_word(v.valid)}: {v.summary}" for v in verdicts],
        "phases": fr.phase_spans(),
        "windows": [w.to_json() for w in fr.windows],
        "checks": {v.name: v.to_json() for v in verdicts},
    }


def _guarded(name: str, fn, *args) -> Verdict:
    """A checker's verdict; one that raises is "unknown" with its exception (Jepsen's rule: a
    checker that cannot decide must not take the other verdicts down, nor pass)."""
    try:
        return fn(*args)
    except ValueError:
        raise  # the input is wrong (options, windows, values: HistoryFormatError, WindowError), not the checker
    except Exception as e:  # any other failure of a checker is its verdict
        import traceback
        where = traceback.extract_tb(e.__traceback__)[-1]
        return Verdict(name, UNKNOWN, f"the checker failed: {type(e).__name__}: {e}",
                       {"error": f"{type(e).__name__}: {e}", "at": f"{where.filename}:{where.lineno}"})


def check_run(history: History, options: dict | None = None) -> dict:
    """The verdict of a saved scenario run from its record alone: the windows, check options and
    expectation the run recorded (``History.run``), with ``options`` over the recorded ones.
    A bare history (no run record) is checked as ``check_history`` would. A run of several
    faults (a soak: ``steps`` in the record) is judged as a whole and each fault on its own
    span (``checks.steps``), both in the verdict."""
    run = history.run or {}
    if run.get("steps") is not None:
        from . import steps
        opts = {**steps.whole_run_options(run), **(run.get("check_options") or {}), **(options or {})}
        verdict = check_history(history, run.get("windows"), opts, run=run)
        v = steps.check(history, run, options)
        verdict["checks"][v.name] = v.to_json()
        verdict["summary"].append(f"{v.name}: {_word(v.valid)}: {v.summary}")
        verdict["valid"] = compose([verdict["valid"], v.valid])
        return verdict
    opts = {**(run.get("check_options") or {}), **(options or {})}
    return check_history(history, run.get("windows"), opts, run=run)


def _word(valid) -> str:
    return {True: "valid", False: "INVALID"}.get(valid, "unknown")


def _transactions(fr, opts) -> Verdict:
    """The anomaly checker (checks.transactions), imported when a transactional history is
    checked: it brings scipy, a third of a second that no other workload needs."""
    from .transactions import check
    return check(fr, opts)


def _register_builtin() -> None:
    from . import availability, bank, errors, latency, ledger
    register("availability", availability.check)
    register("latency", latency.check)
    register("errors", errors.check)
    register("durability", ledger.check, workload="ledger")
    register("invariant", bank.check, workload="bank")
    register("transactions", _transactions, workload="list_append")
    register("transactions", _transactions, workload="rw_register")


_register_builtin()

__all__ = ["Verdict", "compose", "check_history", "check_run", "register", "DEFAULT_OPTIONS", "UNKNOWN"]
