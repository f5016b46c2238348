"""The replication channel and its lag, as typed values read from the SQL nodes of both clusters.

Channel state: ``performance_schema.replication_connection_status`` (the receiver thread: ON,
OFF, CONNECTING; its last error), ``replication_applier_status`` (the applier), and the
coordinator's and workers' last errors (``replication_applier_status_by_coordinator``,
``_by_worker``): the manual's "Performance Schema Replication Tables",
https://dev.mysql.com/doc/refman/8.4/en/performance-schema-replication-tables.html.

Lag: the source's binlog server lists every epoch it wrote in ``mysql.ndb_binlog_index`` (one
row per epoch that changed data; ``epoch`` is the 64-bit global checkpoint id, GCI in the high 32
bits); the replica's applier writes the last epoch it applied from each source server id into
``mysql.ndb_apply_status``, in the same transaction as the epoch's changes (manual, "NDB Cluster
Replication Schema and Tables", https://dev.mysql.com/doc/refman/8.4/en/mysql-cluster-replication-schema.html).
Lag in epochs is the number of binlog epochs above the last applied one; lag in seconds is
measured on the run's clock (``LagTracker``): how long ago the oldest epoch not yet applied was
first seen in the source's index.

Parsing is pure (``parse_*``); the reads take a ``Sql`` (one SQL node of one cluster).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..errors import NdbChaosError

#: the default (unnamed) channel
CHANNEL = ""


class ReplicationError(NdbChaosError):
    """A replication setup, read or wait that failed; the message is one line."""


class Sql(Protocol):
    """One SQL node: ``rows(sql)`` runs SQL as root and returns the rows (tab-separated columns),
    raising ReplicationError when the statement fails."""

    name: str

    def rows(self, sql: str, timeout: float = 30) -> list[list[str]]: ...


def gci(epoch: int) -> int:
    """The global checkpoint of an epoch (its high 32 bits)."""
    return epoch >> 32


@dataclass(frozen=True)
class ChannelError:
    """The last error of one thread of the channel (``where``: receiver, coordinator, worker N)."""

    where: str
    number: int
    message: str


@dataclass(frozen=True)
class ChannelState:
    """The channel as the replica's SQL node reports it at ``t`` (run clock)."""

    t: float
    receiver: str  # ON | OFF | CONNECTING | (none): no channel configured
    applier: str  # ON | OFF | (none)
    errors: tuple[ChannelError, ...] = ()

    @property
    def running(self) -> bool:
        return self.receiver == "ON" and self.applier == "ON"

    @property
    def last_error(self) -> ChannelError | None:
        return self.errors[0] if self.errors else None

    def describe(self) -> str:
        e = self.last_error
        return (f"receiver {self.receiver}, applier {self.applier}"
                + (f"; {e.where} error {e.number}: {e.message[:200]}" if e else ""))


@dataclass(frozen=True)
class Lag:
    """The replica's distance from the source's binlog at ``t`` (run clock)."""

    t: float
    source_epoch: int  # the newest epoch in the binlog server's ndb_binlog_index (0: none)
    applied_epoch: int  # the newest epoch of the source's server ids in the replica's ndb_apply_status
    behind_epochs: int  # epochs in ndb_binlog_index above applied_epoch
    seconds: float | None  # since the oldest epoch not yet applied was first seen (None: never seen)
    #: the replica could not be read: applied_epoch is the last one read before. Exact while the
    #: applier is down (nothing else applies); otherwise the lag is at most this
    stale: bool = False

    @property
    def behind_gci(self) -> int:
        return max(0, gci(self.source_epoch) - gci(self.applied_epoch))

    @property
    def caught_up(self) -> bool:
        return self.applied_epoch >= self.source_epoch


# -- the statements ---------------------------------------------------------------------------
STATE_SQL = (
    "SELECT 'state', c.SERVICE_STATE, a.SERVICE_STATE, c.LAST_ERROR_NUMBER, c.LAST_ERROR_MESSAGE "
    "FROM performance_schema.replication_connection_status c "
    "JOIN performance_schema.replication_applier_status a ON a.CHANNEL_NAME = c.CHANNEL_NAME "
    f"WHERE c.CHANNEL_NAME = '{CHANNEL}'; "
    "SELECT 'coordinator', LAST_ERROR_NUMBER, LAST_ERROR_MESSAGE "
    "FROM performance_schema.replication_applier_status_by_coordinator "
    f"WHERE CHANNEL_NAME = '{CHANNEL}' AND LAST_ERROR_NUMBER <> 0; "
    "SELECT CONCAT('worker ', WORKER_ID), LAST_ERROR_NUMBER, LAST_ERROR_MESSAGE "
    "FROM performance_schema.replication_applier_status_by_worker "
    f"WHERE CHANNEL_NAME = '{CHANNEL}' AND LAST_ERROR_NUMBER <> 0")


def applied_sql(source_ids: tuple[int, ...]) -> str:
    ids = ", ".join(str(int(i)) for i in source_ids)
    return f"SELECT COALESCE(MAX(epoch), 0) FROM mysql.ndb_apply_status WHERE server_id IN ({ids})"


def binlog_sql(applied: int) -> str:
    return (f"SELECT COALESCE(MAX(epoch), 0), COUNT(DISTINCT CASE WHEN epoch > {int(applied)} THEN epoch END) "
            "FROM mysql.ndb_binlog_index")


# -- parsing (pure) ---------------------------------------------------------------------------
def parse_state(t: float, rows: list[list[str]]) -> ChannelState:
    """The rows of ``STATE_SQL``. No 'state' row: no channel is configured."""
    receiver = applier = "(none)"
    errors: list[ChannelError] = []
    for r in rows:
        if not r:
            continue
        if r[0] == "state" and len(r) >= 5:
            receiver, applier = r[1], r[2]
            n = _int(r[3], "receiver error number")
            if n:
                errors.append(ChannelError("receiver", n, r[4]))
        elif len(r) >= 3:
            errors.append(ChannelError(r[0], _int(r[1], f"{r[0]} error number"), r[2]))
        else:
            raise ReplicationError(f"replication state: unexpected row {r!r}")
    # the applier's errors first: they stop the channel for good; the receiver retries its own
    errors.sort(key=lambda e: e.where == "receiver")
    return ChannelState(t, receiver, applier, tuple(errors))


def parse_epoch(rows: list[list[str]], what: str) -> int:
    if len(rows) != 1 or not rows[0]:
        raise ReplicationError(f"{what}: expected one row, got {rows!r}")
    return _int(rows[0][0], what)


def parse_binlog(rows: list[list[str]]) -> tuple[int, int]:
    if len(rows) != 1 or len(rows[0]) != 2:
        raise ReplicationError(f"ndb_binlog_index: expected one row of two columns, got {rows!r}")
    return _int(rows[0][0], "ndb_binlog_index max epoch"), _int(rows[0][1], "ndb_binlog_index epochs behind")


def _int(v: str, what: str) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        raise ReplicationError(f"{what}: not a number: {v!r}") from None


@dataclass
class LagTracker:
    """Lag in seconds on the run's clock: each source epoch is stamped with the time it was first
    seen (``observe`` is polled); the lag at ``t`` is ``t`` minus the first sighting of the oldest
    epoch above the applied one. A lag is only as fine as the polling: an epoch written and applied
    between two polls is never seen behind."""

    seen: list[tuple[float, int]] = field(default_factory=list)  # (first seen, epoch), epochs increasing

    def see(self, t: float, source_epoch: int) -> None:
        """Stamp the source's newest epoch alone (the replica could not be read at ``t``)."""
        if source_epoch and (not self.seen or source_epoch > self.seen[-1][1]):
            self.seen.append((t, source_epoch))

    def observe(self, t: float, source_epoch: int, applied_epoch: int, behind_epochs: int,
                stale: bool = False) -> Lag:
        self.see(t, source_epoch)
        seconds: float | None
        if applied_epoch >= source_epoch:
            seconds = 0.0
        else:
            first = next((ts for ts, e in self.seen if e > applied_epoch), None)
            seconds = None if first is None else max(0.0, t - first)
        return Lag(t, source_epoch, applied_epoch, behind_epochs, seconds, stale)


def read_state(replica: Sql, t: float) -> ChannelState:
    return parse_state(t, replica.rows(STATE_SQL, timeout=15))


def sample_lag(replica: Sql, sources: list[Sql], source_ids: tuple[int, ...], tracker: LagTracker, t: float,
               last: Lag | None) -> tuple[Lag | None, list[str]]:
    """One lag sample that survives a dead node: the replica's applied epoch, or when it cannot
    be read the last one read (``Lag.stale``: exact while the applier is down, nothing else
    applies); then the first of ``sources`` (the channel's binlog server first) whose index
    answers: every binlog server of the source logs the same epochs. (the lag or None, the
    errors met)."""
    errors: list[str] = []
    stale = False
    try:
        applied = parse_epoch(replica.rows(applied_sql(source_ids), timeout=15), "ndb_apply_status")
    except ReplicationError as e:
        errors.append(str(e))
        if last is None:
            return None, errors
        applied, stale = last.applied_epoch, True
    for src in sources:
        try:
            newest, behind = parse_binlog(src.rows(binlog_sql(applied), timeout=15))
        except ReplicationError as e:
            errors.append(str(e))
            continue
        return tracker.observe(t, newest, applied, behind, stale), errors
    return None, errors


def read_lag(source: Sql, replica: Sql, source_ids: tuple[int, ...], tracker: LagTracker, t: float) -> Lag:
    """The replica's applied epoch first, then the source's index: an epoch the source writes
    between the two reads counts as behind, never as applied."""
    applied = parse_epoch(replica.rows(applied_sql(source_ids), timeout=15), "ndb_apply_status")
    newest, behind = parse_binlog(source.rows(binlog_sql(applied), timeout=15))
    return tracker.observe(t, newest, applied, behind)
