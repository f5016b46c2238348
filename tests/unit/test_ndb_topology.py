"""The shipped NDB topology: the compose files (rendered by `docker compose config`) agree with
config.ini and my.cnf in both directions. No Docker engine is needed; the test is skipped only
when no Compose v2 binary exists."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ndbchaos.runtimes import docker
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.engines.ndb import image as ndb_image
from ndbchaos.engines.ndb import layout as ndblayout
from ndbchaos.engines.ndb import rules as ndbrules
from ndbchaos.errors import NdbChaosError
from ndbchaos.engines.ndb.config import parse_config_ini, read_config, replace_prefix
from ndbchaos.resources import COMPOSE_DIR
from ndbchaos.vocabulary import ClusterOptions

COMPOSE = COMPOSE_DIR
LAYOUTS = {
    # file, config, my.cnf, (mgm, data, node groups, sql)
    "default": ("ndb.yml", "ndb/config.ini", "ndb/my.cnf", (2, 4, 2, 2)),
    "small": ("ndb-small.yml", "ndb/config-small.ini", "ndb/my-small.cnf", (1, 2, 1, 1)),
}
ROLE_TYPE = {"mgm": "MGM", "data": "NDB", "sql": "API"}


def compose_bin():
    try:
        return docker.compose_cmd()
    except NdbChaosError as e:
        pytest.skip(f"no Compose v2 binary: {e}")


def compose_config(file: Path, extra_env: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NDBCHAOS_", "COMPOSE_"))}
    env.update(extra_env or {})
    r = subprocess.run(compose_bin() + ["-f", str(file), "config", "--format", "json"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def nodeid_arg(command) -> int | None:
    for a in command or []:
        m = re.fullmatch(r"--ndb-nodeid=(\d+)", a)
        if m:
            return int(m.group(1))
    return None


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_compose_config_passes_with_no_environment_and_matches_config_ini(layout):
    file, ini, cnf, (n_mgm, n_data, n_ng, n_sql) = LAYOUTS[layout]
    doc = compose_config(COMPOSE / file)
    cfg = read_config(COMPOSE / ini)
    assert cfg.problems() == []
    assert cfg.replicas == 2
    assert (len(cfg.mgm_nodes), len(cfg.data_nodes), len(cfg.node_groups())) == (n_mgm, n_data, n_ng)
    assert all(len(m) == cfg.replicas for m in cfg.node_groups().values())

    subnet = doc["networks"]["net"]["ipam"]["config"][0]["subnet"]
    prefix = subnet.rsplit(".", 1)[0]
    assert subnet.endswith(".0/24") and prefix == ndblayout.LAYOUTS[layout][3]
    assert doc["networks"]["net"]["labels"]["ndbchaos.project"] == "ndbchaos-manual"

    by_host = {n.hostname: n for n in cfg.nodes if n.hostname}
    seen_hosts = set()
    roles = {"mgm": 0, "data": 0, "sql": 0}
    for name, svc in doc["services"].items():
        labels = svc["labels"]
        role = labels["ndbchaos.role"]
        roles[role] += 1
        assert labels["ndbchaos.engine"] == "ndb" and labels["ndbchaos.node"] == name
        assert labels["ndbchaos.project"] == "ndbchaos-manual"
        assert svc["image"] == ndb_image.DEFAULT_IMAGE
        assert svc["healthcheck"] == {"disable": True}
        ip = svc["networks"]["net"]["ipv4_address"]
        assert ip.startswith(prefix + ".")
        assert ip in by_host, f"{name} ({ip}) is not in {ini}"
        seen_hosts.add(ip)
        node = by_host[ip]
        assert node.type == ROLE_TYPE[role], name
        assert int(labels["ndbchaos.nodeid"]) == node.node_id == nodeid_arg(svc["command"]), name
        assert ip.endswith("." + str(100 + node.node_id))
        if role == "data":
            assert int(labels["ndbchaos.nodegroup"]) == node.nodegroup
            assert svc["command"][0] == "ndbmtd"
        else:
            assert labels["ndbchaos.nodegroup"] == ""
        mounts = {v["target"]: v for v in svc["volumes"]}
        assert Path(mounts["/etc/mysql-cluster.cnf"]["source"]) == COMPOSE / ini
        assert Path(mounts["/etc/my.cnf"]["source"]) == COMPOSE / cnf
        assert mounts["/var/lib/mysql"]["type"] == "volume"  # file systems survive container restarts
        for p in svc.get("ports") or []:
            assert p["host_ip"] == "127.0.0.1" and p["target"] == 3306
        assert bool(svc.get("ports")) == (role == "sql")
    assert roles == {"mgm": n_mgm, "data": n_data, "sql": n_sql}
    assert seen_hosts == set(by_host), f"config.ini hosts without a container: {set(by_host) - seen_hosts}"
    # spare API slots: no host, never arbitrators
    spares = [n for n in cfg.api_nodes if not n.hostname]
    assert len(spares) >= 4 and all(n.arbitration_rank == 0 for n in spares)
    assert all(n.arbitration_rank > 0 for n in cfg.mgm_nodes)
    assert all(n.arbitration_rank == 0 for n in cfg.api_nodes)

    mycnf = (COMPOSE / cnf).read_text()
    mgm_addrs = sorted(f"{n.hostname}:1186" for n in cfg.mgm_nodes)
    for cs in re.findall(r"^ndb-connectstring=(.*)$", mycnf, re.M):
        assert sorted(cs.split(",")) == mgm_addrs


def test_default_layout_arbitration_ranks_and_test_settings():
    cfg = read_config(COMPOSE / "ndb/config.ini")
    assert [(n.node_id, n.arbitration_rank) for n in cfg.mgm_nodes] == [(1, 1), (2, 2)]
    assert cfg.data_param("StopOnError") == "1"
    hb = cfg.data_param_ms("HeartbeatIntervalDbDb", 5000)
    arb = cfg.data_param_ms("ArbitrationTimeout", 7500)
    assert arb >= 2 * hb  # docs/facts.md NDB 10: ArbitrationTimeout >= 2x the heartbeat interval
    assert cfg.node_groups() == {0: [11, 12], 1: [13, 14]}
    small = read_config(COMPOSE / "ndb/config-small.ini")
    assert [n.node_id for n in small.nodes if n.type != "API" or n.hostname] == [1, 2, 3, 4]  # the image's layout


def test_engine_constants_match_my_cnf():
    for _, _, cnf, _ in LAYOUTS.values():
        text = (COMPOSE / cnf).read_text()
        assert float(re.search(r"^ndb-wait-connected=(\d+)", text, re.M).group(1)) == ndbrules.NDB_WAIT_CONNECTED
        assert float(re.search(r"^ndb-wait-setup=(\d+)", text, re.M).group(1)) == ndbrules.NDB_WAIT_SETUP


def test_subnet_override_renders_consistent_files(tmp_path, monkeypatch):
    monkeypatch.setenv("NDBCHAOS_TOOLS", str(tmp_path / "tools"))
    eng = NdbEngine()
    opts = ClusterOptions(ndb_subnet="10.99.1.0/24")
    env = eng.compose_env(opts)
    assert env["NDBCHAOS_NDB_SUBNET"] == "10.99.1"
    ini, cnf = Path(env["NDBCHAOS_NDB_CONFIG"]), Path(env["NDBCHAOS_NDB_MYCNF"])
    assert ini.parent == tmp_path / "ndb" and "10.213.77" not in ini.read_text() + cnf.read_text()
    doc = compose_config(COMPOSE / "ndb.yml", env)
    hosts = {n.hostname for n in read_config(ini).nodes if n.hostname}
    assert {s["networks"]["net"]["ipv4_address"] for s in doc["services"].values()} == hosts
    assert eng.compose_env(opts) == env  # rendering is idempotent


def test_replace_prefix_only_touches_whole_addresses():
    text = "HostName=10.213.77.101\nx=110.213.77.5\nc=10.213.77.101:1186,10.213.77.102:1186\n"
    out = replace_prefix(text, "10.213.77", "10.9.9")
    assert out == "HostName=10.9.9.101\nx=110.213.77.5\nc=10.9.9.101:1186,10.9.9.102:1186\n"


def test_normalize_subnet():
    assert ndblayout.normalize_subnet("10.1.2") == "10.1.2"
    assert ndblayout.normalize_subnet("10.1.2.0/24") == "10.1.2"
    for bad in ("10.1", "10.1.2.0/16", "300.1.1", "abc"):
        with pytest.raises(NdbChaosError):
            ndblayout.normalize_subnet(bad)


def test_config_parser_details():
    cfg = parse_config_ini("""
[ndbd default]
NoOfReplicas: 2
datadir=/d   # comment
[tcp default]
SendBufferMemory=2M
[ndbd]
id=3
hostname=h3
[ndbd]
NodeId=4
HostName=h4
[ndb_mgmd]
NodeId=1
LogDestination=FILE:filename=c.log,maxsize=1000000;CONSOLE
[api]
NodeId=9
""")
    assert cfg.replicas == 2 and [n.node_id for n in cfg.data_nodes] == [3, 4]
    assert cfg.data_nodes[0].get("DataDir") == "/d" and cfg.data_nodes[0].hostname == "h3"
    assert cfg.node_groups() == {0: [3, 4]}  # implicit assignment
    assert cfg.mgm_nodes[0].get("logdestination").endswith(";CONSOLE")
    assert cfg.mgm_nodes[0].arbitration_rank == 1 and cfg.api_nodes[0].arbitration_rank == 0
    assert cfg.problems() == []
    bad = parse_config_ini("[ndbd default]\nNoOfReplicas=2\n[ndbd]\nNodeId=2\n[ndbd]\nNodeId=2\n[ndbd]\nNodeId=5\n")
    probs = bad.problems()
    assert any("used twice" in p for p in probs) and any("node group 1 has 1" in p for p in probs)
