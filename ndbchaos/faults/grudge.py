"""Partitions as Jepsen grudges: pure functions on node names, no Docker.

A *grudge* maps a node to the set of nodes whose packets it drops (``jepsen.nemesis``:
"a map of nodes to the collection of nodes they should drop messages from"). It is applied as
DROP rules for those sources on the node's INPUT, in its own network namespace.

Two modes give the grudge its meaning on the wire:

``packets``      (Jepsen) every packet from a grudged source is dropped, whatever connection it
                 belongs to. A TCP connection needs both directions, so a one-sided grudge
                 (A drops B) already breaks TCP between A and B both ways; what stays one-way is
                 the packets (B still hears nothing from A's side... and A hears B's).
``connections``  only packets of connections the grudged source *opened* are dropped
                 (conntrack ``--ctdir ORIGINAL``): the source can no longer open a TCP connection
                 to the node (and the ones it had opened stall), while the node can still open
                 connections to the source and those work fully. This is the TCP-visible one-way
                 partition: "A cannot reach B, B reaches A".

Everything here is deterministic given its inputs; random choices take an explicit
``random.Random`` so the seed can be recorded with the fault window.
"""

from __future__ import annotations

import random
from typing import Iterable, Mapping, Sequence

Grudge = dict[str, frozenset[str]]

MODES = ("packets", "connections")


class GrudgeError(ValueError):
    """A partition that cannot be built from these nodes."""


# -- normalisation ---------------------------------------------------------------------------

def normalize(grudge: Mapping[str, Iterable[str]]) -> Grudge:
    """Copy a grudge into canonical form: frozensets, no self-grudges, no empty entries."""
    out: Grudge = {}
    for node, drops in grudge.items():
        s = frozenset(d for d in drops if d != node)
        if s:
            out[node] = s
    return out


def nodes_of(grudge: Mapping[str, Iterable[str]]) -> set[str]:
    """Every node a grudge mentions (as dropper or as dropped)."""
    out = set(grudge)
    for v in grudge.values():
        out |= set(v)
    return out


def _check_components(components: Sequence[Iterable[str]]) -> list[list[str]]:
    comps = [list(dict.fromkeys(c)) for c in components]
    seen: set[str] = set()
    for c in comps:
        if not c:
            raise GrudgeError("a partition component is empty")
        dup = seen & set(c)
        if dup:
            raise GrudgeError(f"node(s) {', '.join(sorted(dup))} in more than one component")
        seen |= set(c)
    if len(comps) < 2:
        raise GrudgeError("a partition needs at least two components")
    return comps


# -- building blocks (jepsen.nemesis) ----------------------------------------------------------

def complete_grudge(components: Sequence[Iterable[str]]) -> Grudge:
    """Each node drops every node outside its own component (a clean cut)."""
    comps = _check_components(components)
    everyone = set().union(*map(set, comps))
    g: dict[str, set[str]] = {}
    for c in comps:
        others = everyone - set(c)
        for n in c:
            g[n] = set(others)
    return normalize(g)


def invert(grudge: Mapping[str, Iterable[str]], universe: Iterable[str]) -> Grudge:
    """The grudge of everything *not* in ``grudge`` (within ``universe``)."""
    u = set(universe)
    return normalize({n: u - set(grudge.get(n, ())) - {n} for n in u})


def merge(*grudges: Mapping[str, Iterable[str]]) -> Grudge:
    g: dict[str, set[str]] = {}
    for gr in grudges:
        for k, v in gr.items():
            g.setdefault(k, set()).update(v)
    return normalize(g)


def symmetric(grudge: Mapping[str, Iterable[str]]) -> Grudge:
    """Close a grudge under symmetry: if A drops B, B drops A too."""
    g: dict[str, set[str]] = {k: set(v) for k, v in grudge.items()}
    for k, v in list(g.items()):
        for d in v:
            g.setdefault(d, set()).add(k)
    return normalize(g)


def bisect(nodes: Sequence[str]) -> tuple[list[str], list[str]]:
    """Cut a sequence in half, smaller half first (jepsen.nemesis/bisect)."""
    nodes = list(nodes)
    k = len(nodes) // 2
    return nodes[:k], nodes[k:]


def split_one(nodes: Sequence[str], one: str) -> tuple[list[str], list[str]]:
    """``[one]`` and everyone else."""
    if one not in nodes:
        raise GrudgeError(f"{one!r} is not among {list(nodes)}")
    return [one], [n for n in nodes if n != one]


# -- partitions by name -------------------------------------------------------------------------

def isolate(nodes: Sequence[str], one: str) -> Grudge:
    """One node cut off from all the others (they still see each other)."""
    return complete_grudge(split_one(nodes, one))


def components(comps: Sequence[Iterable[str]]) -> Grudge:
    """An arbitrary partition into components; nodes not listed are untouched."""
    return complete_grudge(comps)


def halves(nodes: Sequence[str], rng: random.Random | None = None) -> Grudge:
    """First half against second half (``rng`` shuffles first: random halves)."""
    nodes = list(nodes)
    if len(nodes) < 2:
        raise GrudgeError("halves need at least two nodes")
    if rng is not None:
        rng.shuffle(nodes)
    return complete_grudge(bisect(nodes))


def bridge(nodes: Sequence[str]) -> Grudge:
    """Cut the network in half but keep one node (the first of the larger half) in the middle,
    connected both ways to both halves (jepsen.nemesis/bridge)."""
    nodes = list(nodes)
    if len(nodes) < 3:
        raise GrudgeError("a bridge needs at least three nodes")
    a, b = bisect(nodes)
    middle = b[0]
    g = {k: set(v) - {middle} for k, v in complete_grudge((a, b)).items() if k != middle}
    return normalize(g)


def bridge_node(nodes: Sequence[str]) -> str:
    return bisect(list(nodes))[1][0]


def ring_reach(n: int) -> int:
    """How far along the ring each node still sees in a majorities ring of ``n`` nodes."""
    majority = n // 2 + 1
    return -(-(majority - 1) // 2)  # ceil((majority - 1) / 2)


def majorities_ring(nodes: Sequence[str], rng: random.Random | None = None) -> Grudge:
    """Every node sees a majority, but no two nodes see the same majority
    (jepsen.nemesis/majorities-ring). Nodes sit on a ring (shuffled by ``rng``); each sees those
    within ``ring_reach(n)`` steps either way, and drops the rest. Symmetric by construction."""
    nodes = list(nodes)
    n = len(nodes)
    if n < 4:
        raise GrudgeError("a majorities ring needs at least four nodes (with three, every majority is everyone)")
    if rng is not None:
        rng.shuffle(nodes)
    reach = ring_reach(n)
    g: dict[str, set[str]] = {}
    for i, node in enumerate(nodes):
        drops = set()
        for j, other in enumerate(nodes):
            d = abs(i - j)
            if min(d, n - d) > reach:
                drops.add(other)
        g[node] = drops
    return normalize(g)


def one_way(src: str, dst: str) -> Grudge:
    """``src`` cannot reach ``dst``: ``dst`` drops what comes from ``src``. Applied in mode
    ``connections`` this is TCP-visible one-way; in mode ``packets`` it is Jepsen's one-sided
    grudge (TCP fails both ways, packets only one way)."""
    if src == dst:
        raise GrudgeError("one-way partition of a node with itself")
    return {dst: frozenset({src})}


def between(side_a: Iterable[str], side_b: Iterable[str]) -> Grudge:
    """Cut every link between two sets of nodes (e.g. SQL <-> data, management <-> data), and
    nothing else: links inside a side, and to nodes in neither, stay up."""
    a, b = set(side_a), set(side_b)
    if not a or not b:
        raise GrudgeError("both sides of a role split need at least one node")
    if a & b:
        raise GrudgeError(f"node(s) {', '.join(sorted(a & b))} on both sides")
    g = {n: set(b) for n in a}
    g.update({n: set(a) for n in b})
    return normalize(g)


def nodegroup_split(groups: Mapping[int, Sequence[str]], arbitrators: Sequence[str] = (),
                    others: Sequence[str] = (), arbitrator_side: str = "a",
                    others_side: str = "split") -> tuple[Grudge, list[list[str]]]:
    """Split every node group across two sides: in each group the first half of its members
    (rounded down, at least one) goes to side A and the rest to side B, so that with two
    replicas each side holds one replica of every group (NDB: "arbitration required").

    ``arbitrator_side``: ``a`` | ``b`` | ``none`` (arbitrators isolated on their own, seeing
    neither side) | ``both`` (arbitrators untouched, they see both sides: a bridge).
    ``others`` (SQL/API nodes): ``split`` (alternately), ``a``, ``b``, or ``both`` (untouched).
    Returns the grudge and the components (for reporting)."""
    if arbitrator_side not in ("a", "b", "none", "both"):
        raise GrudgeError(f"arbitrator side must be a, b, none or both, not {arbitrator_side!r}")
    if others_side not in ("split", "a", "b", "both"):
        raise GrudgeError(f"others side must be split, a, b or both, not {others_side!r}")
    side_a: list[str] = []
    side_b: list[str] = []
    for _, members in sorted(groups.items()):
        members = list(members)
        if len(members) < 2:
            raise GrudgeError(f"node group {members} has fewer than two members: it cannot be split")
        k = max(1, len(members) // 2)
        side_a += members[:k]
        side_b += members[k:]
    isolated: list[list[str]] = []
    bridge_nodes: list[str] = []
    if arbitrator_side == "a":
        side_a += list(arbitrators)
    elif arbitrator_side == "b":
        side_b += list(arbitrators)
    elif arbitrator_side == "none":
        isolated += [[a] for a in arbitrators]
    else:
        bridge_nodes += list(arbitrators)
    for i, o in enumerate(others):
        if others_side == "a" or (others_side == "split" and i % 2 == 0):
            side_a.append(o)
        elif others_side == "b" or others_side == "split":
            side_b.append(o)
        else:
            bridge_nodes.append(o)
    comps = [side_a, side_b] + isolated
    g = complete_grudge(comps)
    return g, comps + ([bridge_nodes] if bridge_nodes else [])


# -- what a grudge means ---------------------------------------------------------------------

def reachable(grudge: Mapping[str, Iterable[str]], src: str, dst: str, mode: str = "packets") -> bool:
    """Can ``src`` open a TCP connection to ``dst`` and exchange data under this grudge?"""
    if mode not in MODES:
        raise GrudgeError(f"mode must be one of {MODES}, not {mode!r}")
    if src == dst:
        return True
    src_dropped_at_dst = src in grudge.get(dst, ())
    if mode == "connections":
        # Only connections src opens are dropped at dst; dst's rules against src's *replies* to
        # connections dst opened do not apply, and src's rules do not touch what it opens.
        return not src_dropped_at_dst
    # packets: SYN src->dst dropped at dst, or SYN-ACK dst->src dropped at src.
    return not src_dropped_at_dst and dst not in grudge.get(src, ())


def reachability(grudge: Mapping[str, Iterable[str]], universe: Iterable[str],
                 mode: str = "packets") -> dict[tuple[str, str], bool]:
    """The expected TCP reachability of every ordered pair of distinct nodes."""
    u = sorted(set(universe))
    return {(a, b): reachable(grudge, a, b, mode) for a in u for b in u if a != b}


def connected_components(grudge: Mapping[str, Iterable[str]], universe: Iterable[str],
                         mode: str = "packets") -> list[list[str]] | None:
    """The components a *clean* partition makes, or None if the grudge is not one (bridges,
    rings, one-way cuts: somebody sees two nodes that do not see each other)."""
    u = sorted(set(universe))
    reach = reachability(grudge, u, mode)
    comps: list[list[str]] = []
    seen: set[str] = set()
    for n in u:
        if n in seen:
            continue
        comp = [n] + [m for m in u if m != n and reach[(n, m)] and reach[(m, n)]]
        # A clean partition is an equivalence: everyone in the component sees everyone else in
        # it, and nobody outside it.
        for a in comp:
            for b in u:
                if a == b:
                    continue
                should = b in comp
                if reach[(a, b)] != should or reach[(b, a)] != should:
                    return None
        comps.append(comp)
        seen |= set(comp)
    return comps


def describe(grudge: Mapping[str, Iterable[str]]) -> str:
    """``data1 x{data2,data3}; data2 x{data1}`` (who drops whom), stable order."""
    return "; ".join(f"{k} x{{{','.join(sorted(v))}}}" for k, v in sorted(grudge.items())) or "(nothing)"
