"""Parsers for the NDB management client (``ndb_mgm -e show`` and ``ndb_mgm -e "all status"``).

Pure functions over text; nothing here talks to a container. The formats are those of
``CommandInterpreter.cpp`` (``print_nodes``, ``print_status``, ``status_string``) as recorded in
docs/facts.md NDB 2:

SHOW (the first line is 9.x's; 8.0 printed ``Connected to Management Server at: localhost:1186``)::

    Connected to management server at 127.0.0.1 port 1186 (using cleartext)
    Cluster Configuration
    ---------------------
    [ndbd(NDB)]     2 node(s)
    id=1    @10.0.10.6  (mysql-8.0.44 ndb-8.0.44, Nodegroup: 0, *)
    id=2    @10.0.10.8  (mysql-8.0.44 ndb-8.0.44, starting, Nodegroup: 0)
    id=3 (not connected, accepting connect from 198.51.100.3)
    id=4    @198.51.100.4  (8.4.7-ndb-8.4.7, no nodegroup)

ALL STATUS / N STATUS::

    Node 2: started (mysql-8.0.44 ndb-8.0.44)
    Node 3: starting (Last completed phase 4) (mysql-8.0.44 ndb-8.0.44)
    Node 3: not connected
    Node 1: connected (Version 8.4.7)        (N STATUS of a management or API node)

Unknown lines are kept in ``other`` and never raise: a parser that breaks on a new banner line
would turn a cosmetic change of the tool into a failed chaos run.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

#: status_string() of CommandInterpreter.cpp -> MGM API status name (ndb_mgm_node_status)
STATUS_NAMES = {
    "not connected": "NO_CONTACT",
    "not started": "NOT_STARTED",
    "starting": "STARTING",
    "started": "STARTED",
    "shutting down": "SHUTTING_DOWN",
    "restarting": "RESTARTING",
    "single user mode": "SINGLEUSER",
    "unknown state": "UNKNOWN",
    "connected": "CONNECTED",  # print_status() of a management or API node
}

#: header of a SHOW section -> node type
_TYPES = {"NDB": "NDB", "MGM": "MGM", "API": "API"}

_PROMPT = re.compile(r"^(?:ndb_mgm>\s*)+")
# 9.x: "Connected to management server at 127.0.0.1 port 1186 (using cleartext)";
# 8.0: "Connected to Management Server at: localhost:1186 (using cleartext)".
_CONNECTED = re.compile(r"^Connected to management server at:?\s*(?P<host>[^\s:]+|\[[^\]]+\])"
                        r"(?::(?P<port1>\d+)| port (?P<port2>\d+))?"
                        r"(?:\s+\((?P<transport>[^)]*)\))?\s*$", re.I)
_HEADER = re.compile(r"^\[(?P<proc>[^\]()]+)\((?P<type>NDB|MGM|API)\)\]\s+(?P<count>\d+)\s+node\(s\)\s*$")
_ID = re.compile(r"^id=(?P<id>\d+)(?P<rest>.*)$")
_NOT_CONNECTED = re.compile(r"^\s*\(not connected, accepting connect from (?P<host>[^)]*)\)\s*$")
_CONNECTED_NODE = re.compile(r"^\s*(?:@(?P<host>\S+))?\s*\((?P<inner>.*)\)\s*$")
_NODEGROUP = re.compile(r"^Nodegroup:\s*(?P<ng>\d+)$")
_STATUS = re.compile(
    r"^Node (?P<id>\d+): (?P<status>" + "|".join(re.escape(s) for s in STATUS_NAMES) + r")"
    r"(?: \((?:Last completed phase|Phase) (?P<phase>\d+)\))?"
    r"(?: \((?P<version>[^)]*)\))?\s*$"
)
_STATUS_ERRORS = (
    re.compile(r"^(?P<id>-?\d+): Node not found\s*$"),
    re.compile(r"^Can(?:not|'t) get status of node (?P<id>-?\d+)\.\s*$"),
)
_CONNECT_ERRORS = re.compile(
    r"^(Unable to connect with connect string|Could not get status|Could not connect to management server|"
    r"Unable to get status from management server|Connect failed|ERROR)", re.I)


@dataclass
class MgmNode:
    """One node as the management server reports it."""

    node_id: int
    type: str  # NDB | MGM | API (from SHOW's section header); "" when unknown (ALL STATUS)
    process: str = ""  # ndbd | ndb_mgmd | mysqld (SHOW's section name)
    connected: bool = False
    status: str = "not connected"  # one of STATUS_NAMES
    address: str | None = None  # connect address of a connected node
    version: str | None = None  # e.g. "mysql-8.0.44 ndb-8.0.44" or "8.4.7-ndb-8.4.7"
    nodegroup: int | None = None
    no_nodegroup: bool = False  # a data node that belongs to no node group (new, not yet added)
    master: bool = False  # SHOW's "*": the master (president) data node
    accepting_from: str | None = None  # configured host of a node that is not connected
    start_phase: int | None = None  # ALL STATUS "(Last completed phase N)" / N STATUS "(Phase N)"
    extra: list[str] = field(default_factory=list)  # parenthesised items not understood

    @property
    def state_name(self) -> str:
        """The MGM API name of the status (NO_CONTACT, STARTED, ...)."""
        return STATUS_NAMES.get(self.status, "UNKNOWN")

    @property
    def started(self) -> bool:
        return self.status == "started"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["state_name"] = self.state_name
        return d


@dataclass
class MgmReport:
    """The parsed output of one ndb_mgm invocation (SHOW, ALL STATUS or both concatenated)."""

    connected_to: str | None = None  # "localhost:1186"
    transport: str | None = None  # "using cleartext", TLS details, ...
    nodes: dict[int, MgmNode] = field(default_factory=dict)
    configured: dict[str, int] = field(default_factory=dict)  # SHOW header counts per type
    errors: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    def of_type(self, t: str) -> list[MgmNode]:
        return [n for n in sorted(self.nodes.values(), key=lambda n: n.node_id) if n.type == t]

    @property
    def data_nodes(self) -> list[MgmNode]:
        return self.of_type("NDB")

    @property
    def mgm_nodes(self) -> list[MgmNode]:
        return self.of_type("MGM")

    @property
    def api_nodes(self) -> list[MgmNode]:
        return self.of_type("API")

    @property
    def master(self) -> int | None:
        for n in self.nodes.values():
            if n.master:
                return n.node_id
        return None

    def nodegroups(self) -> dict[int, list[int]]:
        groups: dict[int, list[int]] = {}
        for n in self.data_nodes:
            if n.nodegroup is not None:
                groups.setdefault(n.nodegroup, []).append(n.node_id)
        return dict(sorted(groups.items()))

    def node(self, node_id: int) -> MgmNode | None:
        return self.nodes.get(node_id)

    def to_dict(self) -> dict:
        return {"connected_to": self.connected_to, "transport": self.transport,
                "configured": dict(self.configured), "master": self.master,
                "nodes": [self.nodes[k].to_dict() for k in sorted(self.nodes)],
                "errors": list(self.errors)}


def _addr(m: re.Match) -> str:
    port = m.group("port1") or m.group("port2")
    return f"{m.group('host')}:{port}" if port else m.group("host")


def answered(text: str) -> bool:
    """Did the management client reach a management server (its banner line is in ``text``)?"""
    return any(_CONNECTED.match(_clean(ln).strip()) for ln in (text or "").splitlines())


#: ndb_mgm wording that means the command was refused (9.7.2: "Error:", "* 2002: Stop failed",
#: "Shutdown failed", "Restart failed", "Start failed")
REFUSED = ("error", "failed", "not allowed", "unknown command")


def reply(text: str) -> tuple[list[str], bool]:
    """An ndb_mgm command's answer: the client's own lines (without its banner and prompt) and
    whether they refuse the command (``REFUSED``)."""
    said = [ln.strip() for ln in (text or "").splitlines()
            if ln.strip() and not ln.strip().lower().startswith(("connected to", "ndb_mgm>"))]
    return said, any(w in ln.lower() for ln in said for w in REFUSED)


def _clean(line: str) -> str:
    return _PROMPT.sub("", line.rstrip("\r\n")).rstrip()


def _parse_inner(node: MgmNode, inner: str) -> None:
    """``mysql-8.0.44 ndb-8.0.44, starting, Nodegroup: 0, *`` -> fields of ``node``."""
    parts = [p.strip() for p in inner.split(",")]
    if parts:
        node.version = parts[0] or None
    for p in parts[1:]:
        m = _NODEGROUP.match(p)
        if m:
            node.nodegroup = int(m.group("ng"))
        elif p == "no nodegroup":
            node.no_nodegroup = True
        elif p in ("*", "Master"):  # "Master" is what very old versions printed
            node.master = True
        elif p in STATUS_NAMES:
            node.status = p
        elif p:
            node.extra.append(p)


def parse_show(text: str, report: MgmReport | None = None) -> MgmReport:
    """Parse ``ndb_mgm -e show``. A connected data node without a status item is ``started``
    (print_nodes prints the status only when it is not STARTED); MGM and API nodes that are
    connected get the status ``connected``."""
    rep = report or MgmReport()
    section_type, section_proc = "", ""
    for raw in text.splitlines():
        line = _clean(raw)
        if not line.strip():
            continue
        s = line.strip()
        m = _CONNECTED.match(s)
        if m:
            rep.connected_to = _addr(m)
            rep.transport = m.group("transport")
            continue
        m = _HEADER.match(s)
        if m:
            section_type, section_proc = _TYPES[m.group("type")], m.group("proc")
            rep.configured[section_type] = int(m.group("count"))
            continue
        if s in ("Cluster Configuration", "---------------------") or set(s) == {"-"}:
            continue
        m = _ID.match(s)
        if m and section_type:
            nid = int(m.group("id"))
            rest = m.group("rest")
            node = MgmNode(node_id=nid, type=section_type, process=section_proc)
            nc = _NOT_CONNECTED.match(rest)
            if nc:
                node.accepting_from = nc.group("host").strip()
                node.status = "not connected"
                node.connected = False
            else:
                cm = _CONNECTED_NODE.match(rest)
                if not cm:
                    rep.other.append(s)
                    continue
                node.connected = True
                node.address = cm.group("host")
                node.status = "started" if section_type == "NDB" else "connected"
                _parse_inner(node, cm.group("inner"))
            prev = rep.nodes.get(nid)
            if prev is not None and prev.start_phase is not None and node.start_phase is None:
                node.start_phase = prev.start_phase
            rep.nodes[nid] = node
            continue
        if _CONNECT_ERRORS.match(s):
            rep.errors.append(s)
            continue
        rep.other.append(s)
    return rep


def parse_status(text: str, report: MgmReport | None = None) -> MgmReport:
    """Parse ``ndb_mgm -e "all status"`` (data nodes only) or ``N STATUS`` (any node).

    When merged into a SHOW report (``report=``), the status and start phase of ALL STATUS win
    (it is the more precise of the two) and the type/address/node group of SHOW are kept.
    """
    rep = report or MgmReport()
    for raw in text.splitlines():
        s = _clean(raw).strip()
        if not s:
            continue
        m = _CONNECTED.match(s)
        if m:
            rep.connected_to = rep.connected_to or _addr(m)
            rep.transport = rep.transport or m.group("transport")
            continue
        m = _STATUS.match(s)
        if m:
            nid = int(m.group("id"))
            status = m.group("status")
            node = rep.nodes.get(nid) or MgmNode(node_id=nid, type="")
            node.status = status
            node.connected = status != "not connected"
            if m.group("phase") is not None:
                node.start_phase = int(m.group("phase"))
            elif status not in ("starting", "shutting down"):
                node.start_phase = None
            version = m.group("version")
            if version:
                node.version = version[len("Version "):] if version.startswith("Version ") else version
            if status == "connected" and not node.type:
                node.type = "MGM/API"
            elif status != "connected" and not node.type:
                node.type = "NDB"
            rep.nodes[nid] = node
            continue
        if any(p.match(s) for p in _STATUS_ERRORS) or _CONNECT_ERRORS.match(s):
            rep.errors.append(s)
            continue
        rep.other.append(s)
    return rep


def parse_mgm(text: str) -> MgmReport:
    """Parse any mix of SHOW and STATUS output (e.g. both commands run in one exec)."""
    rep = parse_show(text)
    other, rep.other = rep.other, []
    return parse_status("\n".join(other), rep)


def all_started(rep: MgmReport, expected_ids) -> tuple[bool, list[str]]:
    """Readiness rule 1 (ndb.md section 10): every expected data node is ``started``.
    Returns (ok, problems)."""
    problems = []
    for nid in expected_ids:
        n = rep.nodes.get(int(nid))
        if n is None:
            problems.append(f"data node {nid} not reported by the management server")
        elif n.status != "started":
            phase = f" (last completed phase {n.start_phase})" if n.start_phase is not None else ""
            problems.append(f"data node {nid} {n.status}{phase}")
    return not problems, problems
