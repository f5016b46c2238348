"""Active-active: both clusters take writes and replicate to each other, with NDB's conflict
detection NDB$EPOCH2 (manual, "NDB Cluster Replication Conflict Resolution": NDB$EPOCH(),
NDB$EPOCH2()). One cluster is the primary, the other the secondary (``ndb_applier_conflict_role``
on each applier). The primary's applier finds a secondary change to a row the primary changed in
an epoch the secondary had not yet applied: a conflict. The primary always wins: it rejects the
secondary's change, writes a row to the table's exceptions table (``<table>$EX``) and logs the
row's own value again (a refresh) so the secondary takes it. Every secondary change the primary
applies is reflected back to the secondary, which applies it only where the row was last changed
by the primary (what handles delete against delete).

Setup (``setup``), the way NDB's own tests run it (mysql-test/suite/ndb_rpl, conflict_epoch2):
every SQL node of both clusters logs its applier's changes and the applied epochs
(``layout.ACTIVE_OPTIONS``); on each cluster ``mysql.ndb_replication`` names the table with
``NDB$EPOCH2()`` (server id 0: any server; binlog type 7, all columns logged and updates as
updates, the tests' value) and the exceptions table is created before the data table (the
manual's order); the source is the primary, the replica the secondary; the way back is a second
channel, on the source's first SQL node, from the replica's applier (a binlog server too).

The scenario (``ActiveActive``): a table of ``keys`` rows seeded on the source; the link cut; a
writer on each side updating keys of its own range (the ranges overlap in the middle third), each
write a single-row autocommit ``UPDATE`` with a value that names its side and order; the link
healed; both ways caught up. ``judge`` then holds the result to the history: both clusters hold
the same rows; a key the primary wrote holds its last value there, a key only the secondary wrote
the secondary's last, any other its seed; the keys in the primary's exceptions table are exactly
those both sides wrote; the primary's conflict counter went up by the number of its exceptions;
the secondary applied at least one refresh per key the primary won.
"""

from __future__ import annotations

import random
import re
import threading
import time
import uuid
from dataclasses import dataclass, field

from .. import topology as TP
from ..waiting import Deadline, wait_until
from .channel import ReplicationError
from .pair import CONNECT_RETRY_S, HEARTBEAT_S, REPL_PASSWORD, REPL_USER, ReplicationPair, SqlNode

TABLE = "ndbchaos_aa"
CONFLICT_FN = "NDB$EPOCH2()"
#: ndb_replication.binlog_type 7: NBT_FULL_USE_UPDATE (every column logged, an update as an update)
BINLOG_TYPE = 7
#: the table NDB reads its conflict settings from (manual, "ndb_replication Table")
NDB_REPLICATION_DDL = (
    "CREATE TABLE IF NOT EXISTS mysql.ndb_replication (db VARBINARY(63), table_name VARBINARY(63), "
    "server_id INT UNSIGNED, binlog_type INT UNSIGNED, conflict_fn VARBINARY(128), "
    "PRIMARY KEY USING HASH (db, table_name, server_id)) ENGINE=NDB PARTITION BY KEY(db, table_name)")
#: the exceptions table in the extended form (manual, "Conflict Resolution Exceptions Table"):
#: the four required columns, the conflicting operation's type and cause, the key, the old and
#: new values
EX_DDL = (
    "CREATE TABLE IF NOT EXISTS `{db}`.`{t}$EX` (`NDB$server_id` INT UNSIGNED, "
    "`NDB$source_server_id` INT UNSIGNED, `NDB$source_epoch` BIGINT UNSIGNED, `NDB$count` INT UNSIGNED, "
    "`NDB$OP_TYPE` ENUM('WRITE_ROW','UPDATE_ROW','DELETE_ROW','REFRESH_ROW','READ_ROW') NOT NULL, "
    "`NDB$CFT_CAUSE` ENUM('ROW_DOES_NOT_EXIST','ROW_ALREADY_EXISTS','DATA_IN_CONFLICT','TRANS_IN_CONFLICT') NOT NULL, "
    "id INT NOT NULL, `v$OLD` VARCHAR(64), `v$NEW` VARCHAR(64), "
    "PRIMARY KEY (`NDB$server_id`, `NDB$source_server_id`, `NDB$source_epoch`, `NDB$count`)) ENGINE=NDB")
#: how many updates one ``docker exec`` carries (each its own autocommit transaction)
BATCH = 5
_VALUE = re.compile(r"^(seed|[AB]:[0-9]+)$")


@dataclass(frozen=True)
class Write:
    side: str  # "A" (the primary, the source) or "B" (the secondary, the replica)
    key: int
    value: str
    seq: int


@dataclass(frozen=True)
class ExceptionRow:
    key: int
    op: str
    cause: str


@dataclass(frozen=True)
class ConflictReport:
    keys: int
    writes: dict[str, int]
    both: tuple[int, ...]  # keys written on both sides while they were apart
    exceptions: tuple[ExceptionRow, ...]  # the primary's exceptions table
    exceptions_secondary: tuple[ExceptionRow, ...]
    counters: dict[str, dict[str, int]]  # side -> Ndb_conflict_* status changes over the run
    differ: tuple[int, ...] = ()  # keys whose rows differ between the clusters
    wrong: tuple[int, ...] = ()  # keys not holding the value the history says wins
    why: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.why

    def summary(self) -> str:
        head = (f"{self.keys} keys; {self.writes.get('A', 0)} writes on the primary, {self.writes.get('B', 0)} on "
                f"the secondary; {len(self.both)} keys written on both; {len(self.exceptions)} exceptions on the "
                f"primary ({len({e.key for e in self.exceptions})} keys), {len(self.exceptions_secondary)} on the "
                f"secondary")
        return head + ("; converged as the history says" if self.ok else "; " + "; ".join(self.why))


def expected(keys: int, writes: list[Write]) -> dict[int, str]:
    """The value each key must end with: the primary's last write, else the secondary's last,
    else its seed (the primary always wins a conflict)."""
    out = {k: "seed" for k in range(keys)}
    for side in ("B", "A"):  # the primary's last write is applied over the secondary's
        for w in sorted((w for w in writes if w.side == side), key=lambda w: w.seq):
            out[w.key] = w.value
    return out


def judge(keys: int, writes: list[Write], rows_a: dict[int, str], rows_b: dict[int, str],
          ex_a: list[ExceptionRow], ex_b: list[ExceptionRow], counters: dict[str, dict[str, int]]) -> ConflictReport:
    want = expected(keys, writes)
    by_side = {s: {w.key for w in writes if w.side == s} for s in ("A", "B")}
    both = tuple(sorted(by_side["A"] & by_side["B"]))
    differ = tuple(sorted(k for k in set(rows_a) | set(rows_b) if rows_a.get(k) != rows_b.get(k)))
    wrong = tuple(sorted(k for k in want if rows_a.get(k) != want[k]))
    why = []
    if differ:
        why.append(f"{len(differ)} keys differ between the clusters: {_few(differ)}")
    if wrong:
        why.append(f"{len(wrong)} keys on the primary do not hold the winning value: "
                   + ", ".join(f"{k}={rows_a.get(k)!r} (want {want[k]!r})" for k in wrong[:5]))
    extra = sorted(set(rows_a) - set(want))
    if extra:
        why.append(f"{len(extra)} keys nobody wrote: {_few(extra)}")
    ex_keys = {e.key for e in ex_a}
    if ex_keys != set(both):
        missed, false = sorted(set(both) - ex_keys), sorted(ex_keys - set(both))
        why.append(f"the primary's exceptions are not the keys both sides wrote: {len(missed)} missed "
                   f"({_few(missed)}), {len(false)} not written by both ({_few(false)})")
    odd = sorted({(e.op, e.cause) for e in ex_a} - {("UPDATE_ROW", "DATA_IN_CONFLICT")})
    if odd:
        why.append(f"exceptions of another kind than an update in conflict: {odd}")
    if ex_b:
        why.append(f"{len(ex_b)} exceptions on the secondary (it detects none)")
    found = counters.get("A", {}).get("Ndb_conflict_fn_epoch2", 0)
    if found != len(ex_a):
        why.append(f"the primary counted {found} conflicts (Ndb_conflict_fn_epoch2) for {len(ex_a)} exceptions")
    # the secondary's side: every row the primary won was refreshed there at least once, and a
    # reflected operation is discarded only after it was prepared (manual, NDB$EPOCH2())
    sec = counters.get("B", {})
    refreshed = sec.get("Ndb_conflict_refresh_op_count", 0)
    if refreshed < len(both):
        why.append(f"the secondary applied {refreshed} refreshes for {len(both)} rows the primary won")
    prepared, discarded = (sec.get(f"Ndb_conflict_reflected_op_{x}_count", 0) for x in ("prepare", "discard"))
    if discarded > prepared:
        why.append(f"the secondary discarded {discarded} reflected operations of {prepared} prepared")
    return ConflictReport(keys, {s: sum(1 for w in writes if w.side == s) for s in ("A", "B")}, both,
                          tuple(ex_a), tuple(ex_b), counters, differ, wrong, tuple(why))


def _few(keys) -> str:
    ks = list(keys)
    return ", ".join(str(k) for k in ks[:5]) + (f" ... ({len(ks)})" if len(ks) > 5 else "")


# -- reading --------------------------------------------------------------------------------------
def parse_rows(rows: list[list[str]]) -> dict[int, str]:
    out = {}
    for r in rows:
        if len(r) != 2 or not r[0].lstrip("-").isdigit() or not _VALUE.match(r[1]):
            raise ReplicationError(f"{TABLE}: unexpected row {r!r}")
        out[int(r[0])] = r[1]
    return out


def parse_exceptions(rows: list[list[str]]) -> list[ExceptionRow]:
    out = []
    for r in rows:
        if len(r) != 3 or not r[0].isdigit():
            raise ReplicationError(f"{TABLE}$EX: unexpected row {r!r}")
        out.append(ExceptionRow(int(r[0]), r[1], r[2]))
    return out


def parse_counters(rows: list[list[str]]) -> dict[str, int]:
    return {r[0]: int(r[1]) for r in rows if len(r) == 2 and r[1].lstrip("-").isdigit()}


def counter_changes(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in sorted(after) if after[k] != before.get(k, 0)}


# -- the pair ---------------------------------------------------------------------------------------
@dataclass
class ActiveActive:
    """The two ways of an active-active pair (``PairLayout(active_active=True)``): the source (A)
    the primary, the replica (B) the secondary."""

    pair: ReplicationPair
    keys: int = 300

    def __post_init__(self):
        if not self.pair.layout.active_active:
            raise ReplicationError("active-active needs a pair laid out for it (PairLayout(active_active=True))")
        self.db = self.pair.source.engine.sql_database
        self.a = self.pair.sql("source", self.pair.binlog_server)
        self.b = self.pair.sql("replica")

    def setup(self, timeout: float = 120) -> None:
        """Conflict detection on both clusters, the roles, the way back, the table seeded and seen
        on both (see the module's text)."""
        db, t = self.db, TABLE
        for node in (self.a, self.b):  # local to each cluster: not replicated
            node.rows(f"SET SESSION sql_log_bin = 0; CREATE DATABASE IF NOT EXISTS `{db}`; {NDB_REPLICATION_DDL}; "
                      f"REPLACE INTO mysql.ndb_replication VALUES ('{db}', '{t}', 0, {BINLOG_TYPE}, '{CONFLICT_FN}'); "
                      + EX_DDL.format(db=db, t=t))
        for n in self.pair.replica.topology.role(TP.SQL):  # the way back's account
            SqlNode(self.pair.replica, n).rows(
                "SET SESSION sql_log_bin = 0; "
                f"CREATE USER IF NOT EXISTS '{REPL_USER}'@'%' IDENTIFIED BY '{REPL_PASSWORD}'; "
                f"GRANT REPLICATION SLAVE ON *.* TO '{REPL_USER}'@'%'")
        self.b.rows("STOP REPLICA; SET GLOBAL ndb_applier_conflict_role = 'SECONDARY'; START REPLICA")
        self.a.rows("SET GLOBAL ndb_applier_conflict_role = 'PRIMARY'")
        self.configure_way_back()
        self.a.rows(f"CREATE TABLE IF NOT EXISTS `{db}`.{t} (id INT NOT NULL PRIMARY KEY, v VARCHAR(64) NOT NULL) "
                    "ENGINE=NDB")
        values = ", ".join(f"({k}, 'seed')" for k in range(self.keys))
        self.a.rows(f"DELETE FROM `{db}`.{t}; INSERT INTO `{db}`.{t} VALUES {values}")
        self.wait_same(timeout)

    def configure_way_back(self) -> tuple[str, int]:
        """The channel from the replica's applier (a binlog server too) to the source's first SQL
        node, at the applier's current position; its address on the source's network (the link)."""
        rows = self.b.rows("SHOW BINARY LOG STATUS")
        if not rows or len(rows[0]) < 2:
            raise ReplicationError(f"{self.b.name}: SHOW BINARY LOG STATUS gave no position (is log-bin on?)")
        log_file, log_pos = rows[0][0], int(rows[0][1])
        host = self.pair.applier_address_on_source()
        self.a.rows("STOP REPLICA; "
                    f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '{host}', SOURCE_PORT = 3306, "
                    f"SOURCE_USER = '{REPL_USER}', SOURCE_PASSWORD = '{REPL_PASSWORD}', GET_SOURCE_PUBLIC_KEY = 1, "
                    f"SOURCE_LOG_FILE = '{log_file}', SOURCE_LOG_POS = {log_pos}, "
                    f"SOURCE_CONNECT_RETRY = {CONNECT_RETRY_S}, SOURCE_HEARTBEAT_PERIOD = {HEARTBEAT_S}; "
                    "START REPLICA")
        return log_file, log_pos

    # -- observation ---------------------------------------------------------------------------------
    def rows(self, side: str) -> dict[int, str]:
        node = self.a if side == "A" else self.b
        return parse_rows(node.rows(f"SELECT id, v FROM `{self.db}`.{TABLE}", timeout=60))

    def exceptions(self, side: str) -> list[ExceptionRow]:
        node = self.a if side == "A" else self.b
        return parse_exceptions(node.rows(
            f"SELECT id, `NDB$OP_TYPE`, `NDB$CFT_CAUSE` FROM `{self.db}`.`{TABLE}$EX` ORDER BY id", timeout=60))

    def counters(self, side: str) -> dict[str, int]:
        node = self.a if side == "A" else self.b
        return parse_counters(node.rows("SHOW GLOBAL STATUS LIKE 'Ndb_conflict%'"))

    def wait_same(self, timeout: float) -> float:
        """Until both ways are caught up: a probe written on each side read on the other, the
        primary's after the secondary's (its refreshes of what it rejected follow the secondary's
        changes it applied); then both clusters hold the same rows, or ReplicationError."""
        d = Deadline(timeout)
        for src, dst in ((self.b, self.a), (self.a, self.b)):
            self._probe(src, dst, d.remaining())
        same = [None]

        def equal():
            same[0] = (self.rows("A"), self.rows("B"))
            return same[0][0] == same[0][1]

        wait_until(equal, max(d.remaining(), 1.0), 0.5, on_timeout=lambda: ReplicationError(
            f"the clusters still differ after {timeout:.0f}s on "
            f"{sum(1 for k in same[0][0] if same[0][0].get(k) != same[0][1].get(k))} keys"))
        return d.elapsed()

    def _probe(self, src: SqlNode, dst: SqlNode, timeout: float) -> None:
        token, db = uuid.uuid4().hex, self.db
        src.rows(f"CREATE TABLE IF NOT EXISTS `{db}`.ndbchaos_aa_probe (id INT PRIMARY KEY, token VARCHAR(64)) "
                 f"ENGINE=NDB; REPLACE INTO `{db}`.ndbchaos_aa_probe VALUES (1, '{token}')")

        def arrived():
            try:
                return dst.rows(f"SELECT token FROM `{db}`.ndbchaos_aa_probe WHERE id = 1") == [[token]]
            except ReplicationError:
                return False

        wait_until(arrived, timeout, 0.2, on_timeout=lambda: ReplicationError(
            f"a probe written on {src.name} did not reach {dst.name} within {timeout:.0f}s"))

    # -- writing ---------------------------------------------------------------------------------------
    def key_range(self, side: str) -> range:
        """The primary writes the first two thirds of the keys, the secondary the last two thirds."""
        third = self.keys // 3
        return range(0, self.keys - third) if side == "A" else range(third, self.keys)

    def write_apart(self, seconds: float, seed: int = 0) -> list[Write]:
        """A writer on each side for ``seconds`` (the link is cut: each side alone); every write
        made, in order per side. A failed batch is raised: both sides are healthy, so a write
        that fails is not part of the scenario."""
        writes: list[Write] = []
        errors: list[str] = []
        lock = threading.Lock()
        stop = threading.Event()

        def run(side: str, node: SqlNode, rnd: random.Random):
            seq = 0
            keys = list(self.key_range(side))
            try:
                while not stop.is_set():
                    batch = []
                    for k in rnd.sample(keys, BATCH):
                        seq += 1
                        batch.append(Write(side, k, f"{side}:{seq}", seq))
                    node.rows("; ".join(f"UPDATE `{self.db}`.{TABLE} SET v = '{w.value}' WHERE id = {w.key}"
                                        for w in batch))
                    with lock:
                        writes.extend(batch)
            except Exception as e:
                errors.append(f"{side}: {e}")

        threads = [threading.Thread(target=run, args=(s, n, random.Random(f"{seed}-{s}")), daemon=True)
                   for s, n in (("A", self.a), ("B", self.b))]
        for th in threads:
            th.start()
        time.sleep(seconds)
        stop.set()
        for th in threads:
            th.join(60)
        if errors:
            raise ReplicationError("a writer failed: " + "; ".join(errors))
        return writes


__all__ = ["ActiveActive", "ConflictReport", "ExceptionRow", "Write", "counter_changes", "expected", "judge",
           "parse_counters", "parse_exceptions", "parse_rows"]
