"""What a client connection does, for both drivers (the Python loop of ``runner`` and the native
one of ``native``): where it connects (``Endpoint``), how (``ClientOptions``), how often it hands
its operations to the spool (``SPILL_OPS``), and what a failed operation means (``failure``:
its recorded type, whether to reconnect, retire the process or retry).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..classify import classify, outcome

#: a connection's operations go to its worker's spool file in chunks of this many (~0.7 MB of
#: columns; at a few hundred operations a second per connection, about once a minute)
SPILL_OPS = 16384


@dataclass
class Endpoint:
    node: str
    port: int
    host: str = "127.0.0.1"  # an inventory's SQL node is reached at its own address


@dataclass
class ClientOptions:
    engine: str = "galera"
    user: str = "chaos"
    password: str = "chaos"
    database: str = "ndbchaos"
    connect_timeout: float = 2.0
    read_timeout: float = 5.0
    write_timeout: float = 5.0
    backoff_min: float = 0.01
    backoff_max: float = 0.1  # caps the gap between attempts, so outage ends are seen within ~100 ms
    failover: bool = False
    retries: int = 0  # retries of temporary errors (off: measure the raw impact)
    rate: float | None = None  # ops/s per connection (open loop); None = closed loop
    record: bool = True
    seed: int = 0
    driver: str = "python"  # "native": each connection's loop in C (ndbchaos.workload.native)
    extra: dict = field(default_factory=dict)


# -- the client loop's contract: what a failed operation means, for both drivers --------------

#: errors after which the connection is dropped and made again (besides a statement never sent
#: and an error of unknown outcome): lost or refused, or Galera's node not ready (1047)
RECONNECT_ERRNOS = frozenset({2006, 2013, 2055, 2003, 1047})


@dataclass(frozen=True)
class Failure:
    """What the client loop does after an operation failed (``failure``): record it as
    ``type`` with ``cls``/``code``, retire the process when it is ``info`` (Jepsen: a process
    with an indeterminate operation never runs again), drop the connection when ``reconnect``
    (and move to the next SQL node with failover), and retry it when ``retryable`` and retries
    are left. The Python loop here and the native driver's (``workload.native``) both follow it."""

    errno: int | None
    message: str
    cls: str | None
    code: int | None
    type: str  # fail | info
    reconnect: bool
    retryable: bool

    @property
    def retire(self) -> bool:
        return self.type == "info"


def failure(engine: str, errno: int | None, message: str, is_write: bool, sent: bool,
            workload_outcome: str | None = None) -> Failure:
    """The contract: classify the error (``ndbchaos.classify``); a write that may have been
    applied (sent, unknown class) is ``info`` unless the workload knows better
    (``workload_outcome``: a transaction that failed before its COMMIT is ``fail``)."""
    cls, code = classify(engine, errno, message)
    typ = workload_outcome or outcome(is_write and sent, cls)
    reconnect = (not sent) or cls == "unknown" or errno in RECONNECT_ERRNOS
    return Failure(errno, message, cls, code, typ, reconnect, cls == "temporary")
