"""Column view of a History for the checkers: numpy arrays in completion order, plus phases.

Every checker reads the same ``Frame`` so a history is sorted and converted once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..history import FAIL, INFO, NO_INT, OK, History

PHASES = ("baseline", "fault", "recovery")


class WindowError(ValueError):
    """Fault windows that cannot be used (the message says which and why)."""


@dataclass(frozen=True)
class Window:
    kind: str
    start: float
    end: float | None  # None: never healed
    targets: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"kind": self.kind, "start": self.start, "end": self.end, "targets": list(self.targets)}


def parse_windows(windows) -> list[Window]:
    """Validate ``[{"kind": str, "start": float, "end": float|None, "targets": [str]}]``."""
    if windows is None:
        return []
    if isinstance(windows, dict) and "windows" in windows:
        windows = windows["windows"]
    if not isinstance(windows, (list, tuple)):
        raise WindowError("fault windows must be a list of objects")
    out = []
    for k, w in enumerate(windows):
        if isinstance(w, Window):
            out.append(w)
            continue
        if not isinstance(w, dict):
            raise WindowError(f"window {k}: must be an object")
        kind, start, end, targets = w.get("kind", "fault"), w.get("start"), w.get("end"), w.get("targets") or []
        if not isinstance(kind, str):
            raise WindowError(f"window {k}: kind must be a string")
        if not _finite(start):
            raise WindowError(f"window {k}: start must be a number (seconds on the run clock)")
        if end is not None and not _finite(end):
            raise WindowError(f"window {k}: end must be a number or null")
        if end is not None and end < start:
            raise WindowError(f"window {k}: end {end} is before start {start}")
        if not isinstance(targets, (list, tuple)) or not all(isinstance(t, str) for t in targets):
            raise WindowError(f"window {k}: targets must be a list of node names")
        out.append(Window(kind, float(start), None if end is None else float(end), tuple(targets)))
    out.sort(key=lambda w: w.start)
    return out


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass
class Frame:
    history: History
    rows: np.ndarray  # column row index of each op, in completion order
    start: np.ndarray
    end: np.ndarray
    type: np.ndarray  # uint8: 0 ok, 1 fail, 2 info
    f: np.ndarray  # uint8 codes into f_names
    node: np.ndarray  # int16 codes into node_names, -1 none
    process: np.ndarray
    errno: np.ndarray
    ecode: np.ndarray
    ecls: np.ndarray
    f_names: list[str]
    node_names: list[str]
    windows: list[Window]
    phase_bounds: tuple[float, float]  # (first fault start, last fault end); inf when none
    phase: np.ndarray = field(default=None)  # uint8 index into PHASES, by op end time
    identity: bool = False  # rows is 0..n-1: the columns are already in completion order (views)

    @property
    def n(self) -> int:
        return len(self.end)

    def f_code(self, name: str) -> int:
        try:
            return self.f_names.index(name)
        except ValueError:
            return -1

    def mask_f(self, name: str) -> np.ndarray:
        code = self.f_code(name)
        if code < 0:
            return np.zeros(self.n, dtype=bool)
        return self.f == code

    @property
    def t_begin(self) -> float:
        return float(self.start.min()) if self.n else 0.0

    @property
    def t_finish(self) -> float:
        return float(self.end[-1]) if self.n else 0.0

    def phase_spans(self) -> dict:
        """Phase name -> [from, to] in run seconds (None when the phase is empty)."""
        a, b = self.phase_bounds
        t0, t1 = self.t_begin, self.t_finish
        if not self.windows:
            return {"baseline": [t0, t1], "fault": None, "recovery": None}
        return {
            "baseline": [t0, a] if t0 < a else None,
            "fault": [a, b if math.isfinite(b) else t1],
            "recovery": [b, t1] if math.isfinite(b) and b < t1 else None,
        }


def build_frame(history: History, windows=None) -> Frame:
    c = history.cols
    c.flush()
    order = np.frombuffer(history.order(), dtype=np.int64 if history.order().itemsize == 8 else np.int32)
    n = len(order)
    # A history read from a file is already in completion order: the frame then views the
    # columns instead of copying them (41 bytes an op); the columns cannot grow while it lives.
    identity = n > 0 and int(order[0]) == 0 and int(order[-1]) == n - 1 and bool((order[1:] > order[:-1]).all())

    def col(arr, dtype):
        if n == 0:
            return np.empty(0, dtype=dtype)
        if identity:
            v = np.frombuffer(arr, dtype=dtype)
            v.flags.writeable = False  # the History's own columns
            return v
        return np.frombuffer(arr, dtype=dtype)[order]  # fancy indexing copies: no view stays alive

    wins = parse_windows(windows)
    fr = Frame(
        history=history, rows=order if identity else order.copy(),
        start=col(c.start, np.float64), end=col(c.end, np.float64),
        type=col(c.type, np.uint8), f=col(c.f, np.uint8), node=col(c.node, np.int16),
        process=col(c.process, np.int32), errno=col(c.errno, np.int32), ecode=col(c.ecode, np.int32),
        ecls=col(c.ecls, np.uint8), f_names=list(c.f_names), node_names=list(c.node_names),
        windows=wins, phase_bounds=_bounds(wins), identity=identity,
    )
    a, b = fr.phase_bounds
    ph = np.zeros(n, dtype=np.uint8)
    if wins:
        ph[fr.end >= a] = 1
        if math.isfinite(b):
            ph[fr.end > b] = 2
    fr.phase = ph
    return fr


def _bounds(wins: list[Window]) -> tuple[float, float]:
    if not wins:
        return math.inf, math.inf
    a = min(w.start for w in wins)
    b = math.inf if any(w.end is None for w in wins) else max(w.end for w in wins)
    return a, b


def int_values(fr: Frame, mask: np.ndarray) -> np.ndarray | None:
    """The integer values of the ops selected by mask, or None when any is not a plain int."""
    c = fr.history.cols
    if not mask.any():
        return np.empty(0, dtype=np.int64)
    ival = np.frombuffer(c.ival, dtype=np.int64)
    v = ival[mask] if len(ival) == fr.n and fr.identity else ival[fr.rows[mask]]
    if (v == NO_INT).any():
        return None
    return v


__all__ = ["Frame", "Window", "WindowError", "PHASES", "build_frame", "parse_windows", "int_values",
           "OK", "FAIL", "INFO"]
