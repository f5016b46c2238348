"""Running the checkers: the registry (``GENERIC`` for every history, ``BY_WORKLOAD`` for a
workload's own), the options every checker understands (``DEFAULT_OPTIONS``) and
``check_history``, which runs every checker relevant to a history and composes their verdicts.
A checker that raises is an "unknown" verdict with its exception (``_guarded``).
"""

from __future__ import annotations

import math
import traceback
from typing import Any, Callable

from ..history import History
from .app import checkers as app_checkers
from .availability import check as check_availability
from .backup import check as check_backup
from .bank import check as check_invariant
from .errors import check as check_errors
from .expectation import check as check_expectation
from .latency import check as check_latency
from .ledger import check as check_durability
from .procedure import check as check_procedure
from .transactions import check as check_transactions
from .frame import Frame, build_frame
from .verdict import UNKNOWN, RunVerdict, Verdict

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


Checker = Callable[[Frame, dict], Verdict]

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
        found = app_checkers(history)
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
                  workload_checks: bool = True) -> RunVerdict:
    """Run every checker relevant to the history's workload and compose the verdicts.

    ``windows``: ``[{"kind": str, "start": float, "end": float|None, "targets": [str]}]`` on
    the history's clock (or ``{"windows": [...]}``). ``options``: see ``DEFAULT_OPTIONS``.
    ``run``: a scenario's run record (``History.run``); when it holds an expectation, the
    expectation checker judges the run against it too, and when it holds an operator's
    ``procedure``, the procedure checker (and the backup checker for its backup).
    ``workload_checks=False`` leaves out the workload's own checkers (a span of a run, without
    its final reads). Raises ``ValueError`` (``WindowError``)
    for unusable windows or options, and ``HistoryFormatError`` for operation values that do
    not fit the workload.
    """
    opts = resolve_options(options)
    fr = build_frame(history, windows)
    verdicts = []
    for name, fn in GENERIC + (workload_checkers(history) if workload_checks else []):
        v = _guarded(name, fn, fr, opts)
        if v.name != name:
            v.name = name
        verdicts.append(v)
    if run and run.get("expectation"):
        avail = next((v.details for v in verdicts if v.name == "availability"), None)
        verdicts.append(_guarded("expectation", check_expectation, fr, opts, run, avail))
    proc = (run or {}).get("procedure")
    if proc is not None:  # an operator's procedure (its phases give the baseline), and its backup
        verdicts.append(_guarded("procedure", check_procedure, fr, opts, proc, run.get("phases")))
        if proc.get("backup"):  # a procedure that is not an object raised above
            verdicts.append(_guarded("backup", check_backup, fr, opts, proc["backup"]))
    return RunVerdict.of(verdicts, history.workload, fr.n, fr.phase_spans(), [w.to_json() for w in fr.windows])


def _guarded(name: str, fn, *args) -> Verdict:
    """A checker's verdict; one that raises is "unknown" with its exception (Jepsen's rule: a
    checker that cannot decide must not take the other verdicts down, nor pass)."""
    try:
        return fn(*args)
    except ValueError:
        raise  # the input is wrong (options, windows, values: HistoryFormatError, WindowError), not the checker
    except Exception as e:  # any other failure of a checker is its verdict
        where = traceback.extract_tb(e.__traceback__)[-1]
        return Verdict(name, UNKNOWN, f"the checker failed: {type(e).__name__}: {e}",
                       {"error": f"{type(e).__name__}: {e}", "at": f"{where.filename}:{where.lineno}"})


def _register_builtin() -> None:
    register("availability", check_availability)
    register("latency", check_latency)
    register("errors", check_errors)
    register("durability", check_durability, workload="ledger")
    register("invariant", check_invariant, workload="bank")
    register("transactions", check_transactions, workload="list_append")
    register("transactions", check_transactions, workload="rw_register")


_register_builtin()
