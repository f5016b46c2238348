"""Client error classification, by error number and engine code, never by exception class.

Classes (NDB's own, docs/facts.md NDB 6.1):
  temporary  the operation did not take effect and may be retried (NDB TR/NR/OL/TO/NS/IT;
             Galera 1047 not-ready, 1213 certification conflict, 1205 lock wait; a connection
             that was never established, e.g. 2003)
  unknown    the client cannot know whether it took effect (NDB UR/UE such as 4009 Cluster
             Failure, and NDB codes this table does not know; a connection lost while a statement
             was in flight: 2013, 2006, 2055; our CLIENT_TIMEOUT; an error during COMMIT, 1180)
  permanent  a definite failure that retrying will not fix

``outcome`` turns a class into the history's op type: a failed write whose effect is unknown (or
unclassified) is ``info`` (indeterminate); everything else is ``fail``. A read never changes
state, so a failed read is always ``fail``.

This is the engine-neutral front: client-side errors and the MySQL server errors every engine
shares are placed here; the errors that carry an engine's own codes are placed by the engine's
package (``ndbchaos.engines.ndb.errors``: 1296/1297, HA_ERR_NO_CONNECTION, NDB codes at COMMIT;
``ndbchaos.engines.galera.errors``: 1047, 1213). Their error numbers do not overlap, so the order
in which they are asked does not matter.
"""

from __future__ import annotations

import re

from .engines import error_rules

# Client-side connection errors (libmysqlclient / connector numbering).
CR_NEVER_CONNECTED = {2002, 2003, 2005, 2026}  # the statement never reached a server
CR_AUTH = {2059, 2061}  # auth plugin / secure transport required: never executed, not retryable
CR_CONN_LOST = {2006, 2013, 2055}  # lost with a statement possibly in flight
CLIENT_TIMEOUT = -2  # our own marker: read/write timeout or watchdog fired

# MySQL server error numbers (those of an engine's own codes are in its package).
ER_GET_ERRNO = 1030  # "Got error N - '...' from storage engine" (N: handler error)
ER_LOCK_WAIT_TIMEOUT = 1205
ER_ERROR_DURING_COMMIT = 1180
ER_ERROR_DURING_ROLLBACK = 1181
ER_SERVER_SHUTDOWN = 1053
ER_CONNECTION_KILLED = 1927  # MariaDB: connection killed (wsrep_reject_queries=ALL_KILL, shutdown)
ER_QUERY_INTERRUPTED = 1317
HA_ERR_LOCK_WAIT_TIMEOUT = 146
HA_ERR_LOCK_DEADLOCK = 149

_NEVER_SENT_RE = re.compile(r"initial communication packet|reading authorization packet|"
                            r"handshake|Can't connect|Connection refused|Unknown MySQL server host", re.I)

def _rules() -> tuple:
    """The engines' own classifiers, from the engine registry (imported on first use: the engine
    packages import the SQL client, which imports this module)."""
    return error_rules()


def classify(engine: str, errno: int | None, message: str = "") -> tuple[str | None, int | None]:
    """Return (class, engine_code): class in temporary | unknown | permanent | None (no errno and
    nothing recognisable in the message); engine_code the NDB error code when one is known."""
    msg = message or ""
    if errno == CLIENT_TIMEOUT:
        return "unknown", None
    if errno in CR_CONN_LOST:
        # "Lost connection ... at 'reading initial communication packet'": still connecting.
        if errno in (2013, 2055) and _NEVER_SENT_RE.search(msg):
            return "temporary", None
        return "unknown", None
    if errno in CR_NEVER_CONNECTED:
        return "temporary", None
    if errno in CR_AUTH:
        return "permanent", None
    for rules in _rules():
        found = rules(engine, errno, msg)
        if found is not None:
            return found
    if errno == ER_GET_ERRNO:
        h = _handler_code(msg)
        if h in (HA_ERR_LOCK_WAIT_TIMEOUT, HA_ERR_LOCK_DEADLOCK):
            return "temporary", None
        return "unknown", None  # a storage engine error we cannot place
    if errno == ER_ERROR_DURING_COMMIT:
        return "unknown", None  # failing at COMMIT is the classic indeterminate outcome
    if errno == ER_ERROR_DURING_ROLLBACK:
        return "temporary", None  # the transaction did not commit
    if errno == ER_LOCK_WAIT_TIMEOUT:
        return "temporary", None  # NDB 266/274/296/297 and ordinary lock waits: aborted
    if errno in (ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED, ER_QUERY_INTERRUPTED):
        return "unknown", None  # the statement was cut off while running
    if errno is None:
        return None, None
    return "permanent", None


_HANDLER_RE = re.compile(r"Got error:? (-?\d+)")


def _handler_code(message: str) -> int | None:
    m = _HANDLER_RE.search(message or "")
    return int(m.group(1)) if m else None


def outcome(is_write: bool, cls: str | None) -> str:
    """History op type of a failed operation: ``info`` for a write whose effect is unknown or
    could not be classified, else ``fail``."""
    if is_write and cls in ("unknown", None):
        return "info"
    return "fail"
