"""The availability gate: objectives per scenario in a TOML file (``spec``), judged on each run's
record (``evaluate``); ``pytest --gate FILE`` and ``ndbchaos gate FILE RESULTS`` (docs/gate.md).

Exit code of a breached gate (an objective of severity fail missed, or a safety failure) when no
test failed otherwise: ``GATE_FAILED``; of a gate that judged nothing (no objective, a pattern
naming no scenario, nothing evaluable on any scenario), live and offline: ``NOTHING_JUDGED``."""

from .evaluate import FAIL, NOT_EVALUATED, PASS, WARN, Run, evaluate, judge, table
from .spec import NOTHING_JUDGED, Gate, GateFileError, GateJudgedNothing, load

GATE_FAILED = 6

__all__ = ["FAIL", "GATE_FAILED", "Gate", "GateFileError", "GateJudgedNothing", "NOTHING_JUDGED", "NOT_EVALUATED",
           "PASS", "Run", "WARN", "evaluate", "judge", "load", "table"]
