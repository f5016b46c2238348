"""What happens to a cluster during its life, on its run clock: the framework's own events
(``note``) and its faults (the open ones, healed on every path out, and every window).

The cluster handle owns one journal (``Cluster.journal``); faults register with it when they are
injected and leave it when they are healed or detached. Every method is thread-safe (the
observer, the workload's threads and signal handlers may read it while a fault is applied).
"""

from __future__ import annotations

import threading


class Journal:
    def __init__(self, clock):
        self.clock = clock
        self._lock = threading.RLock()
        self._events: list[dict] = []
        self._open: list = []  # faults injected and not yet healed, in injection order
        self._windows: list = []  # every fault window, healed or not

    # -- framework events ---------------------------------------------------------------
    def note(self, kind: str, **fields) -> dict:
        ev = {"t": round(self.clock.now(), 4), "kind": kind, **fields}
        with self._lock:
            self._events.append(ev)
        return ev

    def events(self, since: float | None = None) -> list[dict]:
        with self._lock:
            return [e for e in self._events if since is None or e["t"] >= since]

    # -- faults -------------------------------------------------------------------------
    def opened(self, fault) -> None:
        """A fault is being injected: it is open (healed on every path out) and has a window."""
        with self._lock:
            self._open.append(fault)
            self._windows.append(fault.window)

    def closed(self, fault) -> None:
        """A fault was healed, or detached (left in place on purpose): it is no longer open."""
        with self._lock:
            if fault in self._open:
                self._open.remove(fault)

    def open_faults(self) -> list:
        with self._lock:
            return list(self._open)

    def windows(self, since: float | None = None) -> list:
        """Fault windows that began at or after run time ``since`` (every one by default)."""
        with self._lock:
            return [w for w in self._windows if since is None or (w.start is not None and w.start >= since)]
