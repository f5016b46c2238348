"""Waiting with a deadline: the one polling helper every layer uses.

    value = wait_until(lambda: probe() or None, timeout=30, poll=0.5)       # None on timeout
    value = wait_until(probe, 30, on_timeout=lambda: ClusterNotReady("..."))  # raises instead
    d = Deadline(60); while not d.expired: ...; d.sleep(1.0)

The predicate is always evaluated at least once, also with a timeout of 0, and once more after
the deadline passed during a sleep, so a condition reached just in time is not reported as missed.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

V = TypeVar("V")


class Deadline:
    """A point on the monotonic clock ``seconds`` from now."""

    def __init__(self, seconds: float):
        self.start = time.monotonic()
        self.end = self.start + max(0.0, float(seconds))

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.end

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def sleep(self, poll: float) -> None:
        """Sleep ``poll`` seconds, or what is left of the deadline when that is less."""
        time.sleep(max(0.0, min(poll, self.remaining())))


def wait_until(predicate: Callable[[], V], timeout: float, poll: float = 0.05,
               on_timeout: Callable[[], BaseException] | None = None) -> V | None:
    """Poll ``predicate()`` until it returns a truthy value and return that value. When the
    deadline passes first: raise ``on_timeout()`` if given, else return None."""
    d = Deadline(timeout)
    while True:
        expired = d.expired
        v = predicate()
        if v:
            return v
        if expired:
            if on_timeout is not None:
                raise on_timeout()
            return None
        d.sleep(poll)


__all__ = ["Deadline", "wait_until"]
