"""The two clusters of a replication setup: their layouts, subnets, server ids and the compose
overlay that gives each SQL node its replication options.

Source cluster: every SQL node is a binlog server: ``--log-bin``, ``--ndb-log-bin=ON`` (off by
default since NDB 8.0: the manual's "Starting NDB Cluster Replication (Single Replication
Channel)", https://dev.mysql.com/doc/refman/8.4/en/mysql-cluster-replication-starting.html) and
a server id of its own. Replica cluster: its SQL nodes get server ids of their own (a replica
ignores events that carry its own server id: "General Requirements for NDB Cluster
Replication"); its first SQL node is the applier.

The options go on the mysqld command line through a compose overlay (``ComposeCluster`` takes
overlays in ``options.overlays``), because ``my.cnf`` is one file mounted in every container of
a cluster and ``server-id`` must differ per SQL node.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..engines.ndb.spec import resolve
from ..errors import UsageError
from ..resources import tools_dir
from ..settings import normalize_subnet
from ..vocabulary import ClusterOptions

#: the source: one node group of two data nodes, two SQL nodes (both binlog servers: the channel
#: reads the first, the second is the standby the documented channel failover moves to), one
#: management node
SOURCE_LAYOUT = "nodegroups=1,replicas=2,sql=2,mgm=1,spare=0"
#: the replica: the shipped small layout (1 management, 2 data nodes, 1 SQL node: the applier)
REPLICA_LAYOUT = "small"
#: subnets of their own, away from the shipped layouts' defaults (10.213.77-79), so a replication
#: pair can run beside any other cluster of this project
SOURCE_NET, REPLICA_NET = "10.213.90", "10.213.91"
#: server ids: 1000 + node id on the source, 2000 + node id on the replica (distinct across both)
SOURCE_ID_BASE, REPLICA_ID_BASE = 1000, 2000

#: the source's binlog options (manual, "Starting NDB Cluster Replication"). binlog_format is left
#: at its default, ROW, the format NDB replication needs (statement-based logging is not supported,
#: "General Requirements for NDB Cluster Replication"); the option itself is deprecated.
BINLOG_OPTIONS = ("--log-bin=binlog", "--ndb-log-bin=ON")
#: the replica's receiver gives up a silent connection after replica_net_timeout (default 60 s)
#: and reconnects; 4 s, four heartbeats (``pair.HEARTBEAT_S``, which must be below it: manual,
#: CHANGE REPLICATION SOURCE TO, SOURCE_HEARTBEAT_PERIOD), so a healed link is used again within
#: seconds, not a minute
REPLICA_NET_TIMEOUT_S = 4
REPLICA_OPTIONS = (f"--replica-net-timeout={REPLICA_NET_TIMEOUT_S}",)
#: active-active (both clusters take writes, each replicates to the other, ``conflict.py``): every
#: SQL node of both also logs what its applier applies (log-replica-updates, on by default since
#: 8.0, set here to say so) and the applied epochs (ndb-log-apply-status: NDB$EPOCH2 reflects the
#: secondary's changes back through them); the options NDB's own conflict tests run with
#: (mysql-test/suite/ndb_rpl/t/ndb_rpl_conflict_epoch.cnf, ndb_rpl_conflict_epoch2.cnf)
ACTIVE_OPTIONS = ("--log-replica-updates=ON", "--ndb-log-apply-status=ON")


@dataclass(frozen=True)
class PairLayout:
    """Which layout and subnet each cluster has; the options of each ``ComposeCluster``."""

    source_layout: str = SOURCE_LAYOUT
    replica_layout: str = REPLICA_LAYOUT
    source_net: str = SOURCE_NET
    replica_net: str = REPLICA_NET
    #: mysqld options of the replica's SQL nodes besides the server id
    replica_options: tuple[str, ...] = field(default=REPLICA_OPTIONS)
    #: both clusters take writes and replicate to each other (``conflict.py``): the replica's SQL
    #: nodes are binlog servers too, the source's first SQL node the applier of the way back
    active_active: bool = False

    def __post_init__(self):
        a, b = normalize_subnet(self.source_net), normalize_subnet(self.replica_net)
        if a == b:
            raise UsageError(f"replication: the source and the replica need distinct subnets (both {a})")
        for lay in (self.source_layout, self.replica_layout):
            resolve(lay)  # UsageError, one line, for an impossible spec


def sql_nodes(layout: str) -> list[tuple[str, int]]:
    """(service, node id) of a layout's SQL nodes, in node id order: the shipped small layout's
    sql1 (node id 4), or a spec's (``spec.LayoutSpec.nodes``)."""
    if layout == "small":
        return [("sql1", 4)]
    if layout == "default":
        return [("sql1", 21), ("sql2", 22)]
    spec = resolve(layout)[1]
    return [(name, nid) for role, name, nid, _ in spec.nodes() if role == "sql"]


def server_id(base: int, nodeid: int) -> int:
    return base + nodeid


def overlay_text(layout: str, base: int, extra: tuple[str, ...]) -> str:
    """A compose overlay that replaces each SQL service's command with the same mysqld plus its
    server id and ``extra``."""
    lines = ["# ndbchaos replication: the SQL nodes' replication options (ndbchaos/replication/layout.py)",
             "services:"]
    for name, nid in sql_nodes(layout):
        args = ["mysqld", f"--ndb-nodeid={nid}", f"--server-id={server_id(base, nid)}", *extra]
        lines += [f"  {name}:", "    command: [" + ", ".join(f'"{a}"' for a in args) + "]"]
    return "\n".join(lines) + "\n"


def write_overlay(name: str, text: str) -> Path:
    """The overlay in the tool cache, named by its content (written once)."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    dst = tools_dir().parent / "replication" / f"{name}-{digest}.yml"
    if not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(dst)
    return dst


def cluster_options(pair: PairLayout, side: str) -> ClusterOptions:
    """The ``ComposeCluster`` options of one side (``source`` or ``replica``)."""
    if side == "source":
        lay, net, base, extra = pair.source_layout, pair.source_net, SOURCE_ID_BASE, BINLOG_OPTIONS
        if pair.active_active:
            extra = extra + REPLICA_OPTIONS + ACTIVE_OPTIONS
    elif side == "replica":
        lay, net, base, extra = pair.replica_layout, pair.replica_net, REPLICA_ID_BASE, pair.replica_options
        if pair.active_active:
            extra = extra + BINLOG_OPTIONS + ACTIVE_OPTIONS
    else:
        raise UsageError(f"replication: no side {side!r} (source or replica)")
    overlay = write_overlay(f"{side}-{lay.replace('=', '').replace(',', '-')}", overlay_text(lay, base, extra))
    return ClusterOptions(ndb_layout=lay, ndb_subnet=normalize_subnet(net), overlays=(str(overlay),))
