"""Galera's rules (ndbchaos.engines.galera.rules), term by term: the votes each family takes, the
size of the last primary component, leavers counted as the quorum rule counts them, a component
with no data node left, the timers the bounds come from, and the rule text a report shows
(docs/facts.md Galera A1: 2*W(remaining) + W(left gracefully) > W(last primary))."""

import pytest

from ndbchaos.engines.galera import rules as G

HEAD = "Galera quorum (docs/facts.md Galera A1): 2*W(remaining)+W(left gracefully) > W(last primary); "


def test_one_data_node_of_two_lost_keeps_a_primary():
    e = G.expectation("datanode_loss", 2)
    assert e.family == "datanode_loss" and e.cluster_survives is True and e.survivors_serve is True
    assert e.rule == HEAD + "2*2 > 3"
    assert e.details == {"members": 3, "lost": 1, "graceful": False, "expected_events": ["view_change"],
                         "suspect_timeout_s": 3.0, "inactive_timeout_s": 6.0, "install_timeout_s": 6.0,
                         "wait_prim_timeout_s": 30.0}
    # silence found after inactive_timeout, a new view within install_timeout, one check period
    assert e.detection_bound_s == G.INACTIVE_TIMEOUT + G.INSTALL_TIMEOUT + G.INACTIVE_CHECK == 12.5
    # a restarted node reaches a primary within wait_prim_timeout, then a state transfer
    assert e.recovery_bound_s == G.WAIT_PRIM_TIMEOUT + 30.0 and e.recovery == "node_restart"


def test_the_last_primarys_size_decides():
    # after an earlier loss the last primary had 2 members: losing one of them is no majority
    e = G.expectation("datanode_loss", 2, members=2, lost=1)
    assert e.cluster_survives is False and e.details["members"] == 2 and e.rule == HEAD + "2*1 <= 2"
    assert e.recovery == "bootstrap" and e.recovery_bound_s == G.WAIT_PRIM_TIMEOUT * 3 + 30.0
    assert G.expectation("datanode_loss", 3, lost=2).cluster_survives is False  # 2*2 <= 4
    assert G.expectation("datanode_loss", 3, lost=1).cluster_survives is True  # 2*3 > 4


def test_leavers_count_as_the_quorum_rule_counts_them():
    killed = G.expectation("datanode_loss", 3, lost=2)
    left = G.expectation("datanode_loss", 3, lost=2, graceful=True)
    assert killed.cluster_survives is False and left.cluster_survives is True
    assert left.rule == HEAD + "2*2 + 2 > 4" and left.details["graceful"] is True


def test_no_data_node_left_is_no_cluster_whatever_the_votes():
    """Both data nodes left gracefully: garbd alone has the votes, and nothing to serve."""
    e = G.expectation("datanode_loss", 2, lost=2, graceful=True)
    assert e.cluster_survives is False and e.rule == HEAD + "2*1 + 2 > 3; no data node left"
    ng = G.expectation("nodegroup_loss", 2, graceful=True)  # every data node, whatever ``lost`` says
    assert ng.details["lost"] == 2 and ng.cluster_survives is False and ng.rule.endswith("; no data node left")
    assert G.expectation("nodegroup_loss", 3, lost=1).details["lost"] == 3


@pytest.mark.parametrize("family", ["mgmnode_loss", "all_mgmnodes_loss"])
def test_garbd_is_one_vote_and_no_data_node(family):
    e = G.expectation(family, 2, lost=5)  # garbd is one vote, whatever ``lost`` says
    assert e.details["lost"] == 1 and e.cluster_survives is True and e.rule == HEAD + "2*2 > 3"
    # one data node and garbd: garbd leaving gracefully keeps the data node's primary
    alone = G.expectation(family, 1, graceful=True)
    assert alone.cluster_survives is True and alone.rule == HEAD + "2*1 + 1 > 2"
    assert G.expectation(family, 1).cluster_survives is False  # killed: 2*1 <= 2


def test_a_lost_count_defaults_to_one():
    assert G.expectation("datanode_loss", 2).details["lost"] == 1
    assert G.expectation("datanode_loss", 2, graceful=None).details["graceful"] is False


def test_an_sql_endpoint_lost_is_the_client_path_only():
    e = G.expectation("sqlnode_loss", 2)
    assert e.family == "sqlnode_loss" and e.cluster_survives is True and e.survivors_serve is True
    assert e.rule == ("Galera has no separate SQL node; the lost SQL endpoint's client path does not involve the "
                      "engine, so every other endpoint is unaffected")
    assert e.detection_bound_s == 2.0 and e.recovery_bound_s == G.WAIT_PRIM_TIMEOUT and e.recovery == "reconnect"
    assert e.details == {"members": 3}
    assert G.expectation("sqlnode_loss", 2, members=5).details == {"members": 5}


def test_a_partition_keeps_the_components_with_a_majority_of_the_votes():
    members = ["g1", "g2", "arb"]
    out = G.partition_outcome(members, [["g1", "arb"], ["g2"]])
    assert out == {"serving": [["g1", "arb"]], "stopped": [["g2"]], "expected_events": ["view_change"],
                   "rule": "Galera quorum (pc_proto.cpp have_quorum): 2*W(component) > W(last primary) = 3; "
                           "{g1,arb}: 2*2 > 3, {g2}: 2*1 <= 3"}
    # a name that is not a voting member weighs nothing; members in no component are lost votes
    assert G.partition_outcome(members, [["g1", "client"], ["g2", "arb"]])["serving"] == [["g2", "arb"]]
    assert G.partition_outcome(members, [["g1"], ["g2"]])["serving"] == []
    four = G.partition_outcome(["a", "b", "c", "d"], [["a", "b"], ["c", "d"]])
    assert four["serving"] == [] and four["stopped"] == [["a", "b"], ["c", "d"]] and "2*2 <= 4" in four["rule"]
