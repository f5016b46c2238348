"""Topology: the nodes of one cluster, found by the labels every container carries.

Labels (set in the compose files):

    ndbchaos.project    unique per run; the framework touches nothing without the current one
    ndbchaos.role       data | arbitrator | mgm | sql | proxy | helper
    ndbchaos.nodegroup  node group of a data node ("" for other roles)
    ndbchaos.node       node name within the cluster (data1, mgm1, sql2, ...)
    ndbchaos.nodeid     NDB node id ("" where the engine has none)
    ndbchaos.engine     galera | ndb

Roles are what scenarios are written against. An SQL endpoint may live in the same container as a
data node (Galera) or in a container of its own (NDB); ``Node.sql_port`` says where a client
connects (a port on 127.0.0.1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

LABEL_PREFIX = "ndbchaos."
PROJECT = LABEL_PREFIX + "project"
ROLE = LABEL_PREFIX + "role"
NODEGROUP = LABEL_PREFIX + "nodegroup"
NODE = LABEL_PREFIX + "node"
NODEID = LABEL_PREFIX + "nodeid"
ENGINE = LABEL_PREFIX + "engine"

DATA, ARBITRATOR, MGM, SQL, PROXY, HELPER = "data", "arbitrator", "mgm", "sql", "proxy", "helper"

#: where clients connect to a container cluster's published SQL ports
LOCALHOST = "127.0.0.1"


@dataclass
class Node:
    name: str
    role: str
    container: str  # container name
    container_id: str = ""
    nodegroup: int | None = None
    nodeid: int | None = None
    ip: str | None = None  # address on the cluster network
    sql_port: int | None = None  # published port on 127.0.0.1, if this node serves SQL
    sql_host: str = LOCALHOST  # the address clients connect to (an inventory's SQL node: its own)
    serves_sql: bool = False
    labels: dict = field(default_factory=dict)

    @classmethod
    def from_labels(cls, container: str, container_id: str, labels: dict, **kw) -> "Node":
        ng = labels.get(NODEGROUP, "")
        nid = labels.get(NODEID, "")
        return cls(
            name=labels.get(NODE, container),
            role=labels.get(ROLE, ""),
            container=container,
            container_id=container_id,
            nodegroup=int(ng) if ng not in ("", None) else None,
            nodeid=int(nid) if nid not in ("", None) else None,
            labels=dict(labels),
            **kw,
        )

    def describe(self) -> str:
        bits = [self.name, self.role]
        if self.nodegroup is not None:
            bits.append(f"ng{self.nodegroup}")
        if self.nodeid is not None:
            bits.append(f"id{self.nodeid}")
        return "/".join(bits)


class Topology:
    """The nodes of one run, indexed by name and role."""

    def __init__(self, project: str, engine: str, nodes: Iterable[Node]):
        self.project = project
        self.engine = engine
        self.nodes: list[Node] = sorted(nodes, key=lambda n: (n.role, n.nodeid or 0, n.name))
        self._by_name = {n.name: n for n in self.nodes}

    def __iter__(self):
        return iter(self.nodes)

    def __len__(self):
        return len(self.nodes)

    def node(self, name: str) -> Node:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no node named {name!r} in project {self.project} "
                           f"(nodes: {', '.join(self._by_name)})") from None

    def role(self, role: str) -> list[Node]:
        return [n for n in self.nodes if n.role == role]

    @property
    def data_nodes(self) -> list[Node]:
        return self.role(DATA)

    @property
    def sql_nodes(self) -> list[Node]:
        """Client endpoints: nodes with an SQL port (published on 127.0.0.1 for containers)."""
        return [n for n in self.nodes if n.serves_sql and n.sql_port]

    @property
    def arbitrators(self) -> list[Node]:
        return self.role(ARBITRATOR) + self.role(MGM)

    def nodegroups(self) -> dict[int, list[Node]]:
        groups: dict[int, list[Node]] = {}
        for n in self.data_nodes:
            groups.setdefault(n.nodegroup if n.nodegroup is not None else 0, []).append(n)
        return dict(sorted(groups.items()))

    def to_dict(self) -> dict:
        return {
            "project": self.project,
            "engine": self.engine,
            "nodes": [
                {k: getattr(n, k)
                 for k in ("name", "role", "container", "nodegroup", "nodeid", "ip", "sql_host", "sql_port")}
                for n in self.nodes
            ],
        }
