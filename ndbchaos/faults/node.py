"""Node faults: kill (any signal), graceful stop, pause (freeze), restart.

A killed or stopped node stays down until the fault heals; healing is the engine's documented
recovery action for a node (``Recovery.recover_nodes``: a node restart).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..runtimes import docker
from ..errors import UsageError
from ..waiting import wait_until
from . import pumba
from .base import Fault, FaultNotEffective
from .targets import resolve

if TYPE_CHECKING:  # pragma: no cover (the node faults ask the engine to recover and stop nodes, and its status)
    from ..engines.protocols import Recovery, Status

DOWN = ("exited", "dead")


class Kill(Fault):
    """Send a signal to the node's main process (SIGKILL by default: a crash with no goodbye)."""

    kind = "kill"
    simultaneous = True  # several targets die at the same moment (one arbitration check on NDB)

    def __init__(self, cluster, targets, signal: str = "SIGKILL", exit_timeout: float = 30.0,
                 backend: str | None = None):
        super().__init__(cluster, targets, signal=signal)
        self.signal = signal
        self.exit_timeout = exit_timeout
        self.backend = pumba.backend(backend) if type(self) is Kill else "native"
        if self.backend != "native":
            self.window.params["backend"] = self.backend

    def _apply(self) -> None:
        if self.backend == "pumba":
            pumba.run(pumba.kill_argv(self.cluster, self.targets, self.signal))
            return
        self._signal_all()

    def _signal_all(self) -> None:
        """Every container first, then the signals together: several targets (a node group) die
        at the same moment, not one Docker round trip after the other."""
        containers = [self.cluster.container(t) for t in self.targets]
        if len(containers) == 1:
            containers[0].kill(signal=self.signal)
            return
        with ThreadPoolExecutor(len(containers)) as pool:
            for f in [pool.submit(c.kill, signal=self.signal) for c in containers]:
                f.result()

    def _verify_applied(self) -> str:
        # SIGKILL ends the process at once; other signals may take the engine's shutdown time.
        timeout = 10.0 if self.signal in ("SIGKILL", "KILL", 9) else self.exit_timeout
        states = {}
        for t in self.targets:
            c = self.cluster.container(t)
            st = wait_until(lambda: docker.container_state(c) in DOWN and docker.container_state(c), timeout)
            if not st:
                raise FaultNotEffective(f"{t.name} still {docker.container_state(c)} {timeout:.0f}s "
                                        f"after {self.signal}")
            states[t.name] = st
        return f"process gone after {self.signal}: " + ", ".join(f"{k} {v}" for k, v in states.items())

    def _revert(self) -> None:
        engine: Recovery = self.cluster.engine
        engine.recover_nodes(self.cluster, self.targets)

    def _verify_healed(self) -> str:
        for t in self.targets:
            c = self.cluster.container(t)
            if not wait_until(lambda: docker.container_state(c) == "running", 20):
                raise FaultNotEffective(f"{t.name} did not start again ({docker.container_state(c)})")
        return "restarted: " + ", ".join(t.name for t in self.targets)


class KillInTurn(Kill):
    """Kill the targets one after the other, in the order given: ``gap_s`` seconds apart, or
    (``gap_s=None``) each once the engine has excluded the ones before it
    (``Status.loss_detected``, at most ``detect_timeout`` s; the next is killed then anyway, and
    the window says so). NDB's catalogue: two node failures seconds apart, and "kill the
    master, then the new master". The moment of each kill (run clock) is in the window params;
    the fault is in place after the last one. Heal restarts them all."""

    kind = "kill-in-turn"
    simultaneous = False

    def __init__(self, cluster, targets, gap_s: float | None = None, signal: str = "SIGKILL",
                 detect_timeout: float = 30.0):
        super().__init__(cluster, targets, signal=signal)
        if len(self.targets) < 2:
            raise UsageError(f"{self.kind}: needs at least two targets, got {', '.join(self.window.targets)}")
        if gap_s is not None and gap_s < 0:
            raise UsageError(f"{self.kind}: gap_s must be >= 0, got {gap_s}")
        self.gap_s = gap_s
        self.detect_timeout = detect_timeout
        self.window.params.update(gap_s=gap_s, order=[t.name for t in self.targets])

    def _apply(self) -> None:
        engine: Status = self.cluster.engine
        clock = self.cluster.clock
        killed: dict[str, float] = {}
        waited: dict[str, float | None] = {}
        for i, t in enumerate(self.targets):
            if i and self.gap_s is not None:
                time.sleep(max(0.0, killed[self.targets[i - 1].name] + self.gap_s - clock.now()))
            elif i:
                before = [x.name for x in self.targets[:i]]
                t0 = clock.now()
                seen = wait_until(lambda: engine.loss_detected(self.cluster.status(), before),
                                  self.detect_timeout, poll=0.1)
                waited[t.name] = round(clock.now() - t0, 3) if seen else None
            self.cluster.container(t).kill(signal=self.signal)
            killed[t.name] = round(clock.now(), 3)
        self.window.params["killed_at"] = killed
        if waited:
            self.window.params["excluded_before_next_s"] = waited

    def _verify_applied(self) -> str:
        ev = super()._verify_applied()
        times = self.window.params["killed_at"]
        first = min(times.values())
        order = ", ".join(f"{n} at +{t - first:.2f}s" for n, t in times.items())
        late = [n for n, w in (self.window.params.get("excluded_before_next_s") or {}).items() if w is None]
        return f"{ev}; in turn: {order}" + (f" (killed without the earlier loss seen: {', '.join(late)})"
                                            if late else "")


class RestartWithout(Kill):
    """Kill ``restart`` and ``without`` together, then start ``restart`` again at once while
    ``without`` stays down: a node restart that has to do without them (NDB: a data node gets its
    configuration from a management server before it can start, so with every management node
    down its restart waits). Targets are both lists. Heal starts ``without`` (the engine's node
    recovery) and whatever else is not running; the restarted nodes finish by themselves."""

    kind = "restart-without"

    def __init__(self, cluster, restart, without, signal: str = "SIGKILL"):
        again, _ = resolve(cluster, restart)
        down, _ = resolve(cluster, without)
        if not again or not down:
            raise UsageError(f"{self.kind}: needs nodes to restart and nodes to keep down")
        both = [n for n in again if n in down]
        if both:
            raise UsageError(f"{self.kind}: {', '.join(n.name for n in both)} both restarted and kept down")
        super().__init__(cluster, [*again, *down], signal=signal)
        self.again = [n.name for n in again]
        self.down = [n.name for n in down]
        self.window.params.update(restart=self.again, without=self.down)

    def _apply(self) -> None:
        self._signal_all()
        for t in self.targets:
            c = self.cluster.container(t)
            if not wait_until(lambda: docker.container_state(c) in DOWN, 10):
                raise FaultNotEffective(f"{t.name} survived {self.signal}")
        for t in self.targets:
            if t.name in self.again:
                self.cluster.container(t).start()
        self.window.params["restarted_at"] = round(self.cluster.clock.now(), 3)

    def _verify_applied(self) -> str:
        states = {t.name: docker.container_state(self.cluster.container(t)) for t in self.targets}
        wrong = {n: st for n, st in states.items()
                 if (n in self.again and st != "running") or (n in self.down and st not in DOWN)}
        if wrong:
            raise FaultNotEffective(f"{self.kind}: unexpected states {wrong}")
        return (f"{', '.join(self.down)} down after {self.signal}; {', '.join(self.again)} killed and "
                "started again without them")

    def _revert(self) -> None:
        engine: Recovery = self.cluster.engine
        idle = [t for t in self.targets if docker.container_state(self.cluster.container(t)) != "running"]
        if idle:
            engine.recover_nodes(self.cluster, idle)


class Stop(Kill):
    """Graceful stop: the engine's own shutdown path (``Recovery.stop_node``: SIGTERM for most
    processes; NDB data nodes through the management server, ``N STOP``), then a node restart on
    heal."""

    kind = "stop"

    def __init__(self, cluster, targets, timeout: float = 30.0):
        super().__init__(cluster, targets, signal="SIGTERM", exit_timeout=timeout + 5)
        self.window.params = {"timeout": timeout}
        self.stop_timeout = timeout

    def _apply(self) -> None:
        engine: Recovery = self.cluster.engine
        how = {}
        for t in self.targets:
            how[t.name] = engine.stop_node(self.cluster, t, self.stop_timeout)
        self.window.params["how"] = how


class Pause(Fault):
    """Freeze the node (cgroup freezer): TCP stays open, only heartbeats notice. The silent failure."""

    kind = "pause"

    def __init__(self, cluster, targets, backend: str | None = None):
        super().__init__(cluster, targets)
        self.backend = pumba.backend(backend)
        self._held = None
        if self.backend != "native":
            self.window.params["backend"] = self.backend

    def _apply(self) -> None:
        if self.backend == "pumba":
            self._held = pumba.Held(pumba.pause_argv(self.cluster, self.targets))
            ok = pumba.wait_state(lambda: all(docker.container_state(self.cluster.container(t)) == "paused"
                                              for t in self.targets) or not self._held.alive(), 15)
            if not ok or not self._held.alive():
                raise FaultNotEffective(f"pumba pause did not take: {self._held.output()}")
            return
        for t in self.targets:
            self.cluster.container(t).pause()

    def _verify_applied(self) -> str:
        for t in self.targets:
            st = docker.container_state(self.cluster.container(t))
            if st != "paused":
                raise FaultNotEffective(f"{t.name} is {st}, not paused")
        return "frozen: " + ", ".join(t.name for t in self.targets)

    def _revert(self) -> None:
        # Frozen nodes the cluster excluded meanwhile: the engine knows what they do on waking
        # (an NDB data node shuts itself down with 2315 and needs a node restart).
        engine: Recovery = self.cluster.engine
        cut_off = engine.excluded_running(self.cluster, self.targets)
        if self._held is not None:
            self._held.stop()  # pumba unpauses on exit; we check (and unpause) below anyway
            self._held = None
            self.window.params["pumba_restored"] = all(
                docker.container_state(self.cluster.container(t)) != "paused" for t in self.targets)
        for t in self.targets:
            c = self.cluster.container(t)
            if docker.container_state(c) == "paused":
                c.unpause()
        self.window.params["rejoin"] = engine.rejoin(self.cluster, cut_off) if cut_off else "none excluded"

    def _verify_healed(self) -> str:
        for t in self.targets:
            st = docker.container_state(self.cluster.container(t))
            if st != "running":
                raise FaultNotEffective(f"{t.name} is {st} after the thaw")
        return "thawed: " + ", ".join(t.name for t in self.targets) + f" (rejoin: {self.window.params.get('rejoin')})"


def _started_at(c) -> str:
    c.reload()
    return (c.attrs.get("State") or {}).get("StartedAt", "")


class Restart(Fault):
    """Restart the node: graceful (the engine's graceful stop, ``Recovery.stop_node``, then start) or
    a crash-restart (``graceful=False``: SIGKILL, then start). ``down_for`` seconds may pass
    between the two.

    The window covers the restart itself; heal only makes sure the node runs (it needs no
    undoing). The engine's reaction is the node leaving and rejoining (``cluster.wait_healthy``)."""

    kind = "restart"

    def __init__(self, cluster, targets, graceful: bool = True, timeout: float = 30.0, down_for: float = 0.0):
        super().__init__(cluster, targets, graceful=graceful, timeout=timeout, down_for=down_for)
        self.graceful = graceful
        self.timeout = timeout
        self.down_for = down_for
        self._before: dict[str, str] = {}

    def _apply(self) -> None:
        engine: Recovery = self.cluster.engine
        for t in self.targets:
            c = self.cluster.container(t)
            self._before[t.name] = _started_at(c)
            if self.graceful:
                engine.stop_node(self.cluster, t, self.timeout)
            else:
                c.kill(signal="SIGKILL")
            wait_until(lambda: docker.container_state(c) in DOWN, self.timeout + 5)
            if self.down_for:
                time.sleep(self.down_for)
            c.start()
        self.cluster.discover()

    def _verify_applied(self) -> str:
        out = []
        for t in self.targets:
            c = self.cluster.container(t)
            ok = wait_until(lambda: docker.container_state(c) == "running"
                            and _started_at(c) != self._before[t.name], 20)
            if not ok:
                raise FaultNotEffective(f"{t.name} was not restarted ({docker.container_state(c)})")
            out.append(t.name)
        how = "graceful" if self.graceful else "SIGKILL"
        return f"restarted ({how}{f', down {self.down_for:g}s' if self.down_for else ''}): " + ", ".join(out)

    def _revert(self) -> None:
        engine: Recovery = self.cluster.engine
        dead = [t for t in self.targets if docker.container_state(self.cluster.container(t)) != "running"]
        if dead:
            engine.recover_nodes(self.cluster, dead)

    def _verify_healed(self) -> str:
        for t in self.targets:
            if docker.container_state(self.cluster.container(t)) != "running":
                raise FaultNotEffective(f"{t.name} is not running after restart")
        return "running: " + ", ".join(t.name for t in self.targets)


class KillDuringRecovery(Kill):
    """Kill, wait until the engine has seen the loss (``Status.loss_detected``, at most
    ``detect_timeout`` s), restart, and kill again while the node is recovering (rejoining).

    The second kill comes ``delay`` seconds after the restart if given; otherwise at the first
    status sample where the engine says the node is rejoining (``Status.node_rejoining``:
    Galera: back in the survivors' view but not Synced; NDB: a start phase). If it is not seen
    recovering within ``recover_window`` seconds (it may rejoin faster than a status poll) it is
    killed at that point anyway, and the evidence says so.
    Heal restarts it (the engine's node recovery)."""

    kind = "kill-during-recovery"

    def __init__(self, cluster, targets, signal: str = "SIGKILL", delay: float | None = None,
                 recover_window: float = 20.0, down_for: float = 0.0, detect_timeout: float = 30.0,
                 phase: int | None = None):
        super().__init__(cluster, targets, signal=signal)
        if phase is not None and delay is not None:
            raise UsageError(f"{self.kind}: give a start phase or a delay, not both")
        self.window.params.update(delay=delay, recover_window=recover_window, down_for=down_for)
        if phase is not None:
            self.window.params["phase"] = phase
        self.phase = phase
        self.detect_timeout = detect_timeout
        self.delay = delay
        self.recover_window = recover_window
        self.down_for = down_for
        self.second_kill: dict[str, dict] = {}

    def _apply(self) -> None:
        engine: Status = self.cluster.engine
        recovery: Recovery = self.cluster.engine
        self._signal_all()
        t_kill = time.monotonic()
        for t in self.targets:
            c = self.cluster.container(t)
            if not wait_until(lambda: docker.container_state(c) in DOWN, 10):
                raise FaultNotEffective(f"{t.name} survived the first {self.signal}")
        # Restart only once the engine has seen the loss: otherwise the "rejoin" is the old view
        # that still counts the node (Galera needs evs.suspect_timeout to notice a crash).
        names = [t.name for t in self.targets]
        detected = None
        try:
            detected = wait_until(lambda: engine.loss_detected(self.cluster.status(), names),
                                  self.detect_timeout, poll=0.1)
        except NotImplementedError:
            pass
        self.window.params["loss_detected_s"] = round(time.monotonic() - t_kill, 3) if detected else None
        if self.down_for:
            time.sleep(self.down_for)
        recovery.recover_nodes(self.cluster, self.targets)
        restarted = time.monotonic()
        pending = {t.name: t for t in self.targets}
        while pending:
            waited = time.monotonic() - restarted
            state = {}
            if self.delay is None:
                try:
                    st = self.cluster.status()
                    state = {n.node: n for n in st.nodes}
                except Exception:
                    state = {}
            for name, t in list(pending.items()):
                ns = state.get(name)
                recovering = bool(ns is not None and state and engine.node_rejoining(st, name))
                if recovering and self.phase is not None:  # not before the chosen start phase
                    recovering = ((ns.details or {}).get("start_phase") or 0) >= self.phase
                due = (self.delay is not None and waited >= self.delay) or recovering or waited >= self.recover_window
                if due:
                    self.cluster.container(t).kill(signal=self.signal)
                    self.second_kill[name] = {
                        "after_restart_s": round(waited, 3),
                        "state": ns.state if ns else ("(delay)" if self.delay is not None else "?"),
                        "seen_recovering": bool(recovering),
                        **({"phase": (ns.details or {}).get("start_phase") if ns else None}
                           if self.phase is not None else {}),
                    }
                    del pending[name]
            if pending:
                time.sleep(0.05 if self.delay is not None else 0.1)
        self.window.params["second_kill"] = self.second_kill

    def _verify_applied(self) -> str:
        missing = [t.name for t in self.targets if t.name not in self.second_kill]
        if missing:
            raise FaultNotEffective(f"{', '.join(missing)}: no second kill during recovery")
        ev = super()._verify_applied()
        late = " (never seen recovering" + (f" in start phase {self.phase} or later)" if self.phase is not None
                                            else ")")
        how = "; ".join(f"{k} killed again {v['after_restart_s']}s after restart in state {v['state']}"
                        + ("" if v["seen_recovering"] or v["state"] == "(delay)" else late)
                        for k, v in self.second_kill.items())
        return f"{ev}; {how}"
