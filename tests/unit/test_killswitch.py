"""The kill switch (ndbchaos.killswitch): what a plan allows, the user's conditions, and the
guard's decision on status samples (a condition must hold its grace; a quiet SQL node counts
from when the load served)."""

from types import SimpleNamespace

import pytest

from ndbchaos.errors import UsageError
from ndbchaos.killswitch import GRACE_S, MIN_QUIET_S, Allowance, Condition, Guard, parse_conditions
from ndbchaos.vocabulary import ClusterStatus, Expectation, NodeStatus

NODES = ("data1", "data2", "data3", "data4", "mgm1", "sql1", "sql2")
GROUPS = {"data1": 0, "data2": 0, "data3": 1, "data4": 1}
SQL = ["sql1", "sql2"]


def _plan(lost=("data1",), survives=True, stopped_sql=(), affected=(), shut_down=(), det=6.0):
    exp = Expectation("datanode_loss", True, survives, "rule", det, 60.0, "node_restart",
                      {"shut_down": list(shut_down)} if shut_down else {})
    return SimpleNamespace(exp=exp, lost=list(lost), stopped_sql=list(stopped_sql), affected=list(affected),
                           sql_nodes=SQL)


def _status(t, down=(), container="running"):
    return ClusterStatus(t, [NodeStatus(n, "data", container if n in down else "running",
                                        "not started" if n in down else "started", n not in down)
                             for n in NODES], not down, [])


def _check(guard, t, down=(), plan=None, targets=(), last_ok=None):
    last_ok = last_ok or (lambda node: t - 0.1)
    return guard.check(_status(t, down), plan, set(targets), last_ok, SQL, GROUPS, 0.0)


def test_the_plan_allows_its_lost_nodes_targets_and_shutdowns_and_no_more():
    a = Allowance.of(_plan(lost=("data1",), shut_down=("data2",)), targets={"data1"})
    assert a.nodes == {"data1", "data2"} and not a.everything and a.quiet_sql == set()
    assert Allowance.of(_plan(survives=False)).everything
    # nothing in force (the baseline, a soak's pause): only a fault's own targets, if any
    assert Allowance.of(None) == Allowance() and Allowance.of(None, {"data3"}).nodes == {"data3"}
    # an SQL node the fault stops may stop serving; one it leaves with no requirement too
    a = Allowance.of(_plan(lost=("sql1",), stopped_sql=("sql1",), affected=("sql2",)))
    assert a.quiet_sql == {"sql1", "sql2"}
    # a serving SQL node may be quiet for the engine's own failover, and always 30 s
    assert Allowance.of(_plan(det=6.0)).quiet_bound_s == MIN_QUIET_S
    assert Allowance.of(_plan(det=40.0)).quiet_bound_s == 2 * (40 + 20 + 2)


def test_a_node_the_plan_did_not_touch_aborts_once_it_stayed_down_for_the_grace():
    g = Guard()
    plan = _plan(lost=("data1",))
    assert _check(g, 10.0, down=("data1",), plan=plan, targets={"data1"}) is None  # planned
    assert _check(g, 11.0, down=("data1", "data3"), plan=plan, targets={"data1"}) is None  # not yet for the grace
    assert _check(g, 11.0 + GRACE_S / 2, down=("data1",), plan=plan, targets={"data1"}) is None  # it came back
    assert _check(g, 12.0 + GRACE_S / 2, down=("data1", "data3"), plan=plan) is None  # the grace starts again
    why = _check(g, 12.0 + 1.5 * GRACE_S, down=("data1", "data3"), plan=plan)
    assert why is not None and "data3 failed, which the plan did not touch (data3: not started)" in why


def test_a_whole_node_group_the_plan_keeps_is_said_lost():
    g = Guard(grace_s=0.0)
    why = _check(g, 5.0, down=("data3", "data4"), plan=_plan(lost=("data3",)), targets={"data3"})
    assert "data4 failed" in why or "node group 1 lost" in why
    g = Guard(grace_s=0.0, conditions=parse_conditions(["groups_lost > 0"]))
    # a plan that loses the group: nothing unplanned, but the user's own condition stops it
    why = _check(g, 5.0, down=("data3", "data4"), plan=_plan(lost=("data3", "data4")), targets={"data3", "data4"})
    assert why == "--abort-when groups_lost > 0: 1.0"


def test_a_plan_that_stops_the_cluster_allows_every_node_down():
    g = Guard(grace_s=0.0)
    assert _check(g, 5.0, down=NODES, plan=_plan(survives=False), last_ok=lambda n: 0.0) is None


def test_the_baseline_allows_nothing_down():
    g = Guard(grace_s=0.0)
    assert "data2 failed" in _check(g, 3.0, down=("data2",), plan=None)


def test_a_serving_sql_node_quiet_beyond_its_bound_aborts_at_once_but_one_planned_quiet_does_not():
    g = Guard()
    last = {"sql1": 1.0, "sql2": 40.0}
    why = _check(g, 40.0, plan=_plan(lost=("data1",)), targets={"data1"}, last_ok=last.get)
    assert why == f"no successful operation on sql1 for 39.0 s (beyond {MIN_QUIET_S:g} s), and the plan has it serving"
    g = Guard()
    assert _check(g, 40.0, plan=_plan(lost=("sql1",), stopped_sql=("sql1",)), targets={"sql1"},
                  last_ok=last.get) is None
    # before the load served, a quiet node counts from when it did
    g = Guard()
    assert g.check(_status(40.0), _plan(), {"data1"}, last.get, SQL, GROUPS, served_since=20.0) is None


def test_user_conditions_on_counts_and_quiet_nodes():
    g = Guard(grace_s=0.0, conditions=parse_conditions(["down > 1", "no_success:sql2 >= 5"]))
    assert _check(g, 10.0, down=("data1",), plan=_plan(), targets={"data1"}) is None
    assert _check(g, 10.0, down=("data1", "data2"), plan=_plan(lost=("data1", "data2")),
                  targets={"data1", "data2"}) == "--abort-when down > 1: 2.0"
    g = Guard(grace_s=0.0, conditions=parse_conditions(["no_success:sql2 >= 5"]))
    assert _check(g, 10.0, plan=_plan(), targets={"data1"},
                  last_ok={"sql1": 9.9, "sql2": 4.0}.get) == "--abort-when no_success:sql2 >= 5: 6.0"


@pytest.mark.parametrize("text, says", [
    ("down", "not NAME[:NODE] OP NUMBER"),
    ("lost > 1", "unknown name 'lost'"),
    ("down:sql1 > 1", "only no_success takes a node"),
    ("down > -1", "not a finite number >= 0"),
    ("down > 1e999", "not a finite number"),
    ("no_success > 1.2.3", "not a finite number"),
])
def test_a_bad_condition_is_one_line_naming_it(text, says):
    with pytest.raises(UsageError) as e:
        parse_conditions([text])
    assert says in str(e.value) and repr(text) in str(e.value) and "\n" not in str(e.value)


def test_conditions_read_back_as_written():
    (c,) = parse_conditions(["no_success:sql2>20"])
    assert c == Condition("no_success", ">", 20.0, "sql2") and str(c) == "no_success:sql2 > 20"


def test_a_node_the_engine_says_is_only_short_of_a_member_has_not_failed():
    """Galera's survivor of a planned kill is Synced in a primary component short of a member:
    not healthy, not failed; out of the primary component it has. NDB's SQL node that sees only
    part of the data nodes has not failed; one that does not answer has."""
    from ndbchaos.engines.galera import GaleraEngine
    from ndbchaos.engines.ndb import NdbEngine
    g, n = GaleraEngine(), NdbEngine()
    short = NodeStatus("data2", "data", "running", "Synced", False,
                       {"wsrep_cluster_status": "Primary", "wsrep_connected": "ON", "wsrep_cluster_size": "1"})
    assert not g.node_failed(short)
    assert g.node_failed(NodeStatus("data2", "data", "running", "Synced/non-Primary", False,
                                    {"wsrep_cluster_status": "non-Primary", "wsrep_connected": "ON"}))
    assert g.node_failed(NodeStatus("arb", "arbitrator", "paused", "down", False))
    assert not n.node_failed(NodeStatus("sql1", "sql", "running", "partial cluster", False))
    assert n.node_failed(NodeStatus("sql1", "sql", "running", "unreachable", False))
    assert n.node_failed(NodeStatus("data3", "data", "running", "not started", False))
    guard = Guard(grace_s=0.0)
    st = ClusterStatus(5.0, [short, NodeStatus("data1", "data", "exited", "down", False)], False, [])
    assert guard.check(st, _plan(lost=("data1",)), {"data1"}, lambda node: 4.9, SQL, {}, 0.0, g.node_failed) is None


def test_the_player_stops_at_its_next_wait_once_the_switch_fired():
    """The observer's sample fires the switch (the player's watch); the run's next hold, poll or
    status wait raises RunAborted with the reason, without waiting out its time."""
    import time

    from ndbchaos.killswitch import RunAborted

    from .test_heal_paths import FakeCluster, Recorder as Fault, _run_on
    c = FakeCluster()
    run = _run_on(c)
    run.guard = Guard(grace_s=0.0)
    run._served_since = 0.0
    run.runner.last_ok = lambda node: c.clock.now()
    c.engine.node_failed = lambda node: not node.healthy  # Engine's default
    Fault(c, "data1").inject()  # the plan in force: none (no expectation), so its target only
    run._watch(ClusterStatus(c.clock.now(), [NodeStatus("data3", "data", "exited", "down", False)], False, []))
    assert run.aborted and "data3 failed, which the plan did not touch" in run.aborted
    t0 = time.monotonic()
    with pytest.raises(RunAborted, match="data3 failed"):
        run.hold(30)
    with pytest.raises(RunAborted):
        run.poll(lambda: False, 30)
    assert time.monotonic() - t0 < 1.0
    assert [e["kind"] for e in c.journal.events()].count("kill_switch") == 1


def test_a_soak_stops_at_its_first_abort():
    from ndbchaos import soak as S
    from ndbchaos.killswitch import RunAborted

    from .test_soak import Clock, Scenario, _fault, _run
    menu = (Scenario("kill", "datanode_loss", "k", fault=_fault),)
    sk = S.Soak("m", "t", menu, pause_s=(5, 5), hold_s=(3, 3), after_s=1)
    run, entered = _run(Clock())
    holds = []

    def hold(seconds):
        holds.append(seconds)
        if len(holds) == 3:  # the pause, the hold, then the load after the first fault: the switch fires
            raise RunAborted("at 9.0 s: data3 failed, which the plan did not touch")

    run.hold.side_effect = hold
    with pytest.raises(RunAborted):
        S.play_soak(run, sk, 100.0)
    assert run.inject.call_count == 1 and not run.finish.called
