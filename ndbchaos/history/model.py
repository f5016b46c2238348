"""The operation model of a history: type and error-class codes, format constants,
``ErrorInfo``, ``Op`` and ``HistoryFormatError``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OK, FAIL, INFO = 0, 1, 2
TYPES = ("ok", "fail", "info")
TYPE_CODE = {t: i for i, t in enumerate(TYPES)}
CLASSES = (None, "temporary", "unknown", "permanent")
CLASS_CODE = {c: i for i, c in enumerate(CLASSES)}
NO_INT = -(2**63)  # marks "value is not a plain int; see the sparse table"
_INT_MAX = 2**63
FORMAT_VERSION = 1
#: file name ending that makes ``History.write`` pick the columnar format
COLUMNAR_SUFFIX = ".nch"
#: process id of the final reads a driver runs after the load stopped (not client load)
FINAL_PROCESS = 1_000_000
_FLUSH_AT = 1024  # Recorder buffer size (ops) before folding into columns
_FLUSH_FLAT = 8 * _FLUSH_AT


class HistoryFormatError(ValueError):
    """A history file that cannot be read; the message names the file and line (``path:line: ...``)."""


@dataclass(frozen=True)
class ErrorInfo:
    errno: int | None
    engine_code: int | None
    cls: str | None  # temporary | unknown | permanent | None
    message: str

    def to_json(self) -> dict:
        return {"errno": self.errno, "engine_code": self.engine_code, "class": self.cls, "message": self.message}


@dataclass(frozen=True)
class Op:
    index: int
    process: int
    f: str
    value: Any
    type: str
    start: float
    end: float
    node: str | None
    error: ErrorInfo | None

    def to_json(self) -> dict:
        return {
            "process": self.process, "f": self.f, "value": self.value, "type": self.type,
            "start": round(self.start, 6), "end": round(self.end, 6), "node": self.node,
            "error": self.error.to_json() if self.error else None,
        }
