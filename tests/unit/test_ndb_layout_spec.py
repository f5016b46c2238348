"""NDB layouts from a spec (engines/ndb/spec.py, render.py): parsing and its one-line refusals, the
generator against the shipped default files, the engine's layout methods on a generated layout,
`ndbchaos layout`, and what the engine's rules expect on replicas 1-4 x node groups 1-4."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import yaml

from ndbchaos import settings
from ndbchaos import topology as TP
from ndbchaos.catalogue import one_per_nodegroup
from ndbchaos.cli import main
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.engines.ndb import spec as SP
from ndbchaos.engines.ndb.config import parse_config_ini, read_config
from ndbchaos.engines.ndb.expectations import expectation
from ndbchaos.engines.ndb.render import SPEC_LABEL, compose, config_ini, my_cnf
from ndbchaos.errors import UsageError
from ndbchaos.resources import COMPOSE_DIR
from ndbchaos.vocabulary import ClusterOptions


# -- the spec ------------------------------------------------------------------------------------
def test_parse_defaults_and_canonical_text():
    s = SP.parse("nodegroups=3,replicas=2")
    assert (s.nodegroups, s.replicas, s.sql, s.mgm, s.spare) == (3, 2, 2, 2, 0)
    assert str(s) == "nodegroups=3,replicas=2,sql=2,mgm=2,spare=0"
    assert SP.parse(" Replicas = 3 ") == SP.LayoutSpec(nodegroups=1, replicas=3)
    assert SP.parse(str(s)) == s


@pytest.mark.parametrize("text, words", [
    ("replicas=5", "replicas must be 1-4"),
    ("replicas=0", "replicas must be 1-4"),
    ("nodegroups=0", "nodegroups must be at least 1"),
    ("mgm=3", "mgm must be 1 or 2"),
    ("sql=0", "sql must be at least 1"),
    ("colour=2", "is not one of"),
    ("nodegroups", "is not one of"),
    ("nodegroups=two", "is not a whole number"),
    ("nodegroups=-1", "is not a whole number"),
    ("replicas=2,replicas=3", "given twice"),
    ("", "empty"),
    ("nodegroups=9,replicas=2", "22 NDB nodes, more than the 20"),
])
def test_impossible_specs_are_refused_in_one_line(text, words):
    with pytest.raises(UsageError) as e:
        SP.parse(text)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_node_id_limits(monkeypatch):
    monkeypatch.setattr(SP, "MAX_CONTAINERS", 10_000)
    monkeypatch.setattr(SP, "MEMORY_CEILING_MIB", 10 ** 9)
    with pytest.raises(UsageError, match="136 data nodes need ids up to 146; data node ids end at 144"):
        SP.parse("nodegroups=68,replicas=2")
    # 130 data nodes (11-140), SQL 141-142, [api] 151-154: the last address .254
    SP.check(SP.LayoutSpec(nodegroups=65, replicas=2))
    with pytest.raises(UsageError, match="node ids up to 164 .* pass 154"):  # 132 data nodes: SQL from 151
        SP.parse("nodegroups=66,replicas=2")


def test_memory_ceiling_and_free_memory(monkeypatch, tmp_path):
    monkeypatch.setattr(SP, "MAX_CONTAINERS", 10_000)
    with pytest.raises(UsageError, match="MiB ceiling"):
        SP.parse("nodegroups=13,replicas=2")  # 26 x 490 + 2 x 455 + 2 x 6 MiB > 12 GiB
    default = SP.NAMED["default"]
    assert default.memory_mib() == 4 * 490 + 2 * 455 + 2 * 6
    SP.check_free(default, 10_000)
    SP.check_free(default, None)
    with pytest.raises(UsageError, match="needs about 2882 MiB; 2000 MiB is available"):
        SP.check_free(default, 2000)
    mi = tmp_path / "meminfo"
    mi.write_text("MemTotal:       24000000 kB\nMemAvailable:   20480000 kB\n")
    assert SP.available_mib(str(mi)) == 20000
    assert SP.available_mib(str(tmp_path / "none")) is None


def test_resolve_named_and_specs():
    assert SP.resolve("default") == ("default", SP.NAMED["default"])
    assert SP.resolve("SMALL")[0] == "small"
    assert SP.resolve("nodegroups=2,replicas=2,sql=2,mgm=2")[0] == "default"  # the shipped files
    assert SP.resolve("replicas=3")[0] == "nodegroups=1,replicas=3,sql=2,mgm=2,spare=0"
    with pytest.raises(UsageError, match="unknown NDB layout 'huge'"):
        SP.resolve("huge")


# -- the generator against the shipped default files ------------------------------------------------
def test_generated_default_config_ini_is_the_shipped_one():
    shipped = read_config(COMPOSE_DIR / "ndb" / "config.ini")
    gen = parse_config_ini(config_ini(SP.NAMED["default"]))
    assert gen.system == shipped.system
    assert gen.defaults == shipped.defaults  # every [ndbd default] / [ndb_mgmd default] parameter
    assert [(n.section, n.type, n.params) for n in gen.nodes] == [
        (n.section, n.type, n.params) for n in shipped.nodes]  # ids, hosts, groups, ranks, in order
    assert gen.node_groups() == shipped.node_groups() == {0: [11, 12], 1: [13, 14]}
    assert gen.problems() == []


def test_generated_default_my_cnf_is_the_shipped_one():
    def settings(text):
        return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert settings(my_cnf(SP.NAMED["default"])) == settings((COMPOSE_DIR / "ndb" / "my.cnf").read_text())
    one = settings(my_cnf(SP.LayoutSpec(mgm=1), "10.1.2"))
    assert one.count("ndb-connectstring=10.1.2.101:1186") == 2


def test_generated_default_compose_is_the_shipped_one():
    shipped = yaml.safe_load((COMPOSE_DIR / "ndb.yml").read_text())
    gen = yaml.safe_load(compose(SP.NAMED["default"]))
    assert list(gen["services"]) == list(shipped["services"])
    for name, svc in shipped["services"].items():
        g = dict(gen["services"][name])
        labels = dict(g.pop("labels"))
        assert labels.pop(SPEC_LABEL) == str(SP.NAMED["default"])
        assert labels == svc["labels"], name
        assert g == {k: v for k, v in svc.items() if k != "labels"}, name  # commands, ports, addresses...
    assert gen["networks"] == shipped["networks"]


# -- generated layouts ------------------------------------------------------------------------------
def _topology(spec: SP.LayoutSpec, net: str = "10.213.79") -> TP.Topology:
    """The topology discovery builds from the generated compose file's labels and addresses."""
    doc = yaml.safe_load(compose(spec, net))
    nodes = []
    for name, svc in doc["services"].items():
        labels = {k: str(v) for k, v in svc["labels"].items()}
        ip = svc["networks"]["net"]["ipv4_address"].replace("${NDBCHAOS_NDB_SUBNET:-" + net + "}", net)
        sql = labels[TP.ROLE] == TP.SQL
        nodes.append(TP.Node.from_labels(f"p-{name}-1", f"id-{name}", labels, ip=ip,
                                         sql_port=40000 + int(labels[TP.NODEID]) if sql else None, serves_sql=sql))
    return TP.Topology("p", "ndb", nodes)


MATRIX = [SP.LayoutSpec(nodegroups=g, replicas=r) for r in range(1, 5) for g in range(1, 5)]


@pytest.mark.parametrize("spec", MATRIX, ids=str)
def test_generated_layouts_are_consistent(spec):
    cfg = parse_config_ini(config_ini(spec))
    assert cfg.problems() == []
    assert cfg.replicas == spec.replicas
    groups = cfg.node_groups()
    assert sorted(groups) == list(range(spec.nodegroups))
    assert all(len(m) == spec.replicas for m in groups.values())
    topo = _topology(spec)
    assert {g: [n.nodeid for n in ms] for g, ms in topo.nodegroups().items()} == groups
    for n in topo.nodes:  # compose address = config.ini HostName = 100 + NodeId
        assert n.ip == f"10.213.79.{100 + n.nodeid}"
    ini79 = parse_config_ini(config_ini(spec, "10.213.79"))
    assert {n.node_id: n.hostname for n in ini79.nodes if n.hostname} == {n.nodeid: n.ip for n in topo.nodes}


def test_three_groups_and_one_group_of_three():
    cfg = parse_config_ini(config_ini(SP.parse("nodegroups=3,replicas=2")))
    assert cfg.node_groups() == {0: [11, 12], 1: [13, 14], 2: [15, 16]} and cfg.replicas == 2
    cfg = parse_config_ini(config_ini(SP.parse("nodegroups=1,replicas=3")))
    assert cfg.node_groups() == {0: [11, 12, 13]} and cfg.replicas == 3
    assert [n.node_id for n in cfg.api_nodes] == [21, 22, 31, 32, 33, 34]


def test_spare_data_nodes_are_in_no_node_group():
    spec = SP.parse("nodegroups=1,replicas=2,spare=2")
    cfg = parse_config_ini(config_ini(spec))
    assert [n.node_id for n in cfg.data_nodes] == [11, 12]
    assert [(n.node_id, n.nodegroup) for n in cfg.spare_nodes] == [(13, 65536), (14, 65536)]
    assert cfg.node_groups() == {0: [11, 12]} and cfg.problems() == []
    topo = _topology(spec)
    assert [n.name for n in topo.data_nodes] == ["data1", "data2"]
    assert [(n.name, n.nodeid) for n in topo.role(SP.SPARE)] == [("spare1", 13), ("spare2", 14)]
    doc = yaml.safe_load(compose(spec))
    assert doc["services"]["sql1"]["depends_on"] == ["data1", "data2", "spare1", "spare2"]
    # ten data nodes fill 11-20; the eleventh moves the SQL nodes to the next decade
    big = SP.LayoutSpec(nodegroups=5, replicas=2, spare=1, sql=1)
    assert [nid for r, _, nid, _ in big.nodes() if r == "sql"] == [31] and big.api_ids == [41, 42, 43, 44]


# -- the engine on a generated layout ---------------------------------------------------------------
@pytest.fixture
def tools(tmp_path, monkeypatch):
    monkeypatch.setenv("NDBCHAOS_TOOLS", str(tmp_path / "tools"))
    monkeypatch.delenv("NDBCHAOS_NDB_LAYOUT", raising=False)
    monkeypatch.delenv("NDBCHAOS_NDB_SUBNET", raising=False)
    return tmp_path


def test_engine_files_services_and_options_of_a_generated_layout(tools):
    eng = NdbEngine()
    opts = ClusterOptions(ndb_layout="nodegroups=3,replicas=2,sql=1")
    assert eng.layout(opts) == "nodegroups=3,replicas=2,sql=1,mgm=2,spare=0"
    assert eng.subnet(opts) == "10.213.79"
    ini, cnf = eng.config_files(opts)
    assert ini.parent == tools / "ndb" and ini.read_text() == config_ini(eng.layout_spec(opts), "10.213.79")
    assert "10.213.79.101:1186,10.213.79.102:1186" in cnf.read_text()
    assert eng.config_files(opts) == (ini, cnf)  # content-hashed: the same files again
    ini2, _ = eng.config_files(opts.with_(ndb_subnet="10.5.6"))
    assert ini2 != ini and "HostName=10.5.6.111" in ini2.read_text()
    (main_file,) = eng.compose_files(opts)
    assert main_file.parent == tools / "ndb" and str(ini) in main_file.read_text()
    assert eng.services(opts) == {"mgm": ["mgm1", "mgm2"], "data": [f"data{i}" for i in range(1, 7)],
                                  "sql": ["sql1"]}
    assert eng.expected_members(type("C", (), {"options": opts})()) == 6
    assert eng.config(opts).node_groups() == {0: [11, 12], 1: [13, 14], 2: [15, 16]}
    topo = _topology(eng.layout_spec(opts))
    assert eng.options_from_topology(topo).given() == {"ndb_layout": eng.layout(opts)}
    assert eng.options_from_topology(_topology(eng.layout_spec(opts), "10.7.7")).given() == {
        "ndb_layout": eng.layout(opts), "ndb_subnet": "10.7.7"}
    assert eng.layout_text(opts, "config.ini") == ini.read_text()
    assert eng.layout_text(ClusterOptions(ndb_layout="default"), "compose") == (COMPOSE_DIR / "ndb.yml").read_text()


def test_probe_ports_of_a_generated_layout(tools):
    # the session's layout (pytest --ndb-layout, installed by the plugin) reaches the fault facts,
    # which ask the engine without the cluster's options
    settings.use(settings.current().with_options(ndb_layout="nodegroups=3,replicas=2"))
    eng = NdbEngine()
    data6 = _topology(SP.parse("nodegroups=3,replicas=2")).node("data6")
    assert data6.nodeid == 16 and eng.layouts._config_node(data6)[0].node_id == 16
    assert eng.probe_ports(data6) == [2202]


def test_layout_command(capsys):
    assert main(["layout", "nodegroups=3,replicas=2"]) == 0
    cfg = parse_config_ini(capsys.readouterr().out)
    assert len(cfg.data_nodes) == 6 and len(cfg.node_groups()) == 3 and cfg.replicas == 2
    assert main(["layout", "nodegroups=1,replicas=3"]) == 0
    assert parse_config_ini(capsys.readouterr().out).node_groups() == {0: [11, 12, 13]}
    assert main(["layout", "replicas=2", "--compose"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["services"]["data2"]["labels"][TP.NODEGROUP] == "0"
    assert main(["layout", "mgm=1", "--mycnf"]) == 0
    assert "ndb-connectstring=10.213.79.101:1186\n" in capsys.readouterr().out
    for bad in ("replicas=5", "nodegroups=0", "sql=x", "nodegroups=30,replicas=4"):
        assert main(["layout", bad]) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1 and out.err.startswith("ndbchaos layout: "), out.err


# -- what the rules expect on every layout ------------------------------------------------------------
def _expect(spec, lost, simultaneous=True, arbitrator=1, family="datanode_loss", **kw):
    topo = _topology(spec)
    cfg = parse_config_ini(config_ini(spec))
    if family == "nodegroup_loss":
        return expectation(family, topo, cfg, arbitrator, **kw)
    return expectation(family, topo, cfg, arbitrator, nodes=lost, simultaneous=simultaneous, **kw)


def _outcome(exp) -> str:
    """``stop``, ``arbitrator`` (survives by the arbitrator's yes) or ``majority`` (survives by
    its own check, and must not ask)."""
    if not exp.cluster_survives:
        return "stop"
    return "arbitrator" if "arbitration_won" in exp.details["expected_events"] else "majority"


# (replicas, node groups) -> outcome, derived by hand from docs/facts.md NDB 5.1 (Qmgr's order:
# a group with no survivor loses; a complete group wins; more than half wins; less than half
# loses; exactly half asks the arbitrator)
ONE_LOST = {(1, g): "stop" for g in range(1, 5)}
ONE_LOST.update({(2, 1): "arbitrator"})  # 1 of 2 left: exactly half
ONE_LOST.update({(2, g): "majority" for g in range(2, 5)})  # another group is complete
ONE_LOST.update({(r, g): "majority" for r in (3, 4) for g in range(1, 5)})  # complete group or > half
TWO_SAME_GROUP = {(1, g): "stop" for g in range(1, 5)}  # (two groups lose their only member)
TWO_SAME_GROUP.update({(2, g): "stop" for g in range(1, 5)})  # the group has no survivor
TWO_SAME_GROUP.update({(3, 1): "stop"})  # 1 of 3 left: less than half, the arbitrator is not asked
TWO_SAME_GROUP.update({(3, g): "majority" for g in range(2, 5)})
TWO_SAME_GROUP.update({(4, 1): "arbitrator"})  # 2 of 4: exactly half
TWO_SAME_GROUP.update({(4, g): "majority" for g in range(2, 5)})
TWO_GROUPS = {(1, g): "stop" for g in range(2, 5)}
TWO_GROUPS.update({(2, 2): "arbitrator", (2, 3): "majority", (2, 4): "majority"})
TWO_GROUPS.update({(r, g): "majority" for r in (3, 4) for g in range(2, 5)})  # 2R-2 of 2R, or a whole group


@pytest.mark.parametrize("spec", MATRIX, ids=str)
def test_loss_outcomes_on_every_layout(spec):
    rg = (spec.replicas, spec.nodegroups)
    assert _outcome(_expect(spec, ["data1"])) == ONE_LOST[rg]
    if spec.replicas >= 2 or spec.nodegroups >= 2:
        assert _outcome(_expect(spec, ["data1", "data2"])) == TWO_SAME_GROUP[rg]
    if spec.nodegroups >= 2:
        other = f"data{spec.replicas + 1}"  # the first node of group 1
        assert _outcome(_expect(spec, ["data1", other])) == TWO_GROUPS[rg]
    # without an arbitrator, what needed it stops; the rest is unchanged
    no_arb = _outcome(_expect(spec, ["data1"], arbitrator=None))
    assert no_arb == ("stop" if ONE_LOST[rg] == "arbitrator" else ONE_LOST[rg])
    for g in range(spec.nodegroups):  # a whole node group lost always stops the cluster
        exp = _expect(spec, None, family="nodegroup_loss", nodegroup=g)
        assert not exp.cluster_survives and exp.recovery == "system_restart"
        assert "missing node group" in exp.rule


def test_two_of_three_apart_need_the_arbitrator_together_stop():
    spec = SP.parse("nodegroups=1,replicas=3")
    together = _expect(spec, ["data1", "data2"])
    assert _outcome(together) == "stop" and "less than 1/2" in together.rule
    apart = _expect(spec, ["data1", "data2"], simultaneous=False)  # 3 -> 2 (majority), 2 -> 1 (half)
    assert _outcome(apart) == "arbitrator"
    assert _outcome(_expect(spec, ["data1", "data2"], simultaneous=False, arbitrator=None)) == "stop"


@pytest.mark.parametrize("spec", [s for s in MATRIX if s.replicas >= 2], ids=str)
def test_the_next_master_is_the_oldest_survivor(spec):
    topo = _topology(spec)
    ids = [n.nodeid for n in topo.data_nodes]
    succession = ids[::-1]  # the order the nodes joined, not the node id order
    exp = _expect(spec, [topo.data_nodes[-1].name], succession=succession)
    assert exp.cluster_survives
    assert (exp.details["master_before"], exp.details["master_after"]) == (ids[-1], ids[-2])
    assert exp.details["master_lost"] is True


def test_whole_cluster_in_one_group_lost_expects_no_survivor_events():
    """One node group is every data node: nobody is left to log an arbitration check or a forced
    shutdown; the heal's system restart is what the nodes log."""
    exp = _expect(SP.parse("nodegroups=1,replicas=3"), None, family="nodegroup_loss", nodegroup=0)
    assert exp.details["shut_down"] == []
    assert "arbitration_check_lost" not in exp.details["expected_events"]
    assert "forced_shutdown" not in exp.details["expected_events"]
    two = _expect(SP.NAMED["default"], None, family="nodegroup_loss", nodegroup=0)
    assert two.details["expected_events"] == ["arbitration_check_lost", "forced_shutdown"]


def test_a_scenario_without_a_second_node_group_skips_with_the_reason():
    one = SimpleNamespace(topology=_topology(SP.parse("nodegroups=1,replicas=3")))
    with pytest.raises(pytest.skip.Exception, match="each of 2 node groups; this layout has 1 node group"):
        one_per_nodegroup(one, random.Random(1))
    two = SimpleNamespace(topology=_topology(SP.parse("nodegroups=2,replicas=3")))
    picked = one_per_nodegroup(two, random.Random(1))
    assert sorted(n.nodegroup for n in picked) == [0, 1]
