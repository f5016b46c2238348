"""The partition machinery: ``Partition`` applies a grudge with iptables in each node's own
network namespace (through helper containers) and verifies it with TCP probes; ``members`` are
the nodes partitions are cut from. The catalogue of partitions is in ``network``."""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..runtimes import docker
from .. import topology as TP
from ..errors import NdbChaosError, UsageError
from . import grudge as G
from ..runtimes import netns
from .base import Fault, FaultNotEffective
from .targets import refuse_foreign
from .targets import resolve as resolve_targets

MEMBER_ROLE_ORDER = (TP.DATA, TP.ARBITRATOR, TP.MGM, TP.SQL)


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
            if docker.container_state(c) == "running":
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
        self.helpers = self.cluster.net_helpers([self._node(n) for n in uni], purpose=self.kind)

    def _apply(self) -> None:
        uni = [n for n in self._running_universe() if n in self.helpers]
        ips = {n: self.cluster.node_ips(self._node(n)) for n in uni}
        comment = f"ndbchaos {self.kind} {G.describe(self.grudge)}"

        def apply_one(item):
            node, drops = item
            srcs = [ip for d in sorted(drops) for ip in ips.get(d, [])]
            script = netns.drop_rules_script(self.chain, srcs, self.mode, comment)
            code, out = self.helpers[node].install(self.chain, script, timeout=30)
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
                self.helpers[n] = self.cluster.net_helper(self._node(n), purpose=self.kind)
        targets = {}
        for n in uni:
            ips = self.cluster.node_ips(self._node(n))
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
        gone = {n for n in uni if docker.container_state(self.cluster.container(self._node(n))) != "running"}
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
        self.window.params["probes"] = {f"{a}->{b}": ("open" if ok else why)
                                        for (a, b), (ok, why) in sorted(res.items())}
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
            if not self.cluster.netns_outlives_node and docker.container_state(c) != "running":
                return  # a stopped container has no namespace left, nor rules (a host keeps both)
            h = self.helpers.get(node)
            if h is None or not h.current():
                if h is not None:
                    h.remove()
                h = self.helpers[node] = self.cluster.net_helper(self._node(node), purpose=self.kind)
            code, out = h.uninstall(self.chain, timeout=30)
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
    refuse_foreign(cluster, name)
    raise UsageError(f"no node named {name!r} in project {cluster.project} "
                     f"(nodes: {', '.join(n.name for n in cluster.topology.nodes)})")
