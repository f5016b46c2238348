"""A layout spec: ``nodegroups=N,replicas=R,sql=S,mgm=M,spare=K`` parsed into ``LayoutSpec``.

The node id scheme is the shipped default layout's (ndb/config.ini), in decades: management nodes
1..M, data nodes from 11 (node group g holds the R consecutive ids from 11 + g*R, the order NDB
itself fills groups in: docs/facts.md, ndb-operations "lowest IDs first"), then the spare data
nodes (``NodeGroup=65536``: in no node group until ``CREATE NODEGROUP``), SQL nodes from the next
decade's first id (21 in the default), four spare ``[api]`` slots from the decade after (31-34).
Addresses are ``last octet = 100 + NodeId`` in the cluster's /24, so no node id may pass 154.

Limits (8.4 manual, NodeId and NoOfReplicas; ndb-operations 1.2: at most 144 data nodes, ids
1-144; 255 node ids in all): NoOfReplicas 1-4, 1 or 2 management nodes (ranks 1 and 2, as the
default layout), at least one SQL node (the clients' endpoint). What the machine holds is
``check_resources``: each container's measured memory, summed, against a fixed ceiling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import UsageError

#: keys of a spec, with their defaults (nodegroups 1: the smallest cluster of the given replicas)
DEFAULTS = {"nodegroups": 1, "replicas": 2, "sql": 2, "mgm": 2, "spare": 0}
#: NoOfReplicas range (8.4/9.x manual, NoOfReplicas: "1 to 4"; ndb.md)
REPLICAS = range(1, 5)
#: data node ids (8.4 manual, NodeId of [ndbd]: 1-144)
MAX_DATA_NODE_ID = 144
#: node ids of any kind (8.4 manual, NodeId: 1-255)
MAX_NODE_ID = 255
#: ``100 + NodeId`` must stay a host address of the /24 (.254 at most)
MAX_ADDRESS_NODE_ID = 154
#: the role label of a spare data node (in no node group): no fault picks it, no rule counts it
SPARE = "spare"
#: spare [api] slots of every layout (ndbinfo_select_all, ndb_restore, NDB API tools)
API_SLOTS = 4

#: memory of one container, MiB, measured with `docker stats` on this machine with the shipped
#: settings (docs/ndb.md, Resources and start time): a data node 490, an SQL node ~455, a
#: management node 5-6.
CONTAINER_MIB = {"data": 490, "sql": 455, "mgm": 6}
#: the ceiling of a layout's estimated memory: 12 GiB, half of this 24 GB machine. The rest is
#: for what every run also needs: the client worker processes, toxiproxy, Docker, the page cache
#: of the data nodes' REDO and checkpoint files (256 MB of REDO per data node) and the host. The
#: default layout estimates 4 x 490 + 2 x 455 + 2 x 6 = 2882 MiB (2.9 GB measured); 12 GiB holds
#: about 25 data or SQL nodes, so ``MAX_CONTAINERS`` is the bound a spec meets first here (the
#: ceiling binds where the two are changed). The engine also refuses a layout that exceeds the
#: memory available at its start (``check_free``).
MEMORY_CEILING_MIB = 12 * 1024

#: the ceiling of a layout's containers (management, data, spare and SQL nodes): 20. The 2 cores
#: bound a layout before memory does: every ndbmtd keeps its own threads busy and the data nodes
#: declare a peer dead after 4 missed heartbeats of HeartbeatIntervalDbDb (1 s here), so a host
#: starved of CPU fails nodes nobody faulted [UNVERIFIED: the largest layout that holds its
#: heartbeats here was not measured; 20 is 2.5 times the default layout's 8 containers].
MAX_CONTAINERS = 20


@dataclass(frozen=True)
class LayoutSpec:
    nodegroups: int = DEFAULTS["nodegroups"]
    replicas: int = DEFAULTS["replicas"]
    sql: int = DEFAULTS["sql"]
    mgm: int = DEFAULTS["mgm"]
    spare: int = DEFAULTS["spare"]

    def __str__(self) -> str:
        return ",".join(f"{k}={getattr(self, k)}" for k in DEFAULTS)

    @property
    def data(self) -> int:
        """Data nodes in node groups."""
        return self.nodegroups * self.replicas

    def nodes(self) -> list[tuple[str, str, int, int | None]]:
        """(role, name, node id, node group) of every node, in node id order; role ``spare`` is a
        data node in no node group (``config.NO_NODEGROUP`` in config.ini)."""
        out: list[tuple[str, str, int, int | None]] = [
            ("mgm", f"mgm{i}", i, None) for i in range(1, self.mgm + 1)]
        out += [("data", f"data{i + 1}", 11 + i, i // self.replicas) for i in range(self.data)]
        out += [(SPARE, f"spare{i + 1}", 11 + self.data + i, None) for i in range(self.spare)]
        base = self.sql_base
        out += [("sql", f"sql{i + 1}", base + i, None) for i in range(self.sql)]
        return out

    @property
    def sql_base(self) -> int:
        """First SQL node id: the first id of the decade after the data nodes (21 in the default)."""
        return _next_decade(10 + self.data + self.spare)

    @property
    def api_ids(self) -> list[int]:
        """The spare [api] slots: the decade after the SQL nodes (31-34 in the default)."""
        first = _next_decade(self.sql_base - 1 + self.sql)
        return list(range(first, first + API_SLOTS))

    def rank(self, nid: int) -> int:
        """ArbitrationRank of a node: management node 1 rank 1 (the arbitrator), node 2 rank 2 (its
        successor), SQL nodes 0 (they never arbitrate)."""
        return 1 if nid == 1 else 2 if nid == 2 else 0

    @property
    def params(self) -> dict:
        """[ndbd default] values over the default layout's: none (a twin has the user's)."""
        return {}

    def memory_mib(self) -> int:
        """Estimated memory of the layout's containers (``CONTAINER_MIB``)."""
        return estimate_mib(self.data + self.spare, self.sql, self.mgm)


def estimate_mib(data: int, sql: int, mgm: int) -> int:
    """Estimated memory of so many data (spare ones included), SQL and management containers."""
    return CONTAINER_MIB["data"] * data + CONTAINER_MIB["sql"] * sql + CONTAINER_MIB["mgm"] * mgm


def _next_decade(last_id: int) -> int:
    """The first id of the decade after ``last_id`` (14 -> 21, 20 -> 21, 22 -> 31)."""
    return 10 * math.ceil(last_id / 10) + 1


def parse(text: str) -> LayoutSpec:
    """``nodegroups=3,replicas=2`` -> LayoutSpec; UsageError (one line) for anything impossible."""
    values = dict(DEFAULTS)
    seen = set()
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        key, sep, value = (x.strip() for x in part.partition("="))
        key = key.lower()
        if not sep or key not in DEFAULTS:
            raise UsageError(f"NDB layout {text!r}: {part!r} is not one of {', '.join(f'{k}=N' for k in DEFAULTS)}")
        if key in seen:
            raise UsageError(f"NDB layout {text!r}: {key} given twice")
        seen.add(key)
        if not value.isdigit():
            raise UsageError(f"NDB layout {text!r}: {key}={value!r} is not a whole number")
        values[key] = int(value)
    if not seen:
        raise UsageError(f"NDB layout {text!r}: empty (expected e.g. nodegroups=2,replicas=2,sql=2,mgm=2)")
    spec = LayoutSpec(**values)
    check(spec, text)
    return spec


def check(spec: LayoutSpec, text: str | None = None) -> None:
    """Raise UsageError (one line) unless NDB accepts the layout and this machine holds it."""
    what = f"NDB layout {text or str(spec)!r}"
    if spec.replicas not in REPLICAS:
        raise UsageError(f"{what}: replicas must be 1-4 (NoOfReplicas), not {spec.replicas}")
    if spec.nodegroups < 1:
        raise UsageError(f"{what}: nodegroups must be at least 1")
    if spec.mgm not in (1, 2):
        raise UsageError(f"{what}: mgm must be 1 or 2 (arbitration ranks 1 and 2), not {spec.mgm}")
    if spec.sql < 1:
        raise UsageError(f"{what}: sql must be at least 1 (the clients' endpoint)")
    last_data = 10 + spec.data + spec.spare
    if last_data > MAX_DATA_NODE_ID:
        raise UsageError(f"{what}: {spec.data + spec.spare} data nodes need ids up to {last_data}; "
                         f"data node ids end at {MAX_DATA_NODE_ID}")
    last = spec.api_ids[-1]
    if last > MAX_ADDRESS_NODE_ID:
        raise UsageError(f"{what}: node ids up to {last} (of at most {MAX_NODE_ID}) pass {MAX_ADDRESS_NODE_ID}, "
                         "the last whose address 100 + NodeId is in the /24")
    count = spec.mgm + spec.data + spec.spare + spec.sql
    if count > MAX_CONTAINERS:
        raise UsageError(f"{what}: {count} NDB nodes, more than the {MAX_CONTAINERS} this 2-core machine runs "
                         "with 1 s heartbeats")
    mib = spec.memory_mib()
    if mib > MEMORY_CEILING_MIB:
        raise UsageError(f"{what}: needs about {mib} MiB ({spec.data + spec.spare} data x "
                         f"{CONTAINER_MIB['data']}, {spec.sql} SQL x {CONTAINER_MIB['sql']}, {spec.mgm} mgm x "
                         f"{CONTAINER_MIB['mgm']}), more than the {MEMORY_CEILING_MIB} MiB ceiling of this machine")


def check_free(spec: LayoutSpec, available_mib: int | None) -> None:
    """Raise UsageError when the layout's estimate exceeds the memory available now (``None``:
    unknown, nothing to check)."""
    mib = spec.memory_mib()
    if available_mib is not None and mib > available_mib:
        raise UsageError(f"NDB layout {str(spec)!r} needs about {mib} MiB; {available_mib} MiB is available")


def available_mib(meminfo: str = "/proc/meminfo") -> int | None:
    """MemAvailable of the host in MiB, or None where there is no /proc/meminfo."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        return None
    return None


#: the named layouts as specs: ``default`` (ndb.yml) and ``small``, the image's own (ndb-small.yml:
#: 1 management node, one node group of 2 replicas, 1 SQL node). Their shipped files stay what CI
#: starts; the small layout's node ids are the image's (2, 3, 4), not this module's scheme.
NAMED = {
    "default": LayoutSpec(nodegroups=2, replicas=2, sql=2, mgm=2),
    "small": LayoutSpec(nodegroups=1, replicas=2, sql=1, mgm=1),
}


def resolve(value: str) -> tuple[str, LayoutSpec]:
    """A layout option -> (name, spec): a named layout, a spec equal to one (its name), or a spec
    (its canonical text). UsageError for anything else."""
    v = str(value).strip().lower()
    if v in NAMED:
        return v, NAMED[v]
    if "=" not in v:
        raise UsageError(f"unknown NDB layout {value!r} (expected {' or '.join(NAMED)}, "
                         "or a spec such as nodegroups=2,replicas=2,sql=2,mgm=2,spare=0)")
    spec = parse(v)
    # The default layout's spec starts the shipped default files (its node ids are this scheme's);
    # the small layout's spec is generated (its shipped ids are the image's, not this scheme's).
    if spec == NAMED["default"]:
        return "default", spec
    return str(spec), spec
