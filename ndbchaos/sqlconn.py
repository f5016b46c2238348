"""SQL connections to the cluster's published 127.0.0.1 ports, with bounded timeouts everywhere.

mysql-connector-python 9.2+ has read and write timeouts; without them a statement against a frozen
node blocks forever, so they are always set here.
"""

from __future__ import annotations

import math

import mysql.connector

from .classify import CLIENT_TIMEOUT

HOST = "127.0.0.1"  # never a container address: the same code works on Docker Desktop and CI


def connect(port: int, user: str, password: str, database: str | None = None, *,
            connect_timeout: float = 2.0, read_timeout: float = 5.0, write_timeout: float = 5.0,
            autocommit: bool = True):
    # The connector takes whole seconds for all three timeouts.
    kw = dict(host=HOST, port=port, user=user, password=password, autocommit=autocommit,
              connection_timeout=_secs(connect_timeout),
              read_timeout=_secs(read_timeout), write_timeout=_secs(write_timeout))
    if database:
        kw["database"] = database
    return mysql.connector.connect(**kw)


def _secs(x: float) -> int:
    return max(1, int(math.ceil(x)))


def error_fields(exc: BaseException) -> tuple[int | None, str]:
    """(errno, one-line message) of a connector exception; timeouts get CLIENT_TIMEOUT."""
    errno = getattr(exc, "errno", None)
    msg = getattr(exc, "msg", None) or str(exc)
    msg = " ".join(str(msg).split())[:300]
    if errno in (None, -1):
        low = msg.lower()
        if "timed out" in low or "timeout" in low:
            return CLIENT_TIMEOUT, msg
        if isinstance(exc, (ConnectionError, OSError)):
            return 2013, msg
    return errno, msg
