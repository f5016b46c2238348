"""NDB error classification: the classes of ndberror.cpp (docs/facts.md NDB 6.1) and how
mysqld hands NDB errors to a client (6.2). ``ndbchaos.classify.classify`` (the engine-neutral
front the workload runner calls) asks ``classify`` here first.

How MySQL surfaces NDB errors (ndb.md section 6.2):
  1297 ``Got temporary error N 'text' from NDBCLUSTER``   N: an NDB code of a temporary class
  1296 ``Got error N 'text' from NDBCLUSTER``             N: any other NDB code
  1205 lock wait timeout                                  NDB 266/274/296/297 (deadlock, timeout)
  157 / 1030 ``Got error 157 ...``                        HA_ERR_NO_CONNECTION (4009, 281)
  1180 ``Got error N ... during COMMIT``                  N: handler or NDB code
"""

from __future__ import annotations

import re

# MySQL server and handler error numbers that carry NDB codes.
ER_GET_ERRNO = 1030  # "Got error N - '...' from storage engine" (N: handler error)
ER_ERROR_DURING_COMMIT = 1180
ER_GET_ERRMSG = 1296
ER_GET_TEMPORARY_ERRMSG = 1297
HA_ERR_NO_CONNECTION = 157  # "Could not connect to storage engine" (NDB 4009 / 281)

_NDB_RE = re.compile(r"Got (temporary )?error:? (-?\d+)")
_HANDLER_RE = re.compile(r"Got error:? (-?\d+)")

# NDB error codes by classification (ndberror.cpp), the subset clients meet under faults.
NDB_TEMPORARY = {
    286, 4025, 4027, 4028, 4029, 4031, 250, 499, 631, 1204, 4002, 4033, 4007, 4013, 4035,
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
# 4010 is NR (temporary) in NDB's table, and the API sets it (Ndb::abortTransactionsAfterNodeFailure)
# when the transaction coordinator's node failed while a commit was outstanding, assuming the
# take-over found nothing to commit. On 9.7.2 an autocommit insert that got 4010 when the master
# data node was killed was present in the final read (docs/ndb.md, finding 22): the outcome of a
# write with 4010 is not known to the client.
NDB_TC_LOST = {4010}
NDB_PERMANENT = {
    281,  # AE cluster shutdown in progress
    4350, 4345,  # IE transaction already aborted; TRIX not available
    623, 624, 827, 826, 633, 921,  # IS out of memory / space
    626, 4241,  # ND tuple did not exist
    630, 893, 839, 21000, 21020,  # CV duplicate key, unique index, foreign key
    241, 284, 283, 709, 723, 4243, 4244, 4249, 4250,  # SE schema errors
    4000, 4003, 4264, 4275,  # AE application errors
}


def parse_ndb_code(message: str) -> tuple[int | None, bool | None]:
    """From MySQL 1296/1297 texts: 'Got temporary error 4010 ...' -> (4010, True)."""
    m = _NDB_RE.search(message or "")
    if not m:
        return None, None
    return int(m.group(2)), bool(m.group(1))


def handler_code(message: str) -> int | None:
    """The handler error number of an ER_GET_ERRNO text: 'Got error 157 - ...' -> 157."""
    m = _HANDLER_RE.search(message or "")
    return int(m.group(1)) if m else None


def ndb_class(code: int, temporary_text: bool = False) -> str:
    """Class of an NDB error code (ndb.md 6.1); codes not in the table are UE, unknown result,
    unless MySQL reported them as temporary (1297)."""
    if code in NDB_UNKNOWN or code in NDB_COMMITTED or code in NDB_TC_LOST:
        return "unknown"
    if code in NDB_TEMPORARY or temporary_text:
        return "temporary"
    if code in NDB_PERMANENT:
        return "permanent"
    return "unknown"


def classify(engine: str, errno: int | None, msg: str) -> tuple[str | None, int | None] | None:
    """(class, NDB code) of the errors that carry NDB codes, or None for an error number these
    rules do not place. mysqld reports 1296/1297 and the handler's 157 the same way whichever
    engine the run uses, so they are placed here for every ``engine``; the NDB code of a 1180
    (during COMMIT) and of a message without an error number is read only for ``engine`` ndb."""
    if errno in (ER_GET_TEMPORARY_ERRMSG, ER_GET_ERRMSG):
        code, temp = parse_ndb_code(msg)
        if code is not None:
            return ndb_class(code, temp or errno == ER_GET_TEMPORARY_ERRMSG), code
        return ("temporary" if errno == ER_GET_TEMPORARY_ERRMSG else "unknown"), None
    if errno == HA_ERR_NO_CONNECTION or (errno == ER_GET_ERRNO and handler_code(msg) == HA_ERR_NO_CONNECTION):
        # NDB 4009 Cluster Failure (or 281 shutdown): no data node reachable, result unknown.
        return "unknown", (4009 if "4009" in msg else (281 if "281" in msg else None))
    if engine != "ndb":
        return None
    if errno == ER_ERROR_DURING_COMMIT:
        # "Got error N - '...' during COMMIT": N is an NDB code for NDBCLUSTER, a handler or OS
        # error otherwise. Failing at COMMIT is the classic indeterminate outcome.
        code, _ = parse_ndb_code(msg)
        if code is not None and code >= 200 and code != HA_ERR_NO_CONNECTION:
            cls = ndb_class(code)
            return ("temporary" if cls == "temporary" else "unknown"), code
        return None
    if errno is None:
        code, temp = parse_ndb_code(msg)
        if code is not None:
            return ndb_class(code, bool(temp)), code
    return None
