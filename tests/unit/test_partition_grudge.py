"""Partitions as grudges: pure functions, no Docker."""

import random

import pytest

from ndbchaos.faults import grudge as G

N4 = ["data1", "data2", "data3", "arb"]
N5 = ["n1", "n2", "n3", "n4", "n5"]


def sym_ok(g):
    return all(a in g.get(b, ()) for a, bs in g.items() for b in bs)


def test_complete_grudge_cuts_between_components_only():
    g = G.complete_grudge([["a", "b"], ["c"]])
    assert g == {"a": {"c"}, "b": {"c"}, "c": {"a", "b"}}
    assert sym_ok(g)


def test_components_must_be_disjoint_nonempty_and_two_or_more():
    with pytest.raises(G.GrudgeError):
        G.complete_grudge([["a"], ["a", "b"]])
    with pytest.raises(G.GrudgeError):
        G.complete_grudge([["a"], []])
    with pytest.raises(G.GrudgeError):
        G.complete_grudge([["a", "b"]])


def test_isolate():
    g = G.isolate(N4, "data2")
    assert g["data2"] == {"data1", "data3", "arb"}
    for n in ("data1", "data3", "arb"):
        assert g[n] == {"data2"}
    assert G.connected_components(g, N4) == [["arb", "data1", "data3"], ["data2"]]
    with pytest.raises(G.GrudgeError):
        G.isolate(N4, "nope")


def test_bisect_and_halves():
    assert G.bisect([1, 2, 3, 4, 5]) == ([1, 2], [3, 4, 5])
    g = G.halves(N4)
    assert G.connected_components(g, N4) == [["arb", "data3"], ["data1", "data2"]]
    # Random halves are reproducible from the seed.
    assert G.halves(N5, random.Random(7)) == G.halves(N5, random.Random(7))


def test_bridge_keeps_middle_node_connected_to_both_sides():
    g = G.bridge(N5)  # halves [n1 n2] | [n3 n4 n5], bridge n3
    assert G.bridge_node(N5) == "n3"
    assert "n3" not in g
    assert all("n3" not in v for v in g.values())
    r = G.reachability(g, N5)
    assert r[("n1", "n3")] and r[("n3", "n5")]
    assert not r[("n1", "n4")] and not r[("n2", "n5")]
    assert G.connected_components(g, N5) is None  # not a clean partition
    with pytest.raises(G.GrudgeError):
        G.bridge(["a", "b"])


@pytest.mark.parametrize("n", [4, 5, 6, 7, 9])
def test_majorities_ring_each_node_sees_a_distinct_majority(n):
    nodes = [f"n{i}" for i in range(n)]
    g = G.majorities_ring(nodes)
    assert sym_ok(g)
    seen = {x: frozenset(set(nodes) - set(g.get(x, ()))) for x in nodes}
    for x, s in seen.items():
        assert x in s
        assert len(s) > n // 2, f"{x} sees {len(s)} of {n}"
    assert len(set(seen.values())) == n  # no two nodes see the same majority
    assert G.connected_components(g, nodes) is None


def test_majorities_ring_of_four_cuts_opposite_pairs():
    g = G.majorities_ring(N4)
    assert g == {"data1": {"data3"}, "data3": {"data1"}, "data2": {"arb"}, "arb": {"data2"}}
    with pytest.raises(G.GrudgeError):
        G.majorities_ring(["a", "b", "c"])


def test_one_way_connections_vs_packets():
    g = G.one_way("data1", "data2")
    assert g == {"data2": {"data1"}}
    # connections mode: data1 cannot open to data2, data2 can open to data1.
    assert not G.reachable(g, "data1", "data2", "connections")
    assert G.reachable(g, "data2", "data1", "connections")
    # packets mode (Jepsen): TCP needs both directions, so both ways fail.
    assert not G.reachable(g, "data1", "data2", "packets")
    assert not G.reachable(g, "data2", "data1", "packets")
    assert G.reachable(g, "data1", "data3", "packets")
    with pytest.raises(G.GrudgeError):
        G.one_way("a", "a")


def test_between_role_sets_touches_nothing_else():
    g = G.between(["arb"], ["data1", "data2"])
    r = G.reachability(g, ["arb", "data1", "data2", "sql1"])
    assert not r[("arb", "data1")] and not r[("data2", "arb")]
    assert r[("data1", "data2")] and r[("arb", "sql1")] and r[("sql1", "data1")]
    with pytest.raises(G.GrudgeError):
        G.between(["a"], ["a", "b"])
    with pytest.raises(G.GrudgeError):
        G.between([], ["a"])


def test_nodegroup_split_two_replicas_each_side_has_every_group():
    groups = {0: ["d1", "d2"], 1: ["d3", "d4"]}
    g, comps = G.nodegroup_split(groups, ["mgm"], ["sql1", "sql2"], arbitrator_side="a")
    assert comps == [["d1", "d3", "mgm", "sql1"], ["d2", "d4", "sql2"]]
    assert G.connected_components(g, sum(comps, [])) is not None
    g, comps = G.nodegroup_split(groups, ["mgm"], [], arbitrator_side="none")
    assert ["mgm"] in comps
    assert g["mgm"] == {"d1", "d2", "d3", "d4"}
    g, comps = G.nodegroup_split(groups, ["mgm"], [], arbitrator_side="both")
    assert "mgm" not in g  # the arbitrator bridges both sides
    with pytest.raises(G.GrudgeError):
        G.nodegroup_split({0: ["d1"]})
    with pytest.raises(G.GrudgeError):
        G.nodegroup_split(groups, arbitrator_side="left")


def test_nodegroup_split_galera_single_group_of_three():
    g, comps = G.nodegroup_split({0: ["data1", "data2", "data3"]}, ["arb"], [], arbitrator_side="b")
    assert comps == [["data1"], ["data2", "data3", "arb"]]


def test_normalize_invert_merge_symmetric():
    assert G.normalize({"a": ["a", "b"], "c": []}) == {"a": frozenset({"b"})}
    inv = G.invert({"a": {"b"}}, ["a", "b", "c"])
    assert inv["a"] == {"c"} and inv["b"] == {"a", "c"}
    assert G.merge({"a": {"b"}}, {"a": {"c"}}) == {"a": {"b", "c"}}
    assert G.symmetric({"a": {"b"}}) == {"a": {"b"}, "b": {"a"}}
    assert G.nodes_of({"a": {"b"}}) == {"a", "b"}


def test_reachability_matrix_and_describe():
    g = G.isolate(["a", "b", "c"], "a")
    r = G.reachability(g, ["a", "b", "c"])
    assert r == {("a", "b"): False, ("a", "c"): False, ("b", "a"): False,
                 ("b", "c"): True, ("c", "a"): False, ("c", "b"): True}
    assert G.describe(g) == "a x{b,c}; b x{a}; c x{a}"
    with pytest.raises(G.GrudgeError):
        G.reachable(g, "a", "b", "sideways")
