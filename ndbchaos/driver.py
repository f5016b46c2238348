"""One driver for every scenario: a scenario is a declaration, the driver plays it.

    Scenario("kill_one_data_node", "datanode_loss", "SIGKILL one data node, then node restart",
             fault=lambda c, rng: Kill(c, [rng.choice(c.topology.data_nodes)]))

``play(run, scenario)`` builds the fault from the declaration (its targets drawn with the run's
seeded random generator), derives the plan from the fault's actual targets
(``ndbchaos.plans``), and runs the phases:

    baseline   steady load on every SQL node (``baseline_s``)
    fault      inject; the moments that matter are recorded as marks on the run clock: the fault
               in place, the cluster's reaction (the lost nodes excluded and the survivors
               serving, or the clients no longer served), the shutdowns the rules require
    hold       the fault stays (``hold_s``)
    recovery   heal, restart what exited (the engine's documented recovery), every node healthy,
               every SQL node serving again, then ``after_s`` of load
    verdict    the run record judged by the checkers (``Run.finish``)

The driver waits for each reaction up to its bound plus a margin, then carries on: it never
asserts. The verdict judges (the expectation checker compares the marks with the bounds); the
test asserts only that the verdict is valid.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from .runtimes.compose import disks, faultfs
from . import plans
from .families import FAMILIES
from .handle import ClusterHandle, ComposeProject
from .recording import Run

BASELINE_S = 5.0  # steady state before the fault: the throughput baseline
HOLD_S = 8.0  # the fault stays in place this long after the engine reacted
AFTER_S = 5.0  # load after recovery, to see throughput come back


@dataclass(frozen=True)
class Scenario:
    name: str  # the test id: kill_one_data_node
    family: str  # its family (ndbchaos.families): the marker and the plan builder
    title: str  # the report's title
    fault: Callable  # (cluster, rng) -> Fault, its targets drawn with rng
    workload: str = "ledger"
    workload_params: dict = field(default_factory=dict)  # e.g. a transactional workload's read_lock
    clients: int | None = None  # client processes of one connection each (None: --load-processes x connections)
    expectation: str | None = None  # the engine's expectation family when finer than ``family``
    via_proxy: bool | Callable = False  # clients go through toxiproxy (bool, or a function of the cluster)
    latency_ms: float | None = None  # a latency fault's added latency (client_path)
    slow: bool = False
    baseline_s: float = BASELINE_S
    hold_s: float = HOLD_S
    after_s: float = AFTER_S
    expectation_kw: dict = field(default_factory=dict)
    failover: bool = False  # clients move to the next SQL node when theirs is lost (ClientOptions.failover)
    engines: tuple[str, ...] = ()  # the engines where the scenario means something (empty: every engine)
    elsewhere: str = ""  # why it does not on the others (the skip reason)
    needs_disk: bool = False  # its fault fills a data node's bounded disk (the cluster started with --data-disk)
    needs_layer: bool = False  # its fault acts in the faultfs layer over that disk (ndbchaos.runtimes.compose.faultfs)
    needs: Callable | None = None  # (cluster) -> why this cluster's layout cannot play it (None: it can)

    def skip_reason(self, engine: str) -> str | None:
        """Why this scenario does not run on ``engine`` (None: it does)."""
        if not self.engines or engine in self.engines:
            return None
        return f"{self.name} is for {', '.join(self.engines)} only: {self.elsewhere or 'no such fault on ' + engine}"

    def route(self, cluster: ClusterHandle) -> bool:
        """Whether its clients go through toxiproxy on ``cluster`` (``via_proxy`` resolved): its
        fault acts on the clients' path, which reaches only clients that go through the proxy."""
        return bool(self.via_proxy(cluster) if callable(self.via_proxy) else self.via_proxy)

    def why_not_on(self, cluster: ClusterHandle) -> str | None:
        """Why this scenario cannot be played on ``cluster`` (None: it can): it is not for the
        cluster's engine, its clients must go through a toxiproxy, which only a Compose project
        (the container backend) places in front of the SQL nodes, it needs a disk or layer the
        cluster lacks, or its ``needs`` says the layout has no such target."""
        why = self.skip_reason(cluster.engine.name)
        if why is None and self.route(cluster) and not isinstance(cluster, ComposeProject):
            why = (f"{self.name}: its clients go through a toxiproxy in front of the SQL nodes, which only the "
                   f"container backend places (not an inventory's hosts)")
        if why is None and (self.needs_disk or self.needs_layer) and not isinstance(cluster, ComposeProject):
            why = (f"{self.name}: its fault acts on a data node's own disk (and the faultfs layer over it), which only "
                   "the container backend makes (an inventory's hosts keep their own disks: docs/faults.md)")
        if why is None and self.needs_disk and cluster.project not in disks.projects():
            why = (f"{self.name}: its fault fills a data node's own disk, and this cluster's data nodes have none "
                   "(start it with --data-disk SIZE, e.g. 512M: the container backend, root and loop devices)")
        if why is None and self.needs_layer and not disks.layered(cluster.project):
            why = (f"{self.name}: its fault acts in the faultfs layer over a data node's disk, and this cluster's "
                   f"disks have none ({faultfs.unavailable() or 'made without it'})")
        if why is None and self.needs is not None:
            why = self.needs(cluster)
        return why

    def __repr__(self) -> str:
        # what pytest and the Allure report show as the parameter: the name, stable from run to
        # run (the default repr holds the fault function's address, which would give every run
        # another Allure history id)
        return self.name

    def plan(self, cluster: ClusterHandle, fault) -> plans.Plan:
        builder = FAMILIES[self.family].plan
        if builder == "partition":
            return plans.partition(cluster, self.family, fault)
        if builder == "client_path":
            return plans.client_path(cluster, fault, self.latency_ms)
        plan = plans.node_loss(cluster, self.family, fault, self.expectation, **self.expectation_kw)
        if plan.stopped_sql and plan.exp.cluster_survives:
            plan.failover = plans.failover(plan, self.failover)
        return plan


def margin(bound: float) -> float:
    """How much longer than a bound the driver waits, so that a late reaction is measured
    (and judged late) rather than only reported missing."""
    return min(0.5 * bound, 30.0) + 2.0


def play(run: Run, scenario: Scenario):
    """Run one scenario on ``run`` (a ``Run``, ``ndbchaos.recording``); returns its Result."""
    cluster = run.cluster
    fault = scenario.fault(cluster, run.rng)
    plan = scenario.plan(cluster, fault)
    run.rec.expect(plan)

    with run.rec.phase("baseline", f"steady {run.workload.name} load"):
        run.start_load()
        run.hold(scenario.baseline_s)

    cycle(run, fault, plan, scenario.hold_s, scenario.after_s)
    return run.finish()


def cycle(run: Run, fault, plan, hold_s: float, after_s: float) -> None:
    """One fault under the running load, as its plan expects: the fault phase (inject, the
    engine's reaction, the shutdowns its rules require, ``hold_s``), the recovery phase (heal,
    restart what exited, every node healthy, every SQL node served again, ``after_s``), and the
    check options the verdict needs for it. Marks and measurements go to its recorder (``run.rec``)."""
    cluster = run.cluster
    exp = plan.exp
    with run.rec.phase("fault", f"{fault.kind} {', '.join(fault.window.targets)}"):
        run.inject(fault)
        start = run.rec.mark("fault", fault.window.start)
        # The engine reacts to a fault once it is in place: a kill at once, a graceful stop
        # (NDB's 'N STOP' returns when the node has handed its work over and stopped) or a
        # partition's rules after a while. Client-side figures count from the start.
        in_place = run.rec.mark("in_place", fault.window.applied_at or start)
        if in_place - start >= 1.0:
            run.rec.measure("fault applied", in_place - start, "s",
                            note="applying the fault took this long (a graceful stop hands the node's work over first)")
        _observe_reaction(run, plan, start, in_place)
        _wait_shut_down(run, plan, in_place)
        run.hold(hold_s)

    with run.rec.phase("recovery", f"heal: {exp.recovery}"):
        heal = run.rec.mark("heal", run.clock.now())
        run.heal(fault)  # may itself restart nodes (NDB: those excluded while cut off)
        run.recover_exited()
        st, _ = run.wait_healthy(exp.recovery_bound_s + margin(exp.recovery_bound_s))
        healthy = run.rec.mark("healthy", st.t if st is not None else None)
        if healthy is not None:
            run.rec.measure("recovery", healthy - heal, "s", bound=exp.recovery_bound_s,
                            note=f"heal began ({exp.recovery}) -> every node healthy")
            for name in plan.sql_nodes:  # judged by the verdict: served again within the bound
                run.runner.wait_ok(name, after=healthy, timeout=exp.detection_bound_s + 1.0)
        run.hold(after_s)

    # the engine's durability promise applies to a whole-cluster crash (NDB: the last GCP)
    # (the expectation may say otherwise: a graceful shutdown completes a last checkpoint, 0 s)
    window = None if exp.cluster_survives else exp.details.get(
        "gcp_loss_window_s", cluster.engine.crash_loss_window_s(cluster.options))
    if window is not None and run.rec.marks.get("stopped_serving") is not None:
        # The crash that matters for durability is when the cluster stopped committing (the
        # last acknowledged operation), not when the fault began: a node group's survivors, or
        # both halves of a split, still acknowledge commits until they shut down.
        run.rec.set_check_options(gcp_loss_window_s=window, cluster_crash_at=run.rec.marks["stopped_serving"])
    allowed = exp.details.get("allowed_error_classes")
    if allowed:
        run.rec.set_check_options(allowed_error_classes=list(allowed))


def _observe_reaction(run: Run, plan, start: float, in_place: float) -> None:
    exp = plan.exp
    det = exp.detection_bound_s
    if not plan.engine_reacts:
        windows = run.cluster.journal.windows()
        run.rec.mark("reacted", windows[-1].effective_at if windows else in_place)
        return
    if exp.cluster_survives:
        left = max(1.0, det + margin(det) - (run.clock.now() - in_place))
        st, _ = run.wait_status(lambda s: run.cluster.engine.loss_detected(s, plan.lost), left,
                                f"the cluster excludes {', '.join(plan.lost)} and serves")
        reacted = run.rec.mark("reacted", st.t if st is not None else None)
        if reacted is not None:
            run.rec.measure("detection", reacted - in_place, "s", bound=det,
                            note="fault in place -> the survivors re-formed without the lost nodes (status poll)")
        return
    stopped_at = wait_stopped_serving(run, plan.sql_nodes, start, det + margin(det))
    run.rec.mark("stopped_serving", stopped_at)
    if stopped_at is not None:
        run.rec.measure("stopped serving", stopped_at - start, "s", bound=det,
                        note="fault -> last successful operation anywhere")


def _wait_shut_down(run: Run, plan, in_place: float) -> None:
    """The nodes the engine's rules say must shut themselves down (``details["shut_down"]``,
    e.g. NDB data nodes that lose arbitration): wait for their decision before the heal, so that
    what is healed is what the rules produced."""
    cluster = run.cluster
    shut = list(plan.exp.details.get("shut_down") or [])
    if not shut:
        return
    bound = float(plan.exp.details.get("decision_bound_s") or plan.exp.detection_bound_s)
    with run.rec.step(f"wait until {', '.join(shut)} shut down (bound {bound:.0f} s)"):
        left = in_place + bound + margin(bound) - run.clock.now()
        down = run.poll(lambda: all(cluster.engine.process_stopped(cluster, cluster.topology.node(n))
                                    for n in shut), max(left, 0.0), poll=0.2)
        t = run.rec.mark("shut_down", run.clock.now() if down else None)
        if t is not None:
            run.rec.measure("shut down", t - in_place, "s", bound=bound,
                            note=f"fault in place -> {', '.join(shut)} stopped by their own decision")


def wait_stopped_serving(run: Run, nodes, since: float, timeout: float, quiet: float = 1.5):
    """Wait until no SQL node has succeeded for ``quiet`` seconds; return the time of the last
    success (run clock), or None if clients kept succeeding for ``timeout`` seconds."""
    def stopped():
        last = max(max((run.runner.last_ok(n) for n in nodes), default=since), since)
        return (last,) if run.clock.now() - last >= quiet else None  # a tuple: 0.0 is a time

    found = run.poll(stopped, timeout + quiet, poll=0.1)
    return found[0] if found else None


def seeded(rng: random.Random, items):
    """One of ``items``, drawn with the run's seeded generator (recorded with the run)."""
    return rng.choice(list(items))


__all__ = ["AFTER_S", "BASELINE_S", "HOLD_S", "Scenario", "cycle", "margin", "play", "seeded", "wait_stopped_serving"]
