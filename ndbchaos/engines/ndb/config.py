"""The cluster configuration file (config.ini, mounted as /etc/mysql-cluster.cnf).

config.ini repeats section names ([ndbd] once per data node), so configparser cannot read it;
this is a small parser of its own. Parameter names are case-insensitive in NDB (``HostName`` and
``hostname`` are the same parameter); values are kept as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: section name -> node type (MGM API names); "default" sections apply to every node of the type
SECTION_TYPES = {
    "ndbd": "NDB", "db": "NDB",
    "ndb_mgmd": "MGM", "mgm": "MGM",
    "mysqld": "API", "api": "API",
}

#: NodeGroup of a data node in no node group (M95 mysql-cluster-ndbd-definition: "set it to 65536")
NO_NODEGROUP = 65536

_SECTION = re.compile(r"^\[\s*(?P<name>[A-Za-z_]+)(?:\s+(?P<default>default))?\s*\]\s*$", re.I)
_PARAM = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(?P<value>.*?)\s*$")


@dataclass
class ConfigNode:
    section: str  # ndbd | ndb_mgmd | mysqld | api
    type: str  # NDB | MGM | API
    params: dict[str, str] = field(default_factory=dict)  # lower-cased keys, defaults merged

    def get(self, key: str, default=None):
        return self.params.get(key.lower(), default)

    @property
    def node_id(self) -> int | None:
        v = self.get("NodeId") or self.get("Id")
        return int(v) if v not in (None, "") else None

    @property
    def hostname(self) -> str | None:
        return self.get("HostName") or None

    @property
    def nodegroup(self) -> int | None:
        v = self.get("NodeGroup")
        return int(v) if v not in (None, "") else None

    @property
    def arbitration_rank(self) -> int:
        v = self.get("ArbitrationRank")
        if v not in (None, ""):
            return int(v)
        # Defaults (docs/facts.md NDB 5.2): management nodes 1, API/SQL nodes 0 [DOC/UNVERIFIED for API]
        return 1 if self.type == "MGM" else 0


@dataclass
class NdbConfig:
    nodes: list[ConfigNode]
    system: dict[str, str] = field(default_factory=dict)
    defaults: dict[str, dict[str, str]] = field(default_factory=dict)  # type -> lower-cased params
    #: the SQL nodes' [mysqld] options (my.cnf in use: ``mycnf.server_options``); empty when unknown
    mysqld: dict[str, str] = field(default_factory=dict)
    #: ``defaults`` as the file writes them (``16G`` where ``defaults`` has ``17179869184``): load_config_ini
    written: dict[str, dict[str, str]] = field(default_factory=dict)

    def of_type(self, t: str) -> list[ConfigNode]:
        return [n for n in self.nodes if n.type == t]

    @property
    def data_nodes(self) -> list[ConfigNode]:
        """Data nodes in a node group: the members every rule counts. A data node configured with
        ``NodeGroup=65536`` is in none until ``CREATE NODEGROUP`` (ndb-operations 1.1): ``spare_nodes``."""
        return [n for n in self.of_type("NDB") if n.nodegroup != NO_NODEGROUP]

    @property
    def spare_nodes(self) -> list[ConfigNode]:
        """Data nodes in no node group (``NodeGroup=65536``)."""
        return [n for n in self.of_type("NDB") if n.nodegroup == NO_NODEGROUP]

    @property
    def mgm_nodes(self) -> list[ConfigNode]:
        return self.of_type("MGM")

    @property
    def api_nodes(self) -> list[ConfigNode]:
        return self.of_type("API")

    def node(self, node_id: int) -> ConfigNode | None:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        return None

    def data_param(self, key: str, default=None):
        """A data node parameter as set in [ndbd default] (or on the first data node)."""
        v = self.defaults.get("NDB", {}).get(key.lower())
        if v is None and self.data_nodes:
            v = self.data_nodes[0].get(key)
        return default if v is None else v

    def data_param_ms(self, key: str, default: int) -> int:
        v = self.data_param(key)
        return int(v) if v not in (None, "") else default

    @property
    def replicas(self) -> int:
        return int(self.data_param("NoOfReplicas", 2))

    def node_groups(self) -> dict[int, list[int]]:
        """Node group -> data node ids. An explicit NodeGroup wins; nodes without one fill groups
        of NoOfReplicas from the lowest node id up, as NDB assigns them (the reference's
        ndb-operations 5.1: "lowest IDs first", 2,3,4,5 with 2 replicas -> {2,3}, {4,5})."""
        groups: dict[int, list[int]] = {}
        implicit = []
        for n in sorted(self.data_nodes, key=lambda x: x.node_id or 0):
            if n.nodegroup is not None:
                groups.setdefault(n.nodegroup, []).append(n.node_id)
            else:
                implicit.append(n.node_id)
        ng = 0
        for nid in implicit:
            while len(groups.get(ng, [])) >= self.replicas:
                ng += 1
            groups.setdefault(ng, []).append(nid)
        return dict(sorted(groups.items()))

    def problems(self) -> list[str]:
        """Consistency checks the shipped topology must pass (unique ids, complete groups)."""
        out = []
        ids = [n.node_id for n in self.nodes]
        if None in ids:
            out.append("a node section has no NodeId")
        seen = set()
        for i in ids:
            if i is not None and i in seen:
                out.append(f"NodeId {i} is used twice")
            seen.add(i)
        for ng, members in self.node_groups().items():
            if len(members) != self.replicas:
                out.append(f"node group {ng} has {len(members)} data nodes, NoOfReplicas is {self.replicas}")
        hosts = [n.hostname for n in self.nodes if n.hostname]
        dup = {h for h in hosts if hosts.count(h) > 1}
        if dup:
            out.append(f"host(s) used by more than one node: {sorted(dup)}")
        return out


def parse_config_ini(text: str) -> NdbConfig:
    nodes: list[ConfigNode] = []
    system: dict[str, str] = {}
    defaults: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    pending: list[tuple[str, str, dict]] = []  # (section, type, own params) in file order
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()  # ";" is not a comment: LogDestination uses it
        if not line:
            continue
        m = _SECTION.match(line)
        if m:
            name = m.group("name").lower()
            if m.group("default"):
                t = SECTION_TYPES.get(name)
                current = defaults.setdefault(t, {}) if t else {}
            elif name == "system":
                current = system
            elif name in SECTION_TYPES:
                own: dict[str, str] = {}
                pending.append((name, SECTION_TYPES[name], own))
                current = own
            else:  # [tcp], [tcp default], [shm] ...: connection sections, not nodes
                current = {}
            continue
        m = _PARAM.match(line)
        if m and current is not None:
            current[m.group("key").lower()] = m.group("value")
    for name, t, own in pending:
        params = dict(defaults.get(t, {}))
        params.update(own)
        nodes.append(ConfigNode(name, t, params))
    return NdbConfig(nodes, system, defaults)


def read_config(path: str | Path) -> NdbConfig:
    return parse_config_ini(Path(path).read_text())


def replace_prefix(text: str, old_prefix: str, new_prefix: str) -> str:
    """Rewrite every address ``<old_prefix>.N`` to ``<new_prefix>.N`` (for a subnet override).
    Prefixes are the first three octets of a /24, e.g. ``10.213.77``."""
    pat = re.compile(r"(?<![\d.])" + re.escape(old_prefix) + r"\.(?=\d)")
    return pat.sub(new_prefix + ".", text)

