"""The observer: samples every node's state on the run clock while a scenario runs.

Samples feed the timeline's node-state lanes and the measured reaction times (e.g. "the
survivors' component shrank 3.4 s after the kill"). Sampling is a background thread calling the
engine's status at a fixed period; a failing status call is recorded as such, never fatal.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover (it samples the handle's status: the engine's Status under it)
    from .handle import ClusterHandle
    from .vocabulary import ClusterStatus


@dataclass
class Sample:
    t: float
    node: str
    role: str
    container: str
    state: str
    healthy: bool


class Observer:
    """``on_sample(status)``: called with each status sample from the observer's thread (the
    kill switch's watch); what it raises is logged, never fatal."""

    def __init__(self, cluster: ClusterHandle, period: float = 0.5,
                 on_sample: Callable[[ClusterStatus], None] | None = None):
        self.cluster = cluster
        self.period = period
        self.on_sample = on_sample
        self.samples: list[Sample] = []
        self.cluster_samples: list[tuple[float, bool, dict]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []

    def start(self) -> "Observer":
        self._thread = threading.Thread(target=self._loop, name="ndbchaos-observer", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            self.sample()
            self._stop.wait(max(0.0, self.period - (time.monotonic() - t0)))

    def sample(self):
        try:
            st = self.cluster.status()
        except Exception as e:  # observation must never break the scenario
            self.errors.append(f"{self.cluster.clock.now():.2f}: {e}")
            return None
        for n in st.nodes:
            self.samples.append(Sample(st.t, n.node, n.role, n.container, n.state, n.healthy))
        self.cluster_samples.append((st.t, st.healthy, {**(st.summary or {}),
                                                        "unhealthy": [n.node for n in st.nodes if not n.healthy]}))
        if self.on_sample is not None:
            try:
                self.on_sample(st)
            except Exception as e:  # the watch must never break the observation
                self.errors.append(f"{st.t:.2f}: watch: {e}")
        return st

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)

    def first(self, predicate, after: float = 0.0):
        """First sample time >= after for which ``predicate(sample)`` holds (or None)."""
        for s in self.samples:
            if s.t >= after and predicate(s):
                return s.t
        return None

    def lanes(self) -> dict[str, list[tuple[float, str, bool]]]:
        """Per node: list of (t, state, healthy), compressed to state changes."""
        out: dict[str, list] = {}
        for s in self.samples:
            lane = out.setdefault(s.node, [])
            label = s.state if s.container == "running" else s.container
            if not lane or lane[-1][1] != label or lane[-1][2] != s.healthy:
                lane.append((s.t, label, s.healthy))
        return out

    def to_json(self) -> list[dict]:
        return [s.__dict__ for s in self.samples]
