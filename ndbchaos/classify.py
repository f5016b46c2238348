"""Client error classification, by error number and engine code, never by exception class.

Classes (NDB's own, reference/ndb.md section 6.1):
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

How MySQL surfaces NDB errors (ndb.md section 6.2):
  1297 ``Got temporary error N 'text' from NDBCLUSTER``   N: an NDB code of a temporary class
  1296 ``Got error N 'text' from NDBCLUSTER``             N: any other NDB code
  1205 lock wait timeout                                  NDB 266/274/296/297 (deadlock, timeout)
  157 / 1030 ``Got error 157 ...``                        HA_ERR_NO_CONNECTION (4009, 281)
  1180 ``Got error N ... during COMMIT``                  N: handler or NDB code
"""

from __future__ import annotations

import re

# Client-side connection errors (libmysqlclient / connector numbering).
CR_NEVER_CONNECTED = {2002, 2003, 2005, 2026}  # the statement never reached a server
CR_AUTH = {2059, 2061}  # auth plugin / secure transport required: never executed, not retryable
CR_CONN_ERRORS_BEFORE_SEND = CR_NEVER_CONNECTED | CR_AUTH  # (name kept for callers)
CR_CONN_LOST = {2006, 2013, 2055}  # lost with a statement possibly in flight
CLIENT_TIMEOUT = -2  # our own marker: read/write timeout or watchdog fired

# MySQL server error numbers.
ER_GET_ERRNO = 1030  # "Got error N - '...' from storage engine" (N: handler error)
ER_LOCK_WAIT_TIMEOUT = 1205
ER_LOCK_DEADLOCK = 1213
ER_ERROR_DURING_COMMIT = 1180
ER_ERROR_DURING_ROLLBACK = 1181
ER_GET_ERRMSG = 1296
ER_GET_TEMPORARY_ERRMSG = 1297
ER_UNKNOWN_COM_ERROR = 1047  # Galera: WSREP has not yet prepared node for application use
ER_SERVER_SHUTDOWN = 1053
ER_CONNECTION_KILLED = 1927  # MariaDB: connection killed (wsrep_reject_queries=ALL_KILL, shutdown)
ER_QUERY_INTERRUPTED = 1317
HA_ERR_NO_CONNECTION = 157  # "Could not connect to storage engine" (NDB 4009 / 281)
HA_ERR_LOCK_WAIT_TIMEOUT = 146
HA_ERR_LOCK_DEADLOCK = 149

_NDB_RE = re.compile(r"Got (temporary )?error:? (-?\d+)")
_HANDLER_RE = re.compile(r"Got error:? (-?\d+)")
_NEVER_SENT_RE = re.compile(r"initial communication packet|reading authorization packet|"
                            r"handshake|Can't connect|Connection refused|Unknown MySQL server host", re.I)

# NDB error codes by classification (ndberror.cpp), the subset clients meet under faults.
NDB_TEMPORARY = {
    286, 4010, 4025, 4027, 4028, 4029, 4031, 250, 499, 631, 1204, 4002, 4033, 4007, 4013, 4035,
    4119, 20016,  # NR node recovery
    280, 270, 4023, 4030, 4034, 1223,  # NS node shutdown
    266, 274, 296, 297, 237, 4351,  # TO timeout
    410, 1221, 701, 711,  # OL overload
    1220, 1234,  # TR temporary resource
    702,  # IT internal temporary
}
NDB_UNKNOWN = {4009, 4008, 4012}  # UR unknown result
# 4115 is NR (temporary) in NDB's table, but its text is "Transaction was committed but all read
# information was not received due to node crash": for a write the effect happened, so the client
# must not call it a definite failure.
NDB_COMMITTED = {4115}
NDB_PERMANENT = {
    281,  # AE cluster shutdown in progress
    4350, 4345,  # IE transaction already aborted; TRIX not available
    623, 624, 827, 826, 633, 921,  # IS out of memory / space
    626, 4241,  # ND tuple did not exist
    630, 893, 839, 21000, 21020,  # CV duplicate key, unique index, foreign key
    241, 284, 283, 709, 723, 4243, 4244, 4249, 4250,  # SE schema errors
    4000, 4003, 4264, 4275,  # AE application errors
}

GALERA_TEMPORARY = {ER_UNKNOWN_COM_ERROR, ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT}


def parse_ndb_code(message: str) -> tuple[int | None, bool | None]:
    """From MySQL 1296/1297 texts: 'Got temporary error 4010 ...' -> (4010, True)."""
    m = _NDB_RE.search(message or "")
    if not m:
        return None, None
    return int(m.group(2)), bool(m.group(1))


def ndb_class(code: int, temporary_text: bool = False) -> str:
    """Class of an NDB error code (ndb.md 6.1); codes not in the table are UE, unknown result,
    unless MySQL reported them as temporary (1297)."""
    if code in NDB_UNKNOWN or code in NDB_COMMITTED:
        return "unknown"
    if code in NDB_TEMPORARY or temporary_text:
        return "temporary"
    if code in NDB_PERMANENT:
        return "permanent"
    return "unknown"


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
    if errno in (ER_GET_TEMPORARY_ERRMSG, ER_GET_ERRMSG):
        code, temp = parse_ndb_code(msg)
        if code is not None:
            return ndb_class(code, temp or errno == ER_GET_TEMPORARY_ERRMSG), code
        return ("temporary" if errno == ER_GET_TEMPORARY_ERRMSG else "unknown"), None
    if errno == HA_ERR_NO_CONNECTION or (errno == ER_GET_ERRNO and _handler_code(msg) == HA_ERR_NO_CONNECTION):
        # NDB 4009 Cluster Failure (or 281 shutdown): no data node reachable, result unknown.
        return "unknown", (4009 if "4009" in msg else (281 if "281" in msg else None))
    if errno == ER_GET_ERRNO:
        h = _handler_code(msg)
        if h in (HA_ERR_LOCK_WAIT_TIMEOUT, HA_ERR_LOCK_DEADLOCK):
            return "temporary", None
        return "unknown", None  # a storage engine error we cannot place
    if errno == ER_ERROR_DURING_COMMIT:
        # "Got error N - '...' during COMMIT": N is an NDB code for NDBCLUSTER, a handler or OS
        # error otherwise. Failing at COMMIT is the classic indeterminate outcome.
        code, _ = parse_ndb_code(msg)
        if engine == "ndb" and code is not None and code >= 200 and code != HA_ERR_NO_CONNECTION:
            cls = ndb_class(code)
            return ("temporary" if cls == "temporary" else "unknown"), code
        return "unknown", None
    if errno == ER_ERROR_DURING_ROLLBACK:
        return "temporary", None  # the transaction did not commit
    if errno == ER_LOCK_WAIT_TIMEOUT:
        return "temporary", None  # NDB 266/274/296/297 and ordinary lock waits: aborted
    if errno in GALERA_TEMPORARY:
        return "temporary", None
    if errno in (ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED, ER_QUERY_INTERRUPTED):
        return "unknown", None  # the statement was cut off while running
    if errno is None:
        code, temp = parse_ndb_code(msg) if engine == "ndb" else (None, None)
        if code is not None:
            return ndb_class(code, bool(temp)), code
        return None, None
    return "permanent", None


def _handler_code(message: str) -> int | None:
    m = _HANDLER_RE.search(message or "")
    return int(m.group(1)) if m else None


def outcome(is_write: bool, cls: str | None) -> str:
    """History op type of a failed operation: ``info`` for a write whose effect is unknown or
    could not be classified, else ``fail``."""
    if is_write and cls in ("unknown", None):
        return "info"
    return "fail"
