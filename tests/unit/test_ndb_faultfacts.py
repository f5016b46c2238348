"""NdbEngine's facts for the fault catalogue, without Docker: probe_ports, master_node,
options_from_topology, partition_outcome (docs/facts.md NDB 5.1), node_rejoining, loss_detected
and expectation(lost=...).

Topologies are built from container labels the way Cluster.discover() builds them; ndb_mgm
output follows the verbatim samples of docs/facts.md NDB 2.1 (SHOW) and 2.2 (ALL STATUS)."""

from types import SimpleNamespace

import pytest

from ndbchaos import topology as TP
from ndbchaos.clock import RunClock
from ndbchaos.resources import COMPOSE_DIR
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.engines.ndb import layout as ndblayout
from ndbchaos.engines.ndb import rules as ndbrules
from ndbchaos.engines.ndb.rules import arbitration_check
from ndbchaos.errors import UsageError
from ndbchaos.vocabulary import ClusterOptions

V = "mysql-8.0.44 ndb-8.0.44"

# docs/facts.md NDB 2.1, verbatim (8.0 / 8.4 manual)
SHOW_SAMPLE = """ndb_mgm> SHOW
Connected to Management Server at: localhost:1186
Cluster Configuration
---------------------
[ndbd(NDB)]     2 node(s)
id=1    @10.0.10.6  (mysql-8.0.44 ndb-8.0.44, Nodegroup: 0, *)
id=2    @10.0.10.8  (mysql-8.0.44 ndb-8.0.44, Nodegroup: 0)

[ndb_mgmd(MGM)] 1 node(s)
id=3    @10.0.10.2  (mysql-8.0.44 ndb-8.0.44)

[mysqld(API)]   2 node(s)
id=4    @10.0.10.10  (mysql-8.0.44 ndb-8.0.44)
id=5 (not connected, accepting connect from any host)
"""

DEFAULT = [  # (name, role, nodeid, nodegroup) as in ndbchaos/data/compose/ndb.yml
    ("mgm1", TP.MGM, 1, None), ("mgm2", TP.MGM, 2, None),
    ("data1", TP.DATA, 11, 0), ("data2", TP.DATA, 12, 0), ("data3", TP.DATA, 13, 1), ("data4", TP.DATA, 14, 1),
    ("sql1", TP.SQL, 21, None), ("sql2", TP.SQL, 22, None),
]
SMALL = [("mgm1", TP.MGM, 1, None), ("data1", TP.DATA, 2, 0), ("data2", TP.DATA, 3, 0), ("sql1", TP.SQL, 4, None)]


class FakeContainer:
    def __init__(self, status="running"):
        self.status = status
        self.attrs = {"State": {"StartedAt": "t0"}}

    def reload(self):
        pass


def topology(spec=DEFAULT, subnet="10.213.77", ips=True, sql_ports=True):
    nodes = []
    for name, role, nid, ng in spec:
        labels = {TP.PROJECT: "p", TP.ENGINE: "ndb", TP.ROLE: role, TP.NODE: name, TP.NODEID: str(nid),
                  TP.NODEGROUP: "" if ng is None else str(ng)}
        nodes.append(TP.Node.from_labels(f"p-{name}-1", f"id-{name}", labels,
                                        ip=f"{subnet}.{100 + nid}" if ips else None,
                                        sql_port=(40000 + nid) if role == TP.SQL and sql_ports else None,
                                        serves_sql=role == TP.SQL))
    return TP.Topology("p", "ndb", nodes)


def cluster(spec=DEFAULT, states=None, options=None, **kw):
    topo = topology(spec, **kw)
    containers = {n.name: FakeContainer((states or {}).get(n.name, "running")) for n in topo.nodes}
    cl = SimpleNamespace(topology=topo, options=options if options is not None else ClusterOptions(), clock=RunClock(),
                         containers=containers, project="p")
    cl.container = lambda n: containers[n.name if isinstance(n, TP.Node) else n]
    cl.discover = lambda: topo
    return cl


def show(data: dict | None = None, master=11, api=None, mgm2="connected"):
    """SHOW + ALL STATUS of the default layout in the formats of docs/facts.md NDB 2.1 / 2.2.
    ``data``: node id -> started | starting | not connected; ``api``: node id -> connected |
    not connected."""
    data, api = data or {}, api or {}
    lines = ["Connected to Management Server at: localhost:1186", "Cluster Configuration", "---------------------",
             "[ndbd(NDB)]     4 node(s)"]
    for nid, ng in ((11, 0), (12, 0), (13, 1), (14, 1)):
        st = data.get(nid, "started")
        if st == "not connected":
            lines.append(f"id={nid} (not connected, accepting connect from 10.213.77.{100 + nid})")
        else:
            lines.append(f"id={nid}    @10.213.77.{100 + nid}  ({V}{'' if st == 'started' else ', ' + st}, "
                         f"Nodegroup: {ng}{', *' if nid == master else ''})")
    lines += ["", "[ndb_mgmd(MGM)] 2 node(s)", f"id=1    @10.213.77.101  ({V})",
              f"id=2    @10.213.77.102  ({V})" if mgm2 == "connected"
              else "id=2 (not connected, accepting connect from 10.213.77.102)",
              "", "[mysqld(API)]   6 node(s)"]
    for nid in (21, 22):
        if api.get(nid, "connected") == "connected":
            lines.append(f"id={nid}    @10.213.77.{100 + nid}  ({V})")
        else:
            lines.append(f"id={nid} (not connected, accepting connect from 10.213.77.{100 + nid})")
    lines += ["id=31 (not connected, accepting connect from any host)", "",
              "Connected to Management Server at: localhost:1186"]
    for nid in (11, 12, 13, 14):
        st = data.get(nid, "started")
        if st == "not connected":
            lines.append(f"Node {nid}: not connected")
        elif st == "starting":
            lines.append(f"Node {nid}: starting (Last completed phase 4) ({V})")
        else:
            lines.append(f"Node {nid}: {st} ({V})")
    return "\n".join(lines) + "\n"


def rows(ids, starting=None):
    starting = starting or {}
    return [{"node_id": i, "uptime": 100, "status": "STARTING" if i in starting else "STARTED",
             "start_phase": starting.get(i, 0), "config_generation": 1} for i in ids]


ARB1 = [{"arbitrator": 1, "arb_ticket": "1a2b", "arb_connected": "Yes", "consensus_count": 4}]
MEMB = [{"node_id": i, "president": 11, "arbitrator": 1} for i in (11, 12, 13, 14)]


def engine(cl, mgm_out=None, views=None):
    """An engine whose container execs and SQL probes are fakes. ``views``: SQL node name ->
    what sql_probe returns (default: every data node STARTED, arbitrator 1, president 11)."""
    eng = NdbEngine()

    def fake_exec(cluster, node, cmd, timeout=10):
        if cl.containers[node.name].status != "running":
            return -1, "not running"
        text = " ".join(cmd) if isinstance(cmd, list) else cmd
        if "CLUSTERLOG" in text:
            return 0, "Connected to Management Server at: localhost:1186\n"
        if node.role == TP.MGM:
            return (0, mgm_out) if mgm_out is not None else (-1, "Unable to connect with connect string")
        return 0, ""

    def fake_probe(node, full=False):
        v = (views or {}).get(node.name) or {"nodes": rows([11, 12, 13, 14]), "arbitrator": ARB1,
                                             "membership": MEMB}
        if "error" in v:
            return dict(v)
        out = {"nodes": v["nodes"]}
        if full:
            out.update(arbitrator=v.get("arbitrator", ARB1), membership=v.get("membership", MEMB))
        return out

    eng.shell.exec = fake_exec
    eng.state.sql_probe = fake_probe
    return eng


# -- probe_ports ----------------------------------------------------------------------------------

def test_probe_ports_default_and_small_layouts():
    eng = NdbEngine()
    for spec in (DEFAULT, SMALL):
        topo = topology(spec)
        got = {n.name: eng.probe_ports(n) for n in topo.nodes}
        assert {k: v for k, v in got.items() if k.startswith("mgm")} == {n: [1186] for n in got if n.startswith("mgm")}
        assert all(got[n.name] == [2202] for n in topo.data_nodes)
        assert all(got[n.name] == [3306] for n in topo.role(TP.SQL))


def test_probe_ports_come_from_config_ini(tmp_path, monkeypatch):
    ini = tmp_path / "config.ini"
    ini.write_text((COMPOSE_DIR / "ndb" / "config.ini").read_text()
                   .replace("ServerPort=2202", "ServerPort=2399")
                   .replace("NodeId=2\nHostName=10.213.77.102", "NodeId=2\nHostName=10.213.77.102\nPortNumber=1999"))
    monkeypatch.setitem(ndblayout.LAYOUTS, "default", ("ndb.yml", str(ini), "ndb/my.cnf", "10.213.77"))
    eng = NdbEngine()
    topo = topology()
    assert eng.probe_ports(topo.node("data3")) == [2399]
    assert eng.probe_ports(topo.node("mgm2")) == [1999] and eng.probe_ports(topo.node("mgm1")) == [1186]
    # a data node the config does not know: the [ndbd default] ServerPort still applies
    stray = TP.Node("dataX", TP.DATA, "p-dataX-1", nodeid=77, nodegroup=0)
    assert eng.probe_ports(stray) == [2399]
    with pytest.raises(UsageError):
        eng.probe_ports(TP.Node("h", TP.HELPER, "p-h-1"))


# -- master_node ----------------------------------------------------------------------------------

def test_master_from_the_verbatim_show_sample():
    spec = [("data1", TP.DATA, 1, 0), ("data2", TP.DATA, 2, 0), ("mgm1", TP.MGM, 3, None),
            ("sql1", TP.SQL, 4, None)]
    cl = cluster(spec, sql_ports=False)
    assert engine(cl, SHOW_SAMPLE).master_node(cl).name == "data1"


def test_master_from_show_on_the_default_layout():
    cl = cluster()
    assert engine(cl, show(master=13)).master_node(cl).name == "data3"
    # the first management node is down: the second answers
    cl = cluster(states={"mgm1": "exited"})
    assert engine(cl, show(master=12)).master_node(cl).name == "data2"


def test_master_falls_back_to_ndbinfo_membership_president():
    cl = cluster(states={"mgm1": "exited", "mgm2": "exited"})
    memb = [{"node_id": i, "president": 14, "arbitrator": 2} for i in (11, 12, 13, 14)]
    view = {"nodes": rows([11, 12, 13, 14]), "membership": memb}
    assert engine(cl, None, views={"sql1": view}).master_node(cl).name == "data4"
    split = [{"node_id": 11, "president": 11}, {"node_id": 13, "president": 13}]  # they disagree
    assert engine(cl, None, views={"sql1": {"nodes": [], "membership": split},
                                   "sql2": {"error": "2003: refused"}}).master_node(cl) is None
    assert engine(cl, None, views={"sql1": {"error": "2003: refused"},
                                   "sql2": {"error": "2003: refused"}}).master_node(cl) is None
    # nothing answers and no SQL port is known
    cl = cluster(states={"mgm1": "exited", "mgm2": "exited"}, sql_ports=False)
    assert engine(cl, None).master_node(cl) is None


# -- options_from_topology ------------------------------------------------------------------------

def test_options_from_topology():
    eng = NdbEngine()
    assert eng.options_from_topology(topology()).given() == {"ndb_layout": "default"}
    assert eng.options_from_topology(topology(SMALL, subnet="10.213.78")).given() == {"ndb_layout": "small"}
    assert eng.options_from_topology(topology(ips=False)).given() == {"ndb_layout": "default"}
    # started with NDBCHAOS_NDB_SUBNET=10.9.8: the addresses say so
    opts = eng.options_from_topology(topology(subnet="10.9.8"))
    assert opts.given() == {"ndb_layout": "default", "ndb_subnet": "10.9.8"}
    # a removed SQL container does not change the shape
    assert eng.options_from_topology(topology(DEFAULT[:-1])).given() == {"ndb_layout": "default"}
    # the options reproduce the shape: the same data nodes and node groups as config.ini
    cfg = eng.config(ClusterOptions(ndb_layout="small"))
    assert [n.node_id for n in cfg.data_nodes] == [2, 3] and cfg.node_groups() == {0: [2, 3]}
    with pytest.raises(UsageError):
        eng.options_from_topology(topology([("data1", TP.DATA, 5, 0), ("data2", TP.DATA, 6, 0)]))
    with pytest.raises(UsageError):
        eng.options_from_topology(topology([("mgm1", TP.MGM, 1, None)]))


# -- partition_outcome ----------------------------------------------------------------------------

def test_arbitration_check_in_qmgr_order():
    groups = {0: {11, 12}, 1: {13, 14}}
    alive = {11, 12, 13, 14}
    # one of four lost: a complete node group wins first; the real 9.7.2 president logged exactly
    # this text when node 11 was killed (fixtures/ndb-9.7), as bug #116350's data node did
    assert arbitration_check(groups, alive, {12, 13, 14}) == ("win", "Arbitration check won - node group majority")
    # NoOfReplicas=3, five groups: all groups present, one complete, 7 of 15 -> Qmgr wins (the
    # order of docs/facts.md NDB 5.1 would say "less than 1/2 nodes left")
    g5 = {g: {3 * g + 1, 3 * g + 2, 3 * g + 3} for g in range(5)}
    surv = {1, 2, 3, 4, 7, 10, 13}
    every = set().union(*g5.values())
    assert arbitration_check(g5, every, surv) == ("win", "Arbitration check won - node group majority")


def outcome(comps, spec=DEFAULT, **kw):
    opts = ClusterOptions(ndb_layout="small") if spec is SMALL else ClusterOptions()
    cl = cluster(spec, sql_ports=False, options=opts)
    return NdbEngine().partition_outcome(cl, comps, **kw)


def test_halves_with_the_arbitrator_on_one_side():
    out = outcome([["data1", "data3", "mgm1"], ["data2", "data4"]])
    assert out["serving"] == [["data1", "data3", "mgm1"]] and out["stopped"] == [["data2", "data4"]]
    assert out["arbitrator"] == 1 and out["race"] == []
    r = out["rule"]
    assert r.startswith("docs/facts.md NDB 5.1") and "2 of 4 (2*2 = 4)" in r
    assert "'Network partitioning - arbitration required'" in r
    assert "'Arbitration won - positive reply from node 1'" in r and "shutdown (2305)" in r
    assert "SQL nodes do not vote" in r
    assert [d.get("exit_code") for d in out["decisions"]] == [None, 2305]


def test_halves_by_node_group_lose_both():
    out = outcome([["data1", "data2", "mgm1", "sql1"], ["data3", "data4", "mgm2", "sql2"]])
    assert out["serving"] == [] and len(out["stopped"]) == 2 and out["sql_serving"] == []
    assert out["rule"].count("'Arbitration check lost - missing node group'") == 2


def test_isolating_one_data_node():
    rest = ["data2", "data3", "data4", "mgm1", "mgm2", "sql1", "sql2"]
    out = outcome([["data1"], rest])
    assert out["serving"] == [rest] and out["stopped"] == [["data1"]]
    assert "1 of 4 (2*1 < 4)" in out["rule"] and "3 of 4 (2*3 > 4)" in out["rule"]
    assert "{data1}: data nodes 11 = 1 of 4 (2*1 < 4), node groups present [0], complete none -> " \
           "'Arbitration check lost - missing node group' -> shutdown (2305)" in out["rule"]
    # Qmgr's order: a complete node group wins before the count is looked at (bug #116350's log)
    assert "'Arbitration check won - node group majority'" in out["rule"]
    assert out["sql_serving"] == ["sql1", "sql2"]
    # the isolated node must shut itself down, once it has found its 3 peers around the ring:
    # 3 x 5 x HeartbeatIntervalDbDb (1 s) + ArbitrationTimeout (3 s) + observation slack
    assert out["shut_down"] == ["data1"] and out["exit_codes"] == {"data1": 2305}
    assert out["decision_bound_s"] == pytest.approx(3 * 5 * 1.0 + 3.0 + ndbrules.OBSERVATION_SLACK)
    assert "heartbeat ring" in out["rule"]


def test_split_halves_shut_down_bounds():
    out = outcome([["data1", "data3", "mgm1"], ["data2", "data4"]])
    assert out["shut_down"] == ["data2", "data4"] and out["exit_codes"] == {"data2": 2305, "data4": 2305}
    # the losing half: 2 ring rounds for its president, one more for its peer (9.7.2 logs)
    assert out["decision_bound_s"] == pytest.approx(3 * 5 * 1.0 + 3.0 + ndbrules.OBSERVATION_SLACK)
    # the winning half finds the other two one after the other, then asks the arbitrator
    assert out["detection_bound_s"] == pytest.approx(2 * 5 * 1.0 + 3.0 + ndbrules.OBSERVATION_SLACK)
    nobody = outcome([["data1", "data2", "data3", "data4", "mgm1", "mgm2", "sql1", "sql2"]])
    assert nobody["shut_down"] == [] and nobody["decision_bound_s"] is None and nobody["detection_bound_s"] is None


def test_arbitrator_isolated_from_both_halves():
    out = outcome([["mgm1"], ["data1", "data3", "mgm2", "sql1"], ["data2", "data4", "sql2"]])
    assert out["serving"] == [] and len(out["stopped"]) == 3 and out["sql_serving"] == []
    assert out["rule"].count("arbitrator mgm1 (node 1) is not here -> shutdown (2305)") == 2
    assert "UNVERIFIED" in out["rule"] and "next candidate" in out["rule"]


def test_arbitrator_cut_off_alone_moves_to_the_next_candidate():
    rest = ["data1", "data2", "data3", "data4", "mgm2", "sql1", "sql2"]
    out = outcome([["mgm1"], rest])
    assert out["serving"] == [rest] and out["stopped"] == [["mgm1"]]
    assert "no data node lost" in out["rule"] and "selects the next candidate it reaches (node 2)" in out["rule"]


def test_small_layout_single_loss_needs_the_arbitrator():
    out = outcome([["data1", "mgm1"], ["data2", "sql1"]], spec=SMALL)
    assert out["serving"] == [["data1", "mgm1"]] and out["sql_serving"] == []
    assert "1 of 2 (2*1 = 2)" in out["rule"]
    assert "UNVERIFIED" not in out["rule"]  # one candidate only: no other arbitrator to race to


def test_arbitrator_given_none_and_bridging():
    comps = [["data1", "data3"], ["data2", "data4", "mgm2"]]
    assert outcome(comps, arbitrator="mgm2")["serving"] == [["data2", "data4", "mgm2"]]
    assert outcome(comps, arbitrator=2)["serving"] == [["data2", "data4", "mgm2"]]
    none = outcome(comps, arbitrator=None)
    assert none["serving"] == [] and "no arbitrator available" in none["rule"]
    # mgm1 untouched (in no component) reaches both sides: the first requester wins
    race = outcome(comps)
    assert race["serving"] == [] and race["stopped"] == [] and race["race"] == comps
    with pytest.raises(UsageError):
        outcome(comps, arbitrator="mgm9")


def test_alive_and_missing_data_nodes():
    # data2 was already dead: 3 alive before; {data1,data3} is 2 of 3 -> won without arbitration
    out = outcome([["data1", "data3"], ["data4", "mgm1"]], alive=["data1", "data3", "data4"])
    assert out["serving"] == [["data1", "data3"]] and "2 of 3 (2*2 > 3)" in out["rule"]
    # without alive=, a data node in no component counts as lost
    out = outcome([["data1", "data3", "mgm1"], ["data4"]])
    assert out["lost_data_nodes"] == [12] and out["serving"] == [["data1", "data3", "mgm1"]]


def test_partition_outcome_rejects_unclean_input():
    with pytest.raises(UsageError):
        outcome([["data1", "data2"], ["data2", "data3"]])
    with pytest.raises(UsageError):
        outcome([["data1"], ["nope"]])


def test_running_arbitrator_from_containers_and_ndbinfo():
    comps = [["data1", "data3", "mgm1"], ["data2", "data4", "mgm2"]]
    cl = cluster(states={"mgm1": "paused"}, sql_ports=False)
    out = engine(cl).partition_outcome(cl, comps)
    assert out["arbitrator"] == 2 and out["serving"] == [comps[1]] and "running candidates" in out["arbitrator_source"]
    # ndbinfo says mgm2 arbitrates (it took over earlier and kept the role) although mgm1 runs
    cl = cluster()
    arb2 = [{"arbitrator": 2, "arb_ticket": "x", "arb_connected": "Yes", "consensus_count": 4}]
    eng = engine(cl, views={"sql1": {"nodes": rows([11, 12, 13, 14]), "arbitrator": arb2}})
    out = eng.partition_outcome(cl, comps)
    assert out["arbitrator"] == 2 and out["serving"] == [comps[1]] and "ndbinfo" in out["arbitrator_source"]


# -- node_rejoining -------------------------------------------------------------------------------

def test_data_node_in_a_start_phase_is_rejoining():
    cl = cluster()
    st = engine(cl, show({12: "starting"})).status(cl)
    assert st.node("data2").state == "starting (phase 4)"
    eng = NdbEngine()
    assert eng.node_rejoining(st, "data2")
    assert not eng.node_rejoining(st, "data1")  # started


def test_data_node_not_connected_or_down_is_not_rejoining():
    cl = cluster(states={"data2": "exited"})
    st = engine(cl, show({12: "not connected"})).status(cl)
    assert not NdbEngine().node_rejoining(st, "data2")
    cl = cluster()  # container started, the process has not reached the management server yet
    st = engine(cl, show({12: "not connected"})).status(cl)
    assert not NdbEngine().node_rejoining(st, "data2")


def test_data_node_rejoining_from_ndbinfo_start_phase():
    cl = cluster(states={"mgm1": "exited", "mgm2": "exited"})
    view = {"nodes": rows([11, 12, 13, 14], starting={13: 5}), "arbitrator": ARB1, "membership": MEMB}
    st = engine(cl, None, views={"sql1": view, "sql2": view}).status(cl)
    assert st.node("data3").details["source"] == "ndbinfo" and st.node("data3").details["start_phase"] == 5
    assert NdbEngine().node_rejoining(st, "data3") and not NdbEngine().node_rejoining(st, "data4")


def test_sql_node_rejoining():
    cl = cluster()
    partial = {"nodes": rows([11, 12]), "arbitrator": ARB1, "membership": MEMB}
    st = engine(cl, show(), views={"sql2": partial}).status(cl)
    assert st.node("sql2").state == "partial cluster"
    assert NdbEngine().node_rejoining(st, "sql2") and not NdbEngine().node_rejoining(st, "sql1")
    # it misses only data nodes that are down themselves: not rejoining, just the cluster's state
    cl = cluster(states={"data3": "exited", "data4": "exited"})
    st = engine(cl, show({13: "not connected", 14: "not connected"}), views={"sql2": partial}).status(cl)
    assert not NdbEngine().node_rejoining(st, "sql2")
    # mysqld runs and has joined as an API node, but accepts no clients yet (ndb-wait-connected)
    cl = cluster()
    refused = {"error": "2003: Can't connect"}
    st = engine(cl, show(), views={"sql2": refused}).status(cl)
    assert st.node("sql2").state == "unreachable" and NdbEngine().node_rejoining(st, "sql2")
    st = engine(cl, show(api={22: "not connected"}), views={"sql2": refused}).status(cl)
    assert not NdbEngine().node_rejoining(st, "sql2")


# -- loss_detected (ndb.md 5: survivors started, lost nodes not connected) --------------------------

def test_loss_detected_needs_not_connected_and_started_survivors():
    eng = NdbEngine()
    cl = cluster(states={"data1": "exited"})
    st = engine(cl, show({11: "not connected"}, master=12),
                views={s: {"nodes": rows([12, 13, 14])} for s in ("sql1", "sql2")}).status(cl)
    assert eng.loss_detected(st, ["data1"])
    # killed, but the management server still lists it as started: not detected yet
    st = engine(cl, show({}), views={s: {"nodes": rows([12, 13, 14])} for s in ("sql1", "sql2")}).status(cl)
    assert not eng.loss_detected(st, ["data1"])
    # paused (frozen): started until the heartbeats run out
    cl = cluster(states={"data1": "paused"})
    st = engine(cl, show({})).status(cl)
    assert not st.node("data1").healthy and not eng.loss_detected(st, ["data1"])
    # a survivor still starting
    cl = cluster(states={"data1": "exited"})
    st = engine(cl, show({11: "not connected", 12: "starting"})).status(cl)
    assert not eng.loss_detected(st, ["data1"])


def test_loss_detected_sql_and_management_nodes():
    eng = NdbEngine()
    cl = cluster(states={"sql2": "exited"})
    assert eng.loss_detected(engine(cl, show(api={22: "not connected"})).status(cl), ["sql2"])
    cl = cluster(states={"sql2": "paused"})  # the data nodes still count the API node in
    assert not eng.loss_detected(engine(cl, show()).status(cl), ["sql2"])
    cl = cluster(states={"mgm2": "exited"})
    assert eng.loss_detected(engine(cl, show(mgm2="not connected")).status(cl), ["mgm2"])
    cl = cluster(states={"mgm2": "paused"})
    assert not eng.loss_detected(engine(cl, show()).status(cl), ["mgm2"])


# -- expectation(lost=...) and keywords ------------------------------------------------------------

GENERIC = [("datanode_loss", {"lost": 1}), ("nodegroup_loss", {}), ("mgmnode_loss", {}), ("sqlnode_loss", {}),
           ("partition_halves_arbitrator_side", {})]


@pytest.mark.parametrize("family,kw", GENERIC)
def test_generic_scenario_calls(family, kw):
    cl = cluster(sql_ports=False)
    for extra in ({}, {"lost": 1}, {"lost": 1, "graceful": True, "whatever": object()}):
        e = NdbEngine().expectation(family, cl, **{**kw, **extra})
        assert isinstance(e.survivors_serve, bool) and isinstance(e.cluster_survives, bool)
        assert e.detection_bound_s > 0 and e.recovery_bound_s > 0
        assert e.recovery in ("node_restart", "system_restart") and e.rule.startswith("docs/facts.md NDB")
    assert "whatever" in e.details["ignored_keywords"] and "graceful" in e.details["ignored_keywords"]


def test_lost_counts():
    eng, cl = NdbEngine(), cluster(sql_ports=False)
    one = eng.expectation("datanode_loss", cl, lost=1)
    assert one.details["lost"] == ["data1"] and one.cluster_survives and one.details["lost_choice"]["count"] == 1
    two = eng.expectation("datanode_loss", cl, lost=2)  # one per node group: survivable
    assert two.details["lost"] == ["data1", "data3"] and two.cluster_survives
    assert "arbitration required" in two.rule
    three = eng.expectation("datanode_loss", cl, lost=3)
    assert not three.cluster_survives and three.recovery == "system_restart"
    given = eng.expectation("datanode_loss", cl, lost=1, nodes=["data4"])
    assert given.details["lost"] == ["data4"] and "lost_choice" not in given.details
    for bad in ({"lost": 0}, {"lost": 5}, {"lost": "x"}, {"lost": 2, "nodes": ["data1"]}):
        with pytest.raises(UsageError):
            eng.expectation("datanode_loss", cl, **bad)
    both = eng.expectation("mgmnode_loss", cl, lost=2)
    assert both.details["lost"] == ["mgm1", "mgm2"] and both.details["arbitrator_after"] is None
    assert eng.expectation("mgmnode_loss", cl, lost=1).details["lost"] == ["mgm1"]
    sql = eng.expectation("sqlnode_loss", cl, lost=2)
    assert sql.details["lost"] == ["sql1", "sql2"] and not sql.survivors_serve and sql.cluster_survives
    ng = eng.expectation("nodegroup_loss", cl, lost=1)
    assert ng.details["ignored_keywords"] == ["lost"] and not ng.cluster_survives
