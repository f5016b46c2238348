"""The fault protocol."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..errors import BlastRadiusError, FaultUnsupported, NdbChaosError  # noqa: F401  (re-exports)
from ..handle import ClusterHandle
from .safety import register as register_for_safety
from .targets import resolve

log = logging.getLogger("ndbchaos")


class FaultNotEffective(NdbChaosError):
    """A fault did not take effect (or did not heal) as verified by its probe."""


@dataclass
class FaultWindow:
    kind: str
    targets: list[str]
    params: dict[str, Any] = field(default_factory=dict)
    start: float | None = None  # run clock, when applying the fault began (after its preparation)
    end: float | None = None  # run clock, when it was healed
    applied_at: float | None = None  # when applying it was done (before the probe verified it)
    effective_at: float | None = None  # when the probe first saw it in effect
    healed_verified_at: float | None = None
    verification: list[str] = field(default_factory=list)
    # between the clients and the SQL nodes (toxiproxy): it reaches only clients that go through the proxy
    client_path: bool = False

    def to_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


class Fault:
    kind = "fault"
    client_path = False  # acts between the clients and the SQL nodes only (toxiproxy), not on the engine

    def __init__(self, cluster: ClusterHandle, targets, **params):
        """``targets``: nodes, node names, or selectors from ``ndbchaos.faults.targets``
        (how random ones were chosen, with their seed, goes into the window params)."""
        if not targets:
            raise NdbChaosError(f"{self.kind}: no target")
        nodes, selection = resolve(cluster, targets)
        if not nodes:
            raise NdbChaosError(f"{self.kind}: no target")
        self.cluster = cluster
        self.targets = list(nodes)
        self.params = params
        self.window = FaultWindow(self.kind, [t.name for t in self.targets], {**params, **selection},
                                  client_path=self.client_path)
        self.active = False
        self.detached = False
        # Blast radius: every target must carry the current run's project label.
        for t in self.targets:
            cluster.container(t)

    # -- subclass hooks ------------------------------------------------------------------
    def _prepare(self) -> None:
        """What can be done before the fault window opens (e.g. start helper containers), so
        that the window measures the fault and not our setup. Undone by ``heal``."""

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
        self.cluster.journal.opened(self)
        self.active = True
        register_for_safety(self.cluster)
        try:
            self._prepare()
            self.window.start = clock.now()
            self._apply()
            self.window.applied_at = clock.now()
            evidence = self._verify_applied()
        except BaseException:
            # Whatever part was applied is reverted (reverts touch only owned containers, so
            # this is safe after a BlastRadiusError too), then the error goes up.
            try:
                self.heal(verify=False)
            except Exception as e:  # the original error matters more; say what is left
                log.warning("ndbchaos: reverting %s on %s after a failed inject also failed: %s",
                            self.kind, self.window.targets, e)
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
            self.cluster.journal.closed(self)
            self.cluster.note("fault_healed", fault=self.kind, targets=self.window.targets)
        return self.window

    def detach(self) -> FaultWindow:
        """Leave the fault in place and forget it: no heal on exit, no longer open in the journal.
        For ``ndbchaos fault ...`` from the command line; ``ndbchaos fault heal`` finds what it
        left by its traces (our iptables chains, paused/stopped containers, toxics)."""
        self.detached = True
        self.active = False
        self.cluster.journal.closed(self)
        self._on_detach()
        return self.window

    def _on_detach(self) -> None:
        """Release process-local resources (helper containers) but not the fault itself."""

    def __enter__(self) -> "Fault":
        self.inject()
        return self

    def __exit__(self, *exc) -> None:
        self.heal()
