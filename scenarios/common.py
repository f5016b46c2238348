"""The shape every fault scenario shares, written once against roles and engine expectations.

    baseline  steady load on every SQL node
    fault     inject; wait for the engine's reaction (bounded by its documented detection time);
              the SQL nodes expected to serve succeed, the others are expected to stop serving
    recovery  heal (node restart / partition healed / bootstrap); every node healthy within the
              recovery bound; every SQL node serves its clients again
    verdict   no acknowledged write lost (ledger), surviving SQL nodes' outage within the bound;
              when the expectation is that the whole cluster stops, the engine's durability
              promise for a crash (``Engine.crash_loss_window_s``: NDB's last global checkpoint)
              applies, anchored at the measured moment clients stopped being acknowledged

Timing bounds are the engine's (``Expectation``), derived from its documented failure-detection
settings; the reasons are in the engine modules.
"""

from __future__ import annotations

import time

BASELINE_S = 5.0  # steady state before the fault: the throughput baseline
HOLD_S = 8.0  # the fault stays in place this long after the engine reacted
AFTER_S = 5.0  # load after recovery, to see throughput come back


def sql_nodes_on(cluster, names) -> list:
    """SQL endpoints that live in (or are) the given nodes' containers."""
    containers = {cluster.topology.node(n).container for n in names}
    return [n for n in cluster.topology.sql_nodes if n.name in names or n.container in containers]


def run_fault(run, cluster, fault, exp, lost: list[str], *, stopped_sql: list[str] | None = None,
              check_options: dict | None = None, engine_reacts: bool = True):
    """Drive one fault through the phases and assert the expectation.

    ``lost``: the nodes the fault takes out of service (killed, frozen, partitioned away).
    ``stopped_sql``: SQL endpoints expected to stop serving; default: those on lost nodes, or all
    of them when the expectation says the cluster does not survive.
    ``engine_reacts``: False for faults the engine cannot see (the client path): the reaction is
    then the fault taking effect, and "every node healthy" holds throughout.
    """
    sql_all = [n.name for n in cluster.topology.sql_nodes]
    if stopped_sql is None:
        stopped_sql = sql_all if not exp.cluster_survives else [n.name for n in sql_nodes_on(cluster, lost)]
    serving = [n for n in sql_all if n not in stopped_sql]
    stopped_at = None
    run.measure("expectation", exp.rule)
    run.measure("expected serving", ", ".join(serving) or "none")

    with run.phase("baseline", f"steady {run.workload.name} load"):
        run.start_load()
        run.hold(BASELINE_S)

    with run.phase("fault", f"{fault.kind} {', '.join(fault.window.targets)}"):
        run.inject(fault)
        start = fault.window.start
        # The engine reacts to a fault once it is in place: a kill is at once, a graceful stop
        # (NDB's 'N STOP' returns when the node has handed its work over and stopped) or a
        # partition's rules take a while. Client-side figures count from the start.
        anchor = fault.window.applied_at or start
        if anchor - start >= 1.0:
            run.measure("fault applied", anchor - start, "s",
                        note="applying the fault took this long (a graceful stop hands the node's work over first)")
        if not engine_reacts:
            reacted = fault.window.effective_at
            for name in serving:
                t_ok = run.runner.wait_ok(name, after=reacted, timeout=exp.detection_bound_s)
                assert t_ok is not None, f"no successful operation on untouched {name} during the fault"
        elif exp.cluster_survives:
            left = max(1.0, exp.detection_bound_s - (run.clock.now() - anchor))
            st, _ = run.wait_status(lambda s: cluster.engine.loss_detected(s, lost), left,
                                    f"the cluster excludes {', '.join(lost)} and serves")
            reacted = st.t
            assert reacted - anchor <= exp.detection_bound_s, (
                f"the survivors re-formed {reacted - anchor:.1f} s after the fault was in place, more than the "
                f"detection bound {exp.detection_bound_s:.1f} s ({exp.rule})")
            run.measure("detection", reacted - anchor, "s", bound=exp.detection_bound_s,
                        note="fault in place -> the survivors re-formed without the lost nodes (status poll)")
            for name in serving:
                t_ok = run.runner.wait_ok(name, after=reacted, timeout=exp.detection_bound_s)
                assert t_ok is not None, (f"no successful operation on {name}, expected to keep serving, "
                                          f"within {exp.detection_bound_s:.1f} s after the cluster reacted")
        else:
            stopped_at = wait_stopped_serving(run, sql_all, start, exp.detection_bound_s)
            assert stopped_at is not None, (
                f"the rules predict that no SQL node serves ({exp.rule}), but clients still succeeded "
                f"{exp.detection_bound_s:.1f} s after the fault")
            run.measure("stopped serving", stopped_at - start, "s", bound=exp.detection_bound_s,
                        note="fault -> last successful operation anywhere")
        shut_down = wait_shut_down(run, cluster, exp, anchor)
        run.hold(HOLD_S)
        if not exp.cluster_survives or stopped_sql:
            recent = {n: run.runner.last_ok(n) for n in stopped_sql}
            served = {n: t for n, t in recent.items() if t > start + exp.detection_bound_s}
            assert not served, (f"SQL nodes expected to stop serving still succeeded late into the fault: "
                                f"{ {n: round(t - start, 2) for n, t in served.items()} } s after it began")

    with run.phase("recovery", f"heal: {exp.recovery}"):
        healing = run.clock.now()
        run.heal(fault)  # may itself restart nodes (NDB: those excluded while cut off)
        run.recover_exited()
        st, _ = run.wait_healthy(max(1.0, exp.recovery_bound_s - (run.clock.now() - healing)))
        secs = st.t - healing
        assert secs <= exp.recovery_bound_s, (f"every node healthy {secs:.1f} s after the heal began, more than "
                                              f"the recovery bound {exp.recovery_bound_s:.0f} s ({exp.recovery})")
        run.measure("recovery", secs, "s", bound=exp.recovery_bound_s,
                    note=f"heal began ({exp.recovery}) -> every node healthy")
        for name in sql_all:
            t_ok = run.runner.wait_ok(name, after=st.t, timeout=exp.detection_bound_s)
            assert t_ok is not None, (f"clients of {name} saw no success within {exp.detection_bound_s:.1f} s "
                                      f"after every node was healthy again")
        run.hold(AFTER_S)

    opts = dict(check_options or {})
    window = None if exp.cluster_survives else cluster.engine.crash_loss_window_s(cluster.options)
    if window is not None and stopped_at is not None:
        # The crash that matters for durability is when the cluster stopped committing (the last
        # acknowledged operation), not when the fault began: a node group's survivors, or both
        # halves of a split, still acknowledge commits until they shut down.
        opts.setdefault("gcp_loss_window_s", window)
        opts.setdefault("cluster_crash_at", stopped_at)
    res = run.finish(check_options=opts)
    checks = res.verdict["checks"]
    for name in ("durability", "invariant"):
        if name in checks:
            assert checks[name]["valid"] is True, f"{name}: {checks[name]['summary']}"
    for name in serving:
        gap = run.outage_on(name)
        assert gap <= exp.detection_bound_s, (
            f"clients on {name}, expected to keep serving, saw no success for {gap:.2f} s, more than "
            f"the detection bound {exp.detection_bound_s:.1f} s")
    check_exit_codes(cluster, exp, res.events, start, shut_down)
    return res


def wait_shut_down(run, cluster, exp, since: float) -> list[str]:
    """The nodes the engine's rules say must shut themselves down (``details["shut_down"]``,
    e.g. NDB data nodes that lose arbitration) have stopped within ``details["decision_bound_s"]``
    of the fault being in place (``since``): the decision is complete on every side before the heal, so that what is healed
    is what the rules produced. Returns their names (empty when the engine names none)."""
    shut = list(exp.details.get("shut_down") or [])
    if not shut:
        return []
    bound = float(exp.details.get("decision_bound_s") or exp.detection_bound_s)
    stopped = cluster.engine.process_stopped

    with run.step(f"wait until {', '.join(shut)} shut down (bound {bound:.0f} s)"):
        deadline = since + bound
        while True:
            left = [n for n in shut if not stopped(cluster, cluster.topology.node(n))]
            if not left:
                break
            assert run.clock.now() < deadline, (
                f"the rules say {', '.join(shut)} shut down ({exp.rule}); {', '.join(left)} still running "
                f"{bound:.1f} s after the fault was in place")
            time.sleep(0.2)
        run.measure("shut down", run.clock.now() - since, "s", bound=bound,
                    note=f"fault in place -> {', '.join(shut)} stopped by their own decision")
    return shut


def check_exit_codes(cluster, exp, events: list[dict], since: float, shut: list[str]) -> None:
    """Each node that shut itself down reported the exit code the rules give it
    (``details["exit_codes"]``, NDB: a forced shutdown with 2305, 'Arbitrator decided to
    shutdown this node'), as the engine's own log events show."""
    codes = exp.details.get("exit_codes") or {}
    if not shut or not codes:
        return
    seen: dict[str, list] = {}
    for e in events:
        if e.get("kind") == "forced_shutdown" and e.get("t") is not None and e["t"] >= since - 1:
            name = next((n.name for n in cluster.topology.nodes if n.nodeid == e.get("node")), None)
            if name:
                seen.setdefault(name, []).append(e.get("exit_code"))
    wrong = {n: seen.get(n) for n in shut if codes.get(n) is not None and codes[n] not in (seen.get(n) or [])}
    assert not wrong, (f"expected forced shutdowns with {({n: codes[n] for n in wrong})} ({exp.rule}); "
                       f"the engine's logs show {wrong}")


def wait_stopped_serving(run, nodes, since: float, timeout: float, quiet: float = 1.5):
    """Wait until no SQL node has succeeded for ``quiet`` seconds; return the time of the last
    success (run clock), or None if clients kept succeeding for ``timeout`` seconds."""
    deadline = time.monotonic() + timeout + quiet
    while time.monotonic() < deadline:
        now = run.clock.now()
        last = max(run.runner.last_ok(n) for n in nodes)
        if now - max(last, since) >= quiet:
            return max(last, since)
        time.sleep(0.1)
    return None
