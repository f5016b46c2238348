"""Checkers: judge a History (plus fault windows) and return verdicts that compose.

    from ndbchaos.checks import check_history
    result = check_history(history, windows=[{"kind": "kill", "start": 10.0, "end": 25.0,
                                              "targets": ["ndbd-1"]}])
    result.valid                                   # True | "unknown" | False, the worst of all checkers
    result.durability.lost                         # a checker's typed figures (checks.figures)
    result.availability.per_node["sql1"]           # the longest outage on sql1 (s)
    result.to_json()["checks"]["durability"]["lost"]  # the JSON form (docs/history-format.md)

Validity follows Jepsen: ``True`` < ``"unknown"`` < ``False``; ``compose`` returns the worst.
Every checker is a function ``(frame, options) -> Verdict``; ``check_history`` runs the generic
ones (availability, latency, errors) for every workload and the workload's own (ledger:
durability; bank: invariant). See docs/history-format.md for the verdict fields and options.

The package: ``verdict`` (``Verdict``, ``RunVerdict``, ``compose``), ``figures`` (each checker's
figures, typed), ``judge`` (the registry, the options,
``check_history``), one module per checker, ``steps`` (a soak's faults, each on its own span);
``check_run`` here judges a saved run from its record (``check_history`` adds, for an operator's
procedure in the record, ``procedure``: each step's outcome and the clients' impact during it, the
procedure's outcomes; and for a backup, ``backup``: what its restore holds).
"""

from __future__ import annotations

from ..history import History
from . import steps
from .judge import BY_WORKLOAD, DEFAULT_OPTIONS, GENERIC, check_history, register, resolve_options
from .verdict import UNKNOWN, RunVerdict, Verdict, compose


def check_run(history: History, options: dict | None = None) -> RunVerdict:
    """The verdict of a saved scenario run from its record alone: the windows, check options and
    expectation the run recorded (``History.run``), with ``options`` over the recorded ones.
    A bare history (no run record) is checked as ``check_history`` would. A run of several
    faults (a soak: ``steps`` in the record) is judged as a whole and each fault on its own
    span (``checks.steps``), both in the verdict. A run of an operator's procedure
    (``procedure`` in the record) also gets ``procedure`` and, with a backup, ``backup``."""
    run = history.run or {}
    if run.get("steps") is not None:
        opts = {**steps.whole_run_options(run), **(run.get("check_options") or {}), **(options or {})}
        return check_history(history, run.get("windows"), opts, run=run).adding(steps.check(history, run, options))
    opts = {**(run.get("check_options") or {}), **(options or {})}
    return check_history(history, run.get("windows"), opts, run=run)


__all__ = ["RunVerdict", "Verdict", "compose", "check_history", "check_run", "register", "DEFAULT_OPTIONS", "UNKNOWN",
           "GENERIC", "BY_WORKLOAD", "resolve_options"]
