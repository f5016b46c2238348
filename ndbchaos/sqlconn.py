"""SQL connections to the cluster's published 127.0.0.1 ports, with bounded timeouts everywhere.

mysql-connector-python 9.2+ has read and write timeouts; without them a statement against a frozen
node blocks forever, so they are always set here.
"""

from __future__ import annotations

import math
import threading

from .classify import CLIENT_TIMEOUT

HOST = "127.0.0.1"  # never a container address: the same code works on Docker Desktop and CI
# (an inventory's SQL nodes are the exception: clients reach them at the address the inventory gives)


_lib_lock = threading.Lock()
_lib_ready = False


def init_client_library() -> None:
    """Initialise the connector's C library once per process, before threads connect.

    The C extension (libmysqlclient 9.7 linked in) initialises the library lazily inside the first
    ``connect`` of a process (mysql_init -> mysql_server_init -> my_init). Several threads making
    their first connections at once, as the runner's client threads do when a worker starts,
    occasionally crash the process with SIGSEGV in mysql_real_connect (measured: 14 of 1,800
    process starts with 16 threads; 0 of 3,000 after this). One failing connect attempt to a
    socket that does not exist, made while the other threads wait, does the initialisation.
    """
    global _lib_ready
    if _lib_ready:
        return
    with _lib_lock:
        if _lib_ready:
            return
        try:
            import _mysql_connector
            _mysql_connector.MySQL().connect(host="localhost", unix_socket="/nonexistent/ndbchaos-init.sock",
                                             user="ndbchaos", password="")
        except Exception:  # expected: nothing listens there; no C extension: nothing to do
            pass
        _lib_ready = True


def connect(port: int, user: str, password: str, database: str | None = None, *, host: str = HOST,
            connect_timeout: float = 2.0, read_timeout: float = 5.0, write_timeout: float = 5.0,
            autocommit: bool = True):
    init_client_library()
    # The connector takes whole seconds for all three timeouts.
    kw = dict(host=host, port=port, user=user, password=password, autocommit=autocommit,
              connection_timeout=_secs(connect_timeout),
              read_timeout=_secs(read_timeout), write_timeout=_secs(write_timeout))
    if database:
        kw["database"] = database
    import mysql.connector  # a tenth of a second: only a process that connects pays it
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
