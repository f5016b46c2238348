"""NDB's own failure points: error-insert codes, what a data node says when it takes one, and
whether this cluster's data nodes obey them at all.

An error insert is ``ndb_mgm -e "<nodeid> ERROR <code> [<extra>]"``: the management server sends
TAMPER_ORD to the data node's CMVMI, which routes the code to one block by its number (``route``).
Only a build with ``ERROR_INSERT`` acts on it: a plain data node drops the signal silently, while
the management server answers as if it worked, and a plain ``ndb_mgm`` has no ERROR command
(``Invalid command: ERROR``, exit 255). So nothing is taken on the client's word:

* a block that takes a code logs ``NDB_TAMPER : block DBTC/1 error 0 0 -> 8054 0`` on the data
  node's output (``tamper_lines``): the code is armed;
* a code that crashes the node writes an entry to ``ndb_<id>_error.log`` in its DataDir
  (``Error: 2342``, ``Message: Error insert executed``, ``Error object: CMVMI (Line: 191)``): the
  code fired, and where (``error_reports``);
* ``ERROR 0`` to a started data node is the probe (``ErrorInsertMixin.error_inserts_unavailable``):
  it changes nothing, and an error-insert build answers with NDB_TAMPER lines, a plain one with
  nothing.

Facts from the 9.7.2 source (../shared/reference/error-insert.md, with file and line there) and
from the error-insert distribution in ../shared/ndb/error-insert/ (docs/facts.md NDB 14).
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass

from ...runtimes import docker
from ... import topology as TP
from ...waiting import wait_until
from .clusterlog import DATADIR
from .shell import NdbShell
from .logs import parse_lines

#: exit codes a data node stops with after an error insert fired: 2342 "Error insert executed"
#: (CRASH_INSERTION, ndbd_exit_codes.h), 2341 "Internal program error" (codes that call
#: systemErrorLab), 6050 the watchdog (9998 hangs the CMVMI thread), 2303 a GCP stop
INSERT_EXIT = 2342

#: CMVMI's routing of a code to a block (Cmvmi.cpp execTAMPER_ORD, 9.7.2): (first, last, block)
_ROUTES = (
    (1, 999, "QMGR"), (1000, 1999, "NDBCNTR"), (2000, 2999, "NDBFS"), (3000, 3999, "DBACC"),
    (4000, 4999, "DBTUP"), (5000, 5999, "DBLQH"), (6000, 6999, "DBDICT"), (7000, 7999, "DBDIH"),
    (8000, 8999, "DBTC"), (9000, 9599, "TRPMAN"), (9600, 9999, "CMVMI"), (10000, 10999, "BACKUP"),
    (11000, 11999, "PGMAN"), (12000, 12999, "DBTUX"), (13000, 13999, "SUMA"), (14000, 14999, "DBDICT"),
    (15000, 15999, "LGMAN"), (16000, 16999, "TSMAN"), (17000, 17999, "DBSPJ"), (18000, 18999, "TRIX"),
    (19000, 19999, "DBUTIL"),
)


def route(code: int) -> str | None:
    """The block CMVMI hands ``code`` to, or None where 9.7.2 acts on no block: 20000-29999 are
    ignored, 30000-49999 go to the master's DIH and are discarded there (so NDB's own
    RestartMasterNodeError, code 39999, crashes nothing), 50000 and above are dropped. 0 and 1
    go to every block (0 clears, 1 asserts that nothing is armed)."""
    code = int(code)
    for lo, hi, block in _ROUTES:
        if lo <= code <= hi:
            return block
    return None


def check_code(code, extra=None) -> tuple[int, int | None]:
    """``(code, extra)`` as integers, or ValueError with one line saying why not."""
    try:
        c = int(code)
    except (TypeError, ValueError):
        raise ValueError(f"error insert code {code!r}: not a whole number") from None
    if c < 2:
        raise ValueError(f"error insert code {c}: 0 clears and 1 asserts nothing is armed; give a code to insert")
    if route(c) is None:
        raise ValueError(f"error insert code {c}: 9.7.2's CMVMI routes it to no block (20000-29999 are ignored, "
                         "30000-49999 discarded by the master's DIH, 50000 and above dropped): it would do nothing")
    e = None
    if extra is not None:
        try:
            e = int(extra)
        except (TypeError, ValueError):
            raise ValueError(f"error insert extra {extra!r}: not a whole number") from None
        if e < 0:
            raise ValueError(f"error insert extra {e}: must be >= 0")
    return c, e


@dataclass(frozen=True)
class Code:
    """What one code does, from the 9.7.2 source (see the module docstring)."""

    code: int
    fires: str  # when it fires
    effect: str  # crash | stall | fail
    role: str = "any"  # any | master | non-master | starting | tc | backup-master | backup-participant
    exit_code: int | None = INSERT_EXIT  # the error log's "Error:" when it crashes the node
    source: str = ""  # file:line in storage/ndb (9.7.2)
    test: str = ""  # NDB's own test that uses it
    at_once: bool = False  # fires as it arrives (else on an event of the cluster, a role or a phase)

    @property
    def block(self) -> str:
        return route(self.code) or "?"


#: the codes the catalogue uses (and ``ndbchaos fault error-insert`` describes); any other code
#: that routes to a block can be inserted too, with the effect the caller names
CODES = {c.code: c for c in (
    Code(9999, "as soon as it arrives", "crash", at_once=True, source="kernel/blocks/cmvmi/Cmvmi.cpp:190-192",
         test="NdbRestarts RestartRandomNodeError, TwoNodeFailure"),
    Code(9998, "as soon as it arrives: the CMVMI thread loops forever; the watchdog ends the process", "hang",
         exit_code=6050, at_once=True, source="kernel/blocks/cmvmi/Cmvmi.cpp:194-196; kernel/vm/WatchDog.cpp:393"),
    Code(5048, "LQH receives COMMIT for an UPDATE operation", "crash", role="tc",
         source="kernel/blocks/dblqh/DblqhMain.cpp:11137-11149", test="testNodeRestart Bug34216"),
    Code(8057, "TC sends one COMMIT per round of its commit loop (widens the half-committed window); "
               "clears itself", "stall", role="tc", exit_code=None,
         source="kernel/blocks/dbtc/DbtcMain.cpp:6168-6172", test="testNodeRestart Bug34216"),
    Code(8054, "TC drops a commit's confirmation and crashes when that transaction's complete phase ends "
               "(at most 5 s later)", "crash", role="tc",
         source="kernel/blocks/dbtc/DbtcMain.cpp:6413-6416,7258", test="testNodeRestart CommitAck"),
    Code(7003, "the master handles GCP_SAVE (a global checkpoint being saved)", "crash", role="master",
         source="kernel/blocks/dbdih/DbdihMain.cpp:16461", test="testNodeRestart GCP (f_master_failure)"),
    Code(7009, "the master's LCP: START_LCP_REQ sent (a local checkpoint starting)", "crash", role="master",
         source="kernel/blocks/dbdih/DbdihMain.cpp (LCP master list)", test="NdbRestarts RestartNodeDuringLCP"),
    Code(7121, "a starting node receives START_PERMCONF (permission to start)", "crash", role="starting",
         source="kernel/blocks/dbdih/DbdihMain.cpp:2473", test="NdbRestarts RestartNFDuringNR"),
    Code(6000, "a starting node receives DICTSTARTREQ (the schema copy)", "crash", role="starting",
         source="kernel/blocks/dbdict/Dbdict.cpp:4028", test="NdbRestarts RestartNFDuringNR"),
    Code(5002, "a starting node receives a row copied in from its live replica (copy fragment)", "crash",
         role="starting", source="kernel/blocks/dblqh/DblqhMain.cpp:8165-8177",
         test="NdbRestarts RestartNFDuringNR"),
    Code(10004, "the backup coordinator (the master) receives START_BACKUP_CONF", "crash", role="backup-master",
         source="kernel/blocks/backup/Backup.cpp:4913", test="testBackup NFMaster"),
    Code(10015, "a backup participant receives START_BACKUP_REQ", "crash", role="backup-participant",
         source="kernel/blocks/backup/Backup.cpp:7264", test="testBackup NFSlave"),
)}


def describe(code: int) -> Code | None:
    return CODES.get(int(code))


# -- what a data node says ------------------------------------------------------------------
_TAMPER = re.compile(r"NDB_TAMPER : block (?P<block>[A-Z_]+)/(?P<inst>\d+) error (?P<old>-?\d+) (?P<oldx>-?\d+) "
                     r"-> (?P<new>-?\d+) (?P<newx>-?\d+)")
_STAMP = re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)")


def tamper_lines(text: str) -> list[dict]:
    """Every ``NDB_TAMPER`` line of a data node's output: {block, instance, old, new, extra, time}
    (time: the line's ISO stamp, None without one)."""
    out = []
    for line in (text or "").splitlines():
        m = _TAMPER.search(line)
        if m:
            ts = _STAMP.match(line)
            out.append({"block": m["block"], "instance": int(m["inst"]), "old": int(m["old"]), "new": int(m["new"]),
                        "extra": int(m["newx"]), "time": ts["ts"] if ts else None})
    return out


def armed(lines: list[dict]) -> dict[str, int]:
    """From a process's NDB_TAMPER lines in order: {block: code} of the blocks whose last value
    is not 0 (what is still armed, as far as the node said)."""
    last: dict[str, int] = {}
    for t in lines:
        last[t["block"]] = t["new"]
    return {b: c for b, c in last.items() if c not in (0,)}


#: the lines that end a data node process or start a new one (the angel forks it; a crash or a
#: shutdown ends it): blocks start again at 0 in the next process, so nothing before is armed
_PROCESS_BOUNDARY = re.compile(r"Angel pid: \d+ started child: \d+|Child has terminated \(pid \d+\)|"
                               r"Node shutdown completed|Forced node shutdown completed")


def armed_now(text: str) -> dict[str, int]:
    """What is armed in a data node's current process, from its output (the NDB_TAMPER lines
    after the angel last started it, none once it ended): {block: code}."""
    ends = [m.end() for m in _PROCESS_BOUNDARY.finditer(text or "")]
    return armed(tamper_lines((text or "")[ends[-1]:] if ends else (text or "")))


def error_reports(text: str, nodeid: int | None = None) -> list[dict]:
    """The entries of a data node's error log (``ndb_<id>_error.log``), oldest first: each the
    ``error_report`` event of ``logs.NdbLogParser`` (exit_code, message, object, time ...)."""
    return [e for e in parse_lines((text or "").splitlines(), reporter=nodeid) if e.get("kind") == "error_report"]


def error_log_path(node: TP.Node) -> str:
    datadir = (node.labels or {}).get(TP.LABEL_PREFIX + "datadir") or DATADIR
    return f"{datadir}/ndb_{int(node.nodeid or 0)}_error.log"


class NdbErrorInserts:
    """The NDB engine's side of error inserts: the probe, arming a code through the management
    client (``shell``), and reading what a data node said."""

    def __init__(self, shell: NdbShell):
        self.shell = shell

    #: how long a data node may take to log NDB_TAMPER after the management server answered (the
    #: mgmd sends TAMPER_ORD then a sync round trip, so it is close to synchronous; a loaded 2-core
    #: host needs a margin)
    TAMPER_WAIT_S = 10.0

    def error_inserts_unavailable(self, cluster) -> str | None:
        """None when this cluster's data nodes obey error inserts, else why not in one line.
        Probed once per cluster (``ERROR 0`` to a started data node, which changes nothing)."""
        cached = getattr(cluster, "_error_insert_probe", None)
        if cached is not None:
            return cached or None
        why = self._probe_error_inserts(cluster)
        if why is not None and why.startswith("probe inconclusive"):
            return why  # not remembered: the next call tries again
        cluster._error_insert_probe = why or ""
        return why

    def _probe_error_inserts(self, cluster) -> str | None:
        rep, _ = self.shell.mgm_report(cluster)
        started = [n for n in cluster.topology.data_nodes
                    if rep is not None and (m := rep.node(n.nodeid)) is not None and m.started]
        if not started:
            return "probe inconclusive: no data node is started to probe with ERROR 0"
        node = started[0]
        since = time.time() - 1
        code, out, src = self.shell.mgm(cluster, f"{node.nodeid} ERROR 0", timeout=20)
        if "Invalid command" in (out or ""):
            return ("this cluster's ndb_mgm has no ERROR command (a build without error insertion): "
                    "set NDBCHAOS_NDB_DIST to an error-insert distribution (WITH_ERROR_INSERT=ON, e.g. "
                    "shared/ndb/error-insert/)")
        if code != 0:
            return f"probe inconclusive: ndb_mgm '{node.nodeid} ERROR 0' via {src}: exit {code}"
        if wait_until(lambda: self.tamper_since(cluster, node, since), self.TAMPER_WAIT_S, poll=0.3):
            return None
        return (f"data node {node.name} did not log NDB_TAMPER after 'ERROR 0' within {self.TAMPER_WAIT_S:.0f} s: "
                "its ndbmtd is built without error insertion (it drops the code silently); set NDBCHAOS_NDB_DIST "
                "to an error-insert distribution (WITH_ERROR_INSERT=ON, e.g. shared/ndb/error-insert/)")

    def tamper_since(self, cluster, node: TP.Node, since_wall: float) -> list[dict]:
        """The node's NDB_TAMPER lines logged since wall time ``since_wall`` (Docker's ``since``
        has whole seconds: lines from the second before are read and dropped by their stamp)."""
        try:
            raw = cluster.container(node).logs(since=int(since_wall) - 1, stdout=True, stderr=True)
        except Exception:
            return []
        lines = tamper_lines(raw.decode("utf-8", "replace"))
        cut = runtime_iso(since_wall)
        return [t for t in lines if t["time"] is None or t["time"] >= cut]

    def armed_error_inserts(self, cluster) -> dict[str, dict[str, int]]:
        """{data node: {block: code}} of the codes still armed in running data nodes, as their
        output says (``ndbchaos status`` and ``fault heal`` find a code a command left)."""
        out = {}
        for n in cluster.topology.data_nodes:
            c = cluster.container(n)
            if docker.container_state(c) != "running":
                continue
            try:
                text = c.logs(stdout=True, stderr=True).decode("utf-8", "replace")
            except Exception:
                continue
            codes = armed_now(text)
            if codes:
                out[n.name] = codes
        return out

    def error_log(self, cluster, node: TP.Node) -> list[dict]:
        """The entries of ``node``'s error log as they are now ([] when it has none)."""
        path = error_log_path(node)
        c = cluster.container(node)
        if hasattr(c, "get_archive"):  # a container, running or stopped (a node the watchdog ended)
            return error_reports(docker.get_file(c, path).decode("utf-8", "replace"), node.nodeid)
        cat = f"cat {shlex.quote(path)} 2>/dev/null; exit 0"
        code, out = self.shell.exec(cluster, node, ["sh", "-c", cat], timeout=20)
        return error_reports(out if code == 0 else "", node.nodeid)

    def insert_error(self, cluster, node: TP.Node, code: int, extra: int | None = None) -> tuple[int, str, str | None]:
        """``ndb_mgm -e "<nodeid> ERROR <code> [<extra>]"``: (exit code, output, management node)."""
        cmd = f"{node.nodeid} ERROR {int(code)}" + (f" {int(extra)}" if extra is not None else "")
        return self.shell.mgm(cluster, cmd, timeout=20)


def runtime_iso(wall: float) -> str:
    """A wall time as the data node's log stamps it (UTC, microseconds, ``Z``): they sort as text."""
    import datetime as dt
    return dt.datetime.fromtimestamp(wall, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


__all__ = ["CODES", "Code", "NdbErrorInserts", "INSERT_EXIT", "armed", "armed_now", "check_code", "describe",
           "error_log_path", "error_reports", "route", "tamper_lines"]
