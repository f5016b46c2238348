"""config.ini as ndb_mgmd 9.7.2 reads it: ``load_config_ini`` applies the rules of ndb_mgmd's parser
(storage/ndb/src/common/mgmcommon/InitConfigFileParser.cpp and storage/ndb/src/mgmsrv/ConfigInfo.cpp
in NDB's source) with ndb_config's own parameter table (``ndbconfig_tool.configinfo``), and is held
to the distribution's ``ndb_config --config-file`` over tests/unit/fixtures/configini/
(test_configini_corpus.py): the same nodes, ids, groups and values, or a refusal with the same
``line N: reason``.

What 9.7.2 reads, found by running its ndb_config (the engine wins over the manual):

- lines of at most 1023 bytes (a longer one is read as two), cut at a NUL byte, any bytes
  (latin-1 in a comment or a value is read, never refused); ``#`` starts a comment at the start
  of a line or anywhere in a value; ``;`` is not a comment; a blank line with a CR in it (a
  Windows line end) is a parse error, a CR at the end of a line with text is not;
- ``name=value`` or ``name: value``, split at the first ``=`` or ``:``; a line without either is a
  parse error; names are case-insensitive, written twice in a section is an error, unknown
  (``Id`` included: only ``NodeId`` is read now) is an error; numbers as C's strtoll reads them
  (``0x10``, octal ``010``) with one k/K/M/G suffix and nothing after it; booleans
  Y/y/Yes/YES/yes/True/TRUE/true/1 and their negatives only; values within ndb_config's range;
- ``[name]`` and ``[name default]`` in any case, with the aliases ndbd/db, mysqld/api,
  ndb_mgmd/mgm; a comment after a section header makes it a value line (an error); a default
  section given twice is an error, and applies only to the sections after it.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import UsageError
from ...resources import DATA_DIR
from .config import NO_NODEGROUP, ConfigNode, NdbConfig


#: the parameter table of ndb_config 9.7.2 (``ndbconfig_tool.configinfo``)
CONFIGINFO = DATA_DIR / "ndb" / "configinfo-9.7.2.json"
#: a line is read with fgets into a 1024-byte buffer: a longer one is read as several lines
MAX_LINE = 1023
#: section names as written (any case) -> the parser's; [computer] is still read (Id, HostName)
SECTION_NAMES = {"ndbd": "DB", "db": "DB", "mysqld": "API", "api": "API", "ndb_mgmd": "MGM", "mgm": "MGM",
                 "system": "SYSTEM", "computer": "COMPUTER", "tcp": "TCP", "shm": "SHM"}
#: the parser's node section -> (ConfigNode.section, ConfigNode.type)
_NODE_SECTIONS = {"DB": ("ndbd", "NDB"), "API": ("api", "API"), "MGM": ("ndb_mgmd", "MGM")}
_COMPUTER = {"id": {"name": "Id", "type": "string"}, "hostname": {"name": "HostName", "type": "string"}}
#: node ids end at 255 (MAX_NODES 256); node groups at 71 (MAX_NDB_NODE_GROUPS 72)
MAX_NODE_ID = 255
MAX_NODEGROUPS = 72
#: the host names ndb_mgmd takes for this host: a cluster uses them on every node or on none
LOCALHOST = ("localhost", "127.0.0.1")
_TRUE = ("Y", "y", "Yes", "YES", "yes", "True", "TRUE", "true", "1")
_FALSE = ("N", "n", "No", "NO", "no", "False", "FALSE", "false", "0")
_DEFAULT_HEADER = re.compile(r"\[([A-Za-z_]{1,120})\s*([A-Za-z_]{1,120})")
_INT = re.compile(r"^[ \t\n\r\f\v]*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)(.*)$", re.S)


class ConfigIniError(UsageError):
    """A config.ini that ndb_mgmd refuses: ``line N: reason``, as ndb_config says it."""


@functools.lru_cache(maxsize=1)
def configinfo() -> dict:
    """section (DB, API, MGM, SYSTEM, TCP, SHM, ``<section> DEFAULT``) -> lower-cased parameter ->
    {name, type, min, max, default, allowed, ...}: ndb_config 9.7.2's own table."""
    return json.loads(CONFIGINFO.read_text())["sections"]


def ndb_default(key: str, section: str = "DB") -> str | None:
    """NDB's default of a parameter (ndb_config's table), as text; None when it has none."""
    entry = configinfo().get(section, {}).get(key.lower())
    return None if entry is None else entry.get("default")


def _fgets_lines(data: bytes) -> list[str]:
    """The lines ndb_mgmd reads: split after each newline, at most MAX_LINE bytes each, cut at a
    NUL byte (C strings), read as bytes (latin-1: every byte is a character, none refused)."""
    out = []
    parts = data.split(b"\n")
    for i, part in enumerate(parts):
        if i == len(parts) - 1 and not part:
            break
        line = part + (b"\n" if i < len(parts) - 1 else b"")
        for at in range(0, len(line), MAX_LINE):
            out.append(line[at:at + MAX_LINE].split(b"\0", 1)[0].decode("latin-1"))
    return out


def trim_line(s: str) -> str:
    """InitConfigFileParser's trim: trailing CR/LF/space/tab (never the first character), leading
    space/tab, then one pair of enclosing double quotes."""
    end = len(s) - 1
    while end > 0 and s[end] in "\r\n \t":
        end -= 1
    s = s[:end + 1]
    pos = 0
    while pos < len(s) and s[pos] in " \t":
        pos += 1
    s = s[pos:]
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        s = s[1:-1]
    elif s == '"':
        s = ""
    return s


def _empty(line: str) -> bool:
    if line.startswith("#"):
        return True
    for c in line:
        if c in "\n\0":
            return True
        if c not in " \t":
            return False
    return True


def parse_int(text: str) -> int | None:
    """A number as ndb_mgmd reads it (strtoll base 0, then one of k, K, M, G as a multiplier of
    2^10, 2^10, 2^20, 2^30); None when it is not one."""
    m = _INT.match(text)
    if not m:
        return None
    sign, digits, rest = m.groups()
    v = int(digits, 0) if not (len(digits) > 1 and digits[0] == "0" and digits[1] not in "xX") else int(digits, 8)
    v = -v if sign == "-" else v
    if not -(1 << 63) <= v < (1 << 63):
        return None
    mul = {"": 0, "k": 10, "K": 10, "M": 20, "G": 30}.get(rest)
    if mul is None:
        return None
    return v << mul


def _convert(entry: dict, written: str, value: str):
    """(converted value, None) or (None, ndb_mgmd's reason)."""
    t = entry["type"]
    if t == "bool":
        if value in _TRUE:
            return True, None
        if value in _FALSE:
            return False, None
        return None, f"Illegal boolean value for parameter {written}"
    if t == "int":
        v = parse_int(value) if value else None
        if v is None:
            return None, f"Illegal integer value for parameter {written}"
        if not entry.get("min", 0) <= (v % (1 << 64)) <= entry.get("max", (1 << 64) - 1):
            return None, (f"Illegal value {value} for parameter {written}. Legal values are between "
                          f"{entry.get('min', 0)} and {entry.get('max')}")
        return v, None
    if t == "enum":
        for a in entry["allowed"]:
            if a.lower() == value.lower():
                return a, None
        allowed = " ".join(entry["allowed"])
        return None, f"Illegal value '{value}' for parameter {written}. Legal values are: '{allowed}'"
    return value, None


@dataclass
class _Section:
    kind: str  # DB, API, MGM, SYSTEM, COMPUTER, TCP, SHM
    default: bool
    line: int  # of its header
    written: str  # the header's name, lower case (ndbd, mysqld, api, db, ...)
    shown: str = ""  # as ndb_mgmd names it while reading its lines: DB, API, MGM for an alias, else as written
    params: dict = field(default_factory=dict)  # lower-cased name -> (as written, text, value)
    inherited: dict = field(default_factory=dict)  # the [<kind> default] values in effect at its header


def load_config_ini(data: bytes | str) -> NdbConfig:
    """The cluster a config.ini describes, read as ndb_mgmd 9.7.2 reads it: node ids assigned to
    the sections without one, defaults of the ``[... default]`` sections given before each node,
    values converted and checked against NDB's ranges; ConfigIniError (``line N: reason``, the
    reason ndb_config gives) for a file ndb_mgmd refuses.

    Node ids (ConfigInfo.cpp, ``transformNode``): sections are numbered in file order; one without
    NodeId takes the id after the last one given or taken (1 at first), skipping ids earlier
    sections hold; an id given twice is refused. Node groups (``checkDbConstraints`` and the
    node group rule): explicit NodeGroup values first, then the data nodes without one, lowest id
    first, each into the lowest group not yet holding NoOfReplicas members."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    info = configinfo()
    lines = _fgets_lines(data)
    lineno = 0
    sections: list[_Section] = []
    defaults: dict[str, dict] = {}
    current: _Section | None = None
    state = {"next": 1, "allocated": {}, "local": False, "other": None, "replicas": None, "system": False,
             "computers": {}}

    def fail(msg: str, at: int | None = None):
        raise ConfigIniError(f"line {lineno if at is None else at}: {msg}".rstrip())

    def store(sec: _Section | None):
        if sec is None:
            return
        if sec.default:
            if sec.kind in defaults:
                fail("Duplicate default section not allowed")
            defaults[sec.kind] = sec.params
            return
        if sec.kind == "SYSTEM":
            if state["system"]:
                fail("[SYSTEM] section given twice (ndb_mgmd 9.7.2 aborts on it)")
            state["system"] = True
        elif sec.kind == "COMPUTER":
            for k in ("id", "hostname"):
                if k not in sec.params:
                    fail(f"Mandatory parameter {_COMPUTER[k]['name']} missing from section [COMPUTER] starting at "
                         f"line: {sec.line}")
            state["computers"][sec.params["id"][2]] = sec.params["hostname"][2]
        elif sec.kind in _NODE_SECTIONS:
            _store_node(sec)
        elif sec.kind in ("TCP", "SHM"):
            for k in ("nodeid1", "nodeid2"):
                if k in sec.params and parse_int(sec.params[k][1]) not in state["allocated"]:
                    fail(f'Unknown node: "{sec.params[k][1]}" specified in connection [{sec.kind}] starting at '
                         f"line: {sec.line}")
        sections.append(sec)

    def _store_node(sec: _Section):
        own = sec.params.get("nodeid")
        if own is None:
            nid = state["next"]
            while nid in state["allocated"]:
                nid += 1
            if nid > MAX_NODE_ID:
                fail(f"too many nodes configured, only up to {MAX_NODE_ID + 1} nodes supported.")
            sec.params["nodeid"] = ("NodeId", str(nid), nid)
        else:
            nid = own[2]
            if nid in state["allocated"]:
                fail(f"Duplicate nodeid in section [{sec.kind}] starting at line: {sec.line}. Previously used on "
                     f"line {state['allocated'][nid]}.")
        state["next"] = nid + 1
        state["allocated"][nid] = sec.line
        host = _value(sec, "hostname")
        computer = _value(sec, "executeoncomputer")
        if host is None and computer is not None:  # the deprecated [computer] indirection
            if computer not in state["computers"]:
                fail(f'Computer "{computer}" not declared- [{sec.kind}] starting at line: {sec.line}')
            host = state["computers"][computer]
            sec.params["hostname"] = ("HostName", host, host)
        if host is None:
            host = info[sec.kind]["hostname"].get("default", "")
        if host:
            if host in LOCALHOST:
                state["local"] = True
            elif state["other"] is None:
                state["other"] = host
            if state["local"] and state["other"] is not None:
                fail(f"Mixing of localhost (default for [NDBD]HostName) with other hostname({state['other']}) "
                     "is illegal")
        if sec.kind == "DB":
            r = _value(sec, "noofreplicas")
            r = int(ndb_default("NoOfReplicas")) if r is None else r
            if state["replicas"] is None:
                state["replicas"] = r
            elif r != state["replicas"]:
                fail(f"NoOfReplicas defined differently on different nodes - [DB] starting at line: {sec.line}")

    for raw in lines:
        lineno += 1
        line = trim_line(raw)
        if _empty(line):
            continue
        m = _DEFAULT_HEADER.match(line)
        kind = SECTION_NAMES.get(m.group(1).lower()) if m and m.group(2).lower() == "default" else None
        if kind and f"{kind} DEFAULT" in info:
            store(current)
            current = _Section(kind, True, lineno, m.group(1).lower(), _shown(m.group(1)))
            continue
        if line.startswith("[") and line.endswith("]") and len(line) > 1:
            name = trim_line(" " + line[1:-1])
            kind = SECTION_NAMES.get(name.lower())
            if kind:
                store(current)
                current = _Section(kind, False, lineno, name.lower(), _shown(name),
                                   inherited=dict(defaults.get(kind, {})))
                continue
        if current is None:
            fail("Value specified outside section")
        at = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if at < 0:
            fail("Parse error")
        written = trim_value(line[:at])
        value = trim_value(line[at + 1:].split("#", 1)[0])
        table = _COMPUTER if current.kind == "COMPUTER" else info[current.kind + (" DEFAULT" if current.default
                                                                                 else "")]
        key = written.lower()
        if key not in table:
            fail(f"[{current.shown}] Unknown parameter: {written}")
        if key in current.params:
            fail(f"[{current.shown}] Parameter {written} specified twice")
        v, why = _convert(table[key], written, value)
        if why:
            fail(why)
        current.params[key] = (written, value, v)
    store(current)

    nodes = [s for s in sections if s.kind in _NODE_SECTIONS]
    for kind, what in (("DB", "database node (ndbd)"), ("MGM", "management server node (ndb_mgmd)"),
                       ("API", "application node (for the mysqld)")):
        if not any(s.kind == kind for s in nodes):
            fail(f"At least one {what} should be defined in config file")
    for s in sorted(nodes, key=lambda s: s.params["nodeid"][2]):
        if s.kind == "MGM" and not _value(s, "hostname"):
            fail(f"Hostname required on nodeid {s.params['nodeid'][2]} since it will act as server.")
    cfg = _config(sections, defaults)
    replicas = state["replicas"]
    for n in cfg.of_type("NDB"):
        ng = n.nodegroup
        if ng is not None and ng != NO_NODEGROUP and ng >= MAX_NODEGROUPS:
            fail(f"Invalid nodegroup {ng} for node {n.node_id}, Max nodegroups allowed: {MAX_NODEGROUPS}")
    for ng, members in cfg.node_groups().items():
        if len(members) != replicas:
            fail(f"Nodegroup {ng} has {len(members)} members, NoOfReplicas={replicas}")
    return cfg


def _shown(name: str) -> str:
    """A section's name in ndb_mgmd's messages about its lines: an alias (ndbd, mysqld, ndb_mgmd, any
    case) by its section's name, any other as written ([db], [Tcp], [system])."""
    return {"ndbd": "DB", "mysqld": "API", "ndb_mgmd": "MGM"}.get(name.lower(), name)


def trim_value(s: str) -> str:
    return s.strip("\r\n \t")


def _value(sec: _Section, key: str):
    if key in sec.params:
        return sec.params[key][2]
    if key in sec.inherited:
        return sec.inherited[key][2]
    return None


def _text(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _config(sections: list[_Section], defaults: dict) -> NdbConfig:
    """An NdbConfig of what was read: each node's own and inherited values (lower-cased names,
    numbers in decimal: ``2k`` is ``2048``), the [... default] sections and [system]."""
    nodes = []
    for s in sorted((s for s in sections if s.kind in _NODE_SECTIONS), key=lambda s: s.params["nodeid"][2]):
        section, typ = _NODE_SECTIONS[s.kind]
        if s.kind == "API" and s.written == "mysqld":
            section = "mysqld"
        params = {k: _text(v[2]) for k, v in s.inherited.items() if k != "nodeid"}
        params.update({k: _text(v[2]) for k, v in s.params.items()})
        nodes.append(ConfigNode(section, typ, params))
    system = {}
    for s in sections:
        if s.kind == "SYSTEM":
            system = {k: _text(v[2]) for k, v in s.params.items()}
    types = {"DB": "NDB", "MGM": "MGM", "API": "API"}
    return NdbConfig(nodes, system, {types[k]: {p: _text(v[2]) for p, v in d.items()}
                                     for k, d in defaults.items() if k in types},
                     written={types[k]: {p: v[1] for p, v in d.items()} for k, d in defaults.items() if k in types})


def read_config_ini(path: str | Path, what: str | None = None) -> NdbConfig:
    """``load_config_ini`` of a file; UsageError naming it (``what``, else its path) for a file that
    cannot be read or that ndb_mgmd refuses."""
    p = Path(path).expanduser()
    what = what or str(p)
    try:
        data = p.read_bytes()
    except IsADirectoryError:
        raise UsageError(f"{what}: is a directory, not a config.ini") from None
    except OSError as e:
        raise UsageError(f"{what}: {e.strerror or e}") from None
    try:
        return load_config_ini(data)
    except ConfigIniError as e:
        raise ConfigIniError(f"{what} {e}") from None
