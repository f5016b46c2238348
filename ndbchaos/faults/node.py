"""Node faults: kill (any signal), graceful stop, pause (freeze), restart.

A killed or stopped node stays down until the fault heals; healing is the engine's documented
recovery action for a node (``Engine.recover_nodes``: a node restart).
"""

from __future__ import annotations

from .. import runtime
from .base import Fault, FaultNotEffective, wait_until

DOWN = ("exited", "dead")


class Kill(Fault):
    """Send a signal to the node's main process (SIGKILL by default: a crash with no goodbye)."""

    kind = "kill"

    def __init__(self, cluster, targets, signal: str = "SIGKILL", exit_timeout: float = 30.0):
        super().__init__(cluster, targets, signal=signal)
        self.signal = signal
        self.exit_timeout = exit_timeout

    def _apply(self) -> None:
        for t in self.targets:
            self.cluster.container(t).kill(signal=self.signal)

    def _verify_applied(self) -> str:
        # SIGKILL ends the process at once; other signals may take the engine's shutdown time.
        timeout = 10.0 if self.signal in ("SIGKILL", "KILL", 9) else self.exit_timeout
        states = {}
        for t in self.targets:
            c = self.cluster.container(t)
            st = wait_until(lambda: runtime.container_state(c) in DOWN and runtime.container_state(c), timeout)
            if not st:
                raise FaultNotEffective(f"{t.name} still {runtime.container_state(c)} {timeout:.0f}s after {self.signal}")
            states[t.name] = st
        return f"process gone after {self.signal}: " + ", ".join(f"{k} {v}" for k, v in states.items())

    def _revert(self) -> None:
        self.cluster.engine.recover_nodes(self.cluster, self.targets)

    def _verify_healed(self) -> str:
        for t in self.targets:
            c = self.cluster.container(t)
            if not wait_until(lambda: runtime.container_state(c) == "running", 20):
                raise FaultNotEffective(f"{t.name} did not start again ({runtime.container_state(c)})")
        return "restarted: " + ", ".join(t.name for t in self.targets)


class Stop(Kill):
    """Graceful stop: the engine's own shutdown path (SIGTERM), then a node restart on heal."""

    kind = "stop"

    def __init__(self, cluster, targets, timeout: float = 30.0):
        super().__init__(cluster, targets, signal="SIGTERM", exit_timeout=timeout + 5)
        self.window.params = {"timeout": timeout}
        self.stop_timeout = timeout

    def _apply(self) -> None:
        for t in self.targets:
            self.cluster.container(t).stop(timeout=int(self.stop_timeout))


class Pause(Fault):
    """Freeze the node (cgroup freezer): TCP stays open, only heartbeats notice. The silent failure."""

    kind = "pause"

    def _apply(self) -> None:
        for t in self.targets:
            self.cluster.container(t).pause()

    def _verify_applied(self) -> str:
        for t in self.targets:
            st = runtime.container_state(self.cluster.container(t))
            if st != "paused":
                raise FaultNotEffective(f"{t.name} is {st}, not paused")
        return "frozen: " + ", ".join(t.name for t in self.targets)

    def _revert(self) -> None:
        for t in self.targets:
            c = self.cluster.container(t)
            if runtime.container_state(c) == "paused":
                c.unpause()

    def _verify_healed(self) -> str:
        for t in self.targets:
            st = runtime.container_state(self.cluster.container(t))
            if st != "running":
                raise FaultNotEffective(f"{t.name} is {st} after unpause")
        return "thawed: " + ", ".join(t.name for t in self.targets)
