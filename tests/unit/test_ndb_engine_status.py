"""NdbEngine.status / recover_nodes / start order without Docker: fake containers, ndb_mgm output
built from the print_nodes/print_status formats, ndbinfo rows as the SQL nodes would return them."""

import time
from types import SimpleNamespace

import pytest

from ndbchaos import topology as TP
from ndbchaos.clock import RunClock
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.engines.ndb.recovery import NdbRecovery
from ndbchaos.engines.ndb.shell import CLUSTERLOG, SQL_END
from ndbchaos.vocabulary import ClusterOptions

V = "8.4.7-ndb-8.4.7"


class FakeContainer:
    def __init__(self, name, status="running"):
        self.name, self.status = name, status
        self.attrs = {"State": {"StartedAt": "t0"}}
        self.actions = []

    def reload(self):
        pass

    def start(self):
        self.actions.append("start")
        self.status = "running"
        self.attrs["State"]["StartedAt"] = "t1"

    def unpause(self):
        self.actions.append("unpause")
        self.status = "running"


def make(states=None):
    nodes = [TP.Node("mgm1", TP.MGM, "c-mgm1", nodeid=1), TP.Node("mgm2", TP.MGM, "c-mgm2", nodeid=2)]
    for i, (nid, ng) in enumerate([(11, 0), (12, 0), (13, 1), (14, 1)], 1):
        nodes.append(TP.Node(f"data{i}", TP.DATA, f"c-data{i}", nodeid=nid, nodegroup=ng))
    nodes += [TP.Node("sql1", TP.SQL, "c-sql1", nodeid=21, serves_sql=True, sql_port=40001),
              TP.Node("sql2", TP.SQL, "c-sql2", nodeid=22, serves_sql=True, sql_port=40002)]
    topo = TP.Topology("p", "ndb", nodes)
    containers = {n.name: FakeContainer(n.name, (states or {}).get(n.name, "running")) for n in nodes}
    cl = SimpleNamespace(topology=topo, options=ClusterOptions(), clock=RunClock(), containers=containers, composed=[])
    cl.container = lambda n: containers[n.name if isinstance(n, TP.Node) else n]
    cl.discover = lambda: topo
    cl.compose = lambda *a, **k: cl.composed.append(a)
    return cl


def show_text(data_status: dict, mgm2=True):
    lines = ["Connected to Management Server at: 127.0.0.1:1186 (using cleartext)", "Cluster Configuration",
             "---------------------", "[ndbd(NDB)]\t4 node(s)"]
    for nid, ng in [(11, 0), (12, 0), (13, 1), (14, 1)]:
        st = data_status.get(nid, "started")
        if st == "not connected":
            lines.append(f"id={nid} (not connected, accepting connect from 10.213.77.{100 + nid})")
        else:
            extra = "" if st == "started" else f", {st}"
            star = ", *" if nid == 11 else ""
            lines.append(f"id={nid}\t@10.213.77.{100 + nid}  ({V}{extra}, Nodegroup: {ng}{star})")
    lines += ["", "[ndb_mgmd(MGM)]\t2 node(s)", f"id=1\t@10.213.77.101  ({V})",
              f"id=2\t@10.213.77.102  ({V})" if mgm2 else "id=2 (not connected, accepting connect from 10.213.77.102)",
              "", "[mysqld(API)]\t6 node(s)", f"id=21\t@10.213.77.121  ({V})", f"id=22\t@10.213.77.122  ({V})",
              "id=31 (not connected, accepting connect from any host)", "",
              "Connected to Management Server at: 127.0.0.1:1186 (using cleartext)"]
    for nid in (11, 12, 13, 14):
        st = data_status.get(nid, "started")
        if st == "not connected":
            lines.append(f"Node {nid}: not connected")
        elif st == "starting":
            lines.append(f"Node {nid}: starting (Last completed phase 5) ({V})")
        else:
            lines.append(f"Node {nid}: {st} ({V})")
    return "\n".join(lines) + "\n"


def rows(ids):
    return [{"node_id": i, "uptime": 100, "status": "STARTED", "start_phase": 0, "config_generation": 1} for i in ids]


ARB = [{"arbitrator": 1, "arb_ticket": "1a2b", "arb_connected": "Yes", "consensus_count": 4}]
MEMB = [{"node_id": i, "president": 11, "arbitrator": 1} for i in (11, 12, 13, 14)]


def engine(cl, mgm_out=None, probe=None, calls=None):
    eng = NdbEngine()
    calls = calls if calls is not None else []

    def fake_exec(cluster, node, cmd, timeout=10):
        calls.append((node.name, cmd))
        if cl.containers[node.name].status != "running":
            return -1, "not running"
        text = " ".join(cmd) if isinstance(cmd, list) else cmd
        if "CLUSTERLOG" in text:
            return 0, ("Connected to Management Server at: 127.0.0.1:1186\n"
                       "Executing CLUSTERLOG STARTUP=15 on node 11 OK!\n")
        if node.role == TP.MGM:
            return (0, mgm_out) if mgm_out is not None else (-1, "Unable to connect")
        # mysql as root_sql runs it: the rows, then the end line its last statement prints
        return 0, ("0\n" if "skip_networking" in text else "") + SQL_END + "\n"

    eng.shell.exec = fake_exec
    eng.state.sql_probe = probe or (lambda node, full=False: {"nodes": rows([11, 12, 13, 14]),
                                                        **({"arbitrator": ARB, "membership": MEMB} if full else {})})
    return eng


def test_healthy_status():
    cl = make()
    st = engine(cl, show_text({})).status(cl)
    assert st.healthy, st.problems
    s = st.summary
    assert s["arbitrator"] == 1 and s["arbitrator_node"] == "mgm1" and s["arbitrator_agreed"]
    assert s["master"] == 11 and s["president"] == 11 and s["data_started"] == 4 and s["mgm_source"] == "mgm1"
    assert s["nodegroups"] == {0: [11, 12], 1: [13, 14]}
    d1 = st.node("data1")
    assert d1.state == "started" and d1.details["source"] == "ndb_mgm" and d1.details["master"]
    assert st.node("sql2").state == "ready" and st.node("mgm1").details["arbitrator"]


def test_one_data_node_killed():
    cl = make({"data1": "exited"})
    eng = engine(cl, show_text({11: "not connected"}),
                 probe=lambda node, full=False: {"nodes": rows([12, 13, 14]),
                                                 **({"arbitrator": ARB, "membership": MEMB} if full else {})})
    st = eng.status(cl)
    assert not st.healthy
    assert st.node("data1").state == "not connected" and st.node("data1").container == "exited"
    assert st.node("sql1").state == "partial cluster"
    assert any(p.startswith("data1: not connected") for p in st.problems)
    assert eng.loss_detected(st, ["data1"]) and st.summary["data_started"] == 3


def test_loss_seen_from_the_survivors_side_when_every_management_server_is_cut_off_from_them():
    """A partition that leaves both ndb_mgmd with the lost node: they report it started and the
    survivors not connected until it shuts itself down, while an SQL node beside the survivors
    already sees the cluster without it (one node group of 3 split 1/2, 9.7.2)."""
    cl = make()
    views = {"sql1": {"error": "1296: Got error 157 'Connection to NDB failed' from NDBINFO"},
             "sql2": {"nodes": rows([12, 13, 14])}}
    eng = engine(cl, show_text({12: "not connected", 13: "not connected", 14: "not connected"}),
                 probe=lambda node, full=False: views[node.name])
    st = eng.status(cl)
    assert not st.healthy and st.node("data1").state == "started"
    assert st.summary["sql_started"] == {"sql2": [12, 13, 14]}
    assert eng.loss_detected(st, ["data1"])
    views["sql2"] = {"nodes": rows([11, 12, 13, 14])}  # the survivors have not excluded it yet
    assert not eng.loss_detected(eng.status(cl), ["data1"])
    views["sql2"] = {"nodes": rows([12, 13])}  # a survivor is missing from the view
    assert not eng.loss_detected(eng.status(cl), ["data1"])
    views["sql2"] = {"error": "2013: Lost connection"}  # no view of the survivors: the mgm's stands
    assert not eng.loss_detected(eng.status(cl), ["data1"])
    views["sql2"] = {"nodes": rows([12, 13, 14])}
    cl.containers["data3"].status = "paused"
    assert not eng.loss_detected(eng.status(cl), ["data1"])


def test_starting_node_shows_phase():
    cl = make()
    st = engine(cl, show_text({12: "starting"})).status(cl)
    assert st.node("data2").state == "starting (phase 5)" and not st.node("data2").healthy


def test_no_management_server_falls_back_to_ndbinfo():
    cl = make({"mgm1": "exited", "mgm2": "exited"})
    noarb = lambda node, full=False: {"nodes": rows([11, 12, 13, 14]),  # noqa: E731
                                      **({"arbitrator": [], "membership": MEMB} if full else {})}
    st = engine(cl, None, probe=noarb).status(cl)
    assert st.node("data1").healthy and st.node("data1").details["source"] == "ndbinfo"
    assert "no management server answers ndb_mgm" in st.problems
    assert any("no agreed arbitrator" in p for p in st.problems)
    assert st.summary["arbitrator"] is None and st.node("mgm1").state == "down"


def test_sql_node_down():
    cl = make({"sql2": "exited"})
    st = engine(cl, show_text({})).status(cl)
    assert st.node("sql2").state == "down" and not st.node("sql2").healthy
    assert st.node("sql1").healthy and st.summary["sql_answering"] == ["sql1"]


def test_recover_single_data_node_is_a_node_restart():
    cl = make({"data1": "exited"})
    engine(cl, show_text({})).recover_nodes(cl, [cl.topology.node("data1")])
    assert cl.containers["data1"].actions == ["start"]
    assert all(not cl.containers[n].actions for n in ("data2", "data3", "data4"))


def test_recover_when_all_data_nodes_are_down_is_a_system_restart():
    cl = make({f"data{i}": "exited" for i in range(1, 5)})
    engine(cl, show_text({})).recover_nodes(cl, [cl.topology.node("data3")])
    assert all(cl.containers[f"data{i}"].actions == ["start"] for i in range(1, 5))


def test_recover_mgm_first_and_reapplies_clusterlog():
    cl = make({"mgm1": "exited", "sql1": "paused"})
    calls = []
    eng = engine(cl, show_text({}), calls=calls)
    eng.recover_nodes(cl, [cl.topology.node("sql1"), cl.topology.node("mgm1")])
    assert cl.containers["mgm1"].actions == ["start"] and cl.containers["sql1"].actions == ["unpause"]
    assert any(n == "mgm1" and CLUSTERLOG in " ".join(c) for n, c in calls)


def test_status_reapplies_clusterlog_after_a_mgm_restart():
    cl = make()
    calls = []
    eng = engine(cl, show_text({}), calls=calls)
    eng.shell._clusterlog_applied = {"mgm1": "t0", "mgm2": "t0"}
    cl.containers["mgm2"].attrs["State"]["StartedAt"] = "t9"  # restarted behind our back
    eng.status(cl)
    assert [n for n, c in calls if CLUSTERLOG in " ".join(c)] == ["mgm2"]


def test_start_order(monkeypatch):
    cl = make()
    order = []
    eng = engine(cl, show_text({}))
    cl.compose = lambda *a, **k: order.append(a[-1] if a[-1].startswith(("mgm", "data", "sql")) else a)
    cl.wait_healthy = lambda timeout: order.append("healthy") or eng.status(cl)
    monkeypatch.setattr(eng.lifecycle, "_check_subnet_free", lambda cluster: None)
    eng.start(cl)
    assert order == ["mgm2", "data4", "sql2", "healthy"]  # last service of each compose call: mgm, data, sql


@pytest.mark.parametrize("text", ["", "Unable to connect with connect string: nodeid=0,127.0.0.1:1186"])
def test_mgm_report_none_when_nothing_answers(text):
    cl = make()
    assert engine(cl, text).mgm_report(cl) == (None, None)


# -- graceful stop, and nodes excluded while unreachable (freeze, partition) ------------------------

def test_graceful_stop_of_a_data_node_goes_through_ndb_mgm():
    cl = make()
    calls = []
    eng = engine(cl, "Connected to management server at 127.0.0.1 port 1186 (using cleartext)\nNode 13 has shutdown.\n",
                 calls=calls)
    how = eng.stop_node(cl, cl.topology.node("data3"), 30)
    assert "13 STOP" in how and any("13 STOP" in " ".join(c) for _, c in calls)


def test_graceful_stop_refused_or_unreachable_says_so():
    from ndbchaos.errors import NdbChaosError
    cl = make()
    eng = engine(cl, "Connected to management server at 127.0.0.1 port 1186 (using cleartext)\n"
                     "Shutdown failed.\n* 2002: Stop failed\n*        Node shutdown would cause system crash\n")
    with pytest.raises(NdbChaosError) as ei:
        eng.stop_node(cl, cl.topology.node("data3"), 30)
    assert "refused" in str(ei.value) and "system crash" in str(ei.value)
    cl = make({"mgm1": "exited", "mgm2": "exited"})
    with pytest.raises(NdbChaosError) as ei:
        engine(cl, None).stop_node(cl, cl.topology.node("data3"), 30)
    assert "no management server answers" in str(ei.value)


def test_sql_and_management_nodes_stop_on_sigterm():
    cl = make()
    stopped = []
    cl.containers["sql1"].stop = lambda timeout: stopped.append(timeout)
    assert "SIGTERM" in engine(cl, show_text({})).stop_node(cl, cl.topology.node("sql1"), 20) and stopped == [20]


def test_excluded_running_and_rejoin():
    # data2 frozen (paused) and declared dead; data3 exited (not "running"); data1 a member
    cl = make({"data2": "paused", "data3": "exited"})
    eng = engine(cl, show_text({12: "not connected", 13: "not connected"}),
                 probe=lambda node, full=False: {"nodes": rows([11, 14])})
    nodes = [cl.topology.node(n) for n in ("data1", "data2", "data3", "sql1")]
    assert [n.name for n in eng.excluded_running(cl, nodes)] == ["data2"]
    # after the thaw it shuts itself down (2315), then gets a node restart
    c = cl.containers["data2"]
    c.status = "exited"
    out = eng.rejoin(cl, [cl.topology.node("data2")])
    assert "shut itself down" in out and "node restart of data2" in out and c.actions == ["start"]


def test_a_node_the_management_server_lost_but_an_sql_node_serves_with_was_not_excluded():
    """A partition that leaves both ndb_mgmd with the side that shuts down: they report the
    survivors "not connected", but an SQL node on the surviving side sees them STARTED (one
    node group of 3 split 1/2 with the arbitrator beside the 1, 9.7.2). Only the node that no
    SQL node sees is left to rejoin; when no SQL node answers, the management server's view
    stands."""
    cl = make()
    nodes = [cl.topology.node(n) for n in ("data1", "data2", "data3")]
    mgm = show_text({11: "not connected", 12: "not connected", 13: "not connected"})
    views = {"sql1": {"error": "1296: Got error 157 'Connection to NDB failed' from NDBINFO"},
             "sql2": {"nodes": rows([12, 13])}}
    eng = engine(cl, mgm, probe=lambda node, full=False: views[node.name])
    assert [n.name for n in eng.excluded_running(cl, nodes)] == ["data1"]
    views["sql2"] = {"nodes": [dict(r, status="STARTING") for r in rows([12, 13])]}
    assert [n.name for n in eng.excluded_running(cl, nodes)] == ["data1", "data2", "data3"]
    views["sql2"] = {"error": "2013: Lost connection"}
    assert [n.name for n in eng.excluded_running(cl, nodes)] == ["data1", "data2", "data3"]


def test_rejoin_of_a_node_that_does_not_shut_down_is_an_error(monkeypatch):
    from ndbchaos.errors import NdbChaosError
    cl = make()
    eng = engine(cl, show_text({12: "not connected"}))
    monkeypatch.setattr(NdbRecovery, "THAW_SHUTDOWN_BOUND", 0.3)
    with pytest.raises(NdbChaosError) as ei:
        eng.rejoin(cl, [cl.topology.node("data2")])
    assert "still runs" in str(ei.value)


def test_a_data_node_with_only_its_angel_left_has_stopped():
    """After a forced shutdown while cut off from every ndb_mgmd the angel lingers (120 s on
    9.7.2): the container runs, the data node does not."""
    cl = make({"data3": "exited"})
    eng = NdbEngine()
    counts = {"data1": "2\n", "data2": "1\n"}
    eng.shell.exec = lambda cluster, node, cmd, timeout=10: (0, counts[node.name])
    assert not eng.process_stopped(cl, cl.topology.node("data1"))
    assert eng.process_stopped(cl, cl.topology.node("data2"))
    assert eng.process_stopped(cl, cl.topology.node("data3"))  # container exited
    eng.shell.exec = lambda cluster, node, cmd, timeout=10: (-1, "container is paused")
    assert not eng.process_stopped(cl, cl.topology.node("data1"))  # cannot tell: not stopped
    assert not eng.process_stopped(cl, cl.topology.node("sql1"))


def test_arbitrator_in_effect_comes_from_ndbinfo_not_the_rank_order():
    cl = make()
    arb2 = [{"arbitrator": 2, "arb_ticket": "1a2b", "arb_connected": "Yes", "consensus_count": 4}]
    eng = engine(cl, show_text({}), probe=lambda node, full=False: {
        "nodes": rows([11, 12, 13, 14]), **({"arbitrator": arb2, "membership": MEMB} if full else {})})
    assert eng.arbitrator_in_effect(cl).name == "mgm2"
    exp = eng.expectation("mgmnode_loss", cl, lost=1)
    assert exp.details["lost"] == ["mgm2"] and exp.details["arbitrator_before"] == 2
    assert exp.details["arbitrator_after"] == 1  # losing mgm2 moves it to mgm1


# -- the monitoring connection: a stale one is replaced, a slow failure is not retried ------------------

class _Conn:
    def __init__(self, fail=None, delay=0.0):
        self.fail, self.delay, self.closed = fail, delay, False

    def cursor(self):
        conn = self

        class Cur:
            def close(self):
                pass

            def execute(self, *_):
                pass

        if conn.fail:
            time.sleep(conn.delay)
            raise conn.fail
        return Cur()

    def close(self):
        self.closed = True


def test_a_stale_monitoring_connection_is_replaced_not_reported():
    import mysql.connector.errors as ME

    from ndbchaos.engines.parts import Account, Monitor
    from ndbchaos.topology import Node
    e = Monitor(Account("chaos", "chaos", "ndbchaos"))
    node = Node("sql1", "sql", "sql1", "sql1", None, 21, "127.0.0.1")
    stale = _Conn(fail=ME.OperationalError(msg="MySQL Connection not available."))
    e._conns["sql1"] = stale
    opened = []

    def fresh(n):
        if n.name not in e._conns:
            e._conns[n.name] = _Conn()
            opened.append(n.name)
        return e._conns[n.name]

    e._open = fresh
    assert e.query(node, lambda cur: {"nodes": [11]}) == {"nodes": [11]}
    assert stale.closed and opened == ["sql1"]
    # a failure that took time (a frozen server: the read timeout) is reported, not retried
    slow = _Conn(fail=ME.OperationalError(msg="timed out"), delay=0.6)
    e._conns["sql1"] = slow
    opened.clear()
    out = e.query(node, lambda cur: {"nodes": [11]})
    assert "timed out" in out["error"] and opened == []


def test_status_probes_ask_each_management_server_once():
    # ndb_mgm retries a refused connection 12 x 5 s by default: a status sample that reached a
    # management server just killed (its host still up) waited out its timeout instead of moving on
    cl = make()
    calls = []
    eng = engine(cl, show_text({}), calls=calls)
    eng.mgm_report(cl)
    script = " ".join(calls[0][1])
    assert script.count("ndb_mgm ") == 2 and script.count("--connect-retries=1") == 2, script
