"""Error-insert faults: NDB's own failure points, the codes its test suite crashes nodes with.

    ErrorInsert(cluster, targets, code, extra=None)            <id> ERROR <code> [<extra>] on each target
    ErrorInsert(..., also=[(8057, None)])                      other codes armed first on the same nodes
    ErrorInsert(..., gap_s=2.0)                                targets one after the other, gap_s apart
    ErrorInsert(..., trigger="lcp")                            then start a local checkpoint (DUMP 7099)
    ErrorInsertInRestart(cluster, targets, code)               RESTART -n -a, the code, START: it fires in
                                                               the node's own restart (RestartNFDuringNR)
    ErrorInsertDuringBackup(cluster, targets, code)            the code, then START BACKUP: it fires in the
                                                               backup (testBackup NFMaster / NFSlave)

Inject, verify, heal, as every fault:

* **inject** arms each code through the management client (``Engine.insert_error``) and, where
  asked, triggers what makes it fire;
* **verify** never takes the client's word (a plain data node drops a code silently while the
  management server says it was executed): each target must log ``NDB_TAMPER`` with the code (it
  is armed), and a code that crashes must leave a new entry in the node's error log within
  ``fire_timeout`` (it fired: the entry names the block and line, and the exit code). The fault is
  in place when the node left ``started`` (the window's ``applied_at``);
* **heal** clears what may still be armed (``<id> ERROR 0``) on every target that runs, starts a
  node waiting in ``not started``, and restarts one that exited (an exit other than an insert's
  2342 follows StopOnError: 9998's watchdog kill leaves the node down). A node that crashed with
  2342 restarts by itself (its angel: RestartOnErrorInsert, default a node restart).

Only an engine whose data nodes obey error inserts has these faults (``Engine.error_inserts_unavailable``
is None): elsewhere ``FaultUnsupported`` with the reason. Codes, blocks and sources:
``ndbchaos.engines.ndb.errorinsert`` and docs/faults.md.
"""

from __future__ import annotations

import re
import time

from ....runtimes import docker
from .... import topology as TP
from ....errors import UsageError
from ....events import time_to_epoch
from ....faults.base import Fault, FaultNotEffective, FaultUnsupported
from ....waiting import wait_until
from ..errorinsert import INSERT_EXIT, check_code, describe, route
from .mgm import left_started, restart_command

#: crash: the node stops at once (its error log says so before the fault is in place); hang: a
#: thread of it stops, its peers declare it dead, and it ends later by its own watchdog (the error
#: log's entry is awaited at the heal, so the engine's reaction is observed while it hangs);
#: stall / fail: it keeps running, slower or failing operations
EFFECTS = ("crash", "hang", "stall", "fail")
#: how ndb_mgm 9.7.2 says a backup completed: "Node 11: Backup 3 started from node 1 completed"
#: (then StartGCP, StopGCP, #Records ...)
BACKUP_COMPLETED = re.compile(r"Backup (\d+) started from node \d+ completed|Backup (\d+) completed")
TRIGGERS = (None, "lcp")


class ErrorInsert(Fault):
    kind = "error-insert"

    #: how long after the code is armed it may take to fire, by default: a code that fires on an
    #: event of the cluster (a commit, a global checkpoint every TimeBetweenGlobalCheckpoints,
    #: 2 s by default; a local checkpoint started with DUMP 7099) fires within seconds under load
    FIRE_TIMEOUT_S = 60.0
    #: how long a data node's process may take to exit once its error log has the entry (measured on
    #: 9.7.2 after 9998: "Forced node shutdown completed" 4 s after the entry's time, the crash dump
    #: waiting for the hung thread; a margin)
    EXIT_AFTER_ERROR_LOG_S = 15.0

    def __init__(self, cluster, targets, code: int, extra: int | None = None, effect: str | None = None,
                 also=(), gap_s: float | None = None, trigger: str | None = None,
                 fire_timeout: float | None = None):
        try:
            code, extra = check_code(code, extra)
            also = [check_code(c, x) for c, x in also]
        except ValueError as e:
            raise UsageError(f"{self.kind}: {e}") from None
        known = describe(code)
        effect = effect or (known.effect if known else "crash")
        if effect not in EFFECTS:
            raise UsageError(f"{self.kind}: effect {effect!r}: one of {', '.join(EFFECTS)}")
        if trigger not in TRIGGERS:
            raise UsageError(f"{self.kind}: trigger {trigger!r}: one of {', '.join(t for t in TRIGGERS if t)}")
        if gap_s is not None and gap_s < 0:
            raise UsageError(f"{self.kind}: gap_s must be >= 0, got {gap_s}")
        params = {"code": code, "block": route(code), "effect": effect}
        if extra is not None:
            params["extra"] = extra
        if also:
            params["also"] = [{"code": c, "block": route(c), **({"extra": x} if x is not None else {})}
                              for c, x in also]
        if known is not None:
            params.update(fires=known.fires, source=known.source, **({"test": known.test} if known.test else {}))
        if gap_s is not None:
            params["gap_s"] = gap_s
        if trigger:
            params["trigger"] = trigger
        super().__init__(cluster, targets, **params)
        bad = [t.name for t in self.targets if t.role != TP.DATA or t.nodeid is None]
        if bad:
            raise UsageError(f"{self.kind}: error inserts go to data nodes here, not {', '.join(bad)}")
        self.code, self.extra, self.also, self.effect = code, extra, list(also), effect
        self.expected_exit = known.exit_code if known else None
        self.at_once = bool(known and known.at_once)
        self.gap_s, self.trigger = gap_s, trigger
        self.fire_timeout = float(fire_timeout if fire_timeout is not None else self.FIRE_TIMEOUT_S)
        # several targets armed together are lost together (one arbitration check on NDB);
        # gap_s apart, one after the other (a check each)
        self.simultaneous = gap_s is None or len(self.targets) < 2
        self._since_wall = 0.0
        self._log_before: dict[str, int] = {}
        self._crashed: dict[str, dict] = {}
        self._tamper_at: dict[str, str] = {}  # node -> the NDB_TAMPER stamp of the code (ISO, UTC)

    # -- inject ------------------------------------------------------------------------------
    def _engine(self):
        engine = self.cluster.engine
        probe = getattr(engine, "error_inserts_unavailable", None)
        if probe is None:
            raise FaultUnsupported(f"{self.kind}: {engine.name} has no error inserts",
                                   reason=f"error inserts are NDB's (ndb_mgm ERROR); {engine.name} has none")
        why = probe(self.cluster)
        if why:
            raise FaultUnsupported(f"{self.kind}: {why}", reason=why)
        return engine

    def _prepare(self) -> None:
        engine = self._engine()
        for t in self.targets:
            self._log_before[t.name] = len(engine.error_log(self.cluster, t))
        self._since_wall = time.time()

    def _arm(self, t: TP.Node) -> None:
        """Every code of this fault on ``t``, ``also`` first."""
        engine = self.cluster.engine
        for c, x in [*self.also, (self.code, self.extra)]:
            rc, out, src = engine.insert_error(self.cluster, t, c, x)
            if rc != 0:
                lines = [ln.strip() for ln in (out or "").splitlines() if ln.strip()]
                raise FaultNotEffective(f"ndb_mgm '{t.nodeid} ERROR {c}' via {src or 'no management node'}: "
                                        f"exit {rc} ({(lines or ['no output'])[-1]})")

    def _apply(self) -> None:
        clock = self.cluster.clock
        armed_at: dict[str, float] = {}
        for i, t in enumerate(self.targets):
            if i and self.gap_s is not None:
                time.sleep(max(0.0, armed_at[self.targets[i - 1].name] + self.gap_s - clock.now()))
            self._arm(t)
            armed_at[t.name] = round(clock.now(), 3)
        self.window.params["armed_at"] = armed_at
        self._fire()

    def _fire(self) -> None:
        """What makes the code fire, when it needs more than the cluster's own activity."""
        if self.trigger == "lcp":
            # DUMP 7099 (DihStartLcpImmediately) starts a local checkpoint now; ALL reaches the master
            rc, out, _ = self.cluster.engine.mgm(self.cluster, "ALL DUMP 7099", timeout=20)
            if rc != 0:
                raise FaultNotEffective(f"ndb_mgm 'ALL DUMP 7099' (start a local checkpoint): exit {rc}")
            self.window.params["lcp_started_at"] = round(self.cluster.clock.now(), 3)

    # -- verify ------------------------------------------------------------------------------
    def _verify_armed(self) -> list[str]:
        """Each target logged NDB_TAMPER for each of its codes since the inject began."""
        engine = self.cluster.engine
        evidence = []
        for t in self.targets:
            want = {c for c, _ in self.also} | {self.code}
            seen: dict[int, str] = {}

            def logged():
                for line in engine.tamper_since(self.cluster, t, self._since_wall):
                    if line["new"] in want:
                        seen.setdefault(line["new"], line["block"])
                        if line["new"] == self.code and line.get("time") and t.name not in self._tamper_at:
                            self._tamper_at[t.name] = line["time"]
                return len(seen) == len(want)

            if not wait_until(logged, engine.TAMPER_WAIT_S, poll=0.3):
                missing = sorted(want - set(seen))
                raise FaultNotEffective(f"{t.name} did not log NDB_TAMPER for code(s) {', '.join(map(str, missing))} "
                                        f"within {engine.TAMPER_WAIT_S:.0f} s: not armed (a data node built without "
                                        "error insertion drops the code silently)")
            evidence.append(f"{t.name}: " + ", ".join(f"{b} armed {c}" for c, b in sorted(seen.items())))
        return evidence

    def _left(self, missing: str) -> dict[str, float]:
        """{node: run clock} once every target is out of ``started`` (its container stopped, or
        the management server's view) within ``fire_timeout``; else FaultNotEffective with
        ``missing`` (formatted with nodes and s) after "code N"."""
        left = left_started(self.cluster, self.targets, self.fire_timeout, poll=0.2)
        stay = [t.name for t in self.targets if t.name not in left]
        if stay:
            raise FaultNotEffective(f"code {self.code} " + missing.format(nodes=", ".join(stay),
                                                                         s=f"{self.fire_timeout:.0f}"))
        return left

    def _wait_fired(self) -> dict[str, dict]:
        """Each target out of ``started`` (its container stopped, or the management server's
        view), then its new error log entry; {node: {left_at, exit_code, message, object}}."""
        left = self._left("armed on {nodes} but not fired within {s} s (still started): "
                          f"{self.window.params.get('fires') or 'its event did not happen'}")
        # the error log is written as the node stops; 9998's watchdog takes its time to end it
        return {t.name: self._entry(t, left[t.name], 60.0, "left the cluster after code {code} but its error log "
                                    "has no new entry within {s} s: not the insert's crash") for t in self.targets}

    def _entry(self, t: TP.Node, left_at: float, timeout: float, missing: str) -> dict:
        """``t``'s first error log entry since the inject began, waited for ``timeout`` s
        (FaultNotEffective with ``missing``, formatted with code and s, when none came)."""
        engine = self.cluster.engine
        entry: list[dict] = []

        def written():
            entry[:] = engine.error_log(self.cluster, t)[self._log_before.get(t.name, 0):]
            return bool(entry)

        if not wait_until(written, timeout, poll=1.0):
            raise FaultNotEffective(f"{t.name} " + missing.format(code=self.code, s=f"{timeout:.0f}"))
        e = entry[0]
        return {"left_at": left_at, "exit_code": e.get("exit_code"), "message": e.get("message"),
                "object": e.get("error_object"), "data": e.get("error_data"), "time": e.get("time")}

    def _armed_at(self) -> float | None:
        """The run clock when the first target took the code (its NDB_TAMPER stamp): where a code
        acts as it arrives, that is when the fault was in place (the management client returns
        later: it waits for the node's answer, which a hung node never gives)."""
        stamps = [e for v in self._tamper_at.values() if (e := time_to_epoch(v)) is not None]
        return round(self.cluster.clock.from_wall(min(stamps)), 3) if stamps else None

    def _verify_applied(self) -> str:
        evidence = self._verify_armed()
        if self.at_once and (at := self._armed_at()) is not None:
            self.window.applied_at = at
            self.window.params["in_place_from"] = "the code's NDB_TAMPER stamp"
        if self.effect == "hang":
            left = self._left("hung {nodes} but the cluster still has them started {s} s later")
            self.window.params["left_at"] = left
            return (f"code {self.code} ({self.window.params['block']}) hangs {', '.join(left)}: out of the cluster "
                    f"(its error log is read at the heal); " + "; ".join(evidence))
        if self.effect != "crash":
            return f"code {self.code} ({self.window.params['block']}, {self.effect}) armed: " + "; ".join(evidence)
        self._crashed = self._wait_fired()
        self.window.params["fired"] = self._crashed
        # in place: a code that acts as it arrives (9999) when it was armed; one that waits for an
        # event of the cluster when the first target left the cluster (the wait for the event is the
        # fault's preparation, as a backup's start is)
        if not self.at_once:
            self.window.applied_at = min(v["left_at"] for v in self._crashed.values())
        return f"code {self.code} fired: " + self._said_fired() + " (" + "; ".join(evidence) + ")"

    def _said_fired(self) -> str:
        said = []
        for name, v in self._crashed.items():
            where = re.sub(r"\s+0x[0-9a-f]+$", "", v.get("object") or "?")
            said.append(f"{name} crashed: error {v['exit_code']} '{v['message']}' in {where}")
        unexpected = {n: v["exit_code"] for n, v in self._crashed.items()
                      if self.expected_exit is not None and v["exit_code"] != self.expected_exit}
        if unexpected:
            self.window.params["unexpected_exit"] = unexpected
        return "; ".join(said)

    # -- heal --------------------------------------------------------------------------------
    def _revert(self) -> None:
        engine = self.cluster.engine
        if self.effect == "hang" and not self._crashed and self.window.params.get("left_at"):
            # what a hung node's end proves: its watchdog's entry in its error log
            left = self.window.params["left_at"]
            self._crashed = {t.name: self._entry(t, left.get(t.name), 60.0, "hung by code {code} wrote no error log "
                                                 "entry within {s} s of the heal: its watchdog did not end it")
                             for t in self.targets}
            self.window.params["fired"] = self._crashed
            self.window.verification.append(f"code {self.code} ended the node: " + self._said_fired())
            # the entry is written before the process ends: with StopOnError=1 the angel exits next
            # (then the node is restarted below), with 0 it restarts the node itself (it keeps running)
            for t in self.targets:
                c = self.cluster.container(t)
                wait_until(lambda: docker.container_state(c) != "running", self.EXIT_AFTER_ERROR_LOG_S, poll=0.2)
        cleared, started, restarted = [], [], []
        rep, _ = engine.mgm_report(self.cluster) if hasattr(engine, "mgm_report") else (None, None)
        down = []
        for t in self.targets:
            st = docker.container_state(self.cluster.container(t))
            if st != "running":
                down.append(t)
                continue
            m = rep.node(t.nodeid) if rep is not None else None
            if m is not None and m.state_name == "NOT_STARTED":
                rc, _, _ = engine.mgm(self.cluster, f"{t.nodeid} START", timeout=30)
                if rc == 0:
                    started.append(t.name)
            if t.name not in self._crashed or self.effect not in ("crash", "hang"):
                # armed but not fired, or a stall: clear every block of the node
                rc, _, _ = engine.mgm(self.cluster, f"{t.nodeid} ERROR 0", timeout=20)
                if rc == 0:
                    cleared.append(t.name)
        if down:
            engine.recover_nodes(self.cluster, down)
            restarted = [t.name for t in down]
        self.window.params["heal"] = {"cleared": cleared, "started": started, "restarted": restarted}

    def _verify_healed(self) -> str:
        for t in self.targets:
            c = self.cluster.container(t)
            if not wait_until(lambda: docker.container_state(c) == "running", 20):
                raise FaultNotEffective(f"{t.name} did not start again ({docker.container_state(c)})")
        h = self.window.params.get("heal") or {}
        parts = []
        if h.get("cleared"):
            parts.append("ERROR 0 on " + ", ".join(h["cleared"]))
        if h.get("started"):
            parts.append("START sent to " + ", ".join(h["started"]))
        if h.get("restarted"):
            parts.append("restarted " + ", ".join(h["restarted"]))
        itself = [n for n, v in self._crashed.items() if v.get("exit_code") == INSERT_EXIT
                  and n not in (h.get("restarted") or [])]
        if itself:
            parts.append(", ".join(itself) + " restarting by itself (its angel, after the insert's crash)")
        return "; ".join(parts) or "nothing left armed"


class ErrorInsertInRestart(ErrorInsert):
    """NDB's RestartNFDuringNR: each target is aborted into ``not started`` (``N RESTART -n -a``),
    the code is inserted into it there, then ``N START``: the code fires in that node's own
    restart (schema copy, permission to start, copy fragment ...), the node crashes and its angel
    restarts it again. The fault is in place when the targets left ``started`` (the abort); it is
    effective when the code fired (the error log's new entry)."""

    kind = "error-insert-in-restart"

    def _apply(self) -> None:
        engine, clock = self.cluster.engine, self.cluster.clock
        cmd = restart_command([t.nodeid for t in self.targets], nostart=True, abort=True)
        rc, out, src = engine.mgm(self.cluster, cmd, timeout=120)
        if rc != 0:
            raise FaultNotEffective(f"ndb_mgm '{cmd}' via {src}: exit {rc}")
        self.window.params["restart"] = cmd

        def waiting():
            rep, _ = engine.mgm_report(self.cluster)
            return rep is not None and all((m := rep.node(t.nodeid)) is not None and m.state_name == "NOT_STARTED"
                                           for t in self.targets)

        if not wait_until(waiting, 60.0, poll=0.3):
            raise FaultNotEffective(f"{', '.join(self.window.targets)} not in 'not started' 60 s after '{cmd}'")
        self.window.params["left_at"] = round(clock.now(), 3)
        for t in self.targets:
            self._arm(t)
        ids = " ".join(str(t.nodeid) for t in self.targets)
        rc, out, src = engine.mgm(self.cluster, f"{ids} START", timeout=30)
        if rc != 0:
            raise FaultNotEffective(f"ndb_mgm '{ids} START' via {src}: exit {rc}")
        self.window.params["start_sent_at"] = round(clock.now(), 3)

    def _wait_fired(self) -> dict[str, dict]:
        """The node is already out of ``started`` (the abort): wait for the error log entry the
        code writes in its restart."""
        why = ("had code {code} armed in 'not started', but its restart wrote no error log entry within {s} s "
               f"after START: not fired ({self.window.params.get('fires') or 'its phase not reached'})")
        return {t.name: self._entry(t, self.window.params["left_at"], self.fire_timeout, why) for t in self.targets}


class ErrorInsertDuringBackup(ErrorInsert):
    """testBackup NFMaster / NFSlave: the code is armed on the targets, then ``START BACKUP WAIT
    COMPLETED``: the code fires in the backup (the coordinator, which is the master, or a
    participant), the node crashes, and the backup must not report success (NDB aborts a backup
    when a data node fails: 1326). Healed, a second backup must complete (the test's own next
    step): that is part of the heal's verification."""

    kind = "error-insert-during-backup"

    def _backup(self, timeout: float) -> tuple[int, str]:
        """``START BACKUP WAIT COMPLETED`` through one management node, the first running: never
        sent again through another when it fails (a failed backup is what this fault expects, and
        a second attempt elsewhere would start a second backup)."""
        mgms = [n for n in sorted(self.cluster.topology.role(TP.MGM), key=lambda n: n.nodeid or 0)
                if docker.container_state(self.cluster.container(n)) == "running"]
        if not mgms:
            raise FaultNotEffective("START BACKUP: no management node is running")
        rc, out, _ = self.cluster.engine.mgm(self.cluster, "START BACKUP WAIT COMPLETED", node=mgms[0], timeout=timeout)
        return rc, out

    def _fire(self) -> None:
        rc, out = self._backup(120.0)
        said = " ".join(ln.strip() for ln in (out or "").splitlines() if ln.strip() and "Connected to" not in ln)
        self.window.params["backup"] = {"exit": rc, "said": said[-300:]}
        if BACKUP_COMPLETED.search(said):
            raise FaultNotEffective(f"START BACKUP completed although code {self.code} was armed on "
                                    f"{', '.join(self.window.targets)}: the code did not fire in the backup "
                                    f"({said[-160:]})")

    def _verify_healed(self) -> str:
        healed = super()._verify_healed()
        engine = self.cluster.engine
        # the node that crashed restarts by itself: the second backup waits for every data node
        wait_until(lambda: (r := engine.mgm_report(self.cluster)[0]) is not None
                   and all((m := r.node(t.nodeid)) is not None and m.started for t in self.targets), 180.0, poll=1.0)
        rc, out = self._backup(180.0)
        said = " ".join(ln.strip() for ln in (out or "").splitlines() if ln.strip() and "Connected to" not in ln)
        m = BACKUP_COMPLETED.search(said)
        if m is None:
            raise FaultNotEffective(f"after the heal a second backup did not complete: {said[-200:] or f'exit {rc}'}")
        backup = int(m.group(1) or m.group(2))
        self.window.params["backup_after"] = {"id": backup, "said": said[-300:]}
        return f"{healed}; backup {backup} completed after the heal"


__all__ = ["EFFECTS", "ErrorInsert", "ErrorInsertDuringBackup", "ErrorInsertInRestart"]
