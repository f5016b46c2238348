"""One clock for a run.

Operations, fault windows, status samples and log events are all stamped in seconds since the
run began, measured with CLOCK_MONOTONIC. On Linux that clock is system wide, so worker processes
stamp on the same time base as the parent without any exchange. ``wall()`` maps a run time to
wall-clock time (for container logs, which are stamped in UTC wall time) and ``from_wall()`` back.
"""

from __future__ import annotations

import datetime as _dt
import time


class RunClock:
    def __init__(self, mono0: float | None = None, wall0: float | None = None):
        # Read both clocks back to back; the pair defines the mapping.
        self.mono0 = time.monotonic() if mono0 is None else mono0
        self.wall0 = time.time() if wall0 is None else wall0

    def now(self) -> float:
        return time.monotonic() - self.mono0

    def at(self, mono: float) -> float:
        """Run time of a raw ``time.monotonic()`` reading."""
        return mono - self.mono0

    def wall(self, t: float) -> float:
        return self.wall0 + t

    def from_wall(self, wall: float) -> float:
        return wall - self.wall0

    def iso(self, t: float) -> str:
        return _dt.datetime.fromtimestamp(self.wall(t), _dt.timezone.utc).isoformat(timespec="milliseconds")

    def to_dict(self) -> dict:
        return {"mono0": self.mono0, "wall0": self.wall0}

    @classmethod
    def from_dict(cls, d: dict) -> "RunClock":
        return cls(d["mono0"], d["wall0"])
