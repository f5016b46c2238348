"""Error classification by number and message (ndb.md 6.1/6.2, galera A3) and the op outcome."""

from __future__ import annotations

import pytest

from ndbchaos.classify import CLIENT_TIMEOUT, classify, outcome
from ndbchaos.engines.ndb.errors import parse_ndb_code


@pytest.mark.parametrize("engine, errno, msg, cls, code", [
    # NDB through mysqld
    # 4010: NDB calls it temporary, but a write that got it was committed on 9.7.2 (finding 22)
    ("ndb", 1297, "Got temporary error 4010 'Node failure caused abort of transaction' from NDBCLUSTER",
     "unknown", 4010),
    ("ndb", 1297, "Got temporary error 1204 'Temporary failure, distribution changed' from NDBCLUSTER",
     "temporary", 1204),
    ("ndb", 1297, "Got temporary error 280 'Transaction aborted due to node shutdown' from NDBCLUSTER",
     "temporary", 280),
    ("ndb", 1297, "Got temporary error 12345 'new code' from NDBCLUSTER", "temporary", 12345),
    ("ndb", 1297, "no code in this text", "temporary", None),
    ("ndb", 1296, "Got error 4009 'Cluster Failure' from NDBCLUSTER", "unknown", 4009),
    ("ndb", 1296, "Got error 4012 'Request ndbd time-out' from NDBCLUSTER", "unknown", 4012),
    ("ndb", 1296, "Got error 4350 'Transaction already aborted' from NDBCLUSTER", "permanent", 4350),
    ("ndb", 1296, "Got error 281 'Operation not allowed due to cluster shutdown in progress' from NDBCLUSTER",
     "permanent", 281),
    ("ndb", 1296, "Got error 630 'Tuple already existed when attempting to insert' from NDBCLUSTER",
     "permanent", 630),
    ("ndb", 1296, "Got error 9999 'Unknown error code' from NDBCLUSTER", "unknown", 9999),  # UE
    ("ndb", 1296, "Got error 4115 'Transaction was committed but ...' from NDBCLUSTER", "unknown", 4115),
    ("ndb", 1205, "Lock wait timeout exceeded; try restarting transaction", "temporary", None),
    ("ndb", 157, "Could not connect to storage engine", "unknown", None),
    ("ndb", 1030, "Got error 157 - 'Could not connect to storage engine' from storage engine", "unknown", None),
    ("ndb", 1030, "Got error 157 'Could not connect to storage engine' (4009)", "unknown", 4009),
    ("ndb", 1030, "Got error 146 - 'Lock timed out; Retry transaction' from storage engine", "temporary", None),
    ("ndb", 1180, "Got error 4010 - 'Node failure caused abort of transaction' during COMMIT", "unknown", 4010),
    ("ndb", 1180, "Got error 4009 - 'Cluster Failure' during COMMIT", "unknown", 4009),
    ("ndb", 1180, "Got error 157 - 'Could not connect to storage engine' during COMMIT", "unknown", None),
    ("ndb", None, "Got temporary error 4025 'Node failure' from NDBCLUSTER", "temporary", 4025),
    # Galera (A3)
    ("galera", 1047, "WSREP has not yet prepared node for application use", "temporary", None),
    ("galera", 1213, "Deadlock found when trying to get lock; try restarting transaction", "temporary", None),
    ("galera", 1205, "Lock wait timeout exceeded; try restarting transaction", "temporary", None),
    ("galera", 1180, "Got error 6 'No such device or address' during COMMIT", "unknown", None),
    ("galera", 1927, "Connection was killed", "unknown", None),
    ("galera", 1062, "Duplicate entry '5' for key 'PRIMARY'", "permanent", None),
    # client side
    ("galera", 2013, "Lost connection to MySQL server during query", "unknown", None),
    ("ndb", 2006, "MySQL server has gone away", "unknown", None),
    ("ndb", 2055, "Lost connection to MySQL server at '127.0.0.1:3306', system error: 32 Broken pipe",
     "unknown", None),
    ("ndb", 2013, "Lost connection to MySQL server at 'reading initial communication packet', system error: 0",
     "temporary", None),
    ("ndb", 2055, "Lost connection to MySQL server at '127.0.0.1:3306', system error: 111 Connection refused",
     "temporary", None),
    ("ndb", 2003, "Can't connect to MySQL server on '127.0.0.1:3306' (111)", "temporary", None),
    ("galera", 2059, "Authentication plugin cannot be loaded", "permanent", None),
    ("ndb", CLIENT_TIMEOUT, "read timeout", "unknown", None),
    ("galera", None, "", None, None),
])
def test_classify(engine, errno, msg, cls, code):
    assert classify(engine, errno, msg) == (cls, code)


def test_parse_ndb_code():
    assert parse_ndb_code("Got temporary error 4010 'x' from NDBCLUSTER") == (4010, True)
    assert parse_ndb_code("Got error 4009 'Cluster Failure' from NDBCLUSTER") == (4009, False)
    assert parse_ndb_code("nothing") == (None, None)
    assert parse_ndb_code(None) == (None, None)


@pytest.mark.parametrize("is_write, cls, typ", [
    (True, "unknown", "info"), (True, None, "info"), (True, "temporary", "fail"), (True, "permanent", "fail"),
    (False, "unknown", "fail"), (False, None, "fail"), (False, "temporary", "fail"),
])
def test_outcome(is_write, cls, typ):
    assert outcome(is_write, cls) == typ


def test_never_connected_write_is_a_definite_failure():
    cls, _ = classify("ndb", 2003, "Can't connect to MySQL server")
    assert outcome(True, cls) == "fail"
    cls, _ = classify("ndb", 2013, "Lost connection to MySQL server during query")
    assert outcome(True, cls) == "info"
