"""Galera's client errors (docs/facts.md Galera A3): what a MariaDB Galera node answers
while it is not part of a primary component, or when certification aborts a transaction.
``ndbchaos.classify.classify`` (the engine-neutral front) asks ``classify`` here."""

from __future__ import annotations

ER_UNKNOWN_COM_ERROR = 1047  # WSREP has not yet prepared node for application use
ER_LOCK_DEADLOCK = 1213  # certification conflict (or a deadlock): the transaction was rolled back
ER_LOCK_WAIT_TIMEOUT = 1205

#: the transaction did not take effect and may be retried
GALERA_TEMPORARY = {ER_UNKNOWN_COM_ERROR, ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT}


def classify(engine: str, errno: int | None, msg: str) -> tuple[str | None, int | None] | None:
    """(class, None) of Galera's errors, or None for an error number these rules do not place.
    A MySQL server answers 1213 and 1205 alike, so they are placed here for every ``engine``."""
    if errno in GALERA_TEMPORARY:
        return "temporary", None
    return None
