"""ndb_mgm output parsers, on the verbatim samples of docs/facts.md NDB 2 and on lines
built from the print_nodes / print_status formats of CommandInterpreter.cpp."""

from ndbchaos.engines.ndb.mgm import STATUS_NAMES, all_started, parse_mgm, parse_show, parse_status

# docs/facts.md NDB 2.1, verbatim (8.0 / 8.4 manual)
SHOW_MANUAL = """\
ndb_mgm> SHOW
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

# The same shape as print_nodes() writes it: "[proc(TYPE)]\t<N> node(s)", "id=<n>\t@<host>  (...)"
SHOW_84_TABS = (
    "Connected to Management Server at: localhost:1186 (using cleartext)\n"
    "Cluster Configuration\n"
    "---------------------\n"
    "[ndbd(NDB)]\t4 node(s)\n"
    "id=11\t@10.213.77.111  (8.4.7-ndb-8.4.7, Nodegroup: 0, *)\n"
    "id=12\t@10.213.77.112  (8.4.7-ndb-8.4.7, starting, Nodegroup: 0)\n"
    "id=13 (not connected, accepting connect from 198.51.100.3)\n"
    "id=14\t@198.51.100.3  (8.4.7-ndb-8.4.7, no nodegroup)\n"
    "\n"
    "[ndb_mgmd(MGM)]\t2 node(s)\n"
    "id=1\t@10.213.77.101  (8.4.7-ndb-8.4.7)\n"
    "id=2 (not connected, accepting connect from 10.213.77.102)\n"
    "\n"
    "[mysqld(API)]\t3 node(s)\n"
    "id=21\t@10.213.77.121  (8.4.7-ndb-8.4.7)\n"
    "id=22 (not connected, accepting connect from 10.213.77.122)\n"
    "id=31 (not connected, accepting connect from any host)\n"
)

# docs/facts.md NDB 2.2 expected lines (print_status)
ALL_STATUS = """\
Connected to Management Server at: localhost:1186
Node 2: started (mysql-8.0.44 ndb-8.0.44)
Node 3: not connected
"""
ALL_STATUS_STARTING = "Node 3: starting (Last completed phase 4) (mysql-8.0.44 ndb-8.0.44)\n"


def test_show_manual_sample():
    rep = parse_show(SHOW_MANUAL)
    assert rep.connected_to == "localhost:1186" and rep.transport is None
    assert rep.configured == {"NDB": 2, "MGM": 1, "API": 2}
    assert [n.node_id for n in rep.data_nodes] == [1, 2]
    n1, n2 = rep.node(1), rep.node(2)
    assert n1.connected and n1.status == "started" and n1.master and n1.nodegroup == 0
    assert n1.address == "10.0.10.6" and n1.version == "mysql-8.0.44 ndb-8.0.44" and n1.process == "ndbd"
    assert n2.started and not n2.master and n2.nodegroup == 0
    assert rep.master == 1
    mgm = rep.node(3)
    assert mgm.type == "MGM" and mgm.status == "connected" and mgm.address == "10.0.10.2"
    assert rep.node(4).type == "API" and rep.node(4).connected
    n5 = rep.node(5)
    assert n5.type == "API" and not n5.connected and n5.status == "not connected"
    assert n5.accepting_from == "any host"
    assert rep.nodegroups() == {0: [1, 2]}
    assert rep.errors == []


def test_show_84_formats():
    rep = parse_show(SHOW_84_TABS)
    assert rep.connected_to == "localhost:1186" and rep.transport == "using cleartext"
    assert rep.node(11).master and rep.node(11).version == "8.4.7-ndb-8.4.7"
    s = rep.node(12)
    assert s.connected and s.status == "starting" and not s.started and s.nodegroup == 0
    d = rep.node(13)
    assert not d.connected and d.accepting_from == "198.51.100.3" and d.type == "NDB"
    assert d.state_name == "NO_CONTACT"
    nn = rep.node(14)
    assert nn.no_nodegroup and nn.nodegroup is None and nn.started
    assert rep.node(2).accepting_from == "10.213.77.102" and rep.node(2).type == "MGM"
    assert rep.node(31).accepting_from == "any host"
    assert rep.nodegroups() == {0: [11, 12]}
    assert rep.configured == {"NDB": 4, "MGM": 2, "API": 3}


def test_show_old_master_word_and_empty_host():
    rep = parse_show("[ndbd(NDB)]\t1 node(s)\nid=2   (5.0.27, Nodegroup: 0, Master)\n")
    n = rep.node(2)
    assert n.master and n.address is None and n.version == "5.0.27"


def test_all_status_sample():
    rep = parse_status(ALL_STATUS)
    assert rep.node(2).status == "started" and rep.node(2).version == "mysql-8.0.44 ndb-8.0.44"
    assert rep.node(3).status == "not connected" and rep.node(3).version is None and not rep.node(3).connected
    rep = parse_status(ALL_STATUS_STARTING)
    n = rep.node(3)
    assert n.status == "starting" and n.start_phase == 4 and n.version == "mysql-8.0.44 ndb-8.0.44"


def test_every_status_string():
    for s in STATUS_NAMES:
        if s == "connected":
            continue
        rep = parse_status(f"Node 7: {s} (8.4.7-ndb-8.4.7)\n" if s != "not connected" else "Node 7: not connected\n")
        assert rep.node(7).status == s, s
    rep = parse_status("Node 5: shutting down (Last completed phase 2) (8.4.7-ndb-8.4.7)\n")
    assert rep.node(5).status == "shutting down" and rep.node(5).start_phase == 2


def test_n_status_forms():
    # executeStatus of an older version: " (Phase <n>)"; a management/API node: "connected (Version a.b.c)"
    rep = parse_status("Node 3: starting (Phase 5) (Version 8.0.44)\nNode 1: connected (Version 8.4.7)\n")
    assert rep.node(3).start_phase == 5 and rep.node(3).version == "8.0.44"
    assert rep.node(1).status == "connected" and rep.node(1).version == "8.4.7"


def test_status_errors_are_collected_not_raised():
    rep = parse_status("9: Node not found\nCannot get status of node 9.\nsomething new\n")
    assert rep.errors == ["9: Node not found", "Cannot get status of node 9."]
    assert rep.other == ["something new"]
    rep = parse_show("Unable to connect with connect string: nodeid=0,127.0.0.1:1186\n")
    assert rep.errors and not rep.nodes


def test_combined_show_and_status_and_readiness():
    text = SHOW_84_TABS + "\n" + (
        "Connected to Management Server at: localhost:1186 (using cleartext)\n"
        "Node 11: started (8.4.7-ndb-8.4.7)\n"
        "Node 12: starting (Last completed phase 4) (8.4.7-ndb-8.4.7)\n"
        "Node 13: not connected\n"
        "Node 14: started (8.4.7-ndb-8.4.7)\n")
    rep = parse_mgm(text)
    assert rep.node(12).start_phase == 4 and rep.node(12).type == "NDB" and rep.node(12).nodegroup == 0
    ok, problems = all_started(rep, [11, 12, 13, 14])
    assert not ok
    assert problems == ["data node 12 starting (last completed phase 4)", "data node 13 not connected"]
    ok, problems = all_started(rep, [11, 14])
    assert ok and problems == []
    assert all_started(rep, [99])[1] == ["data node 99 not reported by the management server"]
    d = rep.to_dict()
    assert d["master"] == 11 and [n["node_id"] for n in d["nodes"]][:2] == [1, 2]
