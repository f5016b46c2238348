"""Targets by role: a scenario names *what* to break (one data node, a node group, the
arbitrator...), never a container. A selector is resolved against the cluster's current topology
when the fault is built; random choices use a seed that is recorded in the fault window.

    from ndbchaos.faults import targets as TG
    Kill(cluster, TG.one_data())              # a random data node (seed recorded)
    Kill(cluster, TG.node("data2"))           # a given node
    Kill(cluster, TG.nodegroup(0))            # every data node of node group 0
    Kill(cluster, TG.one_per_nodegroup())     # one data node in each node group
    Kill(cluster, TG.master())                # NDB president (engine-supplied)
    Kill(cluster, TG.arbitrators())           # management node(s) / garbd
    Kill(cluster, TG.sql(k=1))                # one SQL node

A selector's ``params()`` go into ``FaultWindow.params`` (``selector``, ``seed``, ``picked``),
so the report can say how the target was chosen and the run can be repeated.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

from ..runtimes import docker
from .. import topology as TP
from ..errors import BlastRadiusError, UsageError
from ..handle import ClusterHandle, ComposeProject
from ..topology import Node, Topology

if TYPE_CHECKING:  # pragma: no cover (a selector asks the engine's status only)
    from ..engines.protocols import Status


def _fresh_seed() -> int:
    return random.SystemRandom().randrange(1, 2**31)


def derive_seed(run_seed, label: str) -> int:
    """A stable per-choice seed from a run seed (so one ``--seed`` replays every choice)."""
    h = hashlib.sha256(f"{run_seed}:{label}".encode()).digest()
    return int.from_bytes(h[:4], "big") & 0x7FFFFFFF or 1


def _topology(cluster: ClusterHandle) -> "Topology":
    return cluster.topology if cluster.topology is not None else cluster.discover()


def _by_name(nodes: Iterable["Node"]) -> list["Node"]:
    return sorted(nodes, key=lambda n: (n.nodeid if n.nodeid is not None else 1 << 30, n.name))


@dataclass
class Selector:
    """Base: a description of targets, resolved against a cluster."""

    kind: str = "selector"
    seed: int | None = None
    picked: list[str] = field(default_factory=list)

    def resolve(self, cluster: ClusterHandle) -> list["Node"]:
        nodes = self._resolve(cluster)
        if not nodes:
            raise UsageError(f"target {self.describe()} matches no node in project {cluster.project}")
        self.picked = [n.name for n in nodes]
        return nodes

    def _resolve(self, cluster) -> list["Node"]:
        raise NotImplementedError

    def _rng(self, cluster) -> random.Random:
        if self.seed is None:
            run_seed = cluster.options.seed
            if run_seed is not None:
                self.seed = derive_seed(run_seed, f"{self.describe()}#{cluster.next_target_draw()}")
            else:
                self.seed = _fresh_seed()
        return random.Random(self.seed)

    def describe(self) -> str:
        return self.kind

    def params(self) -> dict:
        p = {"selector": self.describe(), "picked": list(self.picked)}
        if self.seed is not None:
            p["seed"] = self.seed
        return p


@dataclass
class Named(Selector):
    names: tuple[str, ...] = ()
    kind: str = "node"

    def _resolve(self, cluster):
        topo = _topology(cluster)
        out = []
        for n in self.names:
            try:
                out.append(topo.node(n))
            except KeyError as e:
                refuse_foreign(cluster, n)
                raise UsageError(str(e).strip("\"'")) from None
        return out

    def describe(self):
        return ",".join(self.names)


@dataclass
class Role(Selector):
    """Every node of some roles, or ``k`` of them at random."""

    roles: tuple[str, ...] = (TP.DATA,)
    k: int | None = None
    kind: str = "role"

    def _candidates(self, cluster) -> list["Node"]:
        topo = _topology(cluster)
        return _by_name(n for n in topo.nodes if n.role in self.roles)

    def _resolve(self, cluster):
        cands = self._candidates(cluster)
        if self.k is None:
            return cands
        if self.k > len(cands):
            raise UsageError(f"{self.describe()}: asked for {self.k}, only {len(cands)} node(s)")
        return _by_name(self._rng(cluster).sample(cands, self.k))

    def describe(self):
        base = "+".join(self.roles)
        return base if self.k is None else f"random {self.k} of {base}"


@dataclass
class Sql(Role):
    """SQL nodes: every node that serves SQL (Galera: the data nodes; NDB: the mysqld nodes)."""

    kind: str = "sql"

    def _candidates(self, cluster):
        topo = _topology(cluster)
        return _by_name(n for n in topo.nodes if n.serves_sql and n.role != TP.PROXY)

    def describe(self):
        return "sql" if self.k is None else f"random {self.k} of sql"


@dataclass
class NodeGroup(Selector):
    """Every data node of a node group (``nodegroup=None``: of a random node group)."""

    nodegroup: int | None = None
    kind: str = "nodegroup"

    def _resolve(self, cluster):
        groups = _topology(cluster).nodegroups()
        ng = self.nodegroup
        if ng is None:
            if not groups:
                return []
            ng = self._rng(cluster).choice(sorted(groups))
            self.nodegroup = ng
        if ng not in groups:
            raise UsageError(f"no node group {ng} (node groups: {', '.join(map(str, groups)) or 'none'})")
        return _by_name(groups[ng])

    def describe(self):
        return f"nodegroup {self.nodegroup if self.nodegroup is not None else '?'}"


@dataclass
class OnePerNodeGroup(Selector):
    """One data node in each node group, chosen at random (seeded)."""

    kind: str = "one-per-nodegroup"

    def _resolve(self, cluster):
        rng = self._rng(cluster)
        return [rng.choice(_by_name(members)) for _, members in sorted(_topology(cluster).nodegroups().items())]


@dataclass
class Master(Selector):
    """The master / president data node, as the engine reports it (NDB only)."""

    kind: str = "master"

    def _resolve(self, cluster):
        engine: Status = cluster.engine
        node = engine.master_node(cluster)  # None where the engine has no master
        if node is None:
            raise UsageError(f"engine {engine.name} has no master/president data node")
        return [node]


def refuse_foreign(cluster: ClusterHandle, name: str) -> None:
    """A name that is not a node of the run but is some other container's name: say so as a
    blast-radius refusal (clearer than "no such node" when someone aims at a neighbour). Only a
    Compose project's neighbours are containers; an inventory names every node it may touch."""
    if not isinstance(cluster, ComposeProject):
        return
    try:
        c = docker.docker_client().containers.get(name)
    except Exception:
        return
    try:
        docker.owned(c, cluster.project)
    except BlastRadiusError:
        raise
    except Exception:
        return


# -- constructors (the public vocabulary) ---------------------------------------------------

def node(*names: str) -> Named:
    """Given node(s) by name (``data2``, ``mgm1``...)."""
    if not names:
        raise UsageError("node(): no name given")
    return Named(names=tuple(names))


def data(name: str | None = None, seed: int | None = None) -> Selector:
    """A given data node, or (no name) one data node at random."""
    return Named(names=(name,)) if name else Role(roles=(TP.DATA,), k=1, seed=seed, kind="one-data")


def one_data(seed: int | None = None) -> Role:
    return Role(roles=(TP.DATA,), k=1, seed=seed, kind="one-data")


def all_data() -> Role:
    return Role(roles=(TP.DATA,))


def nodegroup(ng: int | None = None, seed: int | None = None) -> NodeGroup:
    return NodeGroup(nodegroup=ng, seed=seed)


def one_per_nodegroup(seed: int | None = None) -> OnePerNodeGroup:
    return OnePerNodeGroup(seed=seed)


def master() -> Master:
    return Master()


def arbitrators(k: int | None = None, seed: int | None = None) -> Role:
    """Management node(s) / arbitrator(s): NDB ndb_mgmd, Galera garbd."""
    return Role(roles=(TP.MGM, TP.ARBITRATOR), k=k, seed=seed, kind="arbitrators")


mgm = arbitrators


def sql(k: int | None = None, seed: int | None = None) -> Sql:
    return Sql(roles=(TP.SQL,), k=k, seed=seed)


def random_nodes(roles: Sequence[str] = (TP.DATA,), k: int = 1, seed: int | None = None) -> Role:
    return Role(roles=tuple(roles), k=k, seed=seed, kind="random")


def role(*roles: str) -> Role:
    return Role(roles=tuple(roles))


# -- resolution ------------------------------------------------------------------------------

def resolve(cluster: ClusterHandle, targets) -> tuple[list[Node], dict]:
    """Turn a selector, a node, a node name, or a list of those into nodes, plus the params
    that say how they were chosen (for the fault window)."""
    if isinstance(targets, (Selector, Node, str)):
        targets = [targets]
    nodes: list[Node] = []
    params: list[dict] = []
    for t in targets:
        if isinstance(t, Selector):
            nodes += t.resolve(cluster)
            params.append(t.params())
        elif isinstance(t, Node):
            nodes.append(t)
        elif isinstance(t, str):
            s = parse(t)
            nodes += s.resolve(cluster)
            if not isinstance(s, Named):
                params.append(s.params())
        else:
            raise UsageError(f"not a target: {t!r}")
    seen, uniq = set(), []
    for n in nodes:
        if n.name not in seen:
            seen.add(n.name)
            uniq.append(n)
    out: dict = {}
    if params:
        out["selection"] = params if len(params) > 1 else params[0]
    return uniq, out


SPEC_HELP = ("a node name (data2), or one of: one-data, all-data, ng:N (every data node of node "
             "group N), one-per-ng, master, arbitrator (mgm), sql, sql:K, random:ROLE[:K]; "
             "add @SEED to fix a random choice (one-data@42)")


def parse(spec: str) -> Selector:
    """Selector from a command-line word (see ``SPEC_HELP``)."""
    s = spec.strip()
    seed = None
    if "@" in s:
        s, _, sd = s.partition("@")
        try:
            seed = int(sd)
        except ValueError:
            raise UsageError(f"bad seed in target {spec!r}") from None
    low = s.lower()
    parts = low.split(":")
    head = parts[0]
    try:
        if head == "one-data":
            return one_data(seed)
        if head == "all-data":
            return all_data()
        if head in ("ng", "nodegroup"):
            return nodegroup(int(parts[1]) if len(parts) > 1 and parts[1] else None, seed)
        if head in ("one-per-ng", "one-per-nodegroup"):
            return one_per_nodegroup(seed)
        if head in ("master", "president"):
            return master()
        if head in ("arbitrator", "arbitrators", "mgm"):
            return arbitrators(int(parts[1]) if len(parts) > 1 else None, seed)
        if head == "sql":
            return sql(int(parts[1]) if len(parts) > 1 else None, seed)
        if head == "random":
            roles = tuple(parts[1].split("+")) if len(parts) > 1 and parts[1] else (TP.DATA,)
            return random_nodes(roles, int(parts[2]) if len(parts) > 2 else 1, seed)
    except (ValueError, IndexError):
        raise UsageError(f"bad target {spec!r}: {SPEC_HELP}") from None
    return Named(names=(s,))
