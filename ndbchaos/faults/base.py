"""The fault protocol."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import BlastRadiusError, NdbChaosError

if TYPE_CHECKING:  # pragma: no cover
    from ..cluster import Cluster
    from ..topology import Node


class FaultNotEffective(NdbChaosError):
    """A fault did not take effect (or did not heal) as verified by its probe."""


@dataclass
class FaultWindow:
    kind: str
    targets: list[str]
    params: dict[str, Any] = field(default_factory=dict)
    start: float | None = None  # run clock, when the fault was applied
    end: float | None = None  # run clock, when it was healed
    effective_at: float | None = None  # when the probe first saw it in effect
    healed_verified_at: float | None = None
    verification: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


class Fault:
    kind = "fault"

    def __init__(self, cluster: "Cluster", targets: list["Node"], **params):
        if not targets:
            raise NdbChaosError(f"{self.kind}: no target")
        self.cluster = cluster
        self.targets = list(targets)
        self.params = params
        self.window = FaultWindow(self.kind, [t.name for t in self.targets], dict(params))
        self.active = False
        # Blast radius: every target must carry the current run's project label.
        for t in self.targets:
            cluster.container(t)

    # -- subclass hooks ------------------------------------------------------------------
    def _apply(self) -> None:
        raise NotImplementedError

    def _verify_applied(self) -> str:
        """Return a sentence describing the evidence; raise FaultNotEffective otherwise."""
        raise NotImplementedError

    def _revert(self) -> None:
        raise NotImplementedError

    def _verify_healed(self) -> str:
        raise NotImplementedError

    # -- protocol -------------------------------------------------------------------------
    def inject(self) -> FaultWindow:
        if self.active:
            raise NdbChaosError(f"{self.kind} on {self.window.targets} is already injected")
        clock = self.cluster.clock
        with self.cluster._lock:
            self.cluster.open_faults.append(self)
            self.cluster.fault_windows.append(self.window)
        self.active = True
        self.window.start = clock.now()
        try:
            self._apply()
            evidence = self._verify_applied()
        except BlastRadiusError:
            raise
        except BaseException:
            self.heal(verify=False)
            raise
        self.window.effective_at = clock.now()
        self.window.verification.append(evidence)
        self.cluster.note("fault_injected", fault=self.kind, targets=self.window.targets,
                          evidence=evidence)
        return self.window

    def heal(self, verify: bool = True) -> FaultWindow:
        if not self.active:
            return self.window
        clock = self.cluster.clock
        try:
            self._revert()
            self.window.end = clock.now()
            if verify:
                evidence = self._verify_healed()
                self.window.healed_verified_at = clock.now()
                self.window.verification.append(evidence)
        finally:
            if self.window.end is None:
                self.window.end = clock.now()
            self.active = False
            with self.cluster._lock:
                if self in self.cluster.open_faults:
                    self.cluster.open_faults.remove(self)
            self.cluster.note("fault_healed", fault=self.kind, targets=self.window.targets)
        return self.window

    def __enter__(self) -> "Fault":
        self.inject()
        return self

    def __exit__(self, *exc) -> None:
        self.heal()


def wait_until(predicate, timeout: float, poll: float = 0.05):
    """Poll ``predicate()`` until it returns a truthy value; return it, or None on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        v = predicate()
        if v:
            return v
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll)
