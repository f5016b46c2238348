"""The twin of a user's cluster (engines/ndb/twin.py): what is kept, what is changed and said,
what is refused; the engine starts its files and judges it with the same rules."""

import subprocess
import sys

import pytest
import yaml

from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.engines.ndb.config import parse_config_ini
from ndbchaos.engines.ndb.twin import twin_of
from ndbchaos.errors import UsageError
from ndbchaos.vocabulary import ClusterOptions

SITE = """\
# a production cluster: 3 replicas, non-contiguous ids, two SQL nodes on one host
[ndbd default]
NoOfReplicas=3
DataMemory=16G
NoOfFragmentLogFiles=64
DataDir=/data/ndb
HeartbeatIntervalDbDb=1500
HeartbeatIntervalDbApi=2000
ArbitrationTimeout=10000
TimeBetweenGlobalCheckpoints=1000
ThreadConfig=ldm={count=8},tc={count=4}
BackupReportFrequency=30

[ndb_mgmd]
NodeId=49
HostName=mgm-a.example.net
ArbitrationRank=1
[ndb_mgmd]
NodeId=50
HostName=mgm-b.example.net
ArbitrationRank=2

[ndbd]
NodeId=3
HostName=db1.example.net
[ndbd]
NodeId=5
HostName=db2.example.net
[ndbd]
NodeId=7
HostName=db3.example.net
[ndbd]
NodeId=9
HostName=db4.example.net
[ndbd]
NodeId=12
HostName=db5.example.net
[ndbd]
NodeId=14
HostName=db6.example.net
LockPagesInMainMemory=1

[mysqld]
NodeId=60
HostName=app1.example.net
[mysqld]
NodeId=61
HostName=app1.example.net
[api]
NodeId=70
[api]
NodeId=71
HostName=batch.example.net

[tcp default]
SendBufferMemory=8M
"""


@pytest.fixture
def site(tmp_path):
    p = tmp_path / "config.ini"
    p.write_text(SITE)
    return p


def test_ids_groups_replicas_and_failure_detection_are_kept(site):
    t = twin_of(site)
    assert t.replicas == 3 and str(t) == f"config={site.resolve()}"
    assert [(r, n, i, g) for r, n, i, g in t.nodes() if r == "data"] == [
        ("data", "data1", 3, 0), ("data", "data2", 5, 0), ("data", "data3", 7, 0),
        ("data", "data4", 9, 1), ("data", "data5", 12, 1), ("data", "data6", 14, 1)]
    assert [(n, i) for r, n, i, _ in t.nodes() if r != "data"] == [("mgm1", 49), ("mgm2", 50), ("sql1", 60),
                                                                   ("sql2", 61)]
    assert t.api_ids == [70, 71] and t.rank(49) == 1 and t.rank(50) == 2 and t.rank(60) == 0
    cfg = parse_config_ini(NdbEngine().layout_text(ClusterOptions(ndb_layout=str(t)), "config.ini"))
    assert cfg.replicas == 3 and cfg.problems() == []
    assert cfg.node_groups() == {0: [3, 5, 7], 1: [9, 12, 14]}
    d = cfg.defaults["NDB"]
    assert (d["heartbeatintervaldbdb"], d["heartbeatintervaldbapi"], d["arbitrationtimeout"],
            d["timebetweenglobalcheckpoints"]) == ("1500", "2000", "10000", "1000")
    assert d["datamemory"] == "64M" and d["datadir"] == "/var/lib/mysql" and "threadconfig" not in d
    assert [n.node_id for n in cfg.mgm_nodes] == [49, 50] and cfg.node(49).arbitration_rank == 1
    assert cfg.node(3).hostname.endswith(".103") and cfg.node(14).hostname.endswith(".114")


def test_what_changed_is_said_never_dropped(site):
    changes = "\n".join(twin_of(site).changes)
    for said in ("node groups implied by node id order", "DataMemory=16G -> 64M here", "NoOfFragmentLogFiles=64 -> 4",
                 "DataDir=/data/ndb -> /var/lib/mysql", "ThreadConfig=ldm={count=8},tc={count=4} -> NDB's default",
                 "BackupReportFrequency=30 not reproduced", "NodeId 14: LockPagesInMainMemory=1 not reproduced",
                 "HostName batch.example.net dropped", "share host app1.example.net", "[tcp] sections not reproduced"):
        assert said in changes, (said, changes)
    text = NdbEngine().layout_text(ClusterOptions(ndb_layout=f"config={site}"), "config.ini")
    assert "#   db1.example.net (NodeId 3) -> data1" in text and "#   - [ndbd default] DataMemory=16G" in text


def test_explicit_node_groups_win_over_id_order(tmp_path):
    p = tmp_path / "c.ini"
    p.write_text(SITE.replace("NodeId=3\nHostName=db1.example.net", "NodeId=3\nHostName=db1.example.net\nNodeGroup=1")
                 .replace("NodeId=14\nHostName=db6.example.net", "NodeId=14\nHostName=db6.example.net\nNodeGroup=0"))
    groups = {i: g for r, _, i, g in twin_of(p).nodes() if r == "data"}
    assert groups == {3: 1, 5: 0, 7: 0, 9: 1, 12: 1, 14: 0}


@pytest.mark.parametrize("edit,why", [
    (("NodeId=60", "NodeId=200"), "[mysqld] NodeId 200 cannot be reproduced"),
    # ndb_mgmd's own refusals (config.load_config_ini; each reason and line is ndb_config 9.7.2's for the same
    # file, checked when it was written), then what a container cannot be
    (("NoOfReplicas=3", "NoOfReplicas=5"),
     "line 3: Illegal value 5 for parameter NoOfReplicas. Legal values are between 1 and 4"),
    (("[ndbd]\nNodeId=14\nHostName=db6.example.net\n", ""), "line 53: Nodegroup 1 has 2 members, NoOfReplicas=3"),
    (("NodeId=61", "NodeId=5"),
     "line 49: Duplicate nodeid in section [API] starting at line: 46. Previously used on line 26."),
    (("NodeId=49", "NodeId=-5"), "line 15: Illegal value -5 for parameter NodeId. Legal values are between 1 and 255"),
    (("BackupReportFrequency=30", "SomethingNew=3"), "line 12: [DB] Unknown parameter: SomethingNew"),
    (("HeartbeatIntervalDbDb=1500", "HeartbeatIntervalDbDb=-1"),
     "line 7: Illegal value -1 for parameter HeartbeatIntervalDbDb. Legal values are between 10 and 4294967039"),
    (("HostName=db2.example.net", "HostName db2.example.net"), "line 28: Parse error"),
    (("[ndb_mgmd]\nNodeId=49\nHostName=mgm-a.example.net\nArbitrationRank=1\n[ndb_mgmd]\nNodeId=50\n"
      "HostName=mgm-b.example.net\nArbitrationRank=2\n", ""),
     "At least one management server node (ndb_mgmd) should be defined in config file"),
    (("[mysqld]", "[api]"), "no [mysqld] section"),
    (("NodeId=14\n", "NodeId=145\n"),
     "line 39: Illegal value 145 for parameter NodeId. Legal values are between 1 and 144"),
])
def test_what_cannot_be_a_twin_is_refused_in_one_line(tmp_path, edit, why):
    p = tmp_path / "c.ini"
    p.write_text(SITE.replace(*edit))
    with pytest.raises(UsageError) as e:
        twin_of(p)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_too_many_nodes_for_this_machine(tmp_path):
    more = "".join(f"[ndbd]\nNodeId={20 + i}\nHostName=x{i}\n" for i in range(15))
    p = tmp_path / "c.ini"
    p.write_text(SITE + more)
    with pytest.raises(UsageError, match="NDB nodes, more than the 20"):
        twin_of(p)


def test_the_engine_starts_the_twin_and_judges_it_with_the_same_rules(site, monkeypatch, tmp_path):
    monkeypatch.setenv("NDBCHAOS_TOOLS", str(tmp_path / "tools"))
    eng = NdbEngine()
    opts = ClusterOptions(ndb_layout=f"config={site}")
    assert eng.services(opts)["data"] == ["data1", "data2", "data3", "data4", "data5", "data6"]
    doc = yaml.safe_load(eng.compose_files(opts)[0].read_text())
    assert doc["services"]["data3"]["command"] == ["ndbmtd", "--ndb-nodeid=7"]
    assert doc["services"]["data3"]["labels"]["ndbchaos.ndb_layout"] == f"config={site.resolve()}"
    from ndbchaos.engines.ndb.expectations import expectation
    from tests.unit.test_ndb_expectations import ROLE
    from ndbchaos import topology as TP
    cfg = eng.config(opts)
    nodes = [TP.Node(f"n{n.node_id}", ROLE[n.type], f"p-{n.node_id}", nodeid=n.node_id, nodegroup=n.nodegroup)
             for n in cfg.nodes if n.hostname]
    topo = TP.Topology("p", "ndb", nodes)
    # two of a 3-replica group at once: 4 of 6 left, every group present: won, no arbitrator asked
    e = expectation("datanode_loss", topo, cfg, 49, nodes=["n3", "n5"])
    assert e.cluster_survives and "Arbitration check won" in e.rule, e.rule
    # the whole group: the cluster stops
    assert not expectation("nodegroup_loss", topo, cfg, 49, nodegroup=0).cluster_survives
    # failure detection from the twin's own heartbeat: 5 x 1.5 s + slack
    assert e.details["timing"]["heartbeat_db_s"] == 1.5


def test_the_shipped_example_is_a_twin():
    from pathlib import Path
    t = twin_of(Path(__file__).resolve().parents[2] / "examples" / "twin" / "config.ini")
    assert t.replicas == 3 and t.data == 6 and t.params["HeartbeatIntervalDbDb"] == "1500"


def test_the_command_prints_it_and_refuses_a_bad_file(site, tmp_path):
    ok = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "layout", "--ndb-config", str(site)],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "NoOfReplicas=3" in ok.stdout and "HeartbeatIntervalDbDb=1500" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "layout", "--ndb-config", str(tmp_path / "none.ini")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


MYCNF = """\
# the SQL nodes' my.cnf of the site above
[mysqld]
ndbcluster
ndb-connectstring=mgm1.example.net:1186,mgm2.example.net:1186
datadir=/srv/mysql
port = 3306
server_id=60
innodb_buffer_pool_size=8G
ndb_wait_connected=30
ndb-wait-setup = 45
ndb_cluster_connection_pool=2
ndb_read_backup=1
transaction_isolation="READ-COMMITTED"
wait_timeout=600   # idle sessions
performance_schema=OFF

[mysqld-9.7]
ndb_force_send=0

[client]
default-character-set=utf8mb4
"""


@pytest.fixture
def mycnf_file(tmp_path):
    p = tmp_path / "my.cnf"
    p.write_text(MYCNF)
    return p


def test_the_sql_nodes_keep_what_clients_see_and_the_rest_is_named(site, mycnf_file):
    t = twin_of(site, mycnf_file)
    assert t.mysqld == {"ndb-wait-connected": "30", "ndb-wait-setup": "45", "ndb-cluster-connection-pool": "2",
                        "ndb-read-backup": "1", "transaction-isolation": "READ-COMMITTED", "wait-timeout": "600",
                        "ndb-force-send": "0"}
    changes = "\n".join(t.changes)
    for said in ("[mysqld] datadir=/srv/mysql not reproduced", "[mysqld] port=3306 not reproduced",
                 "[mysqld] server-id=60 not reproduced", "innodb-buffer-pool-size=8G -> the default layout's",
                 "ndb-connectstring=mgm1.example.net:1186,mgm2.example.net:1186 not reproduced",
                 "performance-schema=OFF not reproduced (mysqld's default applies)", "[client] not reproduced",
                 # two SQL nodes x a pool of 2 = 4 node ids: the 2 [mysqld] and the 2 [api] slots give 4
                 "ndb-cluster-connection-pool=2: each SQL node takes 2 node ids, 4 in all; your config.ini's "
                 "[mysqld] and [api] slots give 4"):
        assert said in changes, (said, changes)
    # the twin is another layout (its files are named by both files' content)
    assert t.digest != twin_of(site).digest and str(t).endswith(f";mycnf={mycnf_file.resolve()}")


def test_the_twins_my_cnf_has_them_and_the_bounds_follow(site, mycnf_file):
    eng = NdbEngine()
    opts = ClusterOptions(ndb_layout=f"config={site};mycnf={mycnf_file}")
    text = eng.layout_text(opts, "my.cnf")
    mysqld = text.split("[mysqld]", 1)[1].split("[mysql_cluster]", 1)[0]
    # ours replaced in place, theirs added under a comment, paths and sizes ours
    assert "\nndb-wait-connected=30\n" in mysqld and "\nndb-wait-setup=45\n" in mysqld
    assert "ndb-wait-connected=60" not in mysqld and "innodb-buffer-pool-size=32M" in mysqld
    assert f"# yours ({mycnf_file.resolve()})" in mysqld and "\ntransaction-isolation=READ-COMMITTED\n" in mysqld
    assert "/srv/mysql" not in text and "example.net" not in text
    # the SQL node recovery bound: ndb-wait-connected + ndb-wait-setup + the container's start
    cfg = eng.config(opts)
    assert cfg.mysqld["ndb-wait-connected"] == "30"
    from ndbchaos.engines.ndb.expect_facts import Facts
    from ndbchaos import topology as TP
    f = Facts("sqlnode_loss", TP.Topology("p", "ndb", []), cfg)
    assert f.rec_sql == 30 + 45 + 10.0 and f.timing["ndb_wait_setup_s"] == 45.0
    # without a my.cnf of theirs: the shipped one's 60 s each
    shipped = eng.config(ClusterOptions(ndb_layout=f"config={site}"))
    assert Facts("sqlnode_loss", TP.Topology("p", "ndb", []), shipped).rec_sql == 60 + 60 + 10.0


@pytest.mark.parametrize("text, why", [
    ("[mysqld]\n!include /etc/mysql/conf.d/x.cnf\n", "!include is not followed"),
    ("ndb_wait_connected=30\n", "is neither a [section] nor an option in one"),
    ("[client]\nport=3306\n", "no [mysqld] section"),
])
def test_a_my_cnf_that_cannot_be_read_is_one_line(site, tmp_path, text, why):
    p = tmp_path / "bad.cnf"
    p.write_text(text)
    with pytest.raises(UsageError) as e:
        twin_of(site, p)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_the_command_takes_a_my_cnf_only_with_a_config(site, mycnf_file, tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "ndbchaos.cli", "layout", *args], capture_output=True, text=True,
                              timeout=60)
    ok = cli("--ndb-config", str(site), "--ndb-mycnf", str(mycnf_file), "--mycnf")
    assert ok.returncode == 0 and "ndb-cluster-connection-pool=2" in ok.stdout, ok.stderr
    for args, why in ((("default", "--ndb-mycnf", str(mycnf_file)), "--ndb-mycnf needs --ndb-config"),
                      (("--ndb-config", str(site), "--ndb-mycnf", str(tmp_path / "none.cnf")), "No such file")):
        bad = cli(*args)
        assert bad.returncode == 2 and why in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_the_shipped_example_my_cnf_is_read():
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "examples" / "twin"
    t = twin_of(root / "config.ini", root / "my.cnf")
    assert t.mysqld["ndb-wait-connected"] == "30" and "ndb-read-backup" in t.mysqld
    assert any("ssl-cert" in c for c in t.changes) and any("[mysql] not reproduced" in c for c in t.changes)


def test_the_plugin_and_the_twin_agree_on_the_separator():
    import inspect

    from ndbchaos import pytest_plugin
    from ndbchaos.engines.ndb.twin import MYCNF_SEP
    assert f'"{MYCNF_SEP}"' in inspect.getsource(pytest_plugin)


def test_a_file_silent_on_failure_detection_gets_ndbs_defaults_and_their_bounds(tmp_path, monkeypatch):
    """The manual's own config.ini leaves [mysqld] without NodeId and failure detection at NDB's
    defaults: the twin numbers the nodes as ndb_mgmd does and runs HeartbeatIntervalDbDb 5000 ms and
    ArbitrationTimeout 7500 ms (not the default layout's 1000 and 3000), says so in its header, and
    the bounds the expectations derive follow them."""
    monkeypatch.delenv("NDBCHAOS_NDB_DIST", raising=False)
    from pathlib import Path
    from ndbchaos.engines.ndb.rules import timings
    corpus = Path(__file__).resolve().parent / "fixtures" / "configini" / "corpus"
    manual = corpus / "01-manual-9.5-initial-configuration.ini"
    p = tmp_path / "config.ini"
    p.write_bytes(manual.read_bytes())
    t = twin_of(p)
    assert [(r, i) for r, _, i, _ in t.nodes()] == [("mgm", 1), ("data", 2), ("data", 3), ("sql", 4)]
    assert (t.params["HeartbeatIntervalDbDb"], t.params["ArbitrationTimeout"], t.params["HeartbeatIntervalDbApi"],
            t.params["TimeBetweenGlobalCheckpoints"]) == ("5000", "7500", "1500", "2000")
    text = NdbEngine().layout_text(ClusterOptions(ndb_layout=f"config={p}"), "config.ini")
    assert "leaves unset run NDB's defaults, written explicitly" in text and "HeartbeatIntervalDbDb=5000" in text
    cfg = parse_config_ini(text)
    tm = timings(cfg)
    assert (tm["heartbeat_db_s"], tm["arbitration_timeout_s"]) == (5.0, 7.5)
    assert "HeartbeatIntervalDbDb=1000" not in text and "ArbitrationTimeout=3000" not in text


def test_a_layout_without_api_slots_renders(tmp_path, monkeypatch):
    monkeypatch.delenv("NDBCHAOS_NDB_DIST", raising=False)
    p = tmp_path / "config.ini"
    p.write_text("[ndb_mgmd]\nHostName=10.0.0.9\n[ndbd]\nHostName=10.0.0.1\n[ndbd]\nHostName=10.0.0.2\n"
                 "[mysqld]\nHostName=10.0.0.5\n")
    t = twin_of(p)
    assert t.api_ids == [] and t.sql == 1
    text = NdbEngine().layout_text(ClusterOptions(ndb_layout=f"config={p}"), "config.ini")
    assert parse_config_ini(text).node_groups() == {0: [2, 3]} and "[api]" not in text


def test_a_my_cnf_in_latin1_is_read_and_a_folder_is_one_line(site, tmp_path):
    p = tmp_path / "latin1.cnf"
    p.write_bytes(b"# caf\xe9\n[mysqld]\nndbcluster\nndb_wait_connected=30\n")
    assert twin_of(site, p).mysqld["ndb-wait-connected"] == "30"
    with pytest.raises(UsageError, match="is a directory") as e:
        twin_of(site, tmp_path)
    assert "\n" not in str(e.value)
