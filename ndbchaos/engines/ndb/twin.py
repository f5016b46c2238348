"""A containerized twin of a user's cluster: the layout of their config.ini (node ids, node groups,
NoOfReplicas, arbitration, failure detection and checkpoint settings) on containers of this
machine, with what had to change said, never silently dropped.

    twin = twin_of("site/config.ini")        # TwinLayout: what render.py and the engine start
    twin.changes                             # each value replaced or not reproduced, and why

The file is read as ndb_mgmd 9.7.2 reads it (``iniread.load_config_ini``; docs/facts.md NDB 13),
and, where a distribution is at hand (NDBCHAOS_NDB_DIST), by its own ndb_config first: a file
ndb_mgmd refuses is refused in ndb_config's words (``line N: reason``). What is kept: every
node's NodeId (given, or numbered as ndb_mgmd numbers it), node group (explicit, or implied as
NDB assigns it: the lowest ids fill the lowest group first, NoOfReplicas at a time),
ArbitrationRank and ArbitrationDelay, and the parameters that decide availability the data nodes
run (``KEPT``: heartbeats, arbitration, checkpoints and their timeouts, start timeouts,
StopOnError), NDB's defaults written explicitly where the file is silent. What is replaced by the
default layout's value (memory- and disk-sized, paths, ports, threads): ``SCALED``, listed with
both values. Host names become containers (``mgm1``, ``data1``, ``sql1`` in node id order, each
at 100 + NodeId in the cluster's /24); the SQL nodes are the [mysqld] sections that name a host,
or every [mysqld] section where none does. Anything else is named in ``changes`` as not
reproduced. Refused, in one line: what the containers cannot be (a node id past 154, more nodes
than the machine runs, no [mysqld] section).

With the user's my.cnf (``--ndb-mycnf``), the SQL nodes get the [mysqld] options that decide what
their clients see (``mycnf.KEPT``: waits for the cluster, connection pooling, NDB's reads and
sends, timeouts, isolation); the others are named in ``changes``, as for config.ini.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import NdbChaosError, UsageError
from ...resources import COMPOSE_DIR
from .config import NO_NODEGROUP, parse_config_ini
from .iniread import ConfigIniError, load_config_ini, ndb_default
from .ndbconfig_tool import VERSION as NDB_CONFIG_VERSION
from .ndbconfig_tool import ndb_config
from .ndbconfig_tool import read as ndb_config_read
from .mycnf import read as read_mycnf
from .mycnf import read_text as read_mycnf_text
from .mycnf import twin_mysqld
from .spec import MAX_ADDRESS_NODE_ID, MAX_CONTAINERS, MAX_DATA_NODE_ID, MEMORY_CEILING_MIB, estimate_mib

#: data node parameters kept from the user's file: availability is decided by these
KEPT = {k.lower(): k for k in (
    "HeartbeatIntervalDbDb", "HeartbeatIntervalDbApi", "ArbitrationTimeout", "Arbitration", "StopOnError",
    "TimeBetweenGlobalCheckpoints", "TimeBetweenGlobalCheckpointsTimeout", "TimeBetweenEpochs",
    "TimeBetweenEpochsTimeout", "TimeBetweenLocalCheckpoints", "TimeBetweenWatchDogCheck",
    "TimeBetweenWatchDogCheckInitial", "StartPartialTimeout", "StartPartitionedTimeout", "StartNoNodeGroupTimeout",
    "StartFailureTimeout", "MaxStartFailRetries", "StartFailRetryDelay", "LcpScanProgressTimeout",
    "RedoOverCommitLimit", "RedoOverCommitCounter", "TransactionDeadlockDetectionTimeout",
    "TransactionInactiveTimeout", "ConnectCheckIntervalDelay", "CompressedLCP", "EnablePartialLcp",
    "RecoveryWork", "InitFragmentLogFiles", "ODirect", "ODirectSyncFlag", "RestartSubscriberConnectTimeout",
)}
#: replaced by the default layout's value: sized for the user's hosts (memory, disk, CPUs), or
#: where they are (paths, ports); the twin's containers share one 2-core, 24 GB machine
SCALED = {k.lower(): k for k in (
    "DataMemory", "IndexMemory", "SharedGlobalMemory", "RedoBuffer", "DiskPageBufferMemory", "TransactionMemory",
    "LongMessageBuffer", "NoOfFragmentLogFiles", "FragmentLogFileSize", "NoOfFragmentLogParts",
    "MaxNoOfExecutionThreads", "ThreadConfig", "LockPagesInMainMemory", "LockExecuteThreadToCPU",
    "LockMaintThreadsToCPU", "NumCPUs", "AutomaticThreadConfig", "MinDiskWriteSpeed", "MaxDiskWriteSpeed",
    "MaxDiskWriteSpeedOtherNodeRestart", "MaxDiskWriteSpeedOwnRestart", "BackupDataBufferSize",
    "BackupLogBufferSize", "BackupMemory", "BackupMaxWriteSize", "BackupWriteSize", "DataDir", "FileSystemPath",
    "BackupDataDir", "FileSystemPathDD", "FileSystemPathDataFiles", "FileSystemPathUndoFiles", "ServerPort",
    "PortNumber", "HostName", "MaxNoOfConcurrentOperations", "MaxNoOfConcurrentTransactions",
    "MaxNoOfAttributes", "MaxNoOfTables", "MaxNoOfOrderedIndexes", "MaxNoOfUniqueHashIndexes", "MaxNoOfTriggers",
    "SendBufferMemory", "ReceiveBufferMemory", "TotalSendBufferMemory", "ExtraSendBufferMemory",
    "SchedulerSpinTimer", "RealtimeScheduler", "LogLevelStartup", "LogLevelShutdown", "LogLevelNodeRestart",
    "LogLevelConnection", "LogLevelError", "LogLevelCheckpoint", "LogLevelStatistic", "LogLevelCongestion",
    "LogLevelInfo", "MemReportFrequency",
)}
#: of ``SCALED``: where your hosts keep files or listen, not how big they are
PLACES = {"datadir", "filesystempath", "backupdatadir", "filesystempathdd", "filesystempathdatafiles",
          "filesystempathundofiles", "serverport", "portnumber", "hostname"}
#: per node, besides its id, group and host: kept
NODE_KEPT = {"nodeid", "id", "nodegroup", "hostname", "arbitrationrank", "arbitrationdelay"}
_ROLE = {"MGM": "mgm", "NDB": "data", "API": "sql"}
#: between the config.ini and the my.cnf of a twin's layout option: ``config=A.ini;mycnf=B.cnf``
MYCNF_SEP = ";mycnf="


@dataclass(frozen=True)
class TwinLayout:
    """A layout with the render interface of ``spec.LayoutSpec`` (``nodes``, ``replicas``,
    ``api_ids``, ``rank``, ``params``), taken from a user's config.ini."""
    source: str  # the user's config.ini (absolute path)
    digest: str  # of its content: the twin's file names
    replicas: int
    node_list: tuple  # (role, name, node id, node group), node id order
    ranks: dict  # node id -> ArbitrationRank
    params: dict  # [ndbd default] values kept from the user's file: canonical name -> value
    api_ids: list
    hosts: dict  # node id -> the user's host name (or "" for a slot of any host)
    changes: list = field(default_factory=list)
    mysqld: dict = field(default_factory=dict)  # [mysqld] options kept from the user's my.cnf (mycnf.KEPT)
    mycnf: str = ""  # the user's my.cnf (absolute path), when given

    def __str__(self) -> str:
        return f"config={self.source}" + (f"{MYCNF_SEP}{self.mycnf}" if self.mycnf else "")

    def nodes(self) -> list:
        return list(self.node_list)

    def rank(self, nid: int) -> int:
        return self.ranks.get(nid, 0)

    @property
    def mgm(self) -> int:
        return sum(1 for r, *_ in self.node_list if r == "mgm")

    @property
    def spare(self) -> int:
        return sum(1 for r, *_ in self.node_list if r == "spare")

    @property
    def data(self) -> int:
        return sum(1 for r, *_ in self.node_list if r == "data")

    @property
    def sql(self) -> int:
        return sum(1 for r, *_ in self.node_list if r == "sql")

    def memory_mib(self) -> int:
        return estimate_mib(self.data + self.spare, self.sql, self.mgm)

    def mapping(self) -> list[str]:
        """``host (NodeId n) -> container name`` of every node."""
        return [f"{self.hosts.get(nid) or '(any host)'} (NodeId {nid}) -> {name}" for _, name, nid, _ in self.node_list]


def _original_keys(text: str) -> dict[str, str]:
    """lower-cased parameter name -> as the user wrote it (for what the twin prints)."""
    out = {}
    for raw in text.splitlines():
        m = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*[=:]", raw.split("#", 1)[0])
        if m:
            out.setdefault(m.group(1).lower(), m.group(1))
    return out


def _connection_sections(text: str) -> list[str]:
    return sorted({m.group(1).lower() for m in re.finditer(r"(?m)^\s*\[\s*(tcp|shm|sci)(?:\s+default)?\s*\]", text,
                                                        re.I)})


def _kept(data: list, changes: list[str]) -> dict:
    """``KEPT`` of the user's data nodes: the value each runs (its own, its [ndbd default]'s, or
    NDB's default where the file says nothing: ndb_config's table), canonical name -> value. The
    defaults are written explicitly, so the twin never runs the default layout's faster values
    (HeartbeatIntervalDbDb 1000 ms where NDB's is 5000 ms), and said in ``changes``; a value that
    differs between data nodes runs the lowest node id's on every one, said too."""
    out, defaulted = {}, []
    for k, name in sorted(KEPT.items(), key=lambda kv: kv[1]):
        default = ndb_default(k)
        runs = {n.node_id: n.get(k, default) for n in data}
        given = any(n.get(k) is not None for n in data)
        if not runs or all(v is None for v in runs.values()):
            continue
        first = min(runs)
        if len(set(runs.values())) > 1:
            changes.append(f"[ndbd] {name} differs between your data nodes ("
                           + ", ".join(f"NodeId {i}: {v}" for i, v in sorted(runs.items()))
                           + f"): every data node of the twin runs {runs[first]} (NodeId {first}'s)")
        out[name] = runs[first]
        if not given:
            defaulted.append(f"{name}={default}")
    if defaulted:
        changes.append("failure detection, arbitration and checkpoint settings your file leaves unset run NDB's "
                       "defaults, written explicitly (not the default layout's faster ones): " + ", ".join(defaulted))
    return out


def _read(p: Path, flag: str) -> bytes:
    """The bytes of a file a user names; UsageError (one line) when it cannot be read."""
    try:
        return p.read_bytes()
    except IsADirectoryError:
        raise UsageError(f"{flag} {p}: is a directory, not a file") from None
    except OSError as e:
        raise UsageError(f"{flag} {p}: {e.strerror or e}") from None


def engine_refusal(data: bytes) -> str | None:
    """ndb_config's refusal of ``data`` (``line N: reason``) where a distribution is at hand
    (``ndbconfig_tool.ndb_config``), else None; UsageError when NDBCHAOS_NDB_DIST names no usable one."""
    try:
        tool = ndb_config()
    except NdbChaosError as e:
        raise UsageError(str(e)) from None
    return None if tool is None else ndb_config_read(tool, data).error


def twin_of(path: str | Path, mycnf_path: str | Path | None = None) -> TwinLayout:
    """The twin of the cluster ``path`` (a config.ini) describes, its SQL nodes with the options of
    ``mycnf_path`` (the user's my.cnf: ``mycnf.twin_mysqld``) when given; UsageError (one line) when
    the file cannot be read, when ndb_mgmd 9.7.2 refuses it (ndb_config's own reason where a
    distribution is at hand, ``iniread.load_config_ini``'s, the same, otherwise), or when its shape
    cannot be reproduced here."""
    p = Path(path).expanduser()
    raw = _read(p, "--ndb-config")
    what = f"--ndb-config {p}"
    refused = engine_refusal(raw)
    if refused:
        raise UsageError(f"{what}: {refused} (ndb_config {NDB_CONFIG_VERSION})")
    try:
        cfg = load_config_ini(raw)
    except ConfigIniError as e:
        raise UsageError(f"{what}: {e}") from None
    text = raw.decode("latin-1")
    replicas = int(cfg.data_param("NoOfReplicas", ndb_default("NoOfReplicas")))
    names = _original_keys(text)
    changes: list[str] = []

    # node groups: explicit, or implied by node id order (NdbConfig.node_groups: NDB's assignment)
    data = sorted(cfg.of_type("NDB"), key=lambda n: n.node_id)
    groups = cfg.node_groups()
    group_of = {i: g for g, ms in groups.items() for i in ms}
    implied = {n.node_id: group_of[n.node_id] for n in data if n.nodegroup is None}
    if implied:
        changes.append("node groups implied by node id order (NDB's own assignment), written explicitly: "
                       + ", ".join(f"NodeId {i} -> {g}" for i, g in sorted(implied.items())))
    # (node groups of NoOfReplicas members and unique ids: load_config_ini refused any other, as ndb_mgmd does)
    for n in data:
        if n.node_id > MAX_DATA_NODE_ID:
            # ndb_mgmd 9.7.2 numbers a data node section past 144 when earlier ids run out (ndb_config
            # accepts it); no data node runs with such an id
            raise UsageError(f"{what}: [ndbd] NodeId {n.node_id} (as ndb_mgmd numbers it); data node ids end at "
                             f"{MAX_DATA_NODE_ID}")
    too_high = sorted((n for n in cfg.nodes if n.node_id > MAX_ADDRESS_NODE_ID), key=lambda n: n.node_id)
    if too_high:
        raise UsageError(f"{what}: [{too_high[0].section}] NodeId {too_high[0].node_id} cannot be reproduced: a "
                         f"twin's node lives at 100 + NodeId in its /24, so node ids end at {MAX_ADDRESS_NODE_ID}")

    nodes, ranks, hosts, api_ids = [], {}, {}, []
    count = {"mgm": 0, "data": 0, "spare": 0, "sql": 0}
    mysqld = [n for n in cfg.api_nodes if n.section == "mysqld"]
    # the SQL nodes: the [mysqld] sections that name their host; where none does (the manual's own
    # examples leave [mysqld] slots open to any host), every [mysqld] section
    sql_ids = {n.node_id for n in mysqld if n.hostname} or {n.node_id for n in mysqld}
    if mysqld and not any(n.hostname for n in mysqld):
        changes.append("your [mysqld] sections name no host: each is an SQL node here (NodeIds "
                       + ", ".join(str(i) for i in sorted(sql_ids)) + ")")
    for n in sorted(cfg.nodes, key=lambda x: x.node_id):
        role = _ROLE[n.type]
        if n.type == "NDB" and n.nodegroup == NO_NODEGROUP:
            role = "spare"
        if n.type == "API" and n.node_id not in sql_ids:
            # an API slot: ndb_restore, NDB API applications, tools; any host may take it
            api_ids.append(n.node_id)
            if n.hostname:
                changes.append(f"[{n.section}] NodeId {n.node_id}: HostName {n.hostname} dropped (an API slot "
                               "here accepts any host; no container runs an application of yours)")
            continue
        count[role] += 1
        name = f"{role}{count[role]}"
        nodes.append((role, name, n.node_id, group_of.get(n.node_id) if role == "data" else None))
        ranks[n.node_id] = n.arbitration_rank
        hosts[n.node_id] = n.hostname or ""
        own = {k for k in n.params if k not in cfg.defaults.get(n.type, {}) or n.params[k] != cfg.defaults[n.type][k]}
        for k in sorted(own - NODE_KEPT - (set(KEPT) if n.type == "NDB" else set())):
            changes.append(f"[{n.section}] NodeId {n.node_id}: {names.get(k, k)}={n.params[k]} not reproduced "
                           f"(per-node values are not kept; {'the default layout' if k in SCALED else 'NDB'}'s "
                           "value applies)")
        delay = n.get("ArbitrationDelay")
        if delay not in (None, "") and n.type == "MGM":
            changes.append(f"[{n.section}] NodeId {n.node_id}: ArbitrationDelay={delay} is not reproduced "
                           "(the twin's management nodes use NDB's default)")
    shared = {}
    for role, name, nid, _ in nodes:
        if hosts.get(nid):
            shared.setdefault(hosts[nid], []).append(f"{name} (NodeId {nid})")
    for host, on in sorted(shared.items()):
        if len(on) > 1:
            changes.append(f"{', '.join(on)} share host {host}: each is a container of its own here, so one "
                           "host's failure is a fault on each of them, not one kill")
    if not count["sql"]:
        raise UsageError(f"{what}: no [mysqld] section: the twin's clients need an SQL node ([api] slots are for "
                         "NDB API applications)")
    if not count["data"]:
        raise UsageError(f"{what}: no data node in a node group")
    total = sum(count.values())
    if total > MAX_CONTAINERS:
        raise UsageError(f"{what}: {total} NDB nodes, more than the {MAX_CONTAINERS} this 2-core machine runs")
    mib = estimate_mib(count["data"] + count["spare"], count["sql"], count["mgm"])
    if mib > MEMORY_CEILING_MIB:
        raise UsageError(f"{what}: needs about {mib} MiB, more than the {MEMORY_CEILING_MIB} MiB ceiling here")

    params = {}
    ours = parse_config_ini((COMPOSE_DIR / "ndb" / "config.ini").read_text()).defaults.get("NDB", {})
    for k, v in sorted(cfg.written.get("NDB", {}).items()):
        if k == "noofreplicas":
            continue
        if k in KEPT:
            continue  # below, with the data nodes' own values and NDB's defaults
        if k in SCALED:
            here = f"{ours[k]} here" if k in ours else "NDB's default here"
            why = ("where your hosts keep their files or listen; the containers have their own" if k in PLACES
                   else "sized for your hosts; the twin's nodes share one 2-core, 24 GB machine")
            changes.append(f"[ndbd default] {names.get(k, k)}={v} -> {here} ({why})")
        else:
            changes.append(f"[ndbd default] {names.get(k, k)}={v} not reproduced (NDB's default applies)")
    params.update(_kept(data, changes))
    for t, section in (("MGM", "ndb_mgmd default"), ("API", "mysqld/api default")):
        for k, v in sorted(cfg.written.get(t, {}).items()):
            if k not in ("arbitrationrank", "arbitrationdelay"):
                changes.append(f"[{section}] {names.get(k, k)}={v} not reproduced"
                               + (" (the containers keep their files in /var/lib/mysql)" if k in PLACES else ""))
    for s in _connection_sections(text):
        changes.append(f"[{s}] sections not reproduced: the containers connect over NDB's default TCP "
                       "transporter on one bridge network")
    mysqld, cnf_source, cnf_text = {}, "", ""
    if mycnf_path:
        cp = Path(mycnf_path).expanduser()
        mysqld, cnf_changes = twin_mysqld(read_mycnf(cp))
        changes += cnf_changes
        pool = mysqld.get("ndb-cluster-connection-pool", "1")
        if pool.isdigit() and int(pool) > 1:
            need, have = int(pool) * count["sql"], count["sql"] + len(api_ids)
            changes.append(f"[mysqld] ndb-cluster-connection-pool={pool}: each SQL node takes {pool} node ids, "
                           f"{need} in all; your config.ini's [mysqld] and [api] slots give {have}"
                           + ("" if have >= need else ": some connections find no free slot, as on your hosts, "
                              "and the tools that need one (ndb_restore, ndbinfo_select_all) may find none"))
        cnf_source, cnf_text = str(cp.resolve()), read_mycnf_text(cp)
    digest = hashlib.sha256((text + "\0" + cnf_text).encode()).hexdigest()[:12]
    return TwinLayout(str(p.resolve()), digest, replicas, tuple(nodes), ranks, params, sorted(api_ids), hosts,
                      changes, mysqld, cnf_source)


__all__ = ["KEPT", "MYCNF_SEP", "SCALED", "TwinLayout", "twin_of"]
