"""The availability gate: objectives per scenario in a TOML file (``spec``), judged on each run's
record (``evaluate``); ``pytest --gate FILE`` and ``ndbchaos gate FILE RESULTS`` (docs/gate.md).

Exit code of a breached gate (an objective of severity fail missed, or a safety failure) when no
test failed otherwise: ``GATE_FAILED``."""

from .evaluate import FAIL, NOT_EVALUATED, PASS, WARN, Run, evaluate, judge, table
from .spec import Gate, GateFileError, load

GATE_FAILED = 6

__all__ = ["FAIL", "GATE_FAILED", "Gate", "GateFileError", "NOT_EVALUATED", "PASS", "Run", "WARN", "evaluate",
           "judge", "load", "table"]
