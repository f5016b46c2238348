from ndbchaos import topology as TP
from ndbchaos.clock import RunClock
from ndbchaos.topology import Node, Topology


def labels(node, role, ng="", nid=""):
    return {TP.PROJECT: "p1", TP.ROLE: role, TP.NODE: node, TP.NODEGROUP: ng, TP.NODEID: nid}


def test_node_from_labels_parses_group_and_id():
    n = Node.from_labels("c-data1", "abc", labels("data1", "data", "0", "1"), sql_port=3307, serves_sql=True)
    assert (n.name, n.role, n.nodegroup, n.nodeid, n.sql_port) == ("data1", "data", 0, 1, 3307)
    m = Node.from_labels("c-arb", "def", labels("arb", "arbitrator"))
    assert m.nodegroup is None and m.nodeid is None


def test_topology_roles_and_groups():
    nodes = [
        Node.from_labels("d1", "1", labels("d1", "data", "0", "2"), sql_port=1, serves_sql=True),
        Node.from_labels("d2", "2", labels("d2", "data", "1", "3")),
        Node.from_labels("d3", "3", labels("d3", "data", "0", "4")),
        Node.from_labels("m1", "4", labels("m1", "mgm", "", "1")),
        Node.from_labels("s1", "5", labels("s1", "sql", "", "5"), sql_port=2, serves_sql=True),
    ]
    topo = Topology("p1", "ndb", nodes)
    assert [n.name for n in topo.data_nodes] == ["d1", "d2", "d3"]
    assert {k: [n.name for n in v] for k, v in topo.nodegroups().items()} == {0: ["d1", "d3"], 1: ["d2"]}
    assert [n.name for n in topo.sql_nodes] == ["d1", "s1"]
    assert [n.name for n in topo.arbitrators] == ["m1"]
    assert topo.node("s1").role == "sql"
    try:
        topo.node("nope")
    except KeyError as e:
        assert "nope" in str(e) and "p1" in str(e)
    else:
        raise AssertionError("unknown node must raise")


def test_run_clock_maps_monotonic_and_wall():
    c = RunClock(mono0=100.0, wall0=1_700_000_000.0)
    assert c.at(101.5) == 1.5
    assert c.wall(1.5) == 1_700_000_001.5
    assert c.from_wall(1_700_000_002.0) == 2.0
    assert c.iso(0.25).startswith("2023-11-14T22:13:20.250")
    assert RunClock.from_dict(c.to_dict()).wall0 == c.wall0
