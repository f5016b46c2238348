"""Error-insert faults without Docker: CMVMI's routing of a code to a block, the codes refused
because they would do nothing, the data node's NDB_TAMPER lines and error log entries (verbatim from
9.7.2's error-insert build), and the fault's contract on a fake cluster: armed only when the node
says so, fired only when its error log says so, never on the management client's word, healed by
ERROR 0 / START / a node restart as the node's state needs, and unsupported where data nodes do
not obey error inserts."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from ndbchaos.engines.ndb import errorinsert as EIN
from ndbchaos.errors import UsageError
from ndbchaos.engines.ndb.faults import errorinsert as EI
from ndbchaos.faults.base import FaultNotEffective, FaultUnsupported

from .test_faults_mgm import Cluster, _fast_wait  # four data nodes 11-14 (data1..data4) and mgm1

FIX = Path(__file__).parent / "fixtures" / "ndb-9.7"


def test_cmvmi_routes_each_range_to_its_block():
    assert [EIN.route(c) for c in (2, 999, 1000, 1999, 5048, 7003, 8054, 9599, 9600, 9999, 10004, 19999)] == [
        "QMGR", "QMGR", "NDBCNTR", "NDBCNTR", "DBLQH", "DBDIH", "DBTC", "TRPMAN", "CMVMI", "CMVMI", "BACKUP",
        "DBUTIL"]
    # ignored, discarded by the master's DIH (NdbRestarts' 39999), dropped
    assert [EIN.route(c) for c in (20000, 29999, 30000, 39999, 49999, 50000)] == [None] * 6


@pytest.mark.parametrize("code, extra, why", [
    ("x", None, "not a whole number"), (0, None, "0 clears"), (1, None, "1 asserts"),
    (39999, None, "routes it to no block"), (25000, None, "routes it to no block"),
    (9999, -1, "must be >= 0"), (9999, "a", "not a whole number"),
])
def test_codes_that_would_do_nothing_are_refused(code, extra, why):
    with pytest.raises(ValueError, match=why):
        EIN.check_code(code, extra)


def test_known_codes_are_on_the_blocks_the_source_says():
    for code, block in ((9999, "CMVMI"), (9998, "CMVMI"), (5048, "DBLQH"), (8057, "DBTC"), (8054, "DBTC"),
                        (7003, "DBDIH"), (7009, "DBDIH"), (7121, "DBDIH"), (6000, "DBDICT"), (5002, "DBLQH"),
                        (10004, "BACKUP"), (10015, "BACKUP")):
        assert EIN.CODES[code].block == block, code
    assert EIN.CODES[9998].exit_code == 6050 and EIN.CODES[9999].exit_code == 2342
    assert {c for c, k in EIN.CODES.items() if k.at_once} == {9998, 9999}


def test_tamper_lines_of_a_real_node_say_what_is_armed():
    lines = EIN.tamper_lines((FIX / "error-insert-9999.data1.log").read_text())
    probe = [t for t in lines if t["new"] == 0]
    assert len(probe) >= 10 and {"DBTC", "DBLQH", "CMVMI"} <= {t["block"] for t in probe}
    crash = [t for t in lines if t["new"] == 9999]
    assert crash == [{"block": "CMVMI", "instance": 0, "old": 0, "new": 9999, "extra": 0,
                      "time": "2026-11-29T07:39:02.397311Z"}]
    assert EIN.armed(lines) == {"CMVMI": 9999}
    assert EIN.armed(lines + [{**crash[0], "new": 0}]) == {}


def test_error_log_entries_name_the_exit_block_and_line():
    (e,) = EIN.error_reports((FIX / "error-log-2342-insert.txt").read_text(), 11)
    assert (e["exit_code"], e["message"], e["error_object"]) == (2342, "Error insert executed (No error)",
                                                                  "CMVMI (Line: 191) 0x00000002")
    (w,) = EIN.error_reports((FIX / "error-log-6050-insert-9998.txt").read_text(), 13)
    assert w["exit_code"] == 6050 and "WatchDog" in w["error_object"]
    assert EIN.error_reports("", 11) == []


# -- the fault on a fake cluster ---------------------------------------------------------------
class Engine:
    """A data node that obeys (or not) error inserts: ERROR arms a code (NDB_TAMPER), a crash code
    writes an error log entry and takes the node out of 'started' after ``fires_after`` polls."""

    name = "ndb"
    TAMPER_WAIT_S = 1.0

    def __init__(self, obeys=True, fires_after=1, fires=True, plain_client=False, exit_code=2342):
        self.obeys, self.fires_after, self.fires, self.plain_client = obeys, fires_after, fires, plain_client
        self.exit_code = exit_code
        self.sent, self.tamper, self.log = [], {}, {}
        self.state = {11: "started", 12: "started", 13: "started", 14: "started"}
        self.pending = {}

    def error_inserts_unavailable(self, cluster):
        return None if self.obeys else "data node data1 did not log NDB_TAMPER after 'ERROR 0'"

    def mgm(self, cluster, command, node=None, timeout=10):
        self.sent.append(command)
        if self.plain_client and " ERROR " in command:
            return 255, "Invalid command: ERROR\n", "mgm1"
        w = command.split()
        if "ERROR" in w:
            nid, code = int(w[0]), int(w[2])
            if self.obeys:
                self.tamper.setdefault(nid, []).append({"block": EIN.route(code) or "ALL", "new": code})
                if code and code in EIN.CODES and EIN.CODES[code].effect == "crash" and self.fires:
                    self.pending[nid] = self.fires_after
            return 0, "\n", "mgm1"
        if "START" in w and w[-1] == "START":
            for i in map(int, w[:-1]):
                self.state[i] = "started"
        if "RESTART" in w:
            for i in map(int, w[:w.index("RESTART")]):
                self.state[i] = "not started"
        return 0, "\n", "mgm1"

    def insert_error(self, cluster, node, code, extra=None):
        return self.mgm(cluster, f"{node.nodeid} ERROR {code}" + (f" {extra}" if extra is not None else ""))

    def tamper_since(self, cluster, node, since):
        return list(self.tamper.get(node.nodeid, []))

    def mgm_report(self, cluster):
        for i, n in list(self.pending.items()):
            if n <= 0:
                del self.pending[i]
                self.state[i] = "starting"
                self.log.setdefault(i, []).append({"exit_code": self.exit_code, "message": "Error insert executed",
                                                   "error_object": "CMVMI (Line: 191) 0x00000002"})
            else:
                self.pending[i] = n - 1
        nodes = {i: SimpleNamespace(started=s == "started",
                                    state_name={"started": "STARTED", "not started": "NOT_STARTED"}.get(s, "STARTING"))
                 for i, s in self.state.items()}
        return SimpleNamespace(node=nodes.get), "mgm1"

    def error_log(self, cluster, node):
        self.mgm_report(cluster)
        return list(self.log.get(node.nodeid, []))

    def recover_nodes(self, cluster, nodes):
        self.recovered = [n.name for n in nodes]


@pytest.fixture(autouse=True)
def running(monkeypatch):
    from ndbchaos.engines.ndb.faults import mgm as MG  # left_started: the wait for the node to leave 'started'
    for mod in (EI, MG):
        monkeypatch.setattr(mod.docker, "container_state", lambda c: "running")
        monkeypatch.setattr(mod, "wait_until", _fast_wait)
    monkeypatch.setattr(EI.time, "sleep", lambda s: None)


def test_a_crash_code_is_armed_fired_and_healed_from_the_nodes_own_word():
    eng = Engine()
    f = EI.ErrorInsert(Cluster(eng), ["data2"], 9999)
    w = f.inject()
    assert eng.sent == ["12 ERROR 9999"]
    assert w.params["fired"]["data2"]["exit_code"] == 2342
    assert "data2 crashed: error 2342" in w.verification[0] and "CMVMI (Line: 191)" in w.verification[0]
    assert "unexpected_exit" not in w.params
    f.heal()
    # it crashed with the insert's exit: its angel restarts it, nothing to clear
    assert eng.sent == ["12 ERROR 9999"] and "restarting by itself" in w.verification[-1]


def test_the_client_saying_ok_is_not_enough():
    eng = Engine()
    eng.tamper_since = lambda cluster, node, since: []  # a plain data node: no NDB_TAMPER
    with pytest.raises(FaultNotEffective, match="did not log NDB_TAMPER"):
        EI.ErrorInsert(Cluster(eng), ["data1"], 9999).inject()
    assert eng.sent[-1] == "11 ERROR 0"  # the failed inject cleared what it may have armed


def test_a_code_that_never_fires_is_not_effective_and_is_cleared():
    eng = Engine(fires=False)
    with pytest.raises(FaultNotEffective, match="not fired within"):
        EI.ErrorInsert(Cluster(eng), ["data1"], 7003, fire_timeout=1).inject()
    assert eng.sent == ["11 ERROR 7003", "11 ERROR 0"]


def test_an_exit_other_than_the_tables_is_recorded():
    eng = Engine(exit_code=2341)
    w = EI.ErrorInsert(Cluster(eng), ["data1"], 9999).inject()
    assert w.params["unexpected_exit"] == {"data1": 2341}


def test_also_codes_go_first_and_a_stall_is_cleared_on_heal():
    eng = Engine()
    f = EI.ErrorInsert(Cluster(eng), ["data3"], 5048, also=[(8057, None)])
    f.inject()
    assert eng.sent[:2] == ["13 ERROR 8057", "13 ERROR 5048"]
    eng2 = Engine()
    s = EI.ErrorInsert(Cluster(eng2), ["data1"], 8057)  # a stall: armed, never a crash
    w = s.inject()
    assert "armed" in w.verification[0] and "fired" not in w.params
    s.heal()
    assert eng2.sent[-1] == "11 ERROR 0" and w.params["heal"]["cleared"] == ["data1"]


def test_in_restart_holds_the_node_then_starts_it():
    eng = Engine()
    w = EI.ErrorInsertInRestart(Cluster(eng), ["data4"], 7121).inject()
    assert eng.sent[:3] == ["14 RESTART -n -a", "14 ERROR 7121", "14 START"]
    assert w.params["fired"]["data4"]["exit_code"] == 2342
    assert w.applied_at == w.params["left_at"]


def test_gap_between_targets_makes_two_losses():
    f = EI.ErrorInsert(Cluster(Engine()), ["data1", "data3"], 9999, gap_s=2.0)
    assert f.simultaneous is False
    assert EI.ErrorInsert(Cluster(Engine()), ["data1", "data3"], 9999).simultaneous is True


def test_unsupported_where_data_nodes_do_not_obey():
    with pytest.raises(FaultUnsupported, match="NDB_TAMPER"):
        EI.ErrorInsert(Cluster(Engine(obeys=False)), ["data1"], 9999).inject()
    galera = SimpleNamespace(name="galera")
    c = Cluster(Engine())
    c.engine = galera
    with pytest.raises(FaultUnsupported, match="galera has no error inserts"):
        EI.ErrorInsert(c, ["data1"], 9999).inject()


@pytest.mark.parametrize("kw, why", [
    ({"code": 39999}, "routes it to no block"), ({"code": 9999, "effect": "explode"}, "effect"),
    ({"code": 9999, "trigger": "gcp"}, "trigger"), ({"code": 9999, "gap_s": -1}, "gap_s"),
    ({"code": 9999, "also": [(1, None)]}, "1 asserts"),
])
def test_bad_arguments_are_one_line_usage_errors(kw, why):
    with pytest.raises(UsageError, match=why):
        EI.ErrorInsert(Cluster(Engine()), ["data1"], **kw)


def test_only_data_nodes():
    with pytest.raises(UsageError, match="data nodes here, not mgm1"):
        EI.ErrorInsert(Cluster(Engine()), ["mgm1"], 9999)


def test_armed_now_reads_only_the_current_process():
    text = (FIX / "error-insert-9999.data1.log").read_text()
    # 9999 was armed, then the node crashed and the angel started a new process: nothing armed
    assert EIN.armed_now(text) == {}
    # the process ended by the crash: nothing armed while the angel starts the next one
    assert EIN.armed_now(text.split("Angel pid")[0]) == {}
    assert EIN.armed_now(text.split("Node shutdown completed")[0]) == {"CMVMI": 9999}
    late = "2026-11-29T08:00:00.000001Z [ndbd] INFO     -- NDB_TAMPER : block DBTC/1 error 0 0 -> 8057 0\n"
    assert EIN.armed_now(text + late) == {"DBTC": 8057}


def test_probe_says_why_a_plain_build_cannot_play():
    class Shell:
        def __init__(self, answer):
            self.answer = answer

        def mgm_report(self, cluster):
            return SimpleNamespace(node=lambda i: SimpleNamespace(started=True)), "mgm1"

        def mgm(self, cluster, command, timeout=10):
            return self.answer

    class Probe(EIN.NdbErrorInserts):
        TAMPER_WAIT_S = 0.05

        def __init__(self, answer, tamper):
            super().__init__(Shell(answer))
            self.tamper = tamper

        def tamper_since(self, cluster, node, since):
            return self.tamper

    c = Cluster(Engine())
    assert "no ERROR command" in Probe((255, "Invalid command: ERROR\n", "mgm1"), []).error_inserts_unavailable(c)
    c = Cluster(Engine())
    assert "built without error insertion" in Probe((0, "\n", "mgm1"), []).error_inserts_unavailable(c)
    c = Cluster(Engine())
    assert Probe((0, "\n", "mgm1"), [{"block": "CMVMI", "new": 0}]).error_inserts_unavailable(c) is None
    assert c._error_insert_probe == ""  # remembered for the cluster


def test_backup_completion_as_ndb_mgm_97_says_it():
    said = ("Waiting for completed, this may take several minutes Node 11: Backup 3 started from node 1 "
            "Node 11: Backup 3 started from node 1 completed StartGCP: 783 StopGCP: 786 #Records: 72120")
    m = EI.BACKUP_COMPLETED.search(said)
    assert m and (m.group(1) or m.group(2)) == "3"
    assert EI.BACKUP_COMPLETED.search("Node 11: Backup 3 started from node 1") is None
    assert EI.BACKUP_COMPLETED.search("Backup 4 failed: 1326: Backup aborted due to node failure") is None


def test_a_hang_is_in_place_when_armed_and_its_end_is_read_at_the_heal():
    eng = Engine()
    eng.tamper_since = lambda cluster, node, since: [{"block": "CMVMI", "new": 9998,
                                                      "time": "2026-11-29T08:01:30.000000Z"}]
    c = Cluster(eng)
    f = EI.ErrorInsert(c, ["data4"], 9998)
    assert f.effect == "hang"
    eng.state[14] = "not connected"  # the peers declared it dead
    w = f.inject()
    assert "hangs data4" in w.verification[0] and "fired" not in w.params
    import datetime as dt
    stamp = dt.datetime(2026, 11, 29, 8, 1, 30, tzinfo=dt.timezone.utc).timestamp()
    assert w.applied_at == round(c.clock.from_wall(stamp), 3)  # the hang began then, not when ndb_mgm returned
    with pytest.raises(FaultNotEffective, match="wrote no error log entry"):
        f.heal()  # the watchdog never ended it: not the code's promise
    f2 = EI.ErrorInsert(Cluster(eng), ["data4"], 9998)
    f2.inject()
    eng.log[14] = [{"exit_code": 6050, "message": "WatchDog terminate", "error_object": "WatchDog.cpp"}]
    f2.heal()
    assert f2.window.params["fired"]["data4"]["exit_code"] == 6050
    assert "unexpected_exit" not in f2.window.params
