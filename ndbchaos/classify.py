"""Client error classification, by error number and engine code, never by exception class.

Classes (NDB's own, reference/ndb.md section 6.1):
  temporary  the operation did not take effect and may be retried (NDB TR/NR/OL/TO/NS/IT;
             Galera 1047 not-ready, 1213 certification conflict, 1205 lock wait)
  unknown    the client cannot know whether it took effect (NDB UR/UE such as 4009 Cluster
             Failure; a connection lost while a statement was in flight)
  permanent  a definite failure that retrying will not fix

``outcome`` turns a class into the history's op type: a failed write whose effect is unknown is
``info`` (indeterminate); everything else is ``fail``. A read never changes state, so a failed
read is always ``fail``.
"""

from __future__ import annotations

import re

# Client-side connection errors (libmysqlclient / connector numbering).
CR_CONN_ERRORS_BEFORE_SEND = {2002, 2003, 2005, 2026, 2059, 2061}  # never reached the server
CR_CONN_LOST = {2006, 2013, 2055}  # lost with a statement possibly in flight
CLIENT_TIMEOUT = -2  # our own marker: read/write timeout or watchdog fired

_NDB_RE = re.compile(r"Got (temporary )?error (\d+)")

# NDB error codes by classification (ndberror.cpp), the subset clients meet under faults.
NDB_TEMPORARY = {
    286, 4010, 4025, 4027, 4028, 4029, 4031, 250, 499, 631, 1204, 4002, 4033, 4007, 4013, 4035,
    4115, 4119, 20016,  # NR node recovery
    280, 270, 4023, 4030, 4034, 1223,  # NS node shutdown
    266, 274, 296, 297, 237, 4351,  # TO timeout
    410, 1221, 701, 711,  # OL overload
    1220, 1234,  # TR temporary resource
    702,  # IT internal temporary
}
NDB_UNKNOWN = {4009, 4008, 4012}  # UR unknown result
NDB_PERMANENT = {281, 4350, 4345, 623, 624, 827}

GALERA_TEMPORARY = {1047, 1213, 1205, 1180, 1181}


def parse_ndb_code(message: str) -> tuple[int | None, bool | None]:
    """From MySQL 1296/1297 texts: 'Got temporary error 4010 ...' -> (4010, True)."""
    m = _NDB_RE.search(message or "")
    if not m:
        return None, None
    return int(m.group(2)), bool(m.group(1))


def classify(engine: str, errno: int | None, message: str = "") -> tuple[str | None, int | None]:
    """Return (class, engine_code)."""
    if errno == CLIENT_TIMEOUT or errno in CR_CONN_LOST:
        return "unknown", None
    if errno in CR_CONN_ERRORS_BEFORE_SEND:
        return "temporary", None
    if engine == "ndb":
        code, temp = parse_ndb_code(message)
        if errno in (1296, 1297) and code is not None:
            if code in NDB_UNKNOWN:
                return "unknown", code
            if temp or code in NDB_TEMPORARY or errno == 1297:
                return "temporary", code
            return "permanent", code
        if errno == 1205:
            return "temporary", None
        if errno in (157, 1296) and "4009" in (message or ""):
            return "unknown", 4009
    if errno in GALERA_TEMPORARY:
        return "temporary", None
    if errno is None:
        return None, None
    return "permanent", None


def outcome(is_write: bool, cls: str | None) -> str:
    """History op type of a failed operation."""
    if is_write and cls == "unknown":
        return "info"
    return "fail"
