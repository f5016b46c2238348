"""The faults of the replication scenarios, each an inject and a heal on a ``ReplicationPair``:

* the applier SQL node killed (SIGKILL of its container) and started again: a node restart of
  an SQL node; the channel resumes from the replica's saved positions (manual, "Handling an
  Unexpected Halt of a Replica": mysql.slave_relay_log_info, InnoDB; what 9.7.2 does with NDB
  tables, whose changes are not in that transaction: docs/facts.md NDB 15.5);
* the channel's binlog server killed, healed by the documented channel failover to the standby
  binlog server (``failover.py``) and a restart of the lost one;
* the channel's binlog server restarted in place: the applier stops on its binlog's LOST_EVENTS
  gap, healed by the same failover;
* the failover itself hit: a fault lands on one of its named steps (``fail_over_under``); a
  failover that could not finish is the operator's to retry once the fault is healed;
* the replica cluster restarted (``ALL RESTART`` through its management node: a graceful system
  restart) or crashed (``ALL RESTART -a``), healed by waiting for it and for the channel; an
  applier stopped on an error is the operator's to start again (``START REPLICA``, or after a
  crash the channel repositioned from ``ndb_apply_status``), and the error is reported;
* a data node of the source killed and restarted (a node restart) while the channel runs;
* a whole node group of the source killed: NDB cannot go on without any copy of a node group's
  data, so the whole source stops (commits acknowledged within its crash loss window may be lost,
  ``rules.crash_loss_window_s``); healed by its system restart, the applier's stop on the binlog
  servers' gap waited for and the gap skipped (every binlog server has it: ``gap.skip_gap``);
* the link cut (the applier detached from the source's network: its interface there is gone, so
  the receiver's connection dies) and healed (attached again, another address; docs/facts.md
  NDB 15.6);
* the link cut silently: every packet from the source's SQL nodes dropped in the applier's own
  network namespace (iptables in a helper container, ``runtimes.netns``): the connection stays
  open and nothing arrives, so the receiver finds out only when its heartbeats stop for
  replica_net_timeout; healed by removing the rule;
* the link cut with the binlog servers' retention (``binlog_expire_logs_seconds``) shorter or
  longer than the cut: at the cut each binlog server starts a new log and its retention is set,
  at the heal it starts another (expired logs are purged when the binary log is flushed: manual,
  ``binlog_expire_logs_seconds``); a cut longer than the retention purges the log the replica
  still needs, and the channel cannot resume.

Each heal returns notes for the run (what it did, what it found).
"""

from __future__ import annotations

from .. import topology as TP
from ..engines.ndb.rules import CONTAINER_START_SLACK, NDBT_EXTRA_WAIT, NDBT_WAIT_CLUSTER_STARTED
from ..runtimes import docker, netns
from ..waiting import Deadline, wait_until
from .channel import ReplicationError
from .layout import REPLICA_NET_TIMEOUT_S
from .failover import Failover, failover, play, reposition
from .gap import skip_gap
from .pair import CONNECT_RETRY_S, PROBE_BOUND_S, ReplicationPair, SqlNode

#: how long a restarted SQL node may take to answer SQL: ndb-wait-connected + ndb-wait-setup of
#: the shipped my-small.cnf (60 s each: mysqld waits that long for the cluster, then for its NDB
#: setup, docs/facts.md NDB 6.3), plus 30 s for the process' own start
SQL_RESTART_BOUND_S = 60 + 60 + 30
#: how long the channel may take to run again once its path is back: the receiver notices a
#: dead connection after replica_net_timeout and retries every SOURCE_CONNECT_RETRY
#: (``layout.REPLICA_NET_TIMEOUT_S``, ``pair.CONNECT_RETRY_S``), doubled for a retry that lands
#: just before the path is back
CHANNEL_BACK_BOUND_S = 2 * (REPLICA_NET_TIMEOUT_S + CONNECT_RETRY_S)


def kill_applier(pair: ReplicationPair) -> None:
    pair.replica.container(pair.replica.topology.node(pair.applier)).kill()


def restart_applier(pair: ReplicationPair) -> list[str]:
    """Start the applier's container again, wait until it answers SQL, re-attach the link if the
    restart lost it, then wait for the channel: started by the server itself (skip_replica_start
    is off) or, if it stays stopped without an error, by START REPLICA. A channel stopped on an
    error is left as it is: the convergence check judges what it did."""
    node = pair.replica.topology.node(pair.applier)
    d = Deadline(SQL_RESTART_BOUND_S)
    pair.replica.engine.recover_nodes(pair.replica, [node])
    app = pair.sql("replica")
    wait_until(lambda: _answers(app), SQL_RESTART_BOUND_S, 1.0, on_timeout=lambda: ReplicationError(
        f"{app.name} did not answer SQL within {SQL_RESTART_BOUND_S}s of its restart"))
    notes = [f"{pair.applier} answered SQL {d.elapsed():.1f}s after its restart"]
    c = pair.replica.container(node)
    c.reload()
    net = pair._source_network()
    if net.name not in ((c.attrs.get("NetworkSettings") or {}).get("Networks") or {}):
        pair.link()
        notes.append("the link was gone after the restart: attached again")
    notes += _channel_back(pair)
    return notes


def kill_binlog_server(pair: ReplicationPair) -> str:
    """SIGKILL of the channel's binlog server; its name."""
    name = pair.binlog_server
    pair.source.container(pair.source.topology.node(name)).kill()
    return name


#: the applier's stop on a binlog gap: error 13119, "The incident LOST_EVENTS occurred on the
#: source" (docs/facts.md NDB 15.7)
INCIDENT_ERROR = 13119


def restart_binlog_server(pair: ReplicationPair) -> str:
    """SIGKILL of the channel's binlog server and its start at once: its new binary log begins
    with a LOST_EVENTS gap (docs/facts.md NDB 15.7). Its name."""
    name = kill_binlog_server(pair)
    node = pair.source.topology.node(name)
    pair.source.engine.recover_nodes(pair.source, [node])
    sql = pair.sql("source", name)
    wait_until(lambda: _answers(sql), SQL_RESTART_BOUND_S, 1.0, on_timeout=lambda: ReplicationError(
        f"{sql.name} did not answer SQL within {SQL_RESTART_BOUND_S}s of its restart"))
    return name


def wait_for_incident(pair: ReplicationPair, timeout: float) -> list[str]:
    """Until the applier stops on the gap (INCIDENT_ERROR); ReplicationError with the channel's
    state when it does not within ``timeout``."""
    d, st = Deadline(timeout), [pair.state()]

    def stopped():
        st[0] = pair.state()
        return any(e.number == INCIDENT_ERROR for e in st[0].errors) and st[0].applier == "OFF"

    wait_until(stopped, timeout, 0.25, on_timeout=lambda: ReplicationError(
        f"the applier did not stop on the binlog gap within {timeout:.0f}s: {st[0].describe()}"))
    e = next(x for x in st[0].errors if x.number == INCIDENT_ERROR)
    return [f"applier stopped on the gap ({e.where} error {e.number}: {e.message[:80]}) after {d.elapsed():.1f}s more"]


def fail_over_and_restart(pair: ReplicationPair, lost: str, to: str, record: list) -> list[str]:
    """The operator's heal of a lost binlog server: the documented channel failover to ``to``
    (``failover.failover``, appended to ``record``), then the lost SQL node started again (its
    new binary log begins with a LOST_EVENTS gap: docs/facts.md NDB 15.7; the channel no longer
    reads it)."""
    f = failover(pair, to)
    record.append(f)
    notes = [f"failover {f.from_server} -> {f.to_server} at epoch {f.latest_epoch} ({f.log_file}:{f.log_pos}) "
             f"in {f.seconds:.2f}s"]
    notes += _channel_back(pair)
    return notes + _restart_lost(pair, lost)


def fail_over_under(pair: ReplicationPair, lost: str, to: str, step: str, inject, heal, record: list) -> list[str]:
    """The failover of a lost binlog server with a fault on one of its steps: ``inject()`` (returns
    the fault's name) lands as ``step`` begins; then ``heal()`` (notes); when the failover did not
    finish, the operator's retry (``failover``, after the heal); then the lost SQL node started
    again. Every play of the failover is appended to ``record``."""
    f: Failover = play(pair, to, fault_step=step, fault=inject)
    record.append(f)
    notes = [f"failover with {f.fault}: {f.describe()}"]
    notes += heal() or []
    if not f.done:
        again = failover(pair, to)
        record.append(again)
        notes.append(f"failover retried after the heal: done in {again.seconds:.2f}s at epoch {again.latest_epoch}")
    notes += _channel_back(pair)
    return notes + _restart_lost(pair, lost)


def _restart_lost(pair: ReplicationPair, lost: str) -> list[str]:
    node = pair.source.topology.node(lost)
    pair.source.engine.recover_nodes(pair.source, [node])
    sql = pair.sql("source", lost)
    wait_until(lambda: _answers(sql), SQL_RESTART_BOUND_S, 1.0, on_timeout=lambda: ReplicationError(
        f"{sql.name} did not answer SQL within {SQL_RESTART_BOUND_S}s of its restart"))
    return [f"{lost} restarted"]


def _answers(sql) -> bool:
    try:
        return sql.rows("SELECT 1") == [["1"]]
    except ReplicationError:
        return False


#: a data node's restart to started: the NDB test framework's waitClusterStarted(120) around every
#: restart (engines/ndb/rules.py, docs/facts.md NDB 7), plus the container's own start
DATA_RESTART_BOUND_S = NDBT_WAIT_CLUSTER_STARTED + CONTAINER_START_SLACK


def kill_source_data_node(pair: ReplicationPair, name: str) -> None:
    """SIGKILL of one data node of the source (its node group keeps a live replica)."""
    pair.source.container(pair.source.topology.node(name)).kill()


def restart_source_data_node(pair: ReplicationPair, name: str) -> list[str]:
    """The node restart: its container started, the source healthy again within the bound."""
    d = Deadline(DATA_RESTART_BOUND_S)
    pair.source.engine.recover_nodes(pair.source, [pair.source.topology.node(name)])
    pair.source.wait_healthy(DATA_RESTART_BOUND_S)
    return [f"{name} restarted, the source healthy {d.elapsed():.1f}s after its start"]


def kill_source_node_group(pair: ReplicationPair, group: int = 0) -> list[str]:
    """SIGKILL of every data node of one node group of the source; their names."""
    nodes = pair.source.topology.nodegroups().get(group)
    if not nodes:
        raise ReplicationError(f"the source has no node group {group}: {sorted(pair.source.topology.nodegroups())}")
    for n in nodes:
        pair.source.container(n).kill()
    return [n.name for n in nodes]


#: a system restart to started: the NDB test framework's bound for it, waitClusterStarted(120) + the
#: 60 s it adds per loop (engines/ndb/expect_facts.py, rec_system), plus the container start
SYSTEM_RESTART_BOUND_S = NDBT_WAIT_CLUSTER_STARTED + NDBT_EXTRA_WAIT + CONTAINER_START_SLACK


def restart_replica_cluster(pair: ReplicationPair, abort: bool = False) -> str:
    """``ALL RESTART`` on the replica cluster (graceful: a last global checkpoint, then every data
    node stops and the angels start them again; ``abort``: ``-a``, every data node stops at once
    without that checkpoint); what ndb_mgm answered."""
    cmd = "ALL RESTART -a" if abort else "ALL RESTART"
    code, out, who = pair.replica.engine.mgm(pair.replica, cmd, timeout=60)
    if code != 0:
        raise ReplicationError(f"{cmd} on the replica (through {who}) failed: {out.strip()[-200:]}")
    return " ".join(ln.strip() for ln in out.splitlines() if ln.strip())[-160:]


def replica_cluster_back(pair: ReplicationPair, reposition_channel: bool = False,
                         forget_gtids: bool = False) -> list[str]:
    """The replica healthy again (the system restart's bound), the applier answering SQL, then the
    channel: running by itself, or stopped on an error, which is reported and the channel started
    again: ``START REPLICA`` (the operator's step after a graceful restart), or, with
    ``reposition_channel`` (after a crash), restarted right after the newest epoch the replica
    holds (``failover.reposition``)."""
    d = Deadline(SYSTEM_RESTART_BOUND_S)
    pair.replica.wait_healthy(SYSTEM_RESTART_BOUND_S)
    notes = [f"replica healthy {d.elapsed():.1f}s into the heal"]
    app = pair.sql("replica")
    wait_until(lambda: _answers(app), SQL_RESTART_BOUND_S, 1.0, on_timeout=lambda: ReplicationError(
        f"{app.name} did not answer SQL within {SQL_RESTART_BOUND_S}s of the replica's restart"))
    back = _channel_back(pair)
    st = pair.state()
    if not st.running and st.applier == "OFF":
        notes.append(f"applier stopped: {st.describe()}")
        if reposition_channel:
            f = reposition(pair, forget_gtids=forget_gtids)
            back = [f"channel repositioned on {f.to_server} after epoch {f.latest_epoch} ({f.log_file}:{f.log_pos}) "
                    f"in {f.seconds:.2f}s"] + _channel_back(pair)
        else:
            pair.sql("replica").rows("START REPLICA")
            back = ["START REPLICA"] + _channel_back(pair)
    return notes + back


#: how long after the source's system restart the applier may take to stop on the binlog servers'
#: gap: the channel is back within CHANNEL_BACK_BOUND_S (the receiver's reconnect), and the gap is
#: the first event after what was applied before the crash, one fetch away
GAP_BOUND_S = CHANNEL_BACK_BOUND_S + 10


def source_cluster_back(pair: ReplicationPair) -> list[str]:
    """The source's system restart: every data node down started again, the source healthy within
    the system restart's bound. Its binlog servers stayed up and wrote a LOST_EVENTS gap when the
    cluster went away (docs/facts.md NDB 15.7): the applier stopping on it is waited for and the
    gap skipped (``gap.skip_gap``: every binlog server has one, so no failover avoids it). Notes
    say what the applier did instead when it did not stop."""
    topo = pair.source.topology
    down = [n for n in topo.data_nodes if docker.container_state(pair.source.container(n)) != "running"]
    d = Deadline(SYSTEM_RESTART_BOUND_S)
    pair.source.engine.recover_nodes(pair.source, down)
    pair.source.wait_healthy(SYSTEM_RESTART_BOUND_S)
    notes = [f"source system restart ({', '.join(n.name for n in down)} started): healthy {d.elapsed():.1f}s "
             f"into the heal"]
    g = Deadline(GAP_BOUND_S)
    try:
        notes += wait_for_incident(pair, GAP_BOUND_S)
    except ReplicationError as e:
        return notes + [f"no stop on a gap within {g.elapsed():.0f}s: {e}"] + _channel_back(pair)
    return notes + [skip_gap(pair).describe()] + _channel_back(pair)


def restore(pair: ReplicationPair) -> list[str]:
    """Back to a running, verified channel before a scenario (after one that failed half-way):
    the applier started if it is down, the link attached, the channel started; then the probe."""
    notes = []
    if not pair.source.status().healthy:  # a data node left down by a scenario that failed half-way
        pair.source.reset(DATA_RESTART_BOUND_S)
        notes.append("source reset to healthy")
    down = [n for n in pair.source.topology.role(TP.SQL)
            if docker.container_state(pair.source.container(n)) != "running"]
    if down:
        pair.source.engine.recover_nodes(pair.source, down)
        for n in down:
            sql = SqlNode(pair.source, n)
            wait_until(lambda: _answers(sql), SQL_RESTART_BOUND_S, 1.0)
        notes.append("source SQL nodes started: " + ", ".join(n.name for n in down))
    c = pair.replica.container(pair.replica.topology.node(pair.applier))
    if docker.container_state(c) != "running":
        notes += restart_applier(pair)
    if not pair.linked:
        notes += heal_link(pair)
    if not pair.state().running:
        pair.sql("replica").rows("START REPLICA")
        notes.append("START REPLICA")
    pair.verify(CHANNEL_BACK_BOUND_S + PROBE_BOUND_S)
    return notes


def cut_link(pair: ReplicationPair) -> None:
    pair.unlink()


def heal_link(pair: ReplicationPair) -> list[str]:
    pair.link()
    return ["applier attached to the source's network again"] + _channel_back(pair)


class SilentCut:
    """Packets from every SQL node of the source dropped on arrival at the applier (its INPUT, in
    a chain of our own): the TCP connection is not closed, it only goes quiet. ``inject`` and
    ``heal`` (the rule's chain and the helper removed; a helper left by a killed run is ``reap``'s)."""

    def __init__(self, pair: ReplicationPair):
        self.pair = pair
        self.helper = None
        self.chain = netns.new_chain()

    def inject(self) -> None:
        sources = [n.ip for n in self.pair.source.topology.role(TP.SQL)]
        node = self.pair.replica.topology.node(self.pair.applier)
        self.helper = netns.start_helper(self.pair.replica, node, purpose="replication link")
        code, out = self.helper.install(self.chain, netns.drop_rules_script(
            self.chain, sources, "packets", f"ndbchaos replication: silent cut from {', '.join(sources)}"))
        if code != 0:
            self.heal()
            raise ReplicationError(f"dropping the source's packets on {node.name} failed: {out.strip()[-200:]}")

    def heal(self) -> list[str]:
        if self.helper is None:
            return []
        h, self.helper = self.helper, None
        try:
            code, out = h.uninstall(self.chain)
            if code != 0:
                raise ReplicationError(f"removing {self.chain} on {h.target_name} failed: {out.strip()[-200:]}")
        finally:
            h.remove()
        return [f"the source's packets let through to {h.target_name} again"] + _channel_back(self.pair)


#: the server's own retention (binlog_expire_logs_seconds: 30 days by default), set back after a scenario
DEFAULT_RETENTION_S = 2_592_000
#: the receiver's stop when the binlog it asks for is gone: 13114, "Got fatal error 1236 from source
#: when reading data from binary log" (ER_SERVER_SOURCE_FATAL_ERROR_READING_BINLOG)
PURGED_ERROR = 13114


def binary_logs(pair: ReplicationPair, name: str) -> list[str]:
    return [r[0] for r in pair.sql("source", name).rows("SHOW BINARY LOGS")]


def set_retention(pair: ReplicationPair, seconds: int) -> None:
    """Every binlog server's retention (applied at its next flush)."""
    for n in pair.source.topology.role(TP.SQL):
        pair.sql("source", n.name).rows(f"SET GLOBAL binlog_expire_logs_seconds = {int(seconds)}")


def flush_binary_logs(pair: ReplicationPair) -> list[str]:
    """A new binary log on every binlog server; the flush purges what is older than its retention.
    Notes: what each purged."""
    notes = []
    for n in pair.source.topology.role(TP.SQL):
        before = binary_logs(pair, n.name)
        pair.sql("source", n.name).rows("FLUSH BINARY LOGS")
        gone = [x for x in before if x not in binary_logs(pair, n.name)]
        notes.append(f"{n.name}: purged {', '.join(gone) or 'nothing'}")
    return notes


def cut_link_under_retention(pair: ReplicationPair, retention_s: int) -> list[str]:
    cut_link(pair)
    set_retention(pair, retention_s)
    return [f"retention {int(retention_s)}s"] + flush_binary_logs(pair)


def heal_link_after_retention(pair: ReplicationPair) -> list[str]:
    """A new binary log on every binlog server (their retention purges what has expired), their
    retention set back to the server's default, then the link attached again and the channel
    waited for."""
    notes = flush_binary_logs(pair)
    set_retention(pair, DEFAULT_RETENTION_S)
    return notes + heal_link(pair)


def resume_at_the_source_position(pair: ReplicationPair) -> list[str]:
    """After the logs the channel needed were purged: the retention set back, the applier reset and
    the channel moved to its binlog server's current position. What was purged is skipped: the
    replica lacks it (a rebuild from a backup of the source is the way to get it back; not built)."""
    set_retention(pair, DEFAULT_RETENTION_S)
    pair.sql("replica").rows("STOP REPLICA; RESET REPLICA")
    f, p = pair.configure_channel()
    return [f"channel reset to {pair.binlog_server} {f}:{p}"] + _channel_back(pair)


def _channel_back(pair: ReplicationPair) -> list[str]:
    d = Deadline(CHANNEL_BACK_BOUND_S)
    st = [pair.state()]

    def running():
        st[0] = pair.state()
        return st[0].running or (st[0].applier == "OFF" and st[0].last_error is not None
                                 and st[0].last_error.where != "receiver")

    try:
        wait_until(running, CHANNEL_BACK_BOUND_S, 0.25)
    except Exception:
        pass
    if st[0].running:
        return [f"channel running {d.elapsed():.1f}s after the heal"]
    if st[0].applier == "OFF" and st[0].receiver == "OFF" and not st[0].errors:
        pair.sql("replica").rows("START REPLICA")
        return [f"channel stopped without an error after the heal: START REPLICA ({st[0].describe()})"]
    return [f"channel not running {d.elapsed():.1f}s after the heal: {st[0].describe()}"]


__all__ = ["CHANNEL_BACK_BOUND_S", "SQL_RESTART_BOUND_S", "cut_link", "fail_over_and_restart", "fail_over_under",
           "heal_link", "replica_cluster_back", "restart_replica_cluster",
           "SilentCut", "cut_link_under_retention", "heal_link_after_retention", "resume_at_the_source_position",
           "kill_applier", "kill_binlog_server", "kill_source_data_node", "kill_source_node_group", "restart_applier",
           "restart_binlog_server", "restart_source_data_node", "restore", "source_cluster_back", "wait_for_incident"]
