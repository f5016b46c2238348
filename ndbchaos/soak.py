"""Soak runs: load for a given duration while a seeded schedule of faults plays out.

Jepsen's nemesis generator and Pumba's ``--interval --random``, with each fault judged as a
scenario would be. A soak is a declaration: a menu of scenario declarations (their faults,
families and the engine's expectation for them), ranges for the pause before each fault and for
how long it is held, and a duration:

    Soak("soak_mixed", "an hour of load, a random fault every minute or so",
         menu=(kill_one_data_node, freeze_one_data_node, kill_arbitrator, ...),
         pause_s=(5, 15), hold_s=(3, 8))

``menu_on(soak, cluster)`` is what the soak plays on a cluster (``Menu``): the declarations of
its menu that can act there, those left out and why (not for the engine; clients through a
toxiproxy on a backend that places none), and the clients' route: through the proxies when a
declaration played needs its clients there (Galera's SQL node loss takes the proxy down: a
client-path fault reaches only clients that go through it), as the ``play`` fixture does for
one scenario; straight to the SQL nodes otherwise. The fixture makes the run with that route,
``schedule`` draws from that menu, and ``play_soak`` refuses a run whose route differs.

``schedule(soak, seed, cluster)`` is the sequence of faults a seed gives: which declaration, its
pause and hold, and the seed its targets are drawn with. The same seed gives the same schedule
(the targets follow from it and the cluster's layout). ``play_soak`` starts the load, then plays
the schedule one fault at a time, each healed and the cluster healthy again before the next
pause, until the duration is used up; the load goes on until then. Each fault is one step of the
run record, with its own plan, marks and check options (``Recorder.fault_step``); the verdict
judges the whole history (durability, errors, availability over the run) and each step on its
own time span (its expectation: detection, outage per serving SQL node, recovery, served again).

The controller's and the workers' resident memory are sampled during the run (``MemoryProbe``):
the record keeps them, the report draws them.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Iterator

from .driver import Scenario, cycle
from .errors import UsageError
from .handle import ClusterHandle
from .recording import Run

SOAK_S = 600.0  # the default duration: ten minutes (pytest --soak-duration)
PAUSE_S = (5.0, 12.0)  # load without a fault before each one: the fault's baseline
HOLD_S = (3.0, 8.0)  # how long each fault stays after the engine reacted
AFTER_S = 2.0  # load after each recovery, before the next pause begins


@dataclass(frozen=True)
class Soak:
    name: str
    title: str
    menu: tuple[Scenario, ...]  # the fault kinds drawn from (scenario declarations)
    pause_s: tuple[float, float] = PAUSE_S
    hold_s: tuple[float, float] = HOLD_S
    after_s: float = AFTER_S
    workload: str = "ledger"

    def __post_init__(self):
        if not self.menu:
            raise ValueError(f"soak {self.name}: the menu of faults is empty")
        for lo, hi in (self.pause_s, self.hold_s):
            if not 0 <= lo <= hi:
                raise ValueError(f"soak {self.name}: a range must be 0 <= low <= high, not ({lo}, {hi})")

    def __repr__(self) -> str:  # the test parameter and Allure's: the name, stable from run to run
        return self.name


@dataclass(frozen=True)
class LeftOut:
    scenario: str  # a declaration of the soak's menu
    why: str  # why it cannot act on this cluster (``Scenario.why_not_on``)


@dataclass(frozen=True)
class Menu:
    """What a soak plays on one cluster (``menu_on``)."""
    scenarios: tuple[Scenario, ...]  # the declarations drawn from, in menu order
    left_out: tuple[LeftOut, ...]  # the others, each with why
    via_proxy: bool  # the clients go through toxiproxy: a declaration played needs them there

    @property
    def names(self) -> list[str]:
        return [sc.name for sc in self.scenarios]

    @property
    def route(self) -> str:
        return "through toxiproxy" if self.via_proxy else "straight to the SQL nodes"


def menu_on(soak: Soak, cluster: ClusterHandle) -> Menu:
    """The declarations of ``soak`` that can act on ``cluster``, those left out (each with why),
    and the route of the soak's clients: through the proxies when any declaration played has its
    clients there in its own scenario (``Scenario.route``), else direct. The one decision the
    fixture (the run's route), ``schedule`` and ``play_soak`` all take; a soak none of whose
    faults can act here is a UsageError that says why for each."""
    played, left = [], []
    for sc in soak.menu:
        why = sc.why_not_on(cluster)
        if why is None:
            played.append(sc)
        else:
            left.append(LeftOut(sc.name, why))
    if not played:
        raise UsageError(f"soak {soak.name}: no fault of its menu runs on this {cluster.engine.name} cluster "
                         f"({cluster.backend} backend): " + "; ".join(x.why for x in left))
    return Menu(tuple(played), tuple(left), any(sc.route(cluster) for sc in played))


@dataclass(frozen=True)
class Step:
    index: int  # 1, 2, ...
    scenario: str  # the declaration's name
    pause_s: float  # load without a fault before it
    hold_s: float  # the fault stays this long after the engine reacted
    seed: int  # its targets are drawn with random.Random(seed)

    def to_dict(self) -> dict:
        return {"index": self.index, "scenario": self.scenario, "pause_s": self.pause_s, "hold_s": self.hold_s,
                "seed": self.seed}


def schedule(soak: Soak, seed: int, cluster: ClusterHandle) -> Iterator[Step]:
    """The endless seeded sequence of faults of ``soak`` on ``cluster`` (its menu there:
    ``menu_on``): the same seed, the same sequence. Every kind of the menu comes once, in a
    seeded order, before any comes again (so a short soak still sees each kind), and the same
    kind never twice in a row when there are others."""
    menu = menu_on(soak, cluster).names
    rng = random.Random(f"ndbchaos-soak:{soak.name}:{seed}")
    index, last = 0, None
    while True:
        deck = menu[:]
        rng.shuffle(deck)
        if len(deck) > 1 and deck[0] == last:
            deck.append(deck.pop(0))
        for name in deck:
            index += 1
            last = name
            yield Step(index, name, round(rng.uniform(*soak.pause_s), 3), round(rng.uniform(*soak.hold_s), 3),
                       rng.randrange(1 << 30))


def play_soak(run: Run, soak: Soak, duration_s: float):
    """Play ``soak`` on ``run`` (a ``Run`` made for it) for ``duration_s`` seconds of load;
    returns the Result. A fault begins only while its pause ends within the duration; the last
    one is healed and recovered even if that takes the run past it."""
    cluster = run.cluster
    on = menu_on(soak, cluster)
    if run.via_proxy != on.via_proxy:
        raise UsageError(f"soak {soak.name}: its menu here needs the clients {on.route}, the run has them "
                         f"{'through toxiproxy' if run.via_proxy else 'straight to the SQL nodes'} "
                         f"(make the run with via_proxy=menu_on(soak, cluster).via_proxy)")
    menu = {sc.name: sc for sc in on.scenarios}
    steps = schedule(soak, run.seed, cluster)
    played: list[dict] = []
    run.rec.declare_soak({"name": soak.name, "duration_s": duration_s, "seed": run.seed, "menu": sorted(menu),
                          "left_out": [{"scenario": x.scenario, "why": x.why} for x in on.left_out],
                          "via_proxy": on.via_proxy, "pause_s": list(soak.pause_s), "hold_s": list(soak.hold_s)})
    run.rec.measure("clients", on.route, note="through the proxies when a fault of the menu acts on the clients' "
                    "path (it reaches only clients that go through them)")
    if on.left_out:
        run.rec.measure("left out of the menu", len(on.left_out), note="; ".join(x.why for x in on.left_out))
    probe = MemoryProbe(run.clock, run.runner.worker_pids)
    with run.rec.phase("baseline", f"steady {run.workload.name} load"):
        run.start_load()
        probe.start()
    end = run.clock.now() + duration_s
    try:
        for step in steps:
            if run.clock.now() + step.pause_s >= end:
                break
            sc = menu[step.scenario]
            fault = sc.fault(cluster, random.Random(step.seed))
            plan = sc.plan(cluster, fault)
            info = {**step.to_dict(), "family": sc.family, "targets": list(fault.window.targets)}
            played.append(info)
            with run.rec.step(f"fault {step.index}: {sc.name} on {', '.join(info['targets'])}"), \
                    run.rec.fault_step(info, plan):
                with run.rec.phase("pause", f"load without a fault before fault {step.index}"):
                    run.hold(step.pause_s)
                cycle(run, fault, plan, step.hold_s, soak.after_s)
        with run.rec.phase("steady", "load until the duration is up"):
            run.hold(max(0.0, end - run.clock.now()))
    finally:
        probe.stop()
        run.rec.keep_memory(probe.samples)
    kinds = len({p["scenario"] for p in played})
    run.rec.measure("faults", len(played), note=f"of {kinds} kinds, as the seed drew them")
    growth = memory_growth(probe.samples)
    if growth is not None:
        run.rec.measure("controller memory after the first minute", growth["first_mb"], "MB")
        run.rec.measure("controller memory at the end", growth["last_mb"], "MB",
                        note=f"{growth['growth_pct']:+.1f} % from {growth['at_s']:.0f} s into the run")
    return run.finish()


# -- resident memory of the controller and the workers -----------------------------------------

def rss_mb(pid: int | str = "self") -> float | None:
    """Resident set size of a process in MB (Linux /proc), None when it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        return None
    return None


class MemoryProbe:
    """Samples, every ``period`` seconds, the controller's resident memory and the sum of the
    workload workers' (``pids()``): ``samples`` is ``[{"t", "controller_mb", "workers_mb"}]`` on
    the run clock."""

    def __init__(self, clock, pids=lambda: [], period: float = 5.0):
        self.clock = clock
        self.pids = pids
        self.period = period
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> dict:
        workers = [rss_mb(p) for p in self.pids()]
        s = {"t": round(self.clock.now(), 3), "controller_mb": round(rss_mb() or 0.0, 1),
             "workers_mb": round(sum(w for w in workers if w is not None), 1)}
        self.samples.append(s)
        return s

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            self.sample()
            self._stop.wait(max(0.0, self.period - (time.monotonic() - t0)))

    def start(self) -> "MemoryProbe":
        self._thread = threading.Thread(target=self._loop, name="ndbchaos-memory", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.period)
            self._thread = None
        self.sample()  # the last one: the load is still running


def memory_growth(samples: list[dict], after_s: float = 60.0, key: str = "controller_mb") -> dict | None:
    """The controller's memory at the end against its value ``after_s`` into the run (the first
    sample at or after it): ``{"at_s", "first_mb", "last_mb", "growth_pct"}``, None when the run
    was shorter."""
    if not samples:
        return None
    t0 = samples[0]["t"]
    first = next((s for s in samples if s["t"] - t0 >= after_s), None)
    last = samples[-1]
    if first is None or first is last or not first[key]:
        return None
    return {"at_s": round(first["t"] - t0, 1), "first_mb": first[key], "last_mb": last[key],
            "growth_pct": round(100.0 * (last[key] - first[key]) / first[key], 1)}


__all__ = ["AFTER_S", "HOLD_S", "LeftOut", "MemoryProbe", "Menu", "PAUSE_S", "SOAK_S", "Soak", "Step",
           "memory_growth", "menu_on", "play_soak", "rss_mb", "schedule"]
