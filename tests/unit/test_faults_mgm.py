"""Management-client faults without Docker: the ndb_mgm commands they send (options in the
manual's order, several nodes in one command), the effect they verify on the cluster (each target
leaves 'started'), a refusal reported with the client's own words, -n healed by START, a rolling
restart that waits for each node, and no such faults on an engine without a management client."""

from types import SimpleNamespace

import pytest

from ndbchaos import topology as TP
from ndbchaos.clock import RunClock
from ndbchaos.errors import UsageError
from ndbchaos.engines.ndb.faults import mgm as MG
from ndbchaos.faults.base import FaultNotEffective, FaultUnsupported
from ndbchaos.journal import Journal
from ndbchaos.topology import Node, Topology


class Engine:
    """ndb_mgm as a small state machine: RESTART takes nodes out of 'started' (-n: into 'not
    started', else through 'starting' back to 'started' after ``comes_back`` reports)."""

    name = "ndb"

    def __init__(self, refuse=None, comes_back=2, stays=False):
        self.sent, self.refuse, self.comes_back, self.stays = [], refuse, comes_back, stays
        self.state = {11: "started", 12: "started", 13: "started", 14: "started"}
        self.countdown = {}

    def mgm(self, cluster, command, timeout=10):
        self.sent.append(command)
        if self.refuse:
            banner = "Connected to management server at localhost port 1186 (using cleartext)"
            return 0, f"{banner}\n{self.refuse}\n", "mgm1"
        if command.startswith("START BACKUP"):
            said = "Waiting for started, this may take several minutes\nNode 11: Backup 7 started from node 1\n"
            return 0, said, "mgm1"
        words = command.split()
        verb = next(w for w in words if w in ("RESTART", "START", "STOP"))
        ids = list(self.state) if words[0] == "ALL" else [int(w) for w in words[:words.index(verb)]]
        for i in ids:
            if self.stays:
                continue
            if verb == "START":
                self.state[i] = "started"
            elif "-n" in words:
                self.state[i] = "not started"
            else:
                self.state[i] = "starting"
                self.countdown[i] = self.comes_back
        return 0, f"Node {', '.join(map(str, ids))} is being restarted\n", "mgm1"

    def mgm_report(self, cluster):
        for i, n in list(self.countdown.items()):
            if n <= 0:
                self.state[i] = "started"
                del self.countdown[i]
            else:
                self.countdown[i] = n - 1
        nodes = {i: SimpleNamespace(started=s == "started",
                                    state_name={"started": "STARTED", "not started": "NOT_STARTED"}.get(s, "STARTING"))
                 for i, s in self.state.items()}
        return SimpleNamespace(node=nodes.get), "mgm1"

    def recover_nodes(self, cluster, nodes):
        raise AssertionError("nothing to recover: the containers never stopped")


class Cluster:
    def __init__(self, engine):
        self.project = "proj"
        nodes = [Node(f"data{i - 10}", TP.DATA, f"proj-data{i - 10}-1", nodegroup=(i - 11) // 2, nodeid=i)
                 for i in (11, 12, 13, 14)]
        nodes.append(Node("mgm1", TP.MGM, "proj-mgm1-1", nodeid=1))
        self.topology = Topology("proj", "ndb", nodes)
        self.engine = engine
        self.options, self.clock = {}, RunClock()
        self.journal = Journal(self.clock)

    def note(self, kind, **fields):
        return self.journal.note(kind, **fields)

    def container(self, node):
        return SimpleNamespace(name=node.container if isinstance(node, Node) else node)


@pytest.fixture(autouse=True)
def running(monkeypatch):
    monkeypatch.setattr(MG.docker, "container_state", lambda c: "running")
    monkeypatch.setattr(MG, "wait_until", _fast_wait)
    monkeypatch.setattr(MG.time, "sleep", lambda s: None)


def _fast_wait(pred, timeout, poll=0.1, **kw):
    for _ in range(50):
        got = pred()
        if got:
            return got
    return None


def test_restart_commands_follow_the_manual():
    assert MG.restart_command([11]) == "11 RESTART"
    every = MG.restart_command([12, 14], initial=True, nostart=True, abort=True, force=True)
    assert every == "12 14 RESTART -n -i -a -f"
    assert MG.restart_command("ALL", abort=True) == "ALL RESTART -a"
    with pytest.raises(UsageError):
        MG.restart_command([])


def test_a_restart_is_verified_on_the_cluster():
    c = Cluster(Engine())
    f = MG.MgmRestart(c, [c.topology.node("data1")], initial=True)
    f.inject()
    assert c.engine.sent == ["11 RESTART -i"]
    assert list(f.window.params["left_at"]) == ["data1"]
    assert "left the cluster" in f.window.verification[0]
    f.heal()
    assert c.engine.sent == ["11 RESTART -i"]  # nothing to undo: the node comes back by itself


def test_nostart_waits_until_the_heal_starts_the_nodes():
    c = Cluster(Engine())
    f = MG.MgmRestart(c, [c.topology.node("data1"), c.topology.node("data3")], nostart=True, abort=True)
    f.inject()
    assert c.engine.sent == ["11 13 RESTART -n -a"]
    assert c.engine.state[11] == c.engine.state[13] == "not started"
    f.heal()
    assert c.engine.sent[-1] == "11 13 START" and c.engine.state[11] == "started"
    assert f.window.params["start"]["command"] == "11 13 START"


def test_a_refusal_is_not_effective_with_the_clients_words():
    c = Cluster(Engine(refuse="* 2002: Stop failed\n*        Node shutdown would cause system crash"))
    f = MG.MgmRestart(c, [c.topology.node("data1")])
    with pytest.raises(FaultNotEffective, match="Stop failed|system crash"):
        f.inject()


def test_a_node_that_never_leaves_is_not_effective():
    c = Cluster(Engine(stays=True))
    f = MG.MgmRestart(c, [c.topology.node("data2")])
    with pytest.raises(FaultNotEffective, match="still started"):
        f.inject()


def test_system_restart_targets_every_data_node():
    c = Cluster(Engine())
    f = MG.SystemRestart(c, abort=True)
    f.inject()
    assert c.engine.sent == ["ALL RESTART -a"]
    assert sorted(f.window.targets) == ["data1", "data2", "data3", "data4"]
    f.heal()


def test_a_rolling_restart_waits_for_each_node():
    c = Cluster(Engine(comes_back=3))
    f = MG.RollingRestart(c, list(c.topology.data_nodes))
    f.inject()
    assert c.engine.sent == ["11 RESTART", "12 RESTART", "13 RESTART", "14 RESTART"]
    steps = f.window.params["steps"]
    assert [s["node"] for s in steps] == ["data1", "data2", "data3", "data4"]
    assert all(s["left"] is not None and s["started"] is not None for s in steps)
    f.heal()


def test_only_data_nodes_and_only_with_a_management_client():
    c = Cluster(Engine())
    with pytest.raises(UsageError, match="only data nodes"):
        MG.MgmRestart(c, [c.topology.node("mgm1")])
    c.engine = SimpleNamespace(name="galera")
    f = MG.MgmRestart(c, [c.topology.node("data1")])
    with pytest.raises(FaultUnsupported):
        f.inject()


class BackupLog:
    """The cluster log as ``KillDuringBackup`` follows it: nothing until the backup has ended."""

    def __init__(self, fate, after_polls=2):
        self.fate, self.after_polls, self.polls, self.sought = fate, after_polls, 0, False
        self.node, self.errors = SimpleNamespace(name="mgm1"), []

    def seek_end(self):
        self.sought = True

    def poll(self):
        self.polls += 1
        if self.fate is None or self.polls < self.after_polls:
            return []
        other = {"kind": "backup_started", "backup": 7}
        older = {"kind": "backup_completed", "backup": 6, "text": "Backup 6 started from node 1 completed."}
        return [other, older, {"backup": 7, **self.fate}]


def backup_cluster(monkeypatch, fate):
    c = Cluster(Engine())
    log = BackupLog(fate)
    c.engine.cluster_log_follower = lambda cluster, node=None: log
    killed = []
    monkeypatch.setattr(MG.KillDuringBackup, "_signal_all", lambda self: killed.append(list(self.window.targets)))
    monkeypatch.setattr(MG.Kill, "_verify_applied", lambda self: "process gone after SIGKILL: data3 exited")
    return c, log, killed


def test_a_kill_during_a_backup_starts_the_backup_first_and_reads_its_abort(monkeypatch):
    c, log, killed = backup_cluster(monkeypatch, {"kind": "backup_aborted", "error": 1326})
    f = MG.KillDuringBackup(c, [c.topology.node("data3")])
    f.inject()
    assert log.sought and c.engine.sent == ["START BACKUP WAIT STARTED"] and killed == [["data3"]]
    assert f.window.params["backup_id"] == 7 and f.window.params["backup_fate"]["kind"] == "backup_aborted"
    assert f.window.verification[0].startswith("backup 7 aborted by the kill (error 1326)")


def test_a_backup_that_completed_before_the_kill_is_no_effective_fault(monkeypatch):
    c, _, killed = backup_cluster(monkeypatch, {"kind": "backup_completed", "text": "Backup 7 ... completed."})
    monkeypatch.setattr(MG.KillDuringBackup, "_revert", lambda self: None)
    f = MG.KillDuringBackup(c, [c.topology.node("data3")])
    with pytest.raises(FaultNotEffective, match="backup 7 completed before the kill took effect"):
        f.inject()
    assert killed == [["data3"]] and not f.active  # reverted (node restart) on the way out


def test_a_backup_whose_end_is_never_logged_is_no_effective_fault(monkeypatch):
    c, _, _ = backup_cluster(monkeypatch, None)
    monkeypatch.setattr(MG.KillDuringBackup, "_revert", lambda self: None)
    f = MG.KillDuringBackup(c, [c.topology.node("data3")])
    with pytest.raises(FaultNotEffective, match="neither completed nor aborted in the cluster log of mgm1"):
        f.inject()


def test_a_kill_during_a_backup_needs_a_cluster_log(monkeypatch):
    c, _, killed = backup_cluster(monkeypatch, None)
    del c.engine.cluster_log_follower
    f = MG.KillDuringBackup(c, [c.topology.node("data3")])
    with pytest.raises(FaultUnsupported):
        f.inject()
    assert c.engine.sent == [] and killed == []
