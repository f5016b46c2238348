"""Two NDB clusters and the channel between them: started, linked, verified, observed, torn down.

    pair = ReplicationPair.create(PairLayout())
    try:
        pair.up()              # both clusters, the link, the channel, a probe row replicated
        lag = pair.lag()       # typed (channel.Lag); pair.state(): channel.ChannelState
    finally:
        pair.down()            # the link, the replica, the source: on every path out

Each cluster is a Compose project of its own (``ComposeCluster``), on its own subnet
(``layout.PairLayout``); the replica's project id is the source's plus ``-replica``. The link is
the applier container attached to the source's network (``docker network connect``): the applier
reaches the binlog server at its cluster address, and nothing else joins either network. Both
projects carry the framework's label, so what a killed run leaves is removed by

    ndbchaos reap --project <source>-replica && ndbchaos reap --project <source>

in that order (``ndbchaos reap`` alone removes both): reaping the source first fails on its
network while the replica's applier is still attached to it (Docker refuses to remove a network
with endpoints), and says so in one line; reaping the replica first detaches it.

Channel setup follows the manual's "Starting NDB Cluster Replication (Single Replication
Channel)" (https://dev.mysql.com/doc/refman/8.4/en/mysql-cluster-replication-starting.html): a
replication account on each binlog server (created with sql_log_bin=0, so it is not itself
replicated), ``CHANGE REPLICATION SOURCE TO`` the binlog server's current position
(``SHOW BINARY LOG STATUS``; GET_SOURCE_PUBLIC_KEY for the default caching_sha2_password
account without TLS: docs/facts.md NDB 15.3) and ``START REPLICA``; then a probe row written on the source must
appear on the replica before anything else runs.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from .. import topology as TP
from ..clock import RunClock
from ..engines import get_engine
from ..engines.ndb.shell import SQL_OUTPUT_LOST
from ..runtimes import docker
from ..runtimes import factory
from ..runtimes.compose.cluster import ComposeCluster, new_project_id
from ..topology import Node
from ..waiting import Deadline, wait_until
from .channel import (ChannelState, Lag, LagTracker, ReplicationError, applied_sql, binlog_sql, parse_binlog,
                      parse_epoch, read_lag, read_state)
from .layout import SOURCE_ID_BASE, PairLayout, cluster_options, server_id

log = logging.getLogger("ndbchaos")

REPL_USER, REPL_PASSWORD = "ndbchaos_repl", "ndbchaos-repl"
#: the receiver's reconnect pause and heartbeat (CHANGE REPLICATION SOURCE TO: SOURCE_CONNECT_RETRY
#: defaults to 60 s, which would hide a healed link for a minute; SOURCE_HEARTBEAT_PERIOD defaults
#: to half of replica_net_timeout, 30 s). Retries: a day's worth, so a cut link never ends the channel.
CONNECT_RETRY_S, HEARTBEAT_S, RETRY_COUNT = 1, 1, 86400
#: how long the probe row may take to reach the replica once the channel runs: an epoch is closed
#: every TimeBetweenEpochs (100 ms default) and shipped at once; the bound is a start-up margin
#: (the first epochs of a fresh binlog server), not an NDB setting
PROBE_BOUND_S = 60.0
PROBE_TABLE = "ndbchaos_repl_probe"


@dataclass
class SqlNode:
    """One SQL node of one cluster, run as root through its container (``engine.root_sql``)."""

    cluster: ComposeCluster
    node: Node

    @property
    def name(self) -> str:
        return f"{self.cluster.project}/{self.node.name}"

    def rows(self, sql: str, timeout: float = 30) -> list[list[str]]:
        """The rows of ``sql``. A read whose output was lost on the way (``SQL_OUTPUT_LOST``) is
        asked again, twice at most; a lost answer to any other statement is an error (it ran, and
        running it again could do it twice)."""
        reads = (sql.split(None, 1) or [""])[0].upper() in ("SELECT", "SHOW")
        for _ in range(3 if reads else 1):
            code, out = self.cluster.engine.root_sql(self.cluster, self.node, sql, timeout=timeout)
            if code != SQL_OUTPUT_LOST:
                break
        if code != 0:
            lines = [ln for ln in out.strip().splitlines() if ln.strip()] or ["(no output)"]
            raise ReplicationError(f"{self.name}: SQL failed (exit {code}): {lines[-1][-240:]}")
        return [ln.split("\t") for ln in out.splitlines() if ln != ""]


@dataclass
class ReplicationPair:
    layout: PairLayout
    source: ComposeCluster
    replica: ComposeCluster
    #: the binlog server the channel reads now (a source SQL node's name) and the applier
    binlog_server: str = "sql1"
    applier: str = "sql1"
    tracker: LagTracker = field(default_factory=LagTracker)
    linked: bool = False
    #: the applier's first address on the source's network (kept by an active-active pair's link)
    applier_ip: str | None = None

    @classmethod
    def create(cls, layout: PairLayout | None = None, project: str | None = None,
               clock: RunClock | None = None) -> ReplicationPair:
        """Two clusters, not started; one run clock for both (their journals, lag, the history)."""
        layout = layout or PairLayout()
        clock = clock or RunClock()
        src = project or new_project_id()
        source = factory.compose(get_engine("ndb"), cluster_options(layout, "source"), project=src, clock=clock)
        # each node's address is on its own project's network (docker.container_ip), the applier's
        # too once it is attached to the source's as well
        replica = factory.compose(get_engine("ndb"), cluster_options(layout, "replica"), project=f"{src}-replica",
                                  clock=clock)
        return cls(layout, source, replica)

    @property
    def clock(self) -> RunClock:
        return self.source.clock

    @property
    def source_ids(self) -> tuple[int, ...]:
        """Server ids of every source SQL node (the binlog servers)."""
        return tuple(server_id(SOURCE_ID_BASE, n.nodeid) for n in self.source.topology.role(TP.SQL))

    def sql(self, side: str, name: str | None = None) -> SqlNode:
        cluster = self.source if side == "source" else self.replica
        name = name or (self.binlog_server if side == "source" else self.applier)
        return SqlNode(cluster, cluster.topology.node(name))

    # -- start -----------------------------------------------------------------------------------
    def up(self, timeout: float = 600) -> None:
        """Both clusters, the link, the channel, the probe; on any failure everything goes down."""
        d = Deadline(timeout)
        try:
            self.source.up(timeout=d.remaining())
            self.replica.up(timeout=d.remaining())
            self.link()
            self.create_accounts()
            self.configure_channel()
            self.verify(PROBE_BOUND_S)
        except BaseException:
            self.down()
            raise

    def _source_network(self):
        nets = docker.project_networks(self.source.project)
        if len(nets) != 1:
            raise ReplicationError(f"source project {self.source.project}: expected one network, found "
                                   f"{[n.name for n in nets]}")
        return nets[0]

    def link(self) -> None:
        """Attach the applier to the source's network (the inter-cluster path). Docker gives it
        another address each time (docs/facts.md NDB 15.6), except in an active-active pair,
        where the source's SQL node reads from the applier by its address: there it gets the
        address it had the first time."""
        net = self._source_network()
        c = self.replica.container(self.replica.topology.node(self.applier))
        c.reload()
        if net.name not in ((c.attrs.get("NetworkSettings") or {}).get("Networks") or {}):
            if self.layout.active_active and self.applier_ip is not None:
                net.connect(c, ipv4_address=self.applier_ip)
            else:
                net.connect(c)
                c.reload()
                self.applier_ip = docker.container_ip(c, net.name)
        self.linked = True
        self.replica.note("replication_link", network=net.name, container=c.name, state="up")

    def applier_address_on_source(self) -> str:
        """The applier's address on the source's network (while the link is up): where the
        source's SQL nodes reach it (the way back of an active-active pair)."""
        net = self._source_network()
        c = self.replica.container(self.replica.topology.node(self.applier))
        c.reload()
        ip = docker.container_ip(c, net.name)
        if not ip:
            raise ReplicationError(f"{c.name} has no address on {net.name} (is the link up?)")
        return ip

    def unlink(self) -> None:
        """Detach the applier from the source's network (the link cut; also the first step of
        the teardown). Idempotent."""
        try:
            net = self._source_network()
            c = self.replica.container(self.replica.topology.node(self.applier))
        except Exception as e:  # nothing left to detach
            log.debug("unlink: %s", e)
            self.linked = False
            return
        try:
            net.disconnect(c, force=True)
        except Exception as e:
            if "not connected" not in str(e).lower() and "is not connected" not in str(e).lower():
                raise ReplicationError(f"detaching {c.name} from {net.name}: {docker.one_line(e)}") from None
        self.linked = False
        self.replica.note("replication_link", network=net.name, container=c.name, state="down")

    def create_accounts(self) -> None:
        """The replication account on every binlog server (users are local to each mysqld), with
        sql_log_bin=0 so the statement is not itself replicated."""
        for n in self.source.topology.role(TP.SQL):
            SqlNode(self.source, n).rows(
                "SET SESSION sql_log_bin = 0; "
                f"CREATE USER IF NOT EXISTS '{REPL_USER}'@'%' IDENTIFIED BY '{REPL_PASSWORD}'; "
                f"GRANT REPLICATION SLAVE ON *.* TO '{REPL_USER}'@'%'")

    def configure_channel(self, binlog_server: str | None = None, log_file: str | None = None,
                          log_pos: int | None = None) -> tuple[str, int]:
        """The channel on the applier, to ``binlog_server`` (else the current one): from
        ``log_file``/``log_pos``, or the binlog server's current position. Returns the position."""
        server = binlog_server or self.binlog_server
        src = self.sql("source", server)
        if log_file is None:
            rows = src.rows("SHOW BINARY LOG STATUS")
            if not rows or len(rows[0]) < 2:
                raise ReplicationError(f"{src.name}: SHOW BINARY LOG STATUS gave no position (is log-bin on?)")
            log_file, log_pos = rows[0][0], int(rows[0][1])
        host = self.source.topology.node(server).ip
        app = self.sql("replica")
        app.rows("STOP REPLICA; "
                 f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '{host}', SOURCE_PORT = 3306, "
                 f"SOURCE_USER = '{REPL_USER}', SOURCE_PASSWORD = '{REPL_PASSWORD}', GET_SOURCE_PUBLIC_KEY = 1, "
                 f"SOURCE_LOG_FILE = '{log_file}', SOURCE_LOG_POS = {int(log_pos or 4)}, "
                 f"SOURCE_CONNECT_RETRY = {CONNECT_RETRY_S}, SOURCE_RETRY_COUNT = {RETRY_COUNT}, "
                 f"SOURCE_HEARTBEAT_PERIOD = {HEARTBEAT_S}; "
                 "START REPLICA")
        self.binlog_server = server  # the channel reads it now (not before: a refused change left it as it was)
        self.replica.note("replication_channel", source=f"{server} ({host})", file=log_file,
                          position=int(log_pos or 4))
        return log_file, int(log_pos or 4)

    def verify(self, timeout: float) -> float:
        """A probe row written on the source must appear on the replica within ``timeout``;
        the seconds it took. ReplicationError, with the channel's state, when it does not."""
        db = self.source.engine.sql_database
        token = uuid.uuid4().hex
        self.sql("source").rows(
            f"CREATE TABLE IF NOT EXISTS `{db}`.{PROBE_TABLE} (id INT PRIMARY KEY, token VARCHAR(64)) "
            f"ENGINE=NDBCLUSTER; REPLACE INTO `{db}`.{PROBE_TABLE} VALUES (1, '{token}')")
        app, d = self.sql("replica"), Deadline(timeout)

        def arrived():
            try:
                return app.rows(f"SELECT token FROM `{db}`.{PROBE_TABLE} WHERE id = 1") == [[token]]
            except ReplicationError:  # the table itself is not there yet
                return False

        wait_until(arrived, timeout, 0.2, on_timeout=lambda: ReplicationError(
            f"the probe row did not reach the replica within {timeout:.0f}s: {self.state().describe()}"))
        self.replica.note("replication_verified", seconds=round(d.elapsed(), 2))
        return d.elapsed()

    # -- observation -----------------------------------------------------------------------------
    def state(self) -> ChannelState:
        return read_state(self.sql("replica"), self.clock.now())

    def lag(self) -> Lag:
        return read_lag(self.sql("source"), self.sql("replica"), self.source_ids, self.tracker, self.clock.now())

    def applied_epoch(self) -> int:
        """The newest epoch of the source's server ids in the replica's ndb_apply_status."""
        return parse_epoch(self.sql("replica").rows(applied_sql(self.source_ids), timeout=15), "ndb_apply_status")

    def source_epoch(self) -> int:
        """The newest epoch in the binlog server's ndb_binlog_index (0: none yet); when it does not
        answer (it is down), another binlog server's: every binlog server logs the same epochs."""
        names = [self.binlog_server] + [n.name for n in self.source.topology.sql_nodes if n.name != self.binlog_server]
        errors = []
        for name in names:
            try:
                return parse_binlog(self.sql("source", name).rows(binlog_sql(0), timeout=15))[0]
            except ReplicationError as e:
                errors.append(str(e))
        raise ReplicationError("no binlog server answers: " + "; ".join(errors))

    def wait_caught_up(self, epoch: int, timeout: float, poll: float = 0.25) -> float:
        """Until the replica has applied ``epoch`` (ndb_apply_status); the seconds it took.
        ReplicationError with the channel's state when it has not within ``timeout``."""
        d, app = Deadline(timeout), self.sql("replica")
        wait_until(lambda: parse_epoch(app.rows(applied_sql(self.source_ids)), "ndb_apply_status") >= epoch,
                   timeout, poll, on_timeout=lambda: ReplicationError(
                       f"the replica did not apply epoch {epoch} within {timeout:.0f}s: {self.state().describe()}"))
        return d.elapsed()

    # -- teardown --------------------------------------------------------------------------------
    def down(self) -> list[str]:
        """The link, then the replica, then the source; each step tried whatever the one before
        did. ReplicationError naming what could not be removed, after everything else was."""
        done, problems = [], []
        try:
            self.unlink()
        except Exception as e:
            problems.append(f"link: {e}")
        for c in (self.replica, self.source):
            try:
                done += c.down()
            except Exception as e:
                problems.append(f"{c.project}: {e}")
        if problems:
            raise ReplicationError("teardown: " + "; ".join(problems))
        return done
