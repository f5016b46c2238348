"""The safety net: heal every open fault on the ways out that ``try/finally`` does not cover.

Normal exit, exceptions, assertion failures and Ctrl-C (KeyboardInterrupt) unwind through the
fixtures, which call ``Cluster.heal_all()``. What is left:

* the interpreter exiting with faults still open (a script that forgot to heal): ``atexit``;
* SIGTERM / SIGHUP (CI cancelling the job, the terminal closing): by default Python dies at
  once, without unwinding. A handler heals, then re-delivers the signal with the previous
  disposition, so the exit status is the one the sender expects.

SIGKILL cannot be caught: for that, ``ndbchaos reap`` removes everything labelled with the
project (helpers, proxies, the cluster itself), and every rule we add lives in a container's
own network namespace, which disappears with the container.

Faults register their cluster here on ``inject()``; nothing is installed before the first
fault, and handlers are installed only from the main thread and only over the default
disposition (never over a handler somebody else set).
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
import weakref

log = logging.getLogger("ndbchaos")

_clusters: "weakref.WeakSet" = weakref.WeakSet()
_lock = threading.Lock()
_installed = False
_previous: dict[int, object] = {}
SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)


def register(cluster) -> None:
    global _installed
    with _lock:
        _clusters.add(cluster)
        if _installed:
            return
        _installed = True
    atexit.register(heal_everything, "interpreter exit")
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        try:
            current = signal.getsignal(sig)
            if current in (signal.SIG_DFL, None):
                _previous[sig] = current
                signal.signal(sig, _on_signal)
        except (ValueError, OSError):  # pragma: no cover - not the main thread / no such signal
            pass


def heal_everything(why: str = "") -> list[str]:
    """Heal every open fault of every registered cluster; return the problems met."""
    problems: list[str] = []
    for c in list(_clusters):
        n = len(c.journal.open_faults())
        if not n:
            continue
        log.warning("ndbchaos: healing %d open fault(s) of %s (%s)", n,
                    getattr(c, "project", "?"), why or "safety net")
        try:
            problems += c.heal_all()
        except Exception as e:  # pragma: no cover - heal_all already collects
            problems.append(str(e))
    return problems


def _on_signal(signum, frame) -> None:
    try:
        heal_everything(f"signal {signum}")
    finally:
        prev = _previous.get(signum, signal.SIG_DFL)
        signal.signal(signum, prev if prev is not None else signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def open_fault_count() -> int:
    return sum(len(c.journal.open_faults()) for c in list(_clusters))
