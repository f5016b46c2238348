"""The configuration of a running cluster, read from its management server with ``ndb_config``,
and the check of an inventory against it.

A container cluster's configuration is the config.ini this project ships. An inventory's cluster
was configured by someone else, so its node ids, types, node groups, ports and the timings the
expectations are derived from are read from the cluster itself (``ndb_config -c <mgmd>
--query=...``, run on a management host) and the inventory is checked against them: a node id
the cluster does not have, or has as another type, or a data or management node the inventory
leaves out, is a one-line error before any fault.

Output measured on 9.7.2 (``--fields=, --rows=;``): ``1,ndb_mgmd,,10.213.78.101,1186,,1,/var/lib/mysql;
11,ndbd,0,10.213.78.111,,2202,,/var/lib/mysql;21,mysqld,,10.213.78.121,,,0,`` (empty fields: not a
parameter of that type). Enumerations come as numbers: ``Arbitration`` of a default config is 1.
"""

from __future__ import annotations

from ... import topology as TP
from .config import ConfigNode, NdbConfig

NODE_FIELDS = ("NodeId", "type", "NodeGroup", "HostName", "PortNumber", "ServerPort", "ArbitrationRank", "DataDir")
#: data node parameters the rules read (rules.timings, rules.arbitration_method), NodeId first
DATA_FIELDS = ("NodeId", "NoOfReplicas", "HeartbeatIntervalDbDb", "HeartbeatIntervalDbApi", "ArbitrationTimeout",
               "Arbitration", "TimeBetweenGlobalCheckpoints", "StopOnError")
#: ndb_config's node types -> (config.ini section, MGM API type)
TYPES = {"ndb_mgmd": ("ndb_mgmd", "MGM"), "mgm": ("ndb_mgmd", "MGM"), "ndbd": ("ndbd", "NDB"),
         "mysqld": ("mysqld", "API"), "api": ("api", "API")}
#: Arbitration as ndb_config prints it. 1 = Default is measured (9.7.2, parameter unset); 0 and 2
#: follow the order of the manual's list (Default, Disabled, WaitExternal) [UNVERIFIED numbering]
ARBITRATION = {"0": "Disabled", "1": "Default", "2": "WaitExternal"}
ROLE_TYPE = {TP.MGM: "MGM", TP.DATA: "NDB", TP.SQL: "API"}
TYPE_WORD = {"MGM": "a management node", "NDB": "a data node", "API": "an SQL/API node"}


def queries(connectstring: str) -> list[list[str]]:
    base = ["ndb_config", "-c", connectstring, "--fields=,", "--rows=;"]
    return [base + ["--query=" + ",".join(f.lower() for f in NODE_FIELDS)],
            base + ["--type=ndbd", "--query=" + ",".join(f.lower() for f in DATA_FIELDS)]]


def parse(nodes_out: str, data_out: str) -> NdbConfig:
    """An NdbConfig from the two query outputs (``queries``). ValueError on output it cannot read."""
    nodes: list[ConfigNode] = []
    by_id: dict[int, ConfigNode] = {}
    for row in _rows(nodes_out, len(NODE_FIELDS)):
        kind = TYPES.get(row[1].lower())
        if kind is None or not row[0].isdigit():
            raise ValueError(f"unexpected ndb_config row {','.join(row)!r}")
        params = {k.lower(): v for k, v in zip(NODE_FIELDS, row) if v != "" and k != "type"}
        n = ConfigNode(kind[0], kind[1], params)
        nodes.append(n)
        by_id[int(row[0])] = n
    for row in _rows(data_out, len(DATA_FIELDS)):
        n = by_id.get(int(row[0])) if row[0].isdigit() else None
        if n is None or n.type != "NDB":
            raise ValueError(f"ndb_config gave data node parameters for {row[0]!r}, not a data node")
        for k, v in zip(DATA_FIELDS[1:], row[1:]):
            if v != "":
                n.params[k.lower()] = ARBITRATION.get(v, v) if k == "Arbitration" else v
    if not any(n.type == "NDB" for n in nodes):
        raise ValueError("ndb_config listed no data node")
    return NdbConfig(nodes, {}, {})


def _rows(text: str, width: int) -> list[list[str]]:
    out = []
    for raw in text.replace("\n", ";").split(";"):
        if not raw.strip():
            continue
        row = [x.strip() for x in raw.split(",")]
        if len(row) != width:
            raise ValueError(f"ndb_config row {raw.strip()!r} has {len(row)} fields, {width} expected")
        out.append(row)
    return out


def check(inventory, cfg: NdbConfig) -> tuple[list[str], list[str]]:
    """(problems, notes) of an inventory against the cluster's configuration. Fills in node
    groups and management data directories the inventory left out (in the inventory's specs)."""
    problems, notes = [], []
    listed = {}
    for spec in inventory.nodes:
        cn = cfg.node(spec.nodeid)
        want = ROLE_TYPE.get(spec.role)
        if cn is None:
            problems.append(f"{spec.name}: node id {spec.nodeid} is not in the cluster's configuration "
                            f"(its node ids: {', '.join(str(n.node_id) for n in cfg.nodes)})")
            continue
        if cn.type != want:
            problems.append(f"{spec.name}: node id {spec.nodeid} is {TYPE_WORD[cn.type]} in the cluster's "
                            f"configuration, not {TYPE_WORD[want]}")
            continue
        listed[spec.nodeid] = spec
        if spec.role == TP.DATA:
            ng = cfg_nodegroup(cfg, spec.nodeid)
            if spec.nodegroup is None:
                spec.nodegroup = ng
                notes.append(f"{spec.name}: node group {ng} (from the cluster)")
            elif ng is not None and spec.nodegroup != ng:
                problems.append(f"{spec.name}: node group {spec.nodegroup} in the inventory, {ng} in the cluster")
        if spec.role == TP.MGM and spec.datadir is None and cn.get("DataDir"):
            spec.datadir = cn.get("DataDir")
    for cn in cfg.nodes:
        if cn.type in ("NDB", "MGM") and cn.node_id not in listed:
            problems.append(f"the cluster has {TYPE_WORD[cn.type]} with node id {cn.node_id} "
                            f"({cn.hostname or 'any host'}) that the inventory does not list: every data and "
                            "management node must be in it (the expectations count them)")
    return problems, notes


def cfg_nodegroup(cfg: NdbConfig, nodeid: int) -> int | None:
    for ng, ids in cfg.node_groups().items():
        if nodeid in ids:
            return ng
    return None
