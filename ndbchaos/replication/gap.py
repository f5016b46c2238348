"""Skipping a binlog server's LOST_EVENTS gap on the applier: the operator's step when every
binlog server of the source has the gap, so no failover avoids it.

A binlog server writes the gap (an ``Incident`` event, LOST_EVENTS) when it loses the source
cluster and connects again; the applier stops on it (``faults.INCIDENT_ERROR``). When only one
binlog server lost the cluster, the channel fails over to another (``failover.py``). When the
whole source stopped (a node group lost: no copy of its data left), every binlog server has a gap
at the same point of the stream, and nothing was committed while the cluster was down; the
replica then holds every epoch logged before the gap, and the operator restarts the applier past
it. Manual, "Known Issues in NDB Cluster Replication" (a gap stops the replica; older manuals:
``SET GLOBAL SQL_SLAVE_SKIP_COUNTER = 1; START SLAVE``).

On 9.7.2, which runs with ``gtid_mode=ON`` by default, the incident carries a GTID of its own and
the skip counter does not get past it: set to 1 or 2, it is used up and the applier stops on
the same incident again (docs/facts.md NDB 15.12). What does: an empty transaction with the
incident's GTID on the applier (the manual's way of skipping a transaction with GTIDs), then
``START REPLICA``; the applier treats the incident as executed and goes on after it.

The gap is found in the binlog server's own log: after the position the newest applied epoch
ended at (``mysql.ndb_apply_status``'s ``log_name`` and ``end_pos`` on the replica), the first
``Incident`` event, and the GTID of the ``Gtid`` event just before it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from .channel import ReplicationError
from .pair import ReplicationPair

#: how many events after the newest applied epoch are read to find the gap (under load the gap is
#: the next group: the applier stopped on it with everything before it applied)
SCAN_EVENTS = 500
_GTID = re.compile(r"GTID_NEXT\s*=\s*'([0-9a-fA-F-]{36}:[0-9]+)'")
_LOG_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Gap:
    """An incident in a binlog server's log: where it is, its GTID, what it says."""
    log_file: str
    log_pos: int
    gtid: str
    info: str


@dataclass(frozen=True)
class GapSkip:
    binlog_server: str
    gap: Gap
    seconds: float

    def describe(self) -> str:
        g = self.gap
        return (f"gap skipped on the applier: {g.info} at {self.binlog_server} {g.log_file}:{g.log_pos}, "
                f"GTID {g.gtid} committed empty, in {self.seconds:.2f}s")


def last_applied_sql(source_ids: tuple[int, ...]) -> str:
    ids = ", ".join(str(int(i)) for i in source_ids)
    return ("SELECT log_name, end_pos FROM mysql.ndb_apply_status "
            f"WHERE server_id IN ({ids}) ORDER BY epoch DESC LIMIT 1")


def parse_last_applied(rows: list[list[str]]) -> tuple[str, int]:
    if len(rows) != 1 or len(rows[0]) != 2:
        raise ReplicationError(f"ndb_apply_status: no epoch of the source applied yet ({rows!r})")
    name, pos = rows[0][0].rsplit("/", 1)[-1], rows[0][1]
    if not _LOG_NAME.match(name) or not pos.isdigit():
        raise ReplicationError(f"ndb_apply_status: not a binlog position: {rows[0]!r}")
    return name, int(pos)


def find_gap(events: list[list[str]]) -> Gap | None:
    """The first ``Incident`` among ``SHOW BINLOG EVENTS`` rows (Log_name, Pos, Event_type,
    Server_id, End_log_pos, Info) and the GTID of the ``Gtid`` event right before it; None when
    there is no incident. An incident without a GTID before it cannot be skipped this way."""
    prev = None
    for row in events:
        if len(row) < 6:
            raise ReplicationError(f"SHOW BINLOG EVENTS: unexpected row {row!r}")
        if row[2] == "Incident":
            m = _GTID.search(prev[5]) if prev is not None and prev[2] == "Gtid" else None
            if m is None:
                raise ReplicationError(f"the gap at {row[0]}:{row[1]} ({row[5]}) has no GTID before it: "
                                       "it cannot be skipped with an empty transaction")
            return Gap(row[0], int(row[1]), m.group(1), row[5])
        prev = row
    return None


def skip_gap(pair: ReplicationPair) -> GapSkip:
    """Find the gap the applier stopped on in the channel's binlog server's log and skip it (an
    empty transaction with its GTID, START REPLICA). ReplicationError when there is none."""
    t0 = time.monotonic()
    server = pair.binlog_server
    log_file, pos = parse_last_applied(pair.sql("replica").rows(last_applied_sql(pair.source_ids)))
    logs = [r[0] for r in pair.sql("source", server).rows("SHOW BINARY LOGS")]
    if log_file not in logs:
        raise ReplicationError(f"{server} no longer has {log_file} (its logs: {logs})")
    gap = None
    for i, name in enumerate(logs[logs.index(log_file):logs.index(log_file) + 2]):
        start = f" FROM {pos}" if i == 0 else ""
        gap = find_gap(pair.sql("source", server).rows(f"SHOW BINLOG EVENTS IN '{name}'{start} LIMIT {SCAN_EVENTS}"))
        if gap is not None:
            break
    if gap is None:
        raise ReplicationError(f"no gap in {server}'s log after the newest applied epoch ({log_file}:{pos})")
    pair.sql("replica").rows(f"STOP REPLICA; SET GTID_NEXT = '{gap.gtid}'; BEGIN; COMMIT; "
                             "SET GTID_NEXT = 'AUTOMATIC'; START REPLICA")
    return GapSkip(server, gap, time.monotonic() - t0)


__all__ = ["Gap", "GapSkip", "find_gap", "parse_last_applied", "skip_gap"]
