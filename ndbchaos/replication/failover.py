"""The documented channel failover: the channel moves from a lost binlog server to the standby
one, at the position of the last epoch the replica applied. Manual, "Implementing Failover with
NDB Cluster Replication" (https://dev.mysql.com/doc/refman/8.4/en/mysql-cluster-replication-failover.html):

1. on the replica, the newest applied epoch: ``MAX(epoch)`` of ``mysql.ndb_apply_status`` (here of
   the source's server ids, the manual's ``server_id IN (...)`` form);
2. on the standby binlog server, the binlog file and position right after that epoch:
   ``next_file`` (its base name) and ``next_position`` of that epoch's ``mysql.ndb_binlog_index`` row;
3. on the replica, ``STOP REPLICA``, ``CHANGE REPLICATION SOURCE TO`` the standby at that file and
   position, ``START REPLICA``.

Each step is timed on the run clock (``FailoverStep``), so a fault can be put beside a named step
and the failover's time is measured, not assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from .channel import ReplicationError, applied_sql, parse_epoch
from .pair import ReplicationPair

STEPS = ("latest applied epoch", "position on the standby", "channel to the standby")


@dataclass(frozen=True)
class FailoverStep:
    name: str
    started: float
    ended: float
    detail: str


@dataclass(frozen=True)
class Failover:
    from_server: str
    to_server: str
    latest_epoch: int
    log_file: str
    log_pos: int
    steps: tuple[FailoverStep, ...]

    @property
    def seconds(self) -> float:
        return self.steps[-1].ended - self.steps[0].started


def position_sql(latest: int) -> str:
    return ("SELECT SUBSTRING_INDEX(next_file, '/', -1), next_position FROM mysql.ndb_binlog_index "
            f"WHERE epoch = {int(latest)} ORDER BY epoch ASC LIMIT 1")


def parse_position(rows: list[list[str]], latest: int, standby: str) -> tuple[str, int]:
    if not rows:
        raise ReplicationError(f"failover: the standby {standby} has no ndb_binlog_index row for epoch {latest} "
                               "(it did not log the last applied epoch: no position to resume from)")
    if len(rows[0]) != 2 or not rows[0][1].isdigit():
        raise ReplicationError(f"failover: unexpected ndb_binlog_index row on {standby}: {rows[0]!r}")
    return rows[0][0], int(rows[0][1])


def failover(pair: ReplicationPair, to: str) -> Failover:
    """Move the channel to the standby binlog server ``to`` (a source SQL node's name)."""
    if to == pair.binlog_server:
        raise ReplicationError(f"failover: {to} is already the channel's binlog server")
    clock, steps = pair.clock, []
    frm = pair.binlog_server

    t = clock.now()
    latest = parse_epoch(pair.sql("replica").rows(applied_sql(pair.source_ids)), "ndb_apply_status")
    steps.append(FailoverStep(STEPS[0], t, clock.now(), f"epoch {latest} (gci {latest >> 32})"))

    t = clock.now()
    log_file, log_pos = parse_position(pair.sql("source", to).rows(position_sql(latest)), latest, to)
    steps.append(FailoverStep(STEPS[1], t, clock.now(), f"{to}: {log_file}:{log_pos}"))

    t = clock.now()
    pair.configure_channel(binlog_server=to, log_file=log_file, log_pos=log_pos)
    steps.append(FailoverStep(STEPS[2], t, clock.now(), f"STOP REPLICA; CHANGE REPLICATION SOURCE TO {to} "
                                                         f"{log_file}:{log_pos}; START REPLICA"))
    pair.replica.note("replication_failover", frm=frm, to=to, epoch=latest, file=log_file, position=log_pos)
    return Failover(frm, to, latest, log_file, log_pos, tuple(steps))
