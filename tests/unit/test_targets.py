"""Targets by role: resolved against a topology, random choices seeded and recorded."""

import pytest

from ndbchaos import topology as TP
from ndbchaos.catalogue import replicated
from ndbchaos.catalogue.test_datanode_loss import SCENARIOS as LOSS
from ndbchaos.catalogue.test_partition import SCENARIOS as SPLITS
from ndbchaos.errors import UsageError
from ndbchaos.faults import targets as TG
from ndbchaos.topology import Node, Topology
from ndbchaos.vocabulary import ClusterOptions


class FakeEngine:
    name = "ndb"

    def __init__(self, master=None):
        self._master = master

    def master_node(self, cluster):
        return cluster.topology.node(self._master) if self._master else None


class FakeCluster:
    def __init__(self, nodes, engine=None, options=None):
        self.project = "p1"
        self.topology = Topology("p1", "ndb", nodes)
        self.engine = engine or FakeEngine()
        self.options = options or ClusterOptions()
        self.draws = 0

    def next_target_draw(self) -> int:  # as ClusterHandle counts the run's seeded choices
        self.draws += 1
        return self.draws


def ndb_cluster(**kw):
    nodes = [Node(f"data{i}", TP.DATA, f"c-data{i}", nodegroup=(i - 1) // 2, nodeid=i) for i in range(1, 5)]
    nodes += [Node("mgm1", TP.MGM, "c-mgm1", nodeid=49), Node("mgm2", TP.MGM, "c-mgm2", nodeid=50)]
    nodes += [Node(f"sql{i}", TP.SQL, f"c-sql{i}", nodeid=50 + i, serves_sql=True, sql_port=33060 + i) for i in (1, 2)]
    nodes += [Node("toxiproxy", TP.PROXY, "c-proxy")]
    return FakeCluster(nodes, **kw)


def names(nodes):
    return [n.name for n in nodes]


def test_named_and_unknown():
    c = ndb_cluster()
    assert names(TG.node("data2").resolve(c)) == ["data2"]
    with pytest.raises(UsageError, match="no node named 'data9'"):
        TG.node("data9").resolve(c)


def test_nodegroup_and_one_per_nodegroup():
    c = ndb_cluster()
    assert names(TG.nodegroup(1).resolve(c)) == ["data3", "data4"]
    with pytest.raises(UsageError, match="no node group 7"):
        TG.nodegroup(7).resolve(c)
    s = TG.one_per_nodegroup(seed=3)
    picked = names(s.resolve(c))
    assert len(picked) == 2
    assert picked[0] in ("data1", "data2") and picked[1] in ("data3", "data4")
    assert names(TG.one_per_nodegroup(seed=3).resolve(c)) == picked  # same seed, same choice
    assert s.params() == {"selector": "one-per-nodegroup", "picked": picked, "seed": 3}


def test_random_choice_records_a_seed_that_replays_it():
    c = ndb_cluster()
    s = TG.one_data()
    first = names(s.resolve(c))
    assert s.seed is not None and s.params()["seed"] == s.seed
    assert names(TG.one_data(seed=s.seed).resolve(c)) == first


def test_run_seed_makes_choices_reproducible():
    picks = []
    for _ in range(2):
        c = ndb_cluster(options=ClusterOptions(seed=1234))
        picks.append([names(TG.one_data().resolve(c)), names(TG.sql(k=1).resolve(c))])
    assert picks[0] == picks[1]


def test_roles():
    c = ndb_cluster()
    assert names(TG.arbitrators().resolve(c)) == ["mgm1", "mgm2"]
    assert len(TG.arbitrators(k=1, seed=1).resolve(c)) == 1
    assert names(TG.sql().resolve(c)) == ["sql1", "sql2"]
    assert names(TG.all_data().resolve(c)) == ["data1", "data2", "data3", "data4"]
    with pytest.raises(UsageError, match="asked for 5"):
        TG.random_nodes((TP.DATA,), k=5, seed=1).resolve(c)


def test_master_is_engine_supplied():
    c = ndb_cluster(engine=FakeEngine(master="data3"))
    assert names(TG.master().resolve(c)) == ["data3"]
    with pytest.raises(UsageError, match="no master"):
        TG.master().resolve(ndb_cluster())


def test_galera_sql_nodes_are_the_data_nodes():
    nodes = [Node(f"data{i}", TP.DATA, f"c{i}", nodegroup=0, nodeid=i, serves_sql=True, sql_port=1000 + i)
             for i in (1, 2, 3)] + [Node("arb", TP.ARBITRATOR, "ca", nodeid=9)]
    c = FakeCluster(nodes)
    assert names(TG.sql().resolve(c)) == ["data1", "data2", "data3"]
    assert names(TG.arbitrators().resolve(c)) == ["arb"]
    assert names(TG.one_per_nodegroup(seed=1).resolve(c))[0].startswith("data")


def test_parse_specs():
    c = ndb_cluster()
    assert names(TG.parse("data2").resolve(c)) == ["data2"]
    assert names(TG.parse("ng:1").resolve(c)) == ["data3", "data4"]
    assert len(TG.parse("one-data@5").resolve(c)) == 1
    assert TG.parse("one-data@5").seed == 5
    assert names(TG.parse("arbitrator").resolve(c)) == ["mgm1", "mgm2"]
    assert len(TG.parse("sql:1").resolve(c)) == 1
    assert len(TG.parse("random:data+sql:3@9").resolve(c)) == 3
    assert names(TG.parse("all-data").resolve(c)) == ["data1", "data2", "data3", "data4"]
    with pytest.raises(UsageError):
        TG.parse("one-data@x")
    with pytest.raises(UsageError):
        TG.parse("sql:many")


def test_resolve_mixes_and_dedups_and_records_selection():
    c = ndb_cluster()
    nodes, params = TG.resolve(c, [TG.node("data1"), "data1", TG.nodegroup(0)])
    assert names(nodes) == ["data1", "data2"]
    assert params["selection"][1]["selector"] == "nodegroup 0"
    nodes, params = TG.resolve(c, c.topology.node("sql2"))
    assert names(nodes) == ["sql2"] and params == {}


def test_a_premise_of_survival_skips_on_one_replica_per_node_group():
    """``needs=replicated(...)``: a scenario whose premise is a data node's loss survived skips,
    with its premise and why, where every node group has one member; runs where a group has two."""
    needs = replicated("its second kill needs the first loss survived")
    two = ndb_cluster()
    one = FakeCluster([Node(f"data{i}", TP.DATA, f"c-data{i}", nodegroup=i - 1, nodeid=10 + i) for i in (1, 2)])
    assert needs(two) is None
    why = needs(one)
    assert why.startswith("its second kill needs the first loss survived;") and "NoOfReplicas=1" in why
    by_name = {sc.name: sc for sc in LOSS + SPLITS}
    skipped = {"graceful_stop_one_data_node", "kill_master_then_new_master", "kill_two_data_nodes_seconds_apart",
               "initial_restart_one_data_node", "kill_data_node_during_backup",
               "restart_one_data_node_nostart_then_start", "rolling_restart_under_load",
               "split_nodegroup_arbitrator_on_one_side", "split_nodegroup_arbitrator_isolated"}
    for name, sc in by_name.items():
        reason = sc.needs(one) if sc.needs else None
        assert (reason is not None) == (name in skipped), (name, reason)
        assert sc.needs is None or sc.needs(two) is None, name
