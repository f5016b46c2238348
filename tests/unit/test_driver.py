"""The driver plays a declaration on a ScenarioRun: phases, marks, measurements and the options
handed to the checkers. The run is an autospec of ScenarioRun, so the driver can only call what a
real run has (a renamed or missing method fails here, not on a real cluster); its recorder is a
real one, which the assertions read."""

from types import SimpleNamespace
from unittest import mock

import pytest

from ndbchaos import driver
from ndbchaos.vocabulary import ClusterStatus, Expectation
from ndbchaos.recording import Recorder
from ndbchaos.waiting import wait_until
from ndbchaos.scenario import ScenarioRun
from ndbchaos.topology import DATA, SQL, Node, Topology


class Clock:
    def __init__(self):
        self.t = 100.0

    def now(self):
        self.t += 0.5
        return self.t


def _fault(targets):
    window = SimpleNamespace(start=101.0, applied_at=101.2, targets=[t.name for t in targets])
    return SimpleNamespace(kind="kill", targets=targets, window=window)


def _run(exp: Expectation, status_t=103.0):
    topo = Topology("p", "ndb", [Node("data1", DATA, "p-data1-1", nodeid=11, nodegroup=0),
                                 Node("data2", DATA, "p-data2-1", nodeid=12, nodegroup=0),
                                 Node("sql1", SQL, "p-sql1-1", nodeid=51, sql_port=3306, serves_sql=True)])
    engine = mock.Mock()
    engine.expectation.return_value = exp
    engine.crash_loss_window_s.return_value = 4.0
    engine.process_stopped.return_value = True
    cluster = SimpleNamespace(topology=topo, engine=engine, options={}, journal=mock.Mock())
    run = mock.create_autospec(ScenarioRun, instance=True)
    run.cluster, run.clock, run.rng = cluster, Clock(), mock.Mock()
    run.workload = SimpleNamespace(name="ledger")
    run.rec = Recorder(run.clock)
    st = ClusterStatus(status_t, [], True, [])
    run.wait_status.return_value = (st, 1.0)
    run.wait_healthy.return_value = (st, 5.0)
    run.runner = mock.Mock()
    run.poll.side_effect = wait_until  # the player's wait, without its kill switch
    run.runner.last_ok.return_value = 102.0
    run.finish.return_value = "result"
    return run


def test_a_surviving_fault_marks_every_moment_and_hands_over_to_finish():
    exp = Expectation("datanode_loss", True, True, "rule", 5.0, 30.0, "node_restart", {})
    run = _run(exp)
    sc = driver.Scenario("kill", "datanode_loss", "t", fault=lambda c, rng: _fault([c.topology.node("data1")]),
                         baseline_s=0, hold_s=0, after_s=0)
    assert driver.play(run, sc) == "result"
    assert set(run.rec.marks) == {"fault", "in_place", "reacted", "heal", "healthy"}
    assert run.rec.marks["fault"] == 101.0 and run.rec.marks["in_place"] == 101.2 and run.rec.marks["reacted"] == 103.0
    names = list(run.rec.measurements)
    assert "detection" in names and "recovery" in names
    assert run.rec.plan.lost == ["data1"]  # the plan follows the fault's actual targets
    assert [p.name for p in run.rec.phases] == ["baseline", "fault", "recovery"]
    assert run.rec.check_options == {}  # the cluster survives: no crash window


def test_a_cluster_that_stops_gets_its_crash_time_and_shutdown_marked():
    exp = Expectation("nodegroup_loss", False, False, "rule", 5.0, 60.0, "system_restart",
                      {"shut_down": ["data2"], "decision_bound_s": 5.0})
    run = _run(exp)
    sc = driver.Scenario("ng", "nodegroup_loss", "t", fault=lambda c, rng: _fault([c.topology.node("data1")]),
                         baseline_s=0, hold_s=0, after_s=0)
    driver.play(run, sc)
    assert run.rec.marks["stopped_serving"] == 102.0 and run.rec.marks["shut_down"] is not None
    assert run.rec.check_options == {"gcp_loss_window_s": 4.0, "cluster_crash_at": 102.0}


@pytest.mark.parametrize("bound", [0.5, 10.0, 200.0])
def test_margin_grows_with_the_bound_and_is_capped(bound):
    assert 2.0 < driver.margin(bound) <= 32.0
