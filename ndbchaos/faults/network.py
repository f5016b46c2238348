"""Network faults: partitions (Jepsen grudges applied with iptables in each node's own network
namespace, through helper containers) and unplugging a node from its network.

Every partition is verified both ways: after injecting, every ordered pair of nodes in the
universe is probed with a TCP connect (``nc -z -w1``) from a helper in the source's namespace to
the destination's peer port (``Engine.probe_ports``); the pairs the grudge cuts must be blocked
and every other pair must still connect. Healing removes our chains and probes again.

    from ndbchaos.faults import network as N, targets as TG
    with N.Isolate(cluster, TG.node("data2")):            ...
    with N.Components(cluster, [["data1"], ["data2", "data3", "arb"]]): ...
    with N.Halves(cluster):                               ...
    with N.NodeGroupSplit(cluster, arbitrator="a"):       ...
    with N.Bridge(cluster):                               ...
    with N.MajoritiesRing(cluster):                       ...
    with N.OneWay(cluster, "data1", "data2"):             ...  # data1 cannot reach data2
    with N.RoleSplit(cluster, ("arbitrator", "mgm"), ("data",)): ...
    with N.Disconnect(cluster, TG.node("data3")):          ...  # unplug the cable
"""

from __future__ import annotations

import random
from typing import Iterable, Sequence

from ..runtimes import docker
from .. import topology as TP
from ..errors import BlastRadiusError, UsageError
from . import grudge as G
from ..runtimes import netns
from ..waiting import wait_until
from .base import Fault, FaultNotEffective
from .partition import MEMBER_ROLE_ORDER, Partition, _names, members


# -- the catalogue ----------------------------------------------------------------------------

class Isolate(Partition):
    """One node cut off from every other member (they still see each other)."""

    def __init__(self, cluster, target, **kw):
        node = _names(cluster, target)
        if len(node) != 1:
            raise UsageError(f"isolate takes one node, got {node}")
        uni = _names(cluster, kw.pop("among", None))
        if node[0] not in uni:
            uni.append(node[0])
        super().__init__(cluster, G.isolate(uni, node[0]), kind="isolate", universe=uni, focus=node,
                         components=[[node[0]], [n for n in uni if n != node[0]]], **kw)


class Components(Partition):
    """An arbitrary partition: ``Components(cluster, [["data1"], ["data2", "data3", "arb"]])``.
    Members in no component are untouched (they see everyone)."""

    def __init__(self, cluster, components: Sequence[Iterable], **kw):
        named = [_names(cluster, [c] if isinstance(c, str) else list(c)) for c in components]
        super().__init__(cluster, G.components(named), kind=kw.pop("kind", "partition"),
                         components=named, **kw)


class Halves(Partition):
    """First half of the members against the second (``shuffle=True``: random halves, seeded)."""

    def __init__(self, cluster, nodes=None, shuffle: bool = False, seed: int | None = None, **kw):
        names = _names(cluster, nodes)
        rng = None
        if shuffle or seed is not None:
            seed = seed if seed is not None else random.SystemRandom().randrange(1, 2**31)
            rng = random.Random(seed)
            kw["seed"] = seed
        g = G.halves(names, rng)
        super().__init__(cluster, g, kind="halves", universe=names, **kw)


class Bridge(Partition):
    """Two halves plus one node in the middle that sees both (jepsen ``bridge``)."""

    def __init__(self, cluster, nodes=None, shuffle: bool = False, seed: int | None = None, **kw):
        names = _names(cluster, nodes)
        if shuffle or seed is not None:
            seed = seed if seed is not None else random.SystemRandom().randrange(1, 2**31)
            random.Random(seed).shuffle(names)
            kw["seed"] = seed
        super().__init__(cluster, G.bridge(names), kind="bridge", universe=names,
                         bridge=G.bridge_node(names), **kw)


class MajoritiesRing(Partition):
    """Every node sees a majority, no two see the same one (jepsen ``majorities-ring``)."""

    def __init__(self, cluster, nodes=None, seed: int | None = None, shuffle: bool = False, **kw):
        names = _names(cluster, nodes)
        rng = None
        if shuffle or seed is not None:
            seed = seed if seed is not None else random.SystemRandom().randrange(1, 2**31)
            rng = random.Random(seed)
            kw["seed"] = seed
        super().__init__(cluster, G.majorities_ring(names, rng), kind="majorities-ring", universe=names, **kw)


class OneWay(Partition):
    """``src`` cannot reach ``dst`` (one node, or several: each of them); ``dst`` still reaches
    ``src``.

    Default mode ``connections``: connections ``src`` opens to ``dst`` are dropped at ``dst``
    (conntrack original direction), including ones already open; ``dst``'s own connections to
    ``src`` work. ``mode="packets"``: Jepsen's one-sided grudge (every packet from ``src`` is
    dropped at ``dst``; TCP then fails both ways, the cut is one-way at the packet level). In
    packets mode the window's ``components`` say so for the engine's rules: ``src`` alone
    against the destinations (nodes in neither still reach both)."""

    def __init__(self, cluster, src, dst, mode: str = "connections", **kw):
        s, d = _names(cluster, src), _names(cluster, dst)
        if len(s) != 1 or not d or s[0] in d:
            raise UsageError("one-way takes one source node and one or more other destination nodes")
        grudge = G.merge(*(G.one_way(s[0], x) for x in d))
        if mode == "packets":
            kw.setdefault("components", [[s[0]], list(d)])
        super().__init__(cluster, grudge, mode=mode, kind="one-way", focus=[s[0], *d],
                         src=s[0], dst=d[0] if len(d) == 1 else list(d), **kw)


class RoleSplit(Partition):
    """Cut every link between two role sets (SQL <-> data, management <-> data...), nothing
    else. With Galera the SQL and data roles are the same containers, so SQL <-> data is
    refused as meaningless there; management <-> data is garbd <-> data nodes."""

    def __init__(self, cluster, roles_a: Sequence[str], roles_b: Sequence[str], **kw):
        cluster.topology or cluster.discover()
        sql_roles = set(cluster.engine.sql_roles)

        def side(roles):
            roles = set(roles)
            return [n.name for n in members(cluster) if n.role in roles]

        a, b = side(roles_a), side(roles_b)
        if not a or not b:
            raise UsageError(f"role split {'+'.join(roles_a)} <-> {'+'.join(roles_b)}: no node with role "
                             f"{'+'.join(roles_a) if not a else '+'.join(roles_b)} in this cluster "
                             f"(engine {cluster.engine.name}; SQL is served by: {', '.join(sorted(sql_roles))})")
        if set(a) & set(b):
            raise UsageError(f"role split: {', '.join(sorted(set(a) & set(b)))} on both sides")
        super().__init__(cluster, G.between(a, b), kind="role-split",
                         roles=f"{'+'.join(roles_a)}<->{'+'.join(roles_b)}", components=[a, b], **kw)


def SqlDataSplit(cluster, **kw) -> RoleSplit:
    """SQL nodes cut off from the data nodes (NDB: mysqld <-> ndbd)."""
    return RoleSplit(cluster, (TP.SQL,), (TP.DATA,), **kw)


def MgmDataSplit(cluster, **kw) -> RoleSplit:
    """Management node(s) / arbitrator cut off from the data nodes."""
    return RoleSplit(cluster, (TP.MGM, TP.ARBITRATOR), (TP.DATA,), **kw)


class NodeGroupSplit(Partition):
    """Split every node group across two sides (NDB with 2 replicas: each side keeps one
    replica of every group, so arbitration decides). ``arbitrator``: ``a`` (with the first
    members), ``b``, ``none`` (isolated, seeing neither side) or ``both`` (untouched, a bridge).
    ``others`` (SQL/API nodes): ``split``, ``a``, ``b`` or ``both``."""

    def __init__(self, cluster, arbitrator: str = "a", others: str = "split", **kw):
        topo = cluster.topology or cluster.discover()
        groups = {ng: [n.name for n in sorted(ms, key=lambda n: (n.nodeid or 0, n.name))]
                  for ng, ms in topo.nodegroups().items()}
        arbs = [n.name for n in members(cluster) if n.role in (TP.ARBITRATOR, TP.MGM)]
        sqls = [n.name for n in members(cluster) if n.role == TP.SQL]
        try:
            g, comps = G.nodegroup_split(groups, arbs, sqls, arbitrator, others)
        except G.GrudgeError as e:
            raise UsageError(f"nodegroup split: {e}") from None
        super().__init__(cluster, g, kind="nodegroup-split", components=comps,
                         arbitrator_side=arbitrator, others_side=others, **kw)


# -- unplug ---------------------------------------------------------------------------------------

class Disconnect(Fault):
    """Unplug a node: ``docker network disconnect`` from every project network it is on.

    The better model when the node must vanish for *everyone*, clients included: its published
    SQL port goes away too. On heal it is plugged back with the same aliases (and the same IP
    where the network has a configured subnet); the published host port may change, so the
    cluster is re-discovered (``Node.sql_port``)."""

    kind = "disconnect"

    def __init__(self, cluster, targets, **params):
        super().__init__(cluster, targets, **params)
        self.plugs: list[tuple[str, str, dict]] = []  # (container id, network id, endpoint)

    def _apply(self) -> None:
        client = docker.docker_client()
        for t in self.targets:
            c = self.cluster.container(t)
            c.reload()
            nets = (c.attrs.get("NetworkSettings") or {}).get("Networks") or {}
            for name, ep in nets.items():
                net = client.networks.get(ep.get("NetworkID") or name)
                if (net.attrs.get("Labels") or {}).get(TP.PROJECT) != self.cluster.project:
                    raise BlastRadiusError(f"refusing to disconnect {t.name} from network {name!r}: "
                                           f"it does not carry {TP.PROJECT}={self.cluster.project}")
                self.plugs.append((c.id, net.id, dict(ep)))
                net.disconnect(c)

    def _verify_applied(self) -> str:
        gone = []
        for t in self.targets:
            c = self.cluster.container(t)
            c.reload()
            nets = (c.attrs.get("NetworkSettings") or {}).get("Networks") or {}
            mine = [n for (cid, nid, _) in self.plugs if cid == c.id
                    for n in nets.values() if n.get("NetworkID") == nid]
            if mine:
                raise FaultNotEffective(f"{t.name} still has an endpoint on its network")
            port = docker.published_port(c, 3306)
            gone.append(f"{t.name} (no network endpoint, SQL port {'gone' if port is None else port})")
        return "unplugged: " + ", ".join(gone)

    def _revert(self) -> None:
        client = docker.docker_client()
        cut_off = self.cluster.engine.excluded_running(self.cluster, self.targets)
        plugs, self.plugs = self.plugs, []
        for cid, nid, ep in plugs:
            net = client.networks.get(nid)
            c = docker.owned(client.containers.get(cid), self.cluster.project)
            c.reload()
            if nid in [n.get("NetworkID")
                       for n in ((c.attrs.get("NetworkSettings") or {}).get("Networks") or {}).values()]:
                continue
            aliases = [a for a in (ep.get("Aliases") or []) if a and not c.id.startswith(a)]
            kw = {"aliases": aliases} if aliases else {}
            try:
                # Same address where the network allows choosing it (a configured subnet), so
                # peers that cached the address find the node again.
                net.connect(c, ipv4_address=ep.get("IPAddress") or None, **kw)
            except Exception as e:
                if "user specified IP" not in str(e) and "user configured subnets" not in str(e):
                    raise
                net.connect(c, **kw)
        if cut_off:  # excluded while unplugged: the engine's rejoin (see Partition._revert)
            self.window.params["rejoin"] = self.cluster.engine.rejoin(self.cluster, cut_off)
        self.cluster.discover()

    def _verify_healed(self) -> str:
        back = []
        for t in self.targets:
            c = self.cluster.container(t)
            ok = wait_until(lambda: (c.reload() or True) and netns.container_ips(c), 10)
            if not ok:
                raise FaultNotEffective(f"{t.name} has no network endpoint after reconnect")
            back.append(f"{t.name} {','.join(netns.container_ips(c))}")
        return "plugged back: " + ", ".join(back)


__all__ = ["MEMBER_ROLE_ORDER", "Bridge", "Components", "Disconnect", "Halves", "Isolate", "MajoritiesRing",
           "MgmDataSplit", "NodeGroupSplit", "OneWay", "Partition", "RoleSplit", "SqlDataSplit", "members"]
