"""A replication scenario: the ledger's load on the source cluster (``ScenarioRun``: its history
is the acknowledged truth), the channel's lag and state sampled on the run clock, a fault on the
replica side or on the link, the heal, then the convergence check.

    run = ReplicationRun(pair, seed=7)
    run.start()                                   # load + lag sampler; the baseline
    run.fault("kill applier", kill, heal)         # a named fault window
    report = run.finish()                         # load stopped, fence, replica read, judged

The fence: after the load stopped, a probe row is written on the source; epochs are applied in
order, so once it is on the replica every row committed before it is too (or never will be).
``ReplicationReport`` holds what the run measured, typed.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Callable

from ..scenario import ScenarioRun
from .channel import ChannelState, Lag, ReplicationError, sample_lag
from .convergence import Convergence, Snapshot, expected_from_ledger, judge, ledger_rows
from .pair import ReplicationPair

log = logging.getLogger("ndbchaos")

#: how often the lag and the channel state are read (two short SQL reads through docker exec each)
SAMPLE_S = 0.5
#: the fence's bound once the load stopped and every fault is healed: the backlog was applied
#: already (``catch_up``), so this is one epoch's way, with the start-up margin of ``pair.PROBE_BOUND_S``
FENCE_BOUND_S = 60.0
#: a second read of the replica this long after the first: a row that shows up only then is late
LATE_READ_S = 2.0


@dataclass(frozen=True)
class FaultWindow:
    name: str
    injected: float  # run clock
    healed: float
    backlog_epoch: int  # the source's newest binlog epoch when the heal began
    notes: tuple[str, ...] = ()
    #: the run-clock time the whole source had crashed (the inject's end), when the fault crashes it
    source_crash: float | None = None


@dataclass(frozen=True)
class ReplicationReport:
    """What one replication run measured (run-clock seconds)."""

    ops: int
    acknowledged: int
    windows: tuple[FaultWindow, ...]
    lags: tuple[Lag, ...]
    states: tuple[ChannelState, ...]
    catch_up_s: tuple[float | None, ...]  # per window: heal -> backlog applied
    convergence: Convergence
    #: the source's own durability check (None: not judged): acknowledged inserts lost, less those
    #: its crash window explains (``source_lost_in_window``)
    source_lost: int | None
    source_lost_in_window: int = 0

    @property
    def max_lag_s(self) -> float:
        return max((lag.seconds or 0.0 for lag in self.lags), default=0.0)

    @property
    def max_behind_epochs(self) -> int:
        return max((lag.behind_epochs for lag in self.lags), default=0)

    @property
    def channel_errors(self) -> list[str]:
        seen: list[str] = []
        for s in self.states:
            for e in s.errors:
                line = f"{e.where} {e.number}: {e.message[:400]}"
                if line not in seen:
                    seen.append(line)
        return seen

    def figures(self) -> dict:
        """The headline figures, plain (the report's attachment)."""
        c = self.convergence
        return {"ops": self.ops, "acknowledged": self.acknowledged, "max_lag_s": round(self.max_lag_s, 2),
                "max_behind_epochs": self.max_behind_epochs,
                "catch_up_s": [None if x is None else round(x, 2) for x in self.catch_up_s],
                "converged": c.converged, "fenced_after_s": None if c.seconds is None else round(c.seconds, 2),
                "replica_rows": c.rows, "lost": len(c.lost), "duplicated": len(c.duplicated), "late": len(c.late),
                "wrong": len(c.wrong), "extra": len(c.extra), "crash_lost": c.crash_lost,
                "source_lost": self.source_lost, "source_lost_in_window": self.source_lost_in_window,
                "windows": [{"name": w.name, "injected": round(w.injected, 3), "healed": round(w.healed, 3),
                             "notes": list(w.notes)} for w in self.windows],
                "channel_errors": self.channel_errors, "why": list(c.why)}

    def summary(self) -> str:
        cu = ", ".join("-" if c is None else f"{c:.1f} s" for c in self.catch_up_s)
        return (f"{self.acknowledged} acknowledged of {self.ops} ops; max lag {self.max_lag_s:.1f} s / "
                f"{self.max_behind_epochs} epochs; catch-up {cu}; {self.convergence.summary()}")


def catch_up(lags: list[Lag], healed: float, backlog_epoch: int) -> float | None:
    """Seconds from the heal to the first sample whose applied epoch reached the backlog (the
    source's newest epoch when the heal began); None when no sample did."""
    for lag in lags:
        if lag.t >= healed and lag.applied_epoch >= backlog_epoch:
            return lag.t - healed
    return None


@dataclass
class ReplicationRun:
    pair: ReplicationPair
    seed: int | None = None
    processes: int = 2
    connections: int = 2
    lags: list[Lag] = field(default_factory=list)
    states: list[ChannelState] = field(default_factory=list)
    windows: list[FaultWindow] = field(default_factory=list)

    def __post_init__(self):
        self.run = ScenarioRun(self.pair.source, workload="ledger", processes=self.processes,
                               connections=self.connections, seed=self.seed, title="replication")
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self.sample_errors: list[str] = []
        #: why the fence did not pass (the channel never came back), when it did not
        self.fence_error: str | None = None
        #: the load's history, once finished
        self.history = None

    @property
    def now(self) -> float:
        return self.pair.clock.now()

    # -- sampling --------------------------------------------------------------------------------
    def _sample_once(self) -> None:
        """One sample of the channel's state and lag. When the replica cannot be read (the
        applier is down), the lag counts from the last applied epoch read (``Lag.stale``); when
        the channel's binlog server cannot be read (it is down), from another binlog server's
        index: every binlog server of the source logs the same epochs."""
        try:
            self.states.append(self.pair.state())
        except ReplicationError as e:
            self._gap(e)
        names = [self.pair.binlog_server] + [n.name for n in self.pair.source.topology.sql_nodes
                                             if n.name != self.pair.binlog_server]
        last = self.lags[-1] if self.lags else None
        lag, errors = sample_lag(self.pair.sql("replica"), [self.pair.sql("source", n) for n in names],
                                 self.pair.source_ids, self.pair.tracker, self.now, last)
        for e in errors:
            self._gap(e)
        if lag is not None:
            self.lags.append(lag)

    def _gap(self, e: Exception | str) -> None:
        if len(self.sample_errors) < 50:
            self.sample_errors.append(f"{self.now:.1f}: {e}")

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample_once()

    def start(self, baseline_s: float = 5.0) -> None:
        self.run.start_load()
        self._sampler = threading.Thread(target=self._sample, name="replication-lag", daemon=True)
        self._sampler.start()
        self.run.hold(baseline_s)

    # -- faults ----------------------------------------------------------------------------------
    def fault(self, name: str, inject: Callable[[], None], heal: Callable[[], list[str] | None],
              hold_s: float, crashes_source: bool = False) -> FaultWindow:
        """Inject, hold, heal; the window on the run clock with the backlog epoch at the heal.
        ``crashes_source``: the inject stops the whole source cluster (every data node of a node
        group gone); inserts it acknowledged within its crash loss window before the inject's
        end may be lost, on the source and so on the replica (its durability check is told, and
        the convergence check)."""
        t0, crash = self.now, None
        try:
            with self.run.rec.step(f"inject: {name}"):
                inject()
            if crashes_source:
                crash = self.now
                self.run.rec.set_check_options(gcp_loss_window_s=self.crash_window_s,
                                               cluster_crash_at=[*self._crashes(), crash])
            self.run.hold(hold_s)
        finally:  # healed on every path out of the hold, the heal's own failure raised
            backlog = self.pair.source_epoch()  # the source only: the replica side may be down
            t1 = self.now
            with self.run.rec.step(f"heal: {name}"):
                notes = heal() or []
        w = FaultWindow(name, t0, t1, backlog, tuple(notes), crash)
        self.windows.append(w)
        return w

    @property
    def crash_window_s(self) -> float:
        """How long before a whole-source crash an acknowledged commit may be lost (the engine's)."""
        return self.pair.source.engine.crash_loss_window_s(self.pair.source.options) or 0.0

    def _crashes(self) -> list[float]:
        return [w.source_crash for w in self.windows if w.source_crash is not None]

    def wait_backlog(self, w: FaultWindow, timeout: float) -> float | None:
        """Wait until the sampled lag shows the window's backlog applied; the seconds since the heal."""
        try:
            self.run.poll(lambda: catch_up(list(self.lags), w.healed, w.backlog_epoch) is not None, timeout, 0.25)
        except Exception as e:
            log.warning("backlog of %s not applied within %.0f s: %s", w.name, timeout, e)
        return catch_up(list(self.lags), w.healed, w.backlog_epoch)

    # -- the end ---------------------------------------------------------------------------------
    def finish(self) -> ReplicationReport:
        """Stop the load (final reads on the source), the fence, the replica's rows read twice,
        judged against the history."""
        res = self.run.finish()
        stopped = self.now
        try:
            self.pair.verify(FENCE_BOUND_S)
            fenced = self.now
        except ReplicationError as e:  # the channel never came back: judged as it stands
            fenced, self.fence_error = None, str(e)
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join(10)
        self._sample_once()
        db = self.pair.source.engine.sql_database
        read = f"SELECT id, slot FROM `{db}`.ledger"
        snaps = [Snapshot(self.now, ledger_rows(self.pair.sql("replica").rows(read, timeout=60)))]
        self.run.hold(LATE_READ_S)
        snaps.append(Snapshot(self.now, ledger_rows(self.pair.sql("replica").rows(read, timeout=60))))
        source_rows = dict(ledger_rows(self.pair.sql("source").rows(read, timeout=60)))
        history = self.history = res.history
        expected = expected_from_ledger(history, self._crashes(), self.crash_window_s)
        conv = judge(expected, source_rows, snaps, caught_up_at=fenced, since=stopped)
        dur = res.verdict.durability
        lost = None if dur is None or dur.lost is None else dur.lost - dur.explained_by_gcp
        return ReplicationReport(len(history), len(expected.acked), tuple(self.windows), tuple(self.lags),
                                 tuple(self.states),
                                 tuple(catch_up(self.lags, w.healed, w.backlog_epoch) for w in self.windows),
                                 conv, lost, dur.explained_by_gcp if dur is not None else 0)

    def close(self) -> None:
        """Every path out: the sampler and the load stopped, open faults healed (``ScenarioRun.close``)."""
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join(10)
        self.run.close()
