"""The inventory file: an existing cluster on hosts the framework did not start (docs/inventory.md).

Pure: reading and validating the file needs no host. Every problem is one line naming the file
and the entry (``InventoryError``, exit 2), raised before anything is contacted. What can only be
checked on the hosts (reachable, process found, node ids as the cluster itself counts them) is
``ndbchaos.runtimes.inventory.cluster.InventoryCluster.verify``.

    engine: ndb
    name: staging                    # the run label on every rule and guard we leave on a host
    ssh: {identity_file: ./id_ed25519, config: ./ssh_config, options: [-o, StrictHostKeyChecking=no]}
    env: {PATH: /usr/local/mysql/bin:/usr/bin:/bin}
    hosts:
      db1: ssh://root@10.0.0.11
    nodes:
      - {name: data1, role: data, host: db1, nodeid: 11, process: "ndbmtd.*--ndb-nodeid=11",
         start: "ndbmtd --ndb-nodeid=11 --ndb-connectstring=10.0.0.10", logs: [/var/lib/mysql/ndb_11_out.log]}
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ... import topology as TP
from ...errors import (InventoryError, UsageError, read_user_text, shown)  # noqa: F401  (InventoryError: its home is errors)

#: URL schemes testinfra connects with (testinfra.get_host); ``ssh`` is the one this project tests
SCHEMES = ("ssh", "paramiko", "ansible", "docker", "local")
ROLES = {"ndb": (TP.MGM, TP.DATA, TP.SQL), "galera": (TP.DATA, TP.ARBITRATOR)}
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
NODE_KEYS = {"name", "role", "host", "nodeid", "nodegroup", "process", "pidfile", "start", "systemd", "stop",
             "logs", "sql", "env", "datadir"}
TOP_KEYS = {"engine", "name", "ssh", "env", "hosts", "nodes", "connectstring", "sql"}
SSH_KEYS = {"identity_file", "config", "options", "connect_timeout"}


@dataclass(frozen=True)
class HostSpec:
    name: str
    url: str

    @property
    def scheme(self) -> str:
        return self.url.split("://", 1)[0]

    @property
    def address(self) -> str:
        """The host part of the URL (``ssh://user@addr:port`` -> ``addr``); '' for local://."""
        rest = self.url.split("://", 1)[1]
        rest = rest.rsplit("@", 1)[-1].split("?", 1)[0].split("/", 1)[0]
        if rest.startswith("["):
            return rest[1:].split("]", 1)[0]
        return rest.rsplit(":", 1)[0] if rest.count(":") == 1 else rest


@dataclass
class NodeSpec:
    name: str
    role: str
    host: str
    nodeid: int | None = None
    nodegroup: int | None = None
    process: str | None = None  # extended regex on the full command line (pgrep -f)
    pidfile: str | None = None
    start: str | None = None  # a shell command, run detached on the host
    systemd: str | None = None  # a systemd unit: start/stop through systemctl
    stop: str | None = None  # a graceful stop command; default: SIGTERM, SIGKILL after the grace time
    logs: list[str] = field(default_factory=list)
    sql: tuple[str, int] | None = None  # where clients connect (SQL nodes; Galera data nodes)
    env: dict[str, str] = field(default_factory=dict)
    datadir: str | None = None  # management node: where its cluster log is


@dataclass
class Inventory:
    path: Path
    engine: str
    name: str
    hosts: dict[str, HostSpec]
    nodes: list[NodeSpec]
    ssh: dict = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    connectstring: str | None = None
    sql: dict = field(default_factory=dict)

    def node(self, name: str) -> NodeSpec:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def env_of(self, node: NodeSpec) -> dict[str, str]:
        return {**self.env, **node.env}

    @property
    def project(self) -> str:
        """The run label of this inventory: chains, guards and notes carry it."""
        return f"ndbchaos-inv-{self.name}"


def load(path: str | Path, environ: dict | None = None) -> Inventory:
    """Read and validate an inventory file (YAML; JSON is YAML too). InventoryError on any problem."""
    import yaml
    where = shown(path)
    text = read_user_text(path, f"inventory {where}", "YAML", InventoryError)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        why = " ".join(str(getattr(e, "problem", None) or e).split())
        raise InventoryError(f"inventory {where}: not valid YAML{at}: {why}") from None
    except RecursionError:
        raise InventoryError(f"inventory {where}: not an inventory: a value nested too deep") from None
    if _too_deep(doc):
        raise InventoryError(f"inventory {where}: not an inventory: a value nested deeper than {MAX_DEPTH} levels")
    return parse(doc, Path(path), environ if environ is not None else dict(os.environ))


#: no inventory nests deeper than a few levels (nodes -> a node -> env -> a value); a deeper
#: document (or one whose aliases refer to themselves) is refused before it is read
MAX_DEPTH = 32


def _too_deep(doc) -> bool:
    """Whether the document nests deeper than MAX_DEPTH (iterative: no recursion on a hostile
    file; a container that contains itself through a YAML alias counts as too deep)."""
    todo, deepest = [(doc, 0)], {}  # id -> the deepest level it was reached at (aliases share a value)
    while todo:
        v, depth = todo.pop()
        if not isinstance(v, (dict, list)) or deepest.get(id(v), -1) >= depth:
            continue
        if depth >= MAX_DEPTH:
            return True
        deepest[id(v)] = depth
        todo += [(x, depth + 1) for x in (list(v) + list(v.values()) if isinstance(v, dict) else v)]
    return False


def parse(doc, path: Path, environ: dict) -> Inventory:
    where = shown(path)

    def bad(msg: str) -> InventoryError:
        return InventoryError(f"inventory {where}: {msg}")

    if not isinstance(doc, dict):
        raise bad("expected a mapping with engine, hosts and nodes")
    extra = sorted(set(doc) - TOP_KEYS, key=str)
    if extra:
        raise bad(f"unknown key {extra[0]!r} (expected {', '.join(sorted(TOP_KEYS))})")
    engine = doc.get("engine")
    if not isinstance(engine, str) or engine not in ROLES:
        raise bad(f"engine must be one of {', '.join(ROLES)}, not {engine!r}")
    name = str(doc.get("name") or path.stem)
    if not NAME.match(name):
        raise bad(f"name {name!r} must be a letter then up to 39 letters, digits, '-' or '_'")
    ssh = doc.get("ssh") or {}
    if not isinstance(ssh, dict) or set(ssh) - SSH_KEYS:
        raise bad(f"ssh must be a mapping of {', '.join(sorted(SSH_KEYS))}")
    ssh = dict(ssh)
    for k in ("identity_file", "config"):
        if ssh.get(k):
            f = Path(os.path.expanduser(str(ssh[k])))
            f = f if f.is_absolute() else (path.parent / f)
            if not f.is_file():
                raise bad(f"ssh {k} {ssh[k]!r}: no such file ({f})")
            ssh[k] = str(f.resolve())
    opts = ssh.get("options") or []
    if isinstance(opts, str):
        opts = opts.split()
    if not isinstance(opts, list) or not all(isinstance(o, str) for o in opts):
        raise bad("ssh options must be a list of ssh arguments")
    ssh["options"] = opts
    timeout = ssh.get("connect_timeout") or 10
    if isinstance(timeout, bool) or not re.fullmatch(r"[0-9]{1,6}", str(timeout).strip()) or int(timeout) < 1:
        raise bad("ssh connect_timeout must be a whole number of seconds (1 or more)")
    ssh["connect_timeout"] = int(timeout)
    env = _env(doc.get("env"), "env", environ, bad)

    hosts_doc = doc.get("hosts")
    if not isinstance(hosts_doc, dict) or not hosts_doc:
        raise bad("hosts must map host names to testinfra URLs (ssh://user@address)")
    hosts: dict[str, HostSpec] = {}
    for hn, url in hosts_doc.items():
        if not isinstance(hn, str) or not NAME.match(hn):
            raise bad(f"host name {hn!r} must be a letter then letters, digits, '-' or '_'")
        if not isinstance(url, str) or "://" not in url:
            raise bad(f"host {hn}: {url!r} is not a URL (ssh://user@address, local://, docker://name)")
        scheme = url.split("://", 1)[0]
        if scheme not in SCHEMES:
            raise bad(f"host {hn}: scheme {scheme!r} is not one of {', '.join(SCHEMES)}")
        hs = HostSpec(hn, url)
        if scheme != "local" and not hs.address:
            raise bad(f"host {hn}: {url!r} names no host")
        hosts[hn] = hs

    nodes_doc = doc.get("nodes")
    if not isinstance(nodes_doc, list) or not nodes_doc:
        raise bad("nodes must be a list of nodes (name, role, host, process, start, ...)")
    nodes: list[NodeSpec] = []
    seen_names: dict[str, int] = {}
    seen_ids: dict[int, str] = {}
    seen_sql: dict[tuple, str] = {}
    for i, nd in enumerate(nodes_doc):
        label = f"nodes[{i}]"
        if not isinstance(nd, dict):
            raise bad(f"{label}: expected a mapping")
        if nd.get("name"):
            label += f" ({nd['name']})"
        unknown = sorted(set(nd) - NODE_KEYS, key=str)
        if unknown:
            raise bad(f"{label}: unknown key {unknown[0]!r} (expected {', '.join(sorted(NODE_KEYS))})")
        nm = nd.get("name")
        if not isinstance(nm, str) or not NAME.match(nm):
            raise bad(f"{label}: name {nm!r} must be a letter then letters, digits, '-' or '_'")
        if nm in seen_names:
            raise bad(f"{label}: duplicate node name {nm!r} (also nodes[{seen_names[nm]}])")
        seen_names[nm] = i
        role = nd.get("role")
        if role not in ROLES[engine]:
            raise bad(f"{label}: role {role!r} is not one of {engine}'s ({', '.join(ROLES[engine])})")
        host = nd.get("host")
        if not isinstance(host, str) or host not in hosts:
            raise bad(f"{label}: host {host!r} is not in hosts ({', '.join(hosts)})")
        n = NodeSpec(name=nm, role=role, host=host)
        n.nodeid = _int(nd.get("nodeid"), f"{label}: nodeid", bad, low=1, high=255)
        n.nodegroup = _int(nd.get("nodegroup"), f"{label}: nodegroup", bad, low=0, high=65535)
        if engine == "ndb":
            if n.nodeid is None:
                raise bad(f"{label}: nodeid is required for an NDB node")
            if n.nodeid in seen_ids:
                raise bad(f"{label}: duplicate node id {n.nodeid} (also {seen_ids[n.nodeid]})")
            seen_ids[n.nodeid] = nm
            if n.nodegroup is not None and role != TP.DATA:
                raise bad(f"{label}: only data nodes have a node group")
        if bool(nd.get("process")) == bool(nd.get("pidfile")):
            raise bad(f"{label}: say how to find its process: process (a command-line pattern) or pidfile, one of them")
        if nd.get("process"):
            n.process = str(nd["process"])
            try:
                re.compile(n.process)
            except (re.error, RecursionError, OverflowError) as e:
                raise bad(f"{label}: process pattern {n.process!r} is not a regular expression ({e})") from None
        if nd.get("pidfile"):
            n.pidfile = _abs_path(nd["pidfile"], f"{label}: pidfile", bad)
        if bool(nd.get("start")) == bool(nd.get("systemd")):
            raise bad(f"{label}: say how to start it again: start (a command) or systemd (a unit), one of them")
        n.start = str(nd["start"]) if nd.get("start") else None
        n.systemd = str(nd["systemd"]) if nd.get("systemd") else None
        if n.systemd and not re.fullmatch(r"[A-Za-z0-9@_.:-]+", n.systemd):
            raise bad(f"{label}: systemd unit {n.systemd!r} is not a unit name")
        n.stop = str(nd["stop"]) if nd.get("stop") else None
        logs = nd.get("logs") or []
        if isinstance(logs, str):
            logs = [logs]
        if not isinstance(logs, list):
            raise bad(f"{label}: logs must be a list of file paths")
        n.logs = [_abs_path(x, f"{label}: log", bad) for x in logs]
        if nd.get("datadir"):
            n.datadir = _abs_path(nd["datadir"], f"{label}: datadir", bad)
        serves_sql = role == TP.SQL or (engine == "galera" and role == TP.DATA)
        if nd.get("sql") is not None:
            if not serves_sql:
                raise bad(f"{label}: a {role} node serves no SQL (sql is for "
                          f"{'SQL nodes' if engine == 'ndb' else 'data nodes'})")
            n.sql = _address(nd["sql"], f"{label}: sql", bad)
            if n.sql in seen_sql:
                raise bad(f"{label}: sql address {n.sql[0]}:{n.sql[1]} is also {seen_sql[n.sql]}'s")
            seen_sql[n.sql] = nm
        elif serves_sql:
            raise bad(f"{label}: sql (host:port clients connect to) is required for a node that serves SQL")
        n.env = _env(nd.get("env"), f"{label}: env", environ, bad)
        nodes.append(n)

    have = {n.role for n in nodes}
    need = {"ndb": (TP.MGM, TP.DATA, TP.SQL), "galera": (TP.DATA,)}[engine]
    missing = [r for r in need if r not in have]
    if missing:
        raise bad(f"no {missing[0]} node: an {engine} cluster needs {', '.join(need)} nodes")
    connectstring = doc.get("connectstring")
    if connectstring is not None and not isinstance(connectstring, str):
        raise bad("connectstring must be a string (host:port[,host:port])")
    sql = doc.get("sql") or {}
    if not isinstance(sql, dict) or set(sql) - {"user", "password", "database"}:
        raise bad("sql must be a mapping of user, password, database (the client account the load uses)")
    sql = {k: _expand(str(v), "sql", environ, bad) for k, v in sql.items()}
    return Inventory(path=path, engine=engine, name=name, hosts=hosts, nodes=nodes, ssh=ssh, env=env,
                     connectstring=connectstring, sql=sql)


def _int(v, what, bad, low: int, high: int) -> int | None:
    if v is None or v == "":
        return None
    if isinstance(v, bool) or not isinstance(v, (int, str)) or not re.fullmatch(r"[0-9]{1,9}", str(v).strip()):
        raise bad(f"{what} must be a whole number, not {v!r}")
    i = int(v)
    if not low <= i <= high:
        raise bad(f"{what} {i} is out of range ({low}-{high})")
    return i


def _abs_path(v, what, bad) -> str:
    if not isinstance(v, str) or not v.startswith("/"):
        raise bad(f"{what} {v!r} must be an absolute path on the host")
    if any(c in v for c in "\n\0"):
        raise bad(f"{what} {v!r} holds a control character")
    return v


def _address(v, what, bad) -> tuple[str, int]:
    text = str(v)
    host, sep, port = text.rpartition(":")
    if not sep or not host or not re.fullmatch(r"[0-9]{1,5}", port) or not 0 < int(port) < 65536:
        raise bad(f"{what} {text!r} must be host:port")
    return host.strip("[]"), int(port)


def _expand(value: str, what, environ: dict, bad) -> str:
    def sub(m):
        if m.group(1) not in environ:
            raise bad(f"{what}: ${{{m.group(1)}}} is not set in the environment")
        return environ[m.group(1)]
    return _VAR.sub(sub, value)


def _env(v, what, environ: dict, bad) -> dict[str, str]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise bad(f"{what} must map variable names to values")
    out = {}
    for k, val in v.items():
        if not isinstance(k, str) or not ENV_NAME.match(k):
            raise bad(f"{what}: {k!r} is not a variable name")
        out[k] = _expand(str(val), f"{what} {k}", environ, bad)
    return out
