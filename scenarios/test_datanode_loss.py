"""datanode_loss: one data node dies under steady load.

Expected (engine rules, see Engine.expectation("datanode_loss")):
- the survivors keep serving: Galera keeps a Primary component (quorum 2*W(remaining) > W(last
  primary)); NDB continues when the lost node's group partner lives (reference/ndb.md 5.1);
- clients on the surviving SQL nodes succeed again within the engine's detection bound;
- the killed node, restarted (node restart), rejoins healthy within the recovery bound;
- no acknowledged write is missing at the end (ledger).
"""

from __future__ import annotations

import pytest

from ndbchaos.faults.node import Kill

pytestmark = [pytest.mark.datanode_loss, pytest.mark.docker]

BASELINE_S = 5.0  # steady state before the fault: the throughput baseline
HOLD_S = 8.0  # time the node stays dead after the cluster reacted
AFTER_S = 5.0  # load after recovery: throughput back to baseline


def test_kill_one_data_node(cluster, scenario):
    run = scenario("ledger", title="SIGKILL one data node under steady load, then node restart")
    target = run.rng.choice(cluster.topology.data_nodes)
    lost = [target.name]
    survivors = [n for n in cluster.topology.sql_nodes if n.name not in lost and n.container != target.container]
    exp = cluster.engine.expectation("datanode_loss", cluster, lost=1)
    run.measure("expectation", exp.rule)
    assert exp.survivors_serve, f"the engine's rules predict that one data node loss is survivable: {exp.rule}"

    with run.phase("baseline", f"steady {run.workload.name} load"):
        run.start_load()
        run.hold(BASELINE_S)

    with run.phase("fault", f"SIGKILL {target.describe()}"):
        fault = run.inject(Kill(cluster, [target]))
        st, _ = run.wait_status(lambda s: cluster.engine.loss_detected(s, lost), exp.detection_bound_s,
                                f"survivors exclude {target.name} and serve")
        run.measure("detection", st.t - fault.window.start, "s", bound=exp.detection_bound_s,
                    note="kill -> survivors re-formed without the node (status poll)")
        for n in survivors:
            t_ok = run.runner.wait_ok(n.name, after=st.t, timeout=exp.detection_bound_s)
            assert t_ok is not None, f"no successful operation on surviving {n.name} within " \
                                     f"{exp.detection_bound_s:.1f} s after the cluster reacted"
        run.hold(HOLD_S)

    with run.phase("recovery", f"node restart of {target.name}"):
        run.heal(fault)
        st, rejoin = run.wait_healthy(exp.recovery_bound_s)
        run.measure("rejoin", rejoin, "s", bound=exp.recovery_bound_s,
                    note="node restart -> every node healthy (Synced / started)")
        # The restarted node must serve its clients again, not just look healthy.
        for n in cluster.topology.sql_nodes:
            t_ok = run.runner.wait_ok(n.name, after=st.t, timeout=exp.detection_bound_s)
            assert t_ok is not None, f"clients of {n.name} saw no success within " \
                                     f"{exp.detection_bound_s:.1f} s after every node was healthy again"
        run.measure("first success on restarted node", run.runner.last_ok(target.name) - st.t
                    if target.serves_sql else 0.0, "s", note="healthy -> a client of the node succeeds")
        run.hold(AFTER_S)

    res = run.finish()
    dur = res.verdict["checks"]["durability"]
    assert dur["valid"] is True, f"acknowledged writes lost or phantom: {dur['summary']}"
    for n in survivors:
        gap = run.outage_on(n.name)
        assert gap <= exp.detection_bound_s, (
            f"clients on surviving {n.name} saw no success for {gap:.2f} s, more than the "
            f"detection bound {exp.detection_bound_s:.1f} s")
