"""The Galera engine's expectations follow the quorum formula and its configured timers."""

import re
from pathlib import Path

import pytest

from ndbchaos.vocabulary import ClusterStatus, NodeStatus
from ndbchaos.resources import COMPOSE_DIR
from ndbchaos.engines.galera import GaleraEngine, data_count
from ndbchaos.engines.galera import rules as G
from ndbchaos.vocabulary import ClusterOptions

CNF = Path(COMPOSE_DIR) / "galera" / "galera.cnf"
ENTRY = Path(COMPOSE_DIR) / "galera" / "entrypoint.sh"


class FakeCluster:
    def __init__(self, n):
        self.options = ClusterOptions(galera_data_nodes=n)


def _opts(text):
    m = re.search(r'wsrep_provider_options\s*=\s*"([^"]+)"', text)
    return dict(kv.split("=", 1) for kv in m.group(1).split(";"))


def _secs(v):
    return float(v.removeprefix("PT").removesuffix("S"))


def test_timers_match_config_files():
    opts = _opts(CNF.read_text())
    assert _secs(opts["evs.suspect_timeout"]) == G.SUSPECT_TIMEOUT
    assert _secs(opts["evs.inactive_timeout"]) == G.INACTIVE_TIMEOUT
    assert _secs(opts["evs.install_timeout"]) == G.INSTALL_TIMEOUT
    assert _secs(opts["evs.inactive_check_period"]) == G.INACTIVE_CHECK
    # garbd must judge failures with the same timers as the data nodes.
    garbd = re.search(r'--options "([^"]+)"', ENTRY.read_text()).group(1)
    for k, v in dict(kv.split("=", 1) for kv in garbd.split(";")).items():
        assert opts[k] == v, k
    # Galera's required order for the timeouts.
    assert G.SUSPECT_TIMEOUT <= G.INACTIVE_TIMEOUT <= G.INSTALL_TIMEOUT


@pytest.mark.parametrize("data,lost,graceful,survives", [
    (2, 1, False, True),    # {data, garbd} = 2 of 3 votes
    (2, 2, False, False),   # only garbd left
    (3, 1, False, True),    # 3 of 4
    (3, 2, False, False),   # 2 of 4: an even split has no quorum
    (3, 2, True, True),     # nodes that left gracefully still count
])
def test_quorum_expectation(data, lost, graceful, survives):
    exp = GaleraEngine().expectation("datanode_loss", FakeCluster(data), lost=lost, graceful=graceful)
    assert exp.cluster_survives is survives and exp.survivors_serve is survives
    assert "quorum" in exp.rule.lower()
    assert exp.detection_bound_s == G.INACTIVE_TIMEOUT + G.INSTALL_TIMEOUT + G.INACTIVE_CHECK
    assert exp.recovery == ("node_restart" if survives else "bootstrap")


def test_data_node_count_is_validated():
    from ndbchaos.errors import UsageError
    with pytest.raises(UsageError):
        data_count(ClusterOptions(galera_data_nodes=5))


def _status(nodes, expected=3):
    return ClusterStatus(1.0, nodes, False, [], {"expected_members": expected})


def _data(name, status="Primary", size=2, ready="ON"):
    return NodeStatus(name, "data", "running", "Synced", False,
                      {"wsrep_cluster_status": status, "wsrep_ready": ready, "wsrep_cluster_size": str(size)})


def test_loss_detected_needs_every_survivor_primary_in_a_smaller_view():
    eng = GaleraEngine()
    assert eng.loss_detected(_status([_data("data1"), NodeStatus("data2", "data", "exited", "down", False)]), ["data2"])
    # still the old view (size 3): not yet detected
    assert not eng.loss_detected(_status([_data("data1", size=3)]), ["data2"])
    # survivor lost the primary component
    assert not eng.loss_detected(_status([_data("data1", status="non-Primary", size=1)]), ["data2"])
    assert not eng.loss_detected(_status([_data("data1", ready="OFF")]), ["data2"])


class _Ctr:
    """A stopped data node container whose --wsrep-recover wrote ``position`` and ``log``."""

    def __init__(self, position: bytes, log: bytes = b""):
        self.files = {"/var/lib/mysql/ndbchaos-recovered-position": position,
                      "/var/lib/mysql/ndbchaos-recover.log": log}
        self.status = "exited"

    def reload(self):
        pass

    def kill(self):
        pass

    def wait(self, timeout=None):
        return {"StatusCode": 0}

    def start(self):
        pass


def _bootstrap_cluster(monkeypatch, files: dict):
    from types import SimpleNamespace

    from ndbchaos import topology as TP
    from ndbchaos.engines.galera import lifecycle as gal
    nodes = [TP.Node(n, TP.DATA, f"c-{n}") for n in files] + [TP.Node("arb", TP.ARBITRATOR, "c-arb")]
    ctrs = {n: _Ctr(*v) for n, v in files.items()}
    ctrs["arb"] = _Ctr(b"")
    monkeypatch.setattr(gal.docker, "put_file", lambda c, path, data: None)
    monkeypatch.setattr(gal.docker, "get_file", lambda c, path: c.files.get(path, b""))
    topo = TP.Topology("p", "galera", nodes)
    return SimpleNamespace(topology=topo, container=lambda n: ctrs[n.name if hasattr(n, "name") else n],
                           note=lambda *a, **k: None, discover=lambda: topo)


def test_bootstrap_refuses_when_a_position_cannot_be_recovered(monkeypatch):
    """An unrecovered position must not be read as -1 and lose to the others: bootstrapping the
    wrong node makes state transfer erase the last commits of the most advanced one."""
    from ndbchaos.engines.galera import GaleraEngine
    from ndbchaos.errors import ClusterNotReady
    cl = _bootstrap_cluster(monkeypatch, {
        "data1": (b"4766248a-e757-11f1-b2f9-f6a4bd4539af:6\n",),
        "data2": (b"", b"2026-11-23 16:01:06 0 [ERROR] WSREP: rsync SST method requires wsrep_cluster_address "
                       b"to be configured on startup.\n2026-11-23 16:01:06 0 [ERROR] Aborting\n")})
    with pytest.raises(ClusterNotReady) as ei:
        GaleraEngine().recovery.bootstrap(cl)
    assert "data2" in str(ei.value) and "Aborting" in str(ei.value)


# -- the pure rules (ndbchaos.engines.galera.rules), no cluster object -----------------------------

@pytest.mark.parametrize("data,lost,graceful,survives", [
    (2, 1, False, True), (2, 2, False, False), (3, 1, False, True), (3, 2, False, False), (3, 2, True, True),
])
def test_quorum_rule_is_a_function_of_the_data_node_count(data, lost, graceful, survives):
    exp = G.expectation("datanode_loss", data, lost=lost, graceful=graceful)
    assert exp.cluster_survives is survives and exp.details["members"] == data + 1
    assert exp.recovery == ("node_restart" if survives else "bootstrap")
    assert exp.to_dict() == GaleraEngine().expectation("datanode_loss", FakeCluster(data), lost=lost,
                                                       graceful=graceful).to_dict()


def test_quorum_rule_families_and_members():
    assert not G.expectation("nodegroup_loss", 3).cluster_survives  # every data node
    assert G.expectation("mgmnode_loss", 2).cluster_survives  # garbd: 2 of 3
    assert not G.expectation("datanode_loss", 3, members=3, lost=2).cluster_survives  # after an earlier loss
    sql = G.expectation("sqlnode_loss", 2)
    assert sql.survivors_serve and sql.recovery == "reconnect" and sql.detection_bound_s == 2.0


def test_partition_rule_counts_votes():
    members = ["data1", "data2", "data3", "arb"]
    out = G.partition_outcome(members, [["data2"], ["data1", "data3", "arb"]])
    assert out["serving"] == [["data1", "data3", "arb"]] and out["stopped"] == [["data2"]]
    even = G.partition_outcome(members, [["data1", "data2"], ["data3", "arb"]])
    assert even["serving"] == [] and "2*2 <= 4" in even["rule"]
    # a member in no component counts as lost
    assert G.partition_outcome(members, [["data1", "arb"]])["serving"] == []


def test_galera_error_rules_place_only_their_own_numbers():
    from ndbchaos.engines.galera import errors
    assert errors.classify("galera", 1047, "WSREP has not yet prepared node for application use") == ("temporary", None)
    assert errors.classify("galera", 1213, "Deadlock found") == ("temporary", None)
    for errno in (None, 1062, 1180, 1296, 2013):
        assert errors.classify("galera", errno, "x") is None
