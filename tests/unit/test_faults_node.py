"""Node faults without Docker: Kill signals every target, KillDuringRecovery kills twice (once,
then again while the restarted node rejoins) and refuses to report a fault it did not apply."""

import pytest

from ndbchaos import topology as TP
from ndbchaos.clock import RunClock
from ndbchaos.vocabulary import ClusterStatus, NodeStatus
from ndbchaos.faults import node as ND
from ndbchaos.faults.base import FaultNotEffective
from ndbchaos.journal import Journal
from ndbchaos.topology import Node, Topology


class Box:
    def __init__(self, name, log):
        self.name, self.id, self.log, self.state = name, name + "-id", log, "running"

    def kill(self, signal="SIGKILL"):
        self.log.append(("kill", self.name, signal))
        self.state = "exited"

    def start(self):
        self.log.append(("start", self.name))
        self.state = "running"


class Engine:
    name = "galera"

    def __init__(self, boxes, rejoining=True):
        self.boxes, self.rejoining = boxes, rejoining

    def recover_nodes(self, cluster, nodes):
        for n in nodes:
            self.boxes[n.container].state = "running"
            self.boxes[n.container].log.append(("restart", n.container))

    def loss_detected(self, status, names):
        return True

    def node_rejoining(self, status, name):
        return self.rejoining


class Cluster:
    def __init__(self, rejoining=True):
        self.project = "proj"
        self.topology = Topology("proj", "galera", [Node(f"data{i}", TP.DATA, f"proj-data{i}-1", nodeid=i)
                                                    for i in (1, 2, 3)])
        self.log = []
        self.boxes = {n.container: Box(n.container, self.log) for n in self.topology.nodes}
        self.engine = Engine(self.boxes, rejoining)
        self.options, self.clock = {}, RunClock()
        self.journal = Journal(self.clock)

    def note(self, kind, **fields):
        return self.journal.note(kind, **fields)

    def container(self, node):
        return self.boxes[node.container if isinstance(node, Node) else node]

    def status(self):
        return ClusterStatus(0.0, [NodeStatus(n.name, n.role, b.state, "x", b.state == "running", {})
                                   for n, b in zip(self.topology.nodes, self.boxes.values())], True, [])


@pytest.fixture(autouse=True)
def states(monkeypatch):
    monkeypatch.setattr(ND.docker, "container_state", lambda c: c.state)


def test_kill_signals_every_target():
    c = Cluster()
    f = ND.Kill(c, [c.topology.node("data1"), c.topology.node("data2")])
    f.inject()
    assert sorted(x[1] for x in c.log if x[0] == "kill") == ["proj-data1-1", "proj-data2-1"]
    f.heal()


def test_kill_during_recovery_kills_twice():
    c = Cluster()
    f = ND.KillDuringRecovery(c, c.topology.node("data3"))
    f.inject()
    assert [x[0] for x in c.log] == ["kill", "restart", "kill"]
    assert f.window.params["second_kill"]["data3"]["seen_recovering"] is True
    assert "killed again" in f.window.verification[0]
    f.heal()


def test_kill_during_recovery_without_a_second_kill_is_not_effective(monkeypatch):
    c = Cluster()
    f = ND.KillDuringRecovery(c, c.topology.node("data3"))
    monkeypatch.setattr(f, "second_kill", {})
    monkeypatch.setattr(ND.KillDuringRecovery, "_apply", ND.Kill._apply)
    with pytest.raises(FaultNotEffective):
        f.inject()


def test_kill_in_turn_keeps_the_order_and_the_gap():
    c = Cluster()
    order = [c.topology.node("data3"), c.topology.node("data1")]
    f = ND.KillInTurn(c, order, gap_s=0.3)
    assert f.simultaneous is False and ND.Kill(c, order).simultaneous is True
    f.inject()
    assert [x[1] for x in c.log if x[0] == "kill"] == ["proj-data3-1", "proj-data1-1"]
    at = f.window.params["killed_at"]
    assert at["data1"] - at["data3"] >= 0.29 and "in turn: data3 at +0.00s, data1 at +0.3" in f.window.verification[0]
    f.heal()
    # without a gap each waits for the engine to have excluded the ones before it
    f = ND.KillInTurn(c, order)
    f.inject()
    assert f.window.params["excluded_before_next_s"]["data1"] is not None
    f.heal()
    with pytest.raises(ND.UsageError, match="at least two"):
        ND.KillInTurn(c, order[:1])


def test_restart_without_keeps_some_down_and_starts_the_others():
    c = Cluster()
    f = ND.RestartWithout(c, [c.topology.node("data1")], [c.topology.node("data2"), c.topology.node("data3")])
    f.inject()
    assert c.boxes["proj-data1-1"].state == "running" and c.boxes["proj-data2-1"].state == "exited"
    assert "data1 killed and started again" in f.window.verification[0]
    f.heal()
    assert all(b.state == "running" for b in c.boxes.values())
    with pytest.raises(ND.UsageError, match="both restarted and kept down"):
        ND.RestartWithout(c, [c.topology.node("data1")], [c.topology.node("data1")])
