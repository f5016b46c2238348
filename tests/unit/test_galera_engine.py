"""The Galera engine's expectations follow the quorum formula and its configured timers."""

import re
from pathlib import Path

import pytest

from ndbchaos.engines import galera as G
from ndbchaos.engines.base import ClusterStatus, NodeStatus

CNF = Path(G.COMPOSE_DIR) / "galera" / "galera.cnf"
ENTRY = Path(G.COMPOSE_DIR) / "galera" / "entrypoint.sh"


class FakeCluster:
    def __init__(self, n):
        self.options = {"galera_data_nodes": n}


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
    exp = G.GaleraEngine().expectation("datanode_loss", FakeCluster(data), lost=lost, graceful=graceful)
    assert exp.cluster_survives is survives and exp.survivors_serve is survives
    assert "quorum" in exp.rule.lower()
    assert exp.detection_bound_s == G.INACTIVE_TIMEOUT + G.INSTALL_TIMEOUT + G.INACTIVE_CHECK
    assert exp.recovery == ("node_restart" if survives else "bootstrap")


def test_data_node_count_is_validated():
    from ndbchaos.errors import UsageError
    with pytest.raises(UsageError):
        G.GaleraEngine().data_count({"galera_data_nodes": 5})


def _status(nodes, expected=3):
    return ClusterStatus(1.0, nodes, False, [], {"expected_members": expected})


def _data(name, status="Primary", size=2, ready="ON"):
    return NodeStatus(name, "data", "running", "Synced", False,
                      {"wsrep_cluster_status": status, "wsrep_ready": ready, "wsrep_cluster_size": str(size)})


def test_loss_detected_needs_every_survivor_primary_in_a_smaller_view():
    eng = G.GaleraEngine()
    assert eng.loss_detected(_status([_data("data1"), NodeStatus("data2", "data", "exited", "down", False)]), ["data2"])
    # still the old view (size 3): not yet detected
    assert not eng.loss_detected(_status([_data("data1", size=3)]), ["data2"])
    # survivor lost the primary component
    assert not eng.loss_detected(_status([_data("data1", status="non-Primary", size=1)]), ["data2"])
    assert not eng.loss_detected(_status([_data("data1", ready="OFF")]), ["data2"])
