"""Network faults: partitions (Jepsen grudges applied with iptables in each node's own network
namespace, through helper containers) and unplugging a node from its network.

Every partition is verified both ways: after injecting, every ordered pair of nodes in the
universe is probed with a TCP connect (``nc -z -w1``) from a helper in the source's namespace to
the destination's peer port (``Engine.probe_ports``); the pairs the grudge cuts must be blocked
and every other pair must still connect. Healing removes our chains and probes again.

    from ndbchaos.faults import network as N, targets as T
    with N.Isolate(cluster, T.node("data2")):            ...
    with N.Components(cluster, [["data1"], ["data2", "data3", "arb"]]): ...
    with N.Halves(cluster):                               ...
    with N.NodeGroupSplit(cluster, arbitrator="a"):       ...
    with N.Bridge(cluster):                               ...
    with N.MajoritiesRing(cluster):                       ...
    with N.OneWay(cluster, "data1", "data2"):             ...  # data1 cannot reach data2
    with N.RoleSplit(cluster, ("arbitrator", "mgm"), ("data",)): ...
    with N.Disconnect(cluster, T.node("data3")):          ...  # unplug the cable
"""

from __future__ import annotations

import random
from typing import Iterable, Mapping, Sequence

from .. import runtime
from .. import topology as T
from ..errors import BlastRadiusError, NdbChaosError, UsageError
from . import grudge as G
from . import netns
from .base import Fault, FaultNotEffective, wait_until
from .targets import resolve as resolve_targets

MEMBER_ROLE_ORDER = (T.DATA, T.ARBITRATOR, T.MGM, T.SQL)


def members(cluster) -> list:
    """The nodes that take part in cluster membership, in a stable order: data nodes (by node
    id), then arbitrators / management nodes, then SQL nodes. Helpers and proxies are never
    members. This order is what halves, bridges and rings are cut from."""
    topo = cluster.topology or cluster.discover()
    order = {r: i for i, r in enumerate(MEMBER_ROLE_ORDER)}
    nodes = [n for n in topo.nodes if n.role in order]
    return sorted(nodes, key=lambda n: (order[n.role], n.nodeid if n.nodeid is not None else 1 << 30, n.name))


def _names(cluster, spec) -> list[str]:
    if spec is None:
        return [n.name for n in members(cluster)]
    nodes, _ = resolve_targets(cluster, spec)
    for n in nodes:
        cluster.container(n)  # blast radius: a Node from elsewhere is refused here
    return [n.name for n in nodes]


class Partition(netns.HelperMixin, Fault):
    """Apply a grudge ``{node: nodes whose packets it drops}`` (see ``grudge.py``).

    ``mode``: ``packets`` (Jepsen) or ``connections`` (TCP-visible one-way, conntrack).
    ``universe``: the nodes whose pairwise reachability is verified (default: every member
    that is running; nodes outside the grudge must stay reachable: "and not others").
    """

    kind = "partition"

    def __init__(self, cluster, grudge: Mapping[str, Iterable[str]], mode: str = "packets",
                 universe: Sequence[str] | None = None, probe_wait_s: int = 1,
                 kind: str | None = None, components: list[list[str]] | None = None,
                 focus: Sequence[str] | None = None, **params):
        if kind:
            self.kind = kind
        if mode not in G.MODES:
            raise UsageError(f"partition mode must be one of {G.MODES}, not {mode!r}")
        g = G.normalize(grudge)
        if not g:
            raise UsageError(f"{self.kind}: the grudge cuts nothing")
        topo = cluster.topology or cluster.discover()
        for name in G.nodes_of(g):
            if name not in topo._by_name:
                _unknown(cluster, name)
        names = sorted(G.nodes_of(g))
        super().__init__(cluster, [topo.node(n) for n in names], mode=mode, grudge=G.describe(g),
                         **({"components": components} if components else {}), **params)
        if focus:  # the nodes a report should name (the isolated node, the one-way pair)
            self.window.targets = list(focus)
        self.grudge = g
        self.mode = mode
        self.probe_wait_s = probe_wait_s
        uni = list(universe) if universe is not None else [n.name for n in members(cluster)]
        for n in uni:
            if n not in topo._by_name:
                _unknown(cluster, n)
        self.universe = sorted(set(uni) | set(names))
        for n in self.universe:
            cluster.container(topo.node(n))  # blast radius for everything we will probe from
        self.chain = netns.new_chain()
        self.window.params["chain"] = self.chain
        self.helpers: dict[str, netns.Helper] = {}
        self.expected = G.reachability(g, self.universe, mode)
        cc = G.connected_components(g, self.universe, mode)
        if cc is not None and "components" not in self.window.params:
            self.window.params["components"] = cc

    # -- protocol ---------------------------------------------------------------------------------
    def _node(self, name):
        return self.cluster.topology.node(name)

    def _running_universe(self) -> list[str]:
        out = []
        for n in self.universe:
            c = self.cluster.container(self._node(n))
            if runtime.container_state(c) == "running":
                out.append(n)
        return out

    def _prepare(self) -> None:
        """Helpers in every running node's namespace before the window opens: starting them
        takes seconds, and the cut should take as little time as possible (every link of the
        grudge cut at once, as a real split would)."""
        uni = self._running_universe()
        missing = [n for n in G.nodes_of(self.grudge) if n not in uni]
        if missing:
            raise NdbChaosError(f"{self.kind}: {', '.join(missing)} not running (a partition needs live nodes)")
        self.helpers = netns.start_helpers(self.cluster, [self._node(n) for n in uni], purpose=self.kind)

    def _apply(self) -> None:
        uni = [n for n in self._running_universe() if n in self.helpers]
        ips = {n: netns.container_ips(self.cluster.container(self._node(n))) for n in uni}
        comment = f"ndbchaos {self.kind} {G.describe(self.grudge)}"

        def apply_one(item):
            node, drops = item
            srcs = [ip for d in sorted(drops) for ip in ips.get(d, [])]
            script = netns.drop_rules_script(self.chain, srcs, self.mode, comment)
            code, out = self.helpers[node].exec(script, timeout=30)
            if code != 0:
                raise NdbChaosError(f"iptables in {node}'s namespace failed: {out.strip()[-300:]}")

        netns.parallel(apply_one, sorted(self.grudge.items()))

    def probe(self, expect_all_open: bool = False) -> dict[tuple[str, str], tuple[bool, str]]:
        """Probe every ordered pair of running universe nodes; ``{(src, dst): (reachable, why)}``."""
        uni = [n for n in self._running_universe()]
        for n in uni:
            h = self.helpers.get(n)
            if h is None or not h.current():
                if h is not None:
                    h.remove()
                self.helpers[n] = netns.start_helper(self.cluster, self._node(n), purpose=self.kind)
        targets = {}
        for n in uni:
            c = self.cluster.container(self._node(n))
            ips = netns.container_ips(c)
            port = self.cluster.engine.probe_ports(self._node(n))[0]
            targets[n] = (ips[0] if ips else None, port)

        def run(src):
            probes = [(dst, targets[dst][0], targets[dst][1]) for dst in uni if dst != src and targets[dst][0]]
            code, out = self.helpers[src].exec(netns.probe_script(probes, self.probe_wait_s), timeout=20)
            return src, netns.parse_probes(out)

        res = {}
        for src, got in netns.parallel(run, uni):
            for dst, v in got.items():
                res[(src, dst)] = v
        # A pair that should be open but timed out is tried once more with more patience (a
        # loaded 2-core host can be slow to answer a SYN); a blocked pair is never retried.
        retry = [(s, d) for (s, d), (ok, _) in res.items()
                 if not ok and (expect_all_open or self.expected.get((s, d), True))]
        for s, d in retry:
            code, out = self.helpers[s].exec(netns.probe_script([(d, targets[d][0], targets[d][1])], 3), timeout=15)
            res[(s, d)] = netns.parse_probes(out).get(d, res[(s, d)])
        # A node that stopped while we probed (an NDB data node shutting itself down) has no
        # namespace left: its failed pairs prove nothing about the network and are left out.
        gone = {n for n in uni if runtime.container_state(self.cluster.container(self._node(n))) != "running"}
        if gone:
            self.window.params.setdefault("stopped_while_probing", sorted(gone))
            res = {pair: v for pair, v in res.items() if v[0] or not (set(pair) & gone)}
        return res

    def _verify_applied(self) -> str:
        res = self.probe()
        wrong = []
        blocked = []
        for pair, (ok, why) in sorted(res.items()):
            want = self.expected.get(pair, True)
            if ok != want:
                wrong.append(f"{pair[0]}->{pair[1]} {'open' if ok else why} (expected {'open' if want else 'blocked'})")
            elif not ok:
                blocked.append(f"{pair[0]}->{pair[1]}")
        if wrong:
            raise FaultNotEffective(f"{self.kind}: probes disagree with the grudge: " + "; ".join(wrong))
        self.window.params["probes"] = {f"{a}->{b}": ("open" if ok else why) for (a, b), (ok, why) in sorted(res.items())}
        return (f"{self.kind} ({self.mode}): {len(blocked)} of {len(res)} TCP probes blocked as the grudge says "
                f"[{G.describe(self.grudge)}]; the other {len(res) - len(blocked)} still connect")

    def _revert(self) -> None:
        # Nodes the cluster excluded while they were cut off but that still run: the engine
        # knows what they do once they can talk again (an NDB data node shuts itself down with
        # 2315 and needs a node restart), and it is asked after the rules are gone.
        engine = self.cluster.engine
        cut_off = engine.excluded_running(self.cluster, [self._node(n) for n in sorted(self.grudge)])

        def revert_one(node):
            c = self.cluster.container(self._node(node))
            if runtime.container_state(c) != "running":
                return  # a stopped container has no namespace left, nor rules
            h = self.helpers.get(node)
            if h is None or not h.current():
                if h is not None:
                    h.remove()
                h = self.helpers[node] = netns.start_helper(self.cluster, self._node(node), purpose=self.kind)
            code, out = h.exec(netns.remove_chains_script([self.chain]), timeout=30)
            if code != 0:
                raise NdbChaosError(f"removing {self.chain} in {node}'s namespace failed: {out.strip()[-300:]}")

        netns.parallel(revert_one, sorted(self.grudge))
        if cut_off:
            self.window.params["rejoin"] = engine.rejoin(self.cluster, cut_off)

    def _verify_healed(self) -> str:
        try:
            left = []
            for node in sorted(self.grudge):
                h = self.helpers.get(node)
                if h is None or not h.current():
                    continue
                code, out = h.exec(f"{netns.IPT} -S", timeout=15)
                if self.chain in out:
                    left.append(node)
            if left:
                raise FaultNotEffective(f"{self.kind}: chain {self.chain} still present in {', '.join(left)}")
            res = self.probe(expect_all_open=True)
            closed = [f"{a}->{b} {why}" for (a, b), (ok, why) in sorted(res.items()) if not ok]
            if closed:
                raise FaultNotEffective(f"{self.kind} healed but still blocked: " + "; ".join(closed))
            return f"{self.kind} healed: chain {self.chain} removed, all {len(res)} TCP probes connect"
        finally:
            self._drop_helpers()


def _unknown(cluster, name):
    from .targets import refuse_foreign
    refuse_foreign(cluster, name)
    raise UsageError(f"no node named {name!r} in project {cluster.project} "
                     f"(nodes: {', '.join(n.name for n in cluster.topology.nodes)})")


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
    """``src`` cannot reach ``dst``; ``dst`` still reaches ``src``.

    Default mode ``connections``: connections ``src`` opens to ``dst`` are dropped at ``dst``
    (conntrack original direction), including ones already open; ``dst``'s own connections to
    ``src`` work. ``mode="packets"``: Jepsen's one-sided grudge (every packet from ``src`` is
    dropped at ``dst``; TCP then fails both ways, the cut is one-way at the packet level)."""

    def __init__(self, cluster, src, dst, mode: str = "connections", **kw):
        s, d = _names(cluster, src), _names(cluster, dst)
        if len(s) != 1 or len(d) != 1:
            raise UsageError("one-way takes one source and one destination node")
        super().__init__(cluster, G.one_way(s[0], d[0]), mode=mode, kind="one-way", focus=[s[0], d[0]],
                         src=s[0], dst=d[0], **kw)


class RoleSplit(Partition):
    """Cut every link between two role sets (SQL <-> data, management <-> data...), nothing
    else. With Galera the SQL and data roles are the same containers, so SQL <-> data is
    refused as meaningless there; management <-> data is garbd <-> data nodes."""

    def __init__(self, cluster, roles_a: Sequence[str], roles_b: Sequence[str], **kw):
        cluster.topology or cluster.discover()
        sql_roles = set(getattr(cluster.engine, "sql_roles", (T.SQL,)))

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
    return RoleSplit(cluster, (T.SQL,), (T.DATA,), **kw)


def MgmDataSplit(cluster, **kw) -> RoleSplit:
    """Management node(s) / arbitrator cut off from the data nodes."""
    return RoleSplit(cluster, (T.MGM, T.ARBITRATOR), (T.DATA,), **kw)


class NodeGroupSplit(Partition):
    """Split every node group across two sides (NDB with 2 replicas: each side keeps one
    replica of every group, so arbitration decides). ``arbitrator``: ``a`` (with the first
    members), ``b``, ``none`` (isolated, seeing neither side) or ``both`` (untouched, a bridge).
    ``others`` (SQL/API nodes): ``split``, ``a``, ``b`` or ``both``."""

    def __init__(self, cluster, arbitrator: str = "a", others: str = "split", **kw):
        topo = cluster.topology or cluster.discover()
        groups = {ng: [n.name for n in sorted(ms, key=lambda n: (n.nodeid or 0, n.name))]
                  for ng, ms in topo.nodegroups().items()}
        arbs = [n.name for n in members(cluster) if n.role in (T.ARBITRATOR, T.MGM)]
        sqls = [n.name for n in members(cluster) if n.role == T.SQL]
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
        client = runtime.docker_client()
        for t in self.targets:
            c = self.cluster.container(t)
            c.reload()
            nets = (c.attrs.get("NetworkSettings") or {}).get("Networks") or {}
            for name, ep in nets.items():
                net = client.networks.get(ep.get("NetworkID") or name)
                if (net.attrs.get("Labels") or {}).get(T.PROJECT) != self.cluster.project:
                    raise BlastRadiusError(f"refusing to disconnect {t.name} from network {name!r}: "
                                           f"it does not carry {T.PROJECT}={self.cluster.project}")
                self.plugs.append((c.id, net.id, dict(ep)))
                net.disconnect(c)

    def _verify_applied(self) -> str:
        gone = []
        for t in self.targets:
            c = self.cluster.container(t)
            c.reload()
            nets = (c.attrs.get("NetworkSettings") or {}).get("Networks") or {}
            mine = [n for (cid, nid, _) in self.plugs if cid == c.id for n in nets.values() if n.get("NetworkID") == nid]
            if mine:
                raise FaultNotEffective(f"{t.name} still has an endpoint on its network")
            port = runtime.published_port(c, 3306)
            gone.append(f"{t.name} (no network endpoint, SQL port {'gone' if port is None else port})")
        return "unplugged: " + ", ".join(gone)

    def _revert(self) -> None:
        client = runtime.docker_client()
        cut_off = self.cluster.engine.excluded_running(self.cluster, self.targets)
        plugs, self.plugs = self.plugs, []
        for cid, nid, ep in plugs:
            net = client.networks.get(nid)
            c = runtime.owned(client.containers.get(cid), self.cluster.project)
            c.reload()
            if nid in [n.get("NetworkID") for n in ((c.attrs.get("NetworkSettings") or {}).get("Networks") or {}).values()]:
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
