"""Faults through the management client: what an NDB operator types into ``ndb_mgm``.

    MgmRestart(cluster, targets, initial=, nostart=, abort=, force=)   N [M ...] RESTART [-i] [-n] [-a] [-f]
    MgmStop(cluster, targets, abort=)                                  N [M ...] STOP [-a]
    SystemRestart(cluster, abort=)                                     ALL RESTART [-a]
    RollingRestart(cluster, targets, initial=)                         N RESTART, one node after the other

A restart through the management server keeps the data node's container: the angel (the
container's main process) forks a new data node process, so the node leaves the cluster and
comes back by itself (``-n``: it waits in ``not started`` until ``N START``, which is the heal).
``N STOP`` ends the angel too, so the container exits; the heal is a node restart.

Effects are verified on the cluster, never on the client's wording alone: each target leaves
the ``started`` state (the management server's view) within ``leave_timeout`` seconds.
Only engines with a management client (``Engine.mgm``, NDB) have these faults; on others they
raise ``FaultUnsupported``.
"""

from __future__ import annotations

import re
import time

from ....runtimes import docker
from .... import topology as TP
from ....errors import UsageError
from ....faults.base import Fault, FaultNotEffective, FaultUnsupported
from ....faults.node import Kill
from ....waiting import wait_until
from ....workload.ballast import ensure as ensure_ballast
from ...protocols import ClusterLog, ManagementClient
from ..mgm import reply

def _mgm(cluster, command: str, timeout: float) -> tuple[str, str]:
    """Run one ndb_mgm command; (output, the management node that answered). A refusal is
    FaultNotEffective with the client's own last line."""
    if not isinstance(cluster.engine, ManagementClient):
        raise FaultUnsupported(f"ndb_mgm '{command}': {cluster.engine.name} has no management client",
                               reason=f"management-client faults are NDB's; {cluster.engine.name} has none")
    code, out, src = cluster.engine.mgm(cluster, command, timeout=timeout)
    said, refused = reply(out)
    if code != 0 or refused:
        lines = [ln.strip() for ln in (out or "").splitlines() if ln.strip()]
        raise FaultNotEffective(f"ndb_mgm '{command}' via {src or 'no management node'}: "
                                f"{(said or lines or ['(no output)'])[-1]}")
    return "; ".join(said[-3:]), src or ""


def _data_targets(kind: str, nodes) -> None:
    bad = [n.name for n in nodes if n.role != TP.DATA or n.nodeid is None]
    if bad:
        raise UsageError(f"{kind}: only data nodes can be restarted or stopped through ndb_mgm, not {', '.join(bad)}")


def flags(initial: bool = False, nostart: bool = False, abort: bool = False, force: bool = False) -> str:
    """The ndb_mgm RESTART options, in the manual's order."""
    return "".join(f" {f}" for f, on in (("-n", nostart), ("-i", initial), ("-a", abort), ("-f", force)) if on)


def restart_command(nodeids, initial: bool = False, nostart: bool = False, abort: bool = False,
                    force: bool = False) -> str:
    """``11 13 RESTART -i`` (node ids in the order given) or ``ALL RESTART`` for ``nodeids="ALL"``."""
    who = "ALL" if nodeids == "ALL" else " ".join(str(int(i)) for i in nodeids)
    if not who:
        raise UsageError("RESTART: no node")
    return f"{who} RESTART{flags(initial, nostart, abort, force)}"


def left_started(cluster, targets, timeout: float, poll: float = 0.1) -> dict[str, float]:
    """Poll the management server until every target is out of ``started`` (or its container
    is gone), at most ``timeout`` s; {node: run clock when first seen out} for those that left."""
    engine, clock = cluster.engine, cluster.clock
    left: dict[str, float] = {}

    def all_left():
        rep, _ = engine.mgm_report(cluster)
        for t in targets:
            if t.name in left:
                continue
            m = rep.node(t.nodeid) if rep is not None else None
            gone = docker.container_state(cluster.container(t)) != "running"
            if gone or (m is not None and not m.started):
                left[t.name] = round(clock.now(), 3)
        return len(left) == len(targets)

    wait_until(all_left, timeout, poll=poll)
    return left


class _MgmFault(Fault):
    """Shared: send a command, then watch the targets leave ``started``."""

    leave_timeout = 60.0
    timeout = 120.0

    def __init__(self, cluster, targets, **params):
        super().__init__(cluster, targets, **params)
        _data_targets(self.kind, self.targets)

    def _apply(self) -> None:
        said, src = _mgm(self.cluster, self.window.params["command"], self.timeout)
        self.window.params.update(mgm_said=said, via=src)

    def _left(self) -> dict[str, float]:
        """Poll the management server until every target is out of ``started`` (or its
        container is gone); {node: run clock when first seen out}."""
        left = left_started(self.cluster, self.targets, self.leave_timeout, poll=0.1)
        stay = [t.name for t in self.targets if t.name not in left]
        if stay:
            raise FaultNotEffective(f"{', '.join(stay)} still started {self.leave_timeout:.0f}s after "
                                    f"ndb_mgm '{self.window.params.get('command')}'")
        return left


class MgmRestart(_MgmFault):
    """``N [M ...] RESTART`` with the manual's options: ``-i`` initial (the node's file system is
    removed and rebuilt from its peers), ``-n`` no start (the node waits in ``not started`` for
    ``N START``: the heal sends it), ``-a`` abort (no graceful handover: transactions on it are
    aborted), ``-f`` force (even if the restart takes the cluster down). Several targets are one
    command: NDB restarts them together, and only with ``-a`` (9.7.2 refuses a graceful one with
    "5031-Unsupported multi node shutdown. Abort option required.": not effective)."""

    kind = "mgm-restart"
    simultaneous = True

    def __init__(self, cluster, targets, initial: bool = False, nostart: bool = False, abort: bool = False,
                 force: bool = False, timeout: float = 120.0):
        super().__init__(cluster, targets, initial=initial, nostart=nostart, abort=abort, force=force)
        self.nostart = nostart
        self.timeout = timeout
        self.window.params["command"] = restart_command([t.nodeid for t in self.targets], initial, nostart,
                                                        abort, force)

    def _verify_applied(self) -> str:
        left = self._left()
        self.window.params["left_at"] = left
        return (f"ndb_mgm '{self.window.params['command']}': {', '.join(left)} left the cluster "
                f"({self.window.params['mgm_said']})")

    def _revert(self) -> None:
        if self.nostart:
            waiting = self._waiting()
            if waiting:
                cmd = " ".join(str(t.nodeid) for t in waiting) + " START"
                said, _ = _mgm(self.cluster, cmd, 30.0)
                self.window.params["start"] = {"command": cmd, "mgm_said": said,
                                               "at": round(self.cluster.clock.now(), 3)}
        idle = [t for t in self.targets if docker.container_state(self.cluster.container(t)) != "running"]
        if idle:
            self.cluster.engine.recover_nodes(self.cluster, idle)

    def _waiting(self) -> list:
        """Targets in ``not started`` (``-n``: they wait for START). Polled briefly: a node that
        was just told to restart passes through ``not connected`` first."""
        found: list = []

        def ready():
            rep, _ = self.cluster.engine.mgm_report(self.cluster)
            if rep is None:
                return False
            found[:] = [t for t in self.targets if (m := rep.node(t.nodeid)) is not None
                        and m.state_name == "NOT_STARTED"]
            return len(found) == len(self.targets)

        wait_until(ready, 60.0, poll=0.5)
        return list(found)

    def _verify_healed(self) -> str:
        for t in self.targets:
            st = docker.container_state(self.cluster.container(t))
            if st != "running":
                raise FaultNotEffective(f"{t.name} is {st} after the restart")
        how = "started by 'START'" if self.nostart else "restarting by itself"
        return f"{', '.join(t.name for t in self.targets)}: {how}"


class MgmStop(_MgmFault):
    """``N [M ...] STOP`` (``-a``: abort, no handover). The angel exits with the node, so the
    container stops; the heal is a node restart (``Engine.recover_nodes``)."""

    kind = "mgm-stop"
    simultaneous = True

    def __init__(self, cluster, targets, abort: bool = False, timeout: float = 60.0):
        super().__init__(cluster, targets, abort=abort)
        self.timeout = timeout
        ids = " ".join(str(t.nodeid) for t in self.targets)
        self.window.params["command"] = f"{ids} STOP" + (" -a" if abort else "")

    def _verify_applied(self) -> str:
        left = self._left()
        self.window.params["left_at"] = left
        for t in self.targets:
            c = self.cluster.container(t)
            if not wait_until(lambda: docker.container_state(c) in ("exited", "dead"), 30):
                raise FaultNotEffective(f"{t.name} left the cluster but its container still runs 30s "
                                        f"after '{self.window.params['command']}'")
        return f"ndb_mgm '{self.window.params['command']}': {', '.join(left)} stopped"

    def _revert(self) -> None:
        self.cluster.engine.recover_nodes(self.cluster, self.targets)

    _verify_healed = Kill._verify_healed  # the containers run again, as after a kill


class SystemRestart(MgmRestart):
    """``ALL RESTART`` (``abort``: ``-a``, no graceful shutdown): every data node stops and the
    cluster restarts from its last global checkpoint. Targets: every data node. The angels start
    the data nodes again by themselves; the heal only starts a container that exited."""

    kind = "system-restart"

    def __init__(self, cluster, abort: bool = False, timeout: float = 180.0):
        data = list(cluster.topology.data_nodes)
        super().__init__(cluster, data, abort=abort, timeout=timeout)
        self.window.params["command"] = restart_command("ALL", abort=abort)


class RollingRestart(_MgmFault):
    """Every target restarted through ``N RESTART`` (``-i``: initial), one after the other: the
    next only once the previous is ``started`` again (at most ``node_timeout`` s each). The
    whole roll is the fault's application; the window records each node's times (restart sent,
    left, started again). An operator's rolling restart (a configuration change, an upgrade)."""

    kind = "rolling-restart"
    simultaneous = False

    def __init__(self, cluster, targets, initial: bool = False, node_timeout: float = 180.0):
        super().__init__(cluster, targets, initial=initial)
        self.initial = initial
        self.node_timeout = node_timeout
        self.window.params["order"] = [t.name for t in self.targets]

    def _apply(self) -> None:
        engine, clock = self.cluster.engine, self.cluster.clock
        steps = []
        for t in self.targets:
            cmd = restart_command([t.nodeid], initial=self.initial)
            sent = clock.now()
            said, _ = _mgm(self.cluster, cmd, 120.0)
            step = {"node": t.name, "command": cmd, "sent": round(sent, 3), "mgm_said": said}
            steps.append(step)
            self.window.params["steps"] = steps

            def state():
                rep, _ = engine.mgm_report(self.cluster)
                m = rep.node(t.nodeid) if rep is not None else None
                return m

            left = wait_until(lambda: (m := state()) is not None and not m.started, 60.0, poll=0.1)
            step["left"] = round(clock.now(), 3) if left else None
            if not left:
                raise FaultNotEffective(f"{t.name} still started 60s after '{cmd}'")
            back = wait_until(lambda: (m := state()) is not None and m.started, self.node_timeout, poll=0.5)
            step["started"] = round(clock.now(), 3) if back else None
            if not back:
                raise FaultNotEffective(f"{t.name} not started again {self.node_timeout:.0f}s after '{cmd}'")
            time.sleep(0.5)  # SQL nodes see it started too before the next one goes

    def _verify_applied(self) -> str:
        steps = self.window.params.get("steps") or []
        return "rolled: " + ", ".join(f"{s['node']} back in {s['started'] - s['sent']:.1f}s" for s in steps)

    def _revert(self) -> None:
        idle = [t for t in self.targets if docker.container_state(self.cluster.container(t)) != "running"]
        if idle:
            self.cluster.engine.recover_nodes(self.cluster, idle)

    def _verify_healed(self) -> str:
        return "nothing to undo: every node was restarted during the roll"


class KillDuringBackup(Kill):
    """``START BACKUP WAIT STARTED`` (an online backup of every data node), then, once the
    management server says it started, kill the targets while it runs. The backup's id and the
    client's words are in the window (``backup_id``, ``backup_said``). Heal: node restart.

    Whether the kill landed while the backup ran is read from the cluster log, never assumed:
    the backup must end ``aborted`` after the kill (NDB aborts a backup when a data node fails);
    one that ``completed`` first means the kill came too late, and the fault is not effective.
    A backup of a few MB is over in tens of milliseconds (9.7.2 at MaxDiskWriteSpeed 20M: 16 MB
    over four data nodes in 0.21 s), less than a kill over ssh takes to arrive: ``ballast_mb``
    first fills a table with that much data (``ndbchaos.workload.ballast``) for the backup to
    write."""

    kind = "kill-during-backup"
    #: how long after the kill the backup's end may take to reach the cluster log: a SIGKILL
    #: closes the node's connections at once, and a node that stopped answering is declared dead
    #: after four missed heartbeats (HeartbeatIntervalDbDb: 5 s by default, 1 s here); this is
    #: four default intervals and the default ArbitrationTimeout (7.5 s) with a margin
    FATE_BOUND_S = 30.0

    def __init__(self, cluster, targets, signal: str = "SIGKILL", timeout: float = 60.0, ballast_mb: float = 0):
        super().__init__(cluster, targets, signal=signal)
        _data_targets(self.kind, self.targets)
        self.timeout = timeout
        self.ballast_mb = ballast_mb
        self._log = None
        self.window.params["command"] = "START BACKUP WAIT STARTED"

    def _prepare(self) -> None:
        if not isinstance(self.cluster.engine, ClusterLog):
            raise FaultUnsupported(f"{self.kind}: {self.cluster.engine.name} has no cluster log to follow a backup in",
                                   reason=f"an online backup is NDB's; {self.cluster.engine.name} has none")
        if self.ballast_mb:
            self.window.params["ballast"] = ensure_ballast(self.cluster, self.ballast_mb)
        running = [n for n in sorted(self.cluster.topology.role(TP.MGM), key=lambda n: n.nodeid or 0)
                   if docker.container_state(self.cluster.container(n)) == "running"]
        self._log = self.cluster.engine.cluster_log_follower(self.cluster, running[0] if running else None)
        self._log.seek_end()

    def _apply(self) -> None:
        said, src = _mgm(self.cluster, self.window.params["command"], self.timeout)
        m = re.search(r"Backup (\d+) started", said)
        if m is None:
            raise FaultNotEffective(f"ndb_mgm '{self.window.params['command']}' via {src}: no backup started ({said})")
        self.window.params.update(backup_id=int(m.group(1)), backup_said=said,
                                  backup_started_at=round(self.cluster.clock.now(), 3))
        self._signal_all()

    def _verify_applied(self) -> str:
        killed = super()._verify_applied()
        backup = self.window.params["backup_id"]
        fate = self.backup_fate(backup)
        if fate is None:
            raise FaultNotEffective(f"backup {backup}: neither completed nor aborted in the cluster log of "
                                    f"{self._log.node.name} {self.FATE_BOUND_S:.0f}s after the kill "
                                    f"({'; '.join(self._log.errors[-2:]) or 'no read errors'})")
        self.window.params["backup_fate"] = fate
        if fate["kind"] == "backup_completed":
            raise FaultNotEffective(f"backup {backup} completed before the kill took effect "
                                    f"({fate.get('text', '').strip()[:160]}): it needs more data to write "
                                    f"(ballast_mb={self.ballast_mb:g})")
        return f"backup {backup} aborted by the kill (error {fate.get('error')}); {killed}"

    def backup_fate(self, backup: int) -> dict | None:
        """The cluster log's word on how ``backup`` ended (a ``backup_completed`` or
        ``backup_aborted`` event), waiting at most ``FATE_BOUND_S``."""
        found: list[dict] = []

        def ended() -> bool:
            found.extend(e for e in self._log.poll() if e.get("kind") in ("backup_completed", "backup_aborted")
                         and e.get("backup") == backup)
            return bool(found)

        wait_until(ended, self.FATE_BOUND_S, poll=0.5)
        return found[0] if found else None


__all__ = ["KillDuringBackup", "MgmRestart", "MgmStop", "RollingRestart", "SystemRestart", "flags",
           "left_started", "restart_command"]
