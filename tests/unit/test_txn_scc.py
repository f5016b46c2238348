"""The strongly connected components of ndbchaos.txn.graph (Tarjan's, in Python) against
scipy's (scipy.sparse.csgraph.connected_components, the reference): the same label for every
node, so the same components in the same order, on random graphs (repeated edges, self-loops,
edges in any order, graphs deep enough to need no recursion) and on the dependency graphs of
generated histories (data, process and real-time edges); and a check that searches components
imports no scipy (below SCIPY_EDGES edges, from which scipy's own are taken)."""
from __future__ import annotations

import numpy as np
import pytest

from ndbchaos.txn.graph import _nontrivial, strong_labels
from ndbchaos.txn.list_append import analyze

from .test_txn_checker import check_in_a_process
from .test_txn_list_append_fast import generated


def scipy_labels(n: int, src, dst) -> np.ndarray:
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components
    m = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    return connected_components(m, directed=True, connection="strong")[1]


def scipy_nontrivial(n: int, src, dst):
    """``graph._nontrivial`` as it was, on scipy's labels."""
    labels = scipy_labels(n, src, dst)
    big = np.flatnonzero(np.bincount(labels) > 1)
    order = np.argsort(labels, kind="stable")
    return labels, big, order, np.searchsorted(labels[order], np.stack([big, big + 1]))


def same_as_scipy(n: int, src, dst) -> None:
    ours, ref = _nontrivial(n, src, dst), scipy_nontrivial(n, src, dst)
    assert ours[0].tolist() == ref[0].tolist()
    for a, b in zip(ours[1:], ref[1:]):
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize("seed", range(60))
def test_random_graphs_are_labelled_as_scipy_labels_them(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    m = int(rng.integers(0, [n // 2 + 1, n, 2 * n, 4 * n][seed % 4] + 1))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)  # repeats and self-loops included
    if seed % 3 == 0:  # sorted and unique, as DepGraph.edges gives them
        key = np.unique(src * n + dst)
        src, dst = key // n, key % n
    same_as_scipy(n, src, dst)


@pytest.mark.parametrize("seed", range(8))
def test_graphs_of_small_cycles_along_a_long_path(seed):
    """A path of 30,000 nodes (deeper than Python's recursion) with short back edges here and
    there, and nodes numbered at random: many small components, in scipy's order."""
    rng = np.random.default_rng(seed)
    n = 30_000
    perm = rng.permutation(n)
    src, dst = perm[:-1], perm[1:]
    back = rng.integers(3, n, 400)
    src = np.concatenate([src, perm[back]])
    dst = np.concatenate([dst, perm[back - rng.integers(1, 4, len(back))]])
    same_as_scipy(n, src, dst)


@pytest.mark.parametrize("seed", range(10))
def test_large_graphs_take_scipy_s_components_the_same(seed, monkeypatch):
    """From SCIPY_EDGES edges on, scipy's labels (the same; its import then costs less than our
    pass): what _nontrivial gives either way is the same."""
    from ndbchaos.txn import graph
    rng = np.random.default_rng(seed + 100)
    n = int(rng.integers(2, 200))
    m = int(rng.integers(1, 2 * n))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    ours = _nontrivial(n, src, dst)
    monkeypatch.setattr(graph, "SCIPY_EDGES", 1)
    theirs = _nontrivial(n, src, dst)
    for a, b in zip(ours, theirs):
        assert a.tolist() == b.tolist()


def test_graphs_without_edges_or_nodes():
    same_as_scipy(5, np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert strong_labels(0, [], []).tolist() == []


@pytest.mark.parametrize("seed", range(12))
def test_dependency_graphs_of_generated_histories(seed):
    h = generated(seed + 500, n=[60, 300, 1500][seed % 3], keys=[2, 4, 12][seed % 3], odd=bool(seed % 2))
    g = analyze(h).graph
    if seed % 4 == 1:
        g.add_process_order(h.txns)
    elif seed % 4 != 0:
        g.add_realtime_order(h.txns)
    src, dst, _rels = g.edges()
    same_as_scipy(g.total, src, dst)
    raw = (np.frombuffer(g.src, dtype=np.int64), np.frombuffer(g.dst, dtype=np.int64))  # unsorted, repeated
    same_as_scipy(g.total, *raw)


def test_a_check_with_components_imports_no_scipy(tmp_path):
    """A history with a cycle (G2-item under real-time order): components are searched and
    explained, and scipy is not imported."""
    valid, sccs, scipy = check_in_a_process(generated(7, n=400, keys=3), tmp_path)
    assert (valid, scipy) == ("False", "False") and int(sccs) > 0



@pytest.mark.parametrize("seed", range(60))
def test_the_search_skips_only_shapes_whose_edges_all_rise(seed):
    """Given ranks, a component's search skips a shape whose edges all rise in them (no cycle),
    and a shape of one RW edge whose other edges all rise starts only from an RW edge that does
    not: for every shape the same cycle as the search without ranks, or none as it finds none;
    on random graphs (some nodes real-time chain nodes, some ranks equal; from seed 40 on only
    RW edges fall, as in histories of snapshot isolation) and on generated histories' graphs."""
    from ndbchaos.txn.graph import SHAPES
    from ndbchaos.txn.search import Component, components
    rng = np.random.default_rng(seed)
    if seed % 2 and seed < 40:
        h = generated(seed + 700, n=200, keys=[2, 3, 5][seed % 3], procs=[3, 6, 10][seed % 3])
        g = analyze(h).graph
        g.add_realtime_order(h.txns)
        src, dst, rels = g.edges()
        n, n_txn, rank = g.total, g.n, g.ranks(h.txns)
    else:
        n = int(rng.integers(2, 80))
        n_txn = int(rng.integers(1, n + 1))
        rank = rng.integers(0, n, n).astype(np.int64)  # (ties included)
        m = int(rng.integers(1, 3 * n))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        rising = rank[src] < rank[dst]
        keep = (src != dst) & (rising | (rng.random(m) < 0.3))  # mostly rising, as histories are
        key = np.unique(src[keep] * n + dst[keep])
        src, dst = key // n, key % n
        rels = rng.choice([1, 2, 4, 8, 16, 3, 5, 6, 24], len(src)).astype(np.uint8)
        if seed >= 40:
            rels[rank[src] >= rank[dst]] = [4, 4, 4, 5][seed % 4]  # (and ww with rw, a quarter of them)
    pruned, plain = components(n, n_txn, src, dst, rels, rank), components(n, n_txn, src, dst, rels)
    assert len(pruned) == len(plain)
    for a, b in zip(pruned, plain):
        assert a.fall is not None and b.fall is None
        # the places components() finds for all at once are those one component finds alone
        alone = Component(a.nodes, a.src, a.dst, a.rels, a.n_txn)
        assert a.signature() == b.signature() == alone.signature() and list(a.nodes) == sorted(a.nodes)
        for shape in SHAPES.values():
            assert a.find(shape, float("inf")) == b.find(shape, float("inf"))


@pytest.mark.parametrize("seed", range(40))
def test_shapes_a_component_lacks_the_relations_of_find_nothing(seed, monkeypatch):
    """A shape is not searched in a component that lacks one of its required relations, nor a
    one-RW or nonadjacent-RW shape in one with RW edges only (and no loop, for one RW): every
    shape finds the same cycle as the search that tries them all; on random graphs of few
    relations (loops in a third of them) and generated histories' graphs."""
    from ndbchaos.txn.graph import SHAPES
    from ndbchaos.txn.search import Component, components
    rng = np.random.default_rng(seed + 1000)
    if seed % 4 == 3:
        h = generated(seed + 900, n=150, keys=[2, 3, 5][seed % 3], procs=[3, 6, 10][seed % 3])
        g = analyze(h).graph
        g.add_realtime_order(h.txns)
        src, dst, rels = g.edges()
        n, n_txn = g.total, g.n
    else:
        n = int(rng.integers(2, 40))
        n_txn = int(rng.integers(1, n + 1))
        m = int(rng.integers(1, 3 * n))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        keep = src != dst if seed % 3 else np.ones(m, dtype=bool)
        key = np.unique(src[keep] * n + dst[keep])
        src, dst = key // n, key % n
        rels = rng.choice([[4], [4, 16], [4, 1], [4, 8], [4, 2, 16], [1, 2]][seed % 6], len(src)).astype(np.uint8)
    comps = components(n, n_txn, src, dst, rels)
    got = [[c.find(shape, float("inf")) for shape in SHAPES.values()] for c in comps]
    monkeypatch.setattr(Component, "kinds", property(lambda self: (255, True)))  # every relation, a loop
    assert got == [[c.find(shape, float("inf")) for shape in SHAPES.values()] for c in comps]
    assert any(any(x is not None for x in row) for row in got) or not comps or seed % 6 == 5
