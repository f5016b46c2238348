"""NDB log events: the cluster log of ndb_mgmd and the data nodes' own logs.

Line forms (reference/ndb.md section 3):

    2026-11-23T14:20:03.252145Z [MgmtSrvr] INFO     -- Node 11: Start phase 0 completed (system restart)
                                                                                 cluster log, 9.x (UTC, microseconds)
    2017-05-13 17:27:09 [MgmtSrvr] WARNING  -- Node 2: Node 1 missed heartbeat 2     cluster log, 8.0
    2024-10-08 09:56:27 [ndbd] ALERT    -- Arbitration check won - node group majority  data node log
    [ndbd] INFO     -- Node 5 disconnected in recv with errnum: 104 in state: 0       (no date)
    ndb_mgm> Node 2: Started (version 8.4.7)                                          ndb_mgm printout

In the cluster log the reporting node is the ``Node N:`` prefix that EventLogger::getText adds;
in a data node's own log there is no prefix and the reporter is the node whose log it is (pass
``reporter=``). Lines the management server writes about itself (``Node 1 transporter to node 11
(id 2) disconnected``, ``Nodeid 11 allocated for NDB at ...``) carry no prefix either; their
reporter is None unless the caller passes one.

Three outcomes per line:

* an event (``_RULES``: the EventLogger.cpp texts plus the plain log messages of the 9.x data
  node and management server that carry facts a chaos report needs, checked against real
  MySQL Cluster 9.7.2 logs in tests/unit/fixtures/ndb-9.7/);
* a line deliberately ignored (``IGNORED``: named groups of internal progress messages, one
  regex per topic); ``keep_other=True`` returns it as kind ``ignored`` with its ``group``;
* anything else: ``None``, or kind ``other`` when the caller keeps unknown lines.

The data node error log block (``Time:``/``Status:``/``Message:``/``Error: 2305``/... up to
``***EOM***``) is multi-line; ``NdbLogParser`` assembles it into one ``error_report`` event.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Iterable, Iterator

# -- line prefixes ---------------------------------------------------------------------------
_LOG = re.compile(
    r"^(?:(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{1,2}:\d{2}:\d{2}(?:\.\d+)?)(?P<utc>Z|[+-]\d{2}:?\d{2})?\s+)?"
    r"\[(?P<src>MgmtSrvr|ndbd|ndbmtd|ndb_mgmd|NdbApi|[A-Za-z_]+)\]\s+"
    r"(?P<sev>ALERT|CRITICAL|ERROR|WARNING|INFO|DEBUG|[A-Z]+)\s+--\s?(?P<msg>.*)$"
)  # msg is right-stripped by the caller (a lazy ".*?\s*$" costs three times as much per line)
_MGM_PRINTOUT = re.compile(
    r"^(?:ndb_mgm>\s*)*(?:(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{1,2}:\d{2}:\d{2})\s+)?"
    r"(?P<msg>Node \d+: .*?)\s*$")
_REPORTER = re.compile(r"^Node (?P<rep>\d+): (?P<rest>.*)$")

# -- event texts -------------------------------------------------------------------------------
_VERSION = r"(?P<version>.*)"
_ACTION = r"(?P<action>(?:, restarting)?(?:, no start)?(?:, initial)?)"
_NODES = r"(?:\d+(?:, \d+)*(?: and \d+)?)?"  # NodeBitmask::getText: "11, 12, 13 and 14", "14", ""

# (kind, compiled pattern, converter of the match to extra fields). The first match wins; the
# order puts the more specific texts first and, among the rest, the frequent ones early (a
# literal-prefix index, _build_index, narrows the rules tried per line). ``node`` is the subject
# of the event; ``by`` the node that observed or reported it when the text names one.
_RULES: list[tuple[str, re.Pattern, object]] = []


def _rule(kind: str, pattern: str, conv=None):
    _RULES.append((kind, re.compile("^" + pattern + "$"), conv))


def _i(m, g):
    v = m.group(g)
    return int(v) if v is not None else None


def _ids(text: str | None) -> list[int]:
    """``11, 12, 13 and 14`` -> [11, 12, 13, 14]"""
    return [int(x) for x in re.findall(r"\d+", text or "")]


def _strip_version(v: str | None) -> str | None:
    if v is None:
        return None
    return v[len("version "):] if v.startswith("version ") else v


# Connection category (the most frequent lines of a real 9.7 cluster log come first)
_rule("communication_opened", r"Communication to Node (?P<node>\d+) opened")
_rule("node_connected", r"Node (?P<node>\d+) Connected")
_rule("communication_closed", r"Communication to Node (?P<node>\d+) closed")
_rule("node_disconnected", r"Node (?P<node>\d+) Disconnected")
_rule("api_connected", r"Node (?P<node>\d+): API " + _VERSION, lambda m: {"version": m.group("version")})
# NodeRestart category: node failure
_rule("node_failure_block_completed", r"Node failure of (?P<node>\d+) (?P<block>\w*) completed",
      lambda m: {"block": m.group("block") or None})
_rule("node_failure_completed", r"Node (?P<by>\d+) completed failure of Node (?P<node>\d+)",
      lambda m: {"by": int(m.group("by")), "all": False})
_rule("node_failure_completed", r"All nodes completed failure of Node (?P<node>\d+)",
      lambda m: {"by": None, "all": True})
_rule("node_failed", r"Node (?P<node>\d+) has failed\. The Node state at failure was (?P<state>\d+)",
      lambda m: {"state": int(m.group("state"))})
_rule("node_fail_rejected", r"Node failure (?:of|for) .*rejected.*")  # NodeFailRejected [UNVERIFIED text]
# Transporter messages. 9.x: "Node 1 transporter to node 11 (id 2) disconnected" (the management
# server's or a data node's own view; "id" is the transporter id, not a node id).
_rule("transporter_disconnected",
      r"Node (?P<by>\d+) transporter to node (?P<node>\d+) \(id (?P<trp>\d+)\) disconnected",
      lambda m: {"by": int(m.group("by")), "transporter_id": int(m.group("trp"))})
# 8.0 data node log form (bug #116350 / #116429 samples)
_rule("node_disconnected",
      r"Node (?P<node>\d+) disconnected(?: in recv with errnum: (?P<errnum>\d+))?(?: in state: (?P<state>\d+))?",
      lambda m: {"errnum": _i(m, "errnum"), "state": _i(m, "state"), "source_text": "transporter"})
_rule("transporter_error",
      r"Transporter to node (?P<node>\d+) reported error 0x(?P<code>[0-9a-fA-F]+): (?P<text>.*)",
      lambda m: {"code": int(m.group("code"), 16), "error": m.group("text")})
# StartUp category
_rule("start_phase_completed",
      r"Start phase (?P<phase>\d+) completed ?(?:\((?P<type>initial start|system restart|node restart|initial node restart)\)"
      r"|\(unknown = (?P<unknown>-?\d+)\))?",
      lambda m: {"phase": int(m.group("phase")),
                 "start_type": m.group("type") or ("unknown" if m.group("unknown") is not None else None)})
_rule("find_neighbours",
      r"We are Node (?P<node>\d+) with dynamic ID (?P<dyn>\d+), our left neighbour is Node (?P<left>\d+), "
      r"our right is Node (?P<right>\d+)",
      lambda m: {"dynamic_id": int(m.group("dyn")), "left": int(m.group("left")), "right": int(m.group("right"))})
_rule("cm_regref", r"CM_REGREF from Node (?P<from>\d+) to our Node (?P<node>\d+)\. Cause = (?P<cause>.*)",
      lambda m: {"from_node": int(m.group("from")), "cause": m.group("cause")})
_rule("cm_regconf",
      r"CM_REGCONF president = (?P<president>\d+), own Node = (?P<node>\d+), our dynamic id = (?P<dyn>\d+)/(?P<dyn2>\d+)",
      lambda m: {"president": int(m.group("president")), "dynamic_id": int(m.group("dyn"))})
# Node restart state machine (DBDIH, every live node logs it): OLD and NEW may contain commas
# ("Node failed, fail handling ongoing"); ",NEW=" occurs once.
_rule("node_restart_status", r"NR Status: node=(?P<node>\d+),OLD=(?P<old>.*),NEW=(?P<new>.*)",
      lambda m: {"old": m.group("old"), "new": m.group("new")})
# Heartbeat ring membership (QMGR, data node's own log)
_rule("node_left",
      r"Node (?P<node>\d+) leaving cluster due to (?P<reason>[^.(]*?)(?: \(notified by node (?P<by>\d+)\))?\.\s+"
      r"Members\s*:\s*(?P<members>" + _NODES + r")",
      lambda m: {"reason": m.group("reason"), "by": _i(m, "by"), "members": _ids(m.group("members"))})
_rule("node_joined", r"Node (?P<node>\d+) joined cluster\.\s+Members\s*:\s*(?P<members>" + _NODES + r")",
      lambda m: {"members": _ids(m.group("members"))})
_rule("joined_cluster", r"Joined cluster\.\s+Members\s*:\s*(?P<members>" + _NODES + r")",
      lambda m: {"members": _ids(m.group("members"))})
_rule("node_restart_completed", r"Node (?P<node>\d+) has completed its restart")
_rule("node_fail_handling_completed", r"Node (?P<node>\d+) has completed node fail handling")
# Error category: heartbeats
_rule("missed_heartbeat", r"Node (?P<node>\d+) missed heartbeat (?P<count>\d+)",
      lambda m: {"count": int(m.group("count"))})
# 9.x management server (NDB API ClusterMgr): "Node 1 missed heartbeat 2 from node 12."
_rule("missed_heartbeat", r"Node (?P<by>\d+) missed heartbeat (?P<count>\d+) from node (?P<node>\d+)\.?",
      lambda m: {"count": int(m.group("count")), "by": int(m.group("by"))})
_rule("declared_dead", r"Node (?P<node>\d+) declared dead due to missed heartbeat",
      lambda m: {"reason": "missed heartbeat"})
# The management server's own heartbeat watch (9.x): "Node 1 disconnecting node 12 due to missed heartbeat"
_rule("declared_dead", r"Node (?P<by>\d+) disconnecting node (?P<node>\d+) due to missed heartbeat",
      lambda m: {"by": int(m.group("by")), "reason": "missed heartbeat"})
# The victim's own log: "We(1) have been declared dead by 2 (via 2) reason: Heartbeat failure(4)"
_rule("declared_dead",
      r"We\((?P<node>\d+)\) have been declared dead by (?P<by>\d+) \(via (?P<via>\d+)\) reason: (?P<reason>.*)",
      lambda m: {"by": int(m.group("by")), "via": int(m.group("via")), "reason": m.group("reason")})
# Master roles after a failure
_rule("dict_master_takeover", r"Node (?P<node>\d+) taking over as DICT master")
_rule("master_takeover_started", r"Master takeover started from (?P<old>\d+)",
      lambda m: {"old_master": int(m.group("old"))})
_rule("gcp_takeover", r"GCP Take over (?P<phase>started|completed)", lambda m: {"phase": m.group("phase")})
_rule("lcp_takeover", r"LCP Take over (?P<phase>started|completed)(?: \(state = (?P<state>-?\d+)\))?",
      lambda m: {"phase": m.group("phase"), "state": _i(m, "state")})
# Checkpoints
_rule("lcp_started",
      r"Local checkpoint (?P<lcp>\d+) started\. Keep GCI = (?P<keep>\d+) oldest restorable GCI = (?P<oldest>\d+)",
      lambda m: {"lcp": int(m.group("lcp")), "keep_gci": int(m.group("keep")),
                 "oldest_restorable_gci": int(m.group("oldest"))})
_rule("lcp_completed", r"Local checkpoint (?P<lcp>\d+) completed", lambda m: {"lcp": int(m.group("lcp"))})
# StartUp category, continued
_rule("start_initiated", r"Start initiated \(" + _VERSION + r"\)",
      lambda m: {"version": _strip_version(m.group("version"))})
_rule("node_started", r"Started \(" + _VERSION + r"\)",
      lambda m: {"version": _strip_version(m.group("version"))})
# StartReport (who a starting node waits for / starts with); empty lists print as "".
_rule("start_waiting",
      r"Initial start, waiting for (?P<waiting>" + _NODES + r") to connect,\s+nodes \[ all: (?P<all>" + _NODES +
      r") connected: (?P<connected>" + _NODES + r") no-wait: (?P<nowait>" + _NODES + r") ?\]",
      lambda m: {"initial": True, "wait_seconds": None, "waiting_for": _ids(m.group("waiting")),
                 "connected": _ids(m.group("connected")), "missing": []})
_rule("start_waiting",
      r"Waiting (?:(?P<secs>\d+) sec for nodes (?P<waiting>" + _NODES + r") to connect|until nodes: (?P<until>"
      + _NODES + r") connects|(?:(?P<psecs>\d+) sec )?for non partitioned start),\s+nodes \[ all: (?P<all>" + _NODES +
      r") connected: (?P<connected>" + _NODES + r")(?: missing: (?P<missing>" + _NODES + r"))? no-wait: (?P<nowait>"
      + _NODES + r") ?\]",
      lambda m: {"initial": False, "wait_seconds": _i(m, "secs") if m.group("secs") else _i(m, "psecs"),
                 "waiting_for": _ids(m.group("waiting") or m.group("until") or m.group("missing")),
                 "connected": _ids(m.group("connected")), "missing": _ids(m.group("missing"))})
_rule("start_with_nodes",
      r"Initial start with nodes (?P<nodes>" + _NODES + r") \[ missing: (?P<missing>" + _NODES + r")"
      r" no-wait: (?P<nowait>" + _NODES + r") ?\]",
      lambda m: {"mode": "initial", "nodes": _ids(m.group("nodes")), "missing": _ids(m.group("missing"))})
_rule("start_with_nodes",
      r"Start (?P<mode>with all|with|potentially partitioned with) nodes (?P<nodes>" + _NODES + r")"
      r"(?: +\[ missing: (?P<missing>" + _NODES + r") no-wait: (?P<nowait>" + _NODES + r") ?\])?",
      lambda m: {"mode": {"with all": "all", "with": "partial"}.get(m.group("mode"), "partitioned"),
                 "nodes": _ids(m.group("nodes")), "missing": _ids(m.group("missing"))})
# System restart: the GCI the cluster is restored to (what survives a whole-cluster outage)
_rule("system_restart",
      r"System Restart: master node: (?P<master>\d+), num starting: (?P<starting>\d+), gci: (?P<gci>\d+)",
      lambda m: {"master": int(m.group("master")), "starting": int(m.group("starting")), "gci": int(m.group("gci"))})
_rule("restart_gci", r"Restarting cluster to GCI: (?P<gci>\d+)", lambda m: {"gci": int(m.group("gci"))})
_rule("restart_gci", r"We are performing a restart of the cluster, restoring GCI = (?P<gci>\d+)",
      lambda m: {"gci": int(m.group("gci"))})
_rule("shutdown_initiated", r"Node shutdown initiated", lambda m: {"scope": "node"})
_rule("shutdown_initiated", r"Cluster shutdown initiated", lambda m: {"scope": "cluster"})
_rule("shutdown_completed", r"Node shutdown completed" + _ACTION + r"\.(?: Initiated by signal (?P<signal>\d+)\.)?",
      lambda m: {**_action(m.group("action")), "signal": _i(m, "signal")})
_rule("shutdown_aborted", r"Node shutdown aborted")
# The angel could not report the node's shutdown to ndb_mgmd: it kept trying for 120 s (9.7.2, a
# node that shut itself down while cut off from every management server)
_rule("shutdown_report_failed", r"Unable to report shutdown reason to '(?P<to>[^']*)'\(error: (?P<error>.*)\)",
      lambda m: {"to": m.group("to"), "error": m.group("error")})
_rule("forced_shutdown",
      r"Forced node shutdown completed" + _ACTION + r"\.(?: Occurred during startphase (?P<sphase>\d+)\.)?"
      r"(?: Initiated by signal (?P<signal>\d+)\.)?"
      r"(?: Caused by error (?P<code>\d+): '(?P<reason>.*)'\.)?(?: \(extra info (?P<extra>\d+)\))?",
      lambda m: {**_action(m.group("action")), "exit_code": _i(m, "code"), "start_phase": _i(m, "sphase"),
                 "signal": _i(m, "signal"), "extra_info": _i(m, "extra"), **_exit_reason(m.group("reason"))})
# Signals and stalls (data node and management server process messages)
_rule("signal_received",
      r"Received (?:signal (?P<num>\d+)|(?P<name>SIG[A-Z0-9]+))\. Performing stop\.",
      lambda m: _signal(m.group("num"), m.group("name")))
_rule("overslept",
      r"thr: (?P<thread>\d+):? Overslept (?P<ms>\d+) ms, expected ~?(?P<exp>\d+) ?ms"
      r"(?:, user time: (?P<user>\d+) us, sys_time: (?P<sys>\d+) us)?",
      lambda m: {"detector": "thread", "thread": int(m.group("thread")), "ms": int(m.group("ms")),
                 "expected_ms": int(m.group("exp")), "user_us": _i(m, "user"), "sys_us": _i(m, "sys")})
_rule("overslept", r"Watchdog: Warning overslept (?P<ms>\d+) ms, expected (?P<exp>\d+) ms\.?",
      lambda m: {"detector": "watchdog", "thread": None, "ms": int(m.group("ms")), "expected_ms": int(m.group("exp"))})
_rule("overslept",
      r"timerHandlingLab, expected (?P<exp>\d+) ?ms sleep, not scheduled for: (?P<ms>\d+) \(ms\)"
      r"(?:, exec_time (?P<exec>\d+) us, sys_time (?P<sys>\d+) us)?",
      lambda m: {"detector": "timer", "thread": None, "ms": int(m.group("ms")), "expected_ms": int(m.group("exp"))})
_rule("thread_stuck", r"Ndb kernel thread (?P<thread>\d+) is stuck in: (?P<place>.*?) elapsed=(?P<elapsed>\d+)",
      lambda m: {"thread": int(m.group("thread")), "place": m.group("place"), "elapsed_ms": int(m.group("elapsed"))})
# NodeRestart category: arbitration (ArbitResult, ALERT)
_rule("arbitration_check_lost", r"Arbitration check lost - (?P<reason>less than 1/2 nodes left|missing node group)",
      lambda m: {"reason": m.group("reason")})
_rule("arbitration_check_won",
      r"Arbitration check won - (?P<reason>all node groups and more than 1/2 nodes left|node group majority)",
      lambda m: {"reason": m.group("reason")})
_rule("arbitration_required", r"Network partitioning - arbitration required")
_rule("arbitration_won", r"Arbitration won - positive reply from node (?P<arbitrator>\d+)",
      lambda m: {"arbitrator": int(m.group("arbitrator"))})
_rule("arbitration_lost", r"Arbitration lost - negative reply from node (?P<arbitrator>\d+)",
      lambda m: {"arbitrator": int(m.group("arbitrator"))})
_rule("no_arbitrator", r"Network partitioning - no arbitrator (?P<reason>available|configured)",
      lambda m: {"reason": "no arbitrator " + m.group("reason")})
_rule("arbitration_external", r"Continuing after wait for external arbitration, nodes: (?P<nodes>.*)",
      lambda m: {"nodes": m.group("nodes")})
_rule("arbitration_failure", r"Arbitration failure - (?P<reason>.*) \[state=(?P<state>\d+)\]",
      lambda m: {"reason": m.group("reason"), "state": int(m.group("state"))})
# The data node's own log after it lost arbitration (the error log says the same in "Error data:")
_rule("arbitrator_shutdown", r"Arbitrator decided to shutdown this node")
# NodeRestart category: arbitrator state (ArbitState, INFO)
_rule("arbitration_thread_restarted", r"President restarts arbitration thread \[state=(?P<state>\d+)\]",
      lambda m: {"state": int(m.group("state"))})
_rule("arbitrator_prepared", r"Prepare arbitrator node (?P<node>\d+) \[ticket=(?P<ticket>[^\]]*)\]",
      lambda m: {"arbitrator": int(m.group("node")), "ticket": m.group("ticket")})
_rule("arbitrator_received", r"Receive arbitrator node (?P<node>\d+) \[ticket=(?P<ticket>[^\]]*)\]",
      lambda m: {"arbitrator": int(m.group("node")), "ticket": m.group("ticket")})
_rule("arbitrator_started", r"Started arbitrator node (?P<node>\d+) \[ticket=(?P<ticket>[^\]]*)\]",
      lambda m: {"arbitrator": int(m.group("node")), "ticket": m.group("ticket")})
_rule("arbitrator_lost", r"Lost arbitrator node (?P<node>\d+) - (?P<reason>.*) \[state=(?P<state>\d+)\]",
      lambda m: {"arbitrator": int(m.group("node")), "reason": m.group("reason"), "state": int(m.group("state"))})
# Management server (its own lines in the cluster log, no "Node N:" prefix)
_rule("node_id_allocated", r"Nodeid (?P<node>\d+) allocated for (?P<type>\w+) at (?P<addr>\S+)",
      lambda m: {"node_type": m.group("type"), "address": m.group("addr")})
_rule("node_id_rejected", r"Alloc node id (?P<node>\d+) rejected, (?P<reason>.*)",
      lambda m: {"reason": m.group("reason")})
_rule("mgmd_started", r"MySQL Cluster Management Server (?P<version>\S+(?: \S+)?) started",
      lambda m: {"version": m.group("version")})
_rule("mgmd_shutdown_completed", r"Shutdown complete")

#: every kind this module can produce (plus ``other`` for kept unknown lines and ``ignored`` for
#: kept lines of a named ignored group)
KINDS = tuple(dict.fromkeys([k for k, _, _ in _RULES] + ["error_report"]))

#: kinds whose subject is the reporting node itself (no node id in the text)
_SELF_KINDS = {"shutdown_report_failed", "start_initiated", "node_started", "start_phase_completed", "shutdown_initiated",
               "shutdown_completed", "shutdown_aborted", "forced_shutdown", "arbitration_check_lost",
               "arbitration_check_won", "arbitration_required", "arbitration_won", "arbitration_lost",
               "no_arbitrator", "arbitration_external", "arbitration_failure", "arbitration_thread_restarted",
               "gcp_takeover", "lcp_takeover",
               # 9.x process messages and reports about the reporter's own state
               "joined_cluster", "master_takeover_started", "lcp_started", "lcp_completed", "start_waiting",
               "start_with_nodes", "system_restart", "restart_gci", "signal_received", "overslept",
               "thread_stuck", "arbitrator_shutdown", "mgmd_started", "mgmd_shutdown_completed"}

_SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGABRT": 6, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11,
            "SIGUSR2": 12, "SIGTERM": 15}  # Linux numbers (the containers run Linux)


def _signal(num: str | None, name: str | None) -> dict:
    if num is not None:
        return {"signal": int(num), "signal_name": None}
    return {"signal": _SIGNALS.get(name), "signal_name": name}


# -- lines deliberately ignored ----------------------------------------------------------------
# Internal progress a 9.7 data node or management server writes that carries no fact the chaos
# report uses (the facts of the same moments are events above: start phases, NR Status, node
# failure, arbitration, LCP start/complete, restart GCI). One regex per topic, anchored at the
# start of the text (after the "Node N:" prefix), so a reader sees what is dropped and why; the
# event rules are tried first, so a group never hides an event. Groups are ordered by how often
# their lines occur in a real log.
_IGNORED_SPEC: list[tuple[str, str, list[str]]] = [
    ("ldm_redo", "LDM (local data manager) restore, REDO log and fragment copy progress", [
        r"LDM\(\d+\)", r"LDM instance \d+:", r"Log part: \d+ ", r"Start invalidating: Part ",
        r"Local redo log file initialization ", r"Redo(?:PageCache|OpenFileCache): ",
        r"Start reading LCP for table ", r"Restored LCP for table ",
        r"Table ID = \d+, fragment ID = \d+ have been synced to Node ", r"instace: \d+ rebuild index: ",
        r"index \d+ stats version \d+: "]),
    ("start_phases", "start phase internals of NDBCNTR/QMGR/DIH (start_phase_completed carries the facts)", [
        r"Start NDB start phase \d+", r"NDB start phase \d+ completed", r"Starting QMGR phase \d+",
        r"Phase \d+ ", r"Start phase \d+ waiting \d+s for absent subscribers", r"Grant nodes to start phase",
        r"(?:Master node|Node) \d+ have reached completion of NDB start phase", r"During cluster start/restart ",
        r"As master we will wait ", r"NDBCNTR master accepted us into cluster", r"CNTR_START_CONF: ",
        r"Asking master node to accept our start", r"Report to master node our state", r"Start node: \d+ using ",
        r"We are performing (?:initial start of cluster|an? (?:initial )?node restart)", r"Not initial start$",
        r"Node started$", r"Node group \d+\.$", r"starting$", r"DIH reported (?:normal|initial) start",
        r"Include node protocol completed", r"Starting with m_restart_seq set to ", r"Buffering maximum epochs ",
        r"findNeighbours from: "]),
    ("restart_progress", "restore and recovery steps of a starting node (StartProgress, NR copy, sysfile)", [
        r"(?:Restore Database Off-line|Bring Database On-line|Restore Database from disk|"
        r"Restore dictionary information from disk|Request permission to start our node from master|"
        r"Request copying of distribution and dictionary information from master|"
        r"Copying of dictionary information from master|Schema file initialisation|"
        r"Creating System Tables Starting|Foreign [Kk]ey enabling|"
        r"Make On-line Database recoverable by waiting for LCP) ",
        r"Starting to restore schema", r"Restore of schema complete", r"Restart recreating table with id = ",
        r"Node Start completed restore of LCP id", r"Starting REDO logging", r"All start fragments sent",
        r"Node restart (?:completed copy|starting to copy|completed copying) ",
        r"Restart complete, updated local sysfile",
        r"Local sysfile: ", r"Node: \d+ StartLog: "]),
    ("node_failure_handling", "DBTC/QMGR failure-handling steps (node_failed and node_failure_* carry the facts)", [
        r"DBTC \d+: ", r"Cleanup of node \d+ connection state triggered ", r"release_gci\("]),
    ("lcp_internals", "local checkpoint internals and the DIH state dumped at LCP/GCP master takeover", [
        r"\(\d+\)Starting local LCP\(", r"Adjusting disk write speed bounds ", r"LCPFragWatchdog : ",
        r"Participating(?:DIH|LQH) = ", r"m_LCP_COMPLETE_REP_", r"m_lastLCP_COMPLETE_REP_", r"m_LAST_LCP_FRAG_ORD = ",
        r"noOfLcpFragRepOutstanding: ", r"resending GSN_MASTER_LCPREQ", r"kk: \d+/\d+ "]),
    ("startup_config", "data node process start: angel, configuration fetch, scheduler, READ_CONFIG/START_ORD", [
        r"Angel (?:connected to|allocated nodeid:|pid: )", r"Normal start of data node ",
        r"Configuration fetched from ",
        r"Changing directory to ", r"SchedulerSpinTimer = ", r"AutomaticThreadConfig = ", r"ThreadConfig: ",
        r"MaxNoOfTriggers set to ", r"NDBMT: ", r"NDB Cluster -- DB node \d+", r"mysql-\S+ ndb-\S+ --$",
        r"WatchDog timer is set to ", r"Watchdog KillSwitch ", r"Number of spin loops ", r"Using StaticSpinning ",
        r"Set wakeup latency ", r"Loading blocks for data node ", r"Starting Sending and Receiving services",
        r"Starting the data node run-time environment", r"We are running with \d+ LDM workers ",
        r"First START_ORD executed ", r"Received second START_ORD ", r"Disconnect all non-MGM servers",
        r"Start excuting the start phases", r"Sending READ_CONFIG_REQ ", r"READ_CONFIG_REQ phase completed"]),
    ("memory_config", "memory configuration and allocation at start", [
        r"Memory Allocation for global memory pools ", r"numa_set_interleave_mask",
        r"(?:SharedGlobalMemory|DataMemory) set to ",
        r"(?:RedoLogBuffer|Job buffers|Send buffers|DiskPageBuffer|SchemaTransactionMemory) uses? ",
        r"(?:Reserved part of )?TransactionMemory ", r"Calculated TransactionMemory \d+ MB replaced by setting",
        r"No Undo log buffer used", r"QueryMemory can use ",
        r"Ndbd_mem_manager::init", r"Touch Memory (?:Starting|Completed)", r"Adding \d+Mb to ZONE_",
        r"pgman: page buffer entries = ", r"Allocate event buffering page chunk in SUMA"]),
    ("suma_handover", "SUMA subscription bucket handover/takeover between nodes of a node group", [
        r"Suma: ", r"SUMA bucket ", r"\d+/\d+ \(\d+/\d+\) switchover complete bucket ",
        r"prepare to (?:handover|takeover) bucket",
        r"(?:shutdown )?handover(?: takeover)?$", r"Activating bucket \d+ in SUMA", r"resend_bucket$",
        r"SUMA (?:Start resending|Resend done for) bucket ", r"Takeover for bucket \d+ is completed",
        r"ACK wo/ gcp record "]),
    ("dict", "DICT locks, schema transaction recovery and index activation", [
        r"DICT ?: ", r"(?:granting|clearing) Suma\w+ dict lock ", r"refing dict lock to \d+",
        r"Found pending trans \(\d+\) - committing",
        r"commit create \d+$"]),
    ("threads", "thread creation and block-to-thread layout at start", [
        r"Started thread, index = ", r"thr: \d+ tid: \d+ "]),
    ("transporter", "transporter connection setup details", [
        r"TR : Ignored connection attempt ", r"Completed setting up multiple transporters "]),
    ("mgmd_config", "management server configuration service and its peer connections", [
        r"Cluster configuration has multiple Management nodes", r"Got initial configuration from ",
        r"Loaded config from ",
        r"Id: \d+, Command port: ", r"Not requiring TLS", r"Starting initial configuration change",
        r"Configuration \d+ commited", r"Config change completed", r"Node \d+ connected$"]),
    ("node_id_allocation", "node id allocation steps (node_id_allocated/node_id_rejected carry the facts)", [
        r"Alloc node id (?:for node )?\d+ succeeded"]),
    ("api_info", "information an API node (mysqld) reports about itself", [
        r"mysqld --server-id="]),
    ("watchdog_detail", "CPU times the watchdog prints next to an oversleep or stuck-thread warning", [
        r"Watchdog: User time: "]),
    ("shutdown_steps",
     "process shutdown steps (shutdown_completed, forced_shutdown, mgmd_shutdown_completed carry the facts)", [
        r"Angel shutting down", r"Shutdown initiated$", r"Shutdown completed - exiting", r"Shutting down server",
        r"The data node run-time environment has been stopped", r"Error handler shutting down system",
        r"[A-Z]+ \(Line: \d+\) 0x[0-9a-fA-F]+$"]),
    ("stack_trace", "stack trace a data node prints when it handles a signal", [
        r"For help with below stacktrace consult:", r"https://dev\.mysql\.com/doc/refman/[^ ]*using-stack-trace",
        r"Also note that stack_bottom ", r"Base address/slide: ", r"With use of addr2line",
        r"stacktrace with the base address",
        r"For tools that have options for slide", r"llvm-symbolizer ", r"atos -s ", r"stack_bottom = ",
        r"#\d+ +0x[0-9a-fA-F]+ "]),
    ("container_console", "container entrypoint banners and the management server's console-only output", [
        r"\[Entrypoint\] ", r"WARNING: --ndb-connectstring is ignored ", r"==(?:INITIAL|CONFIRMED)==$",
        r"MySQL Cluster Management Server \S+ \S+$", r"\*\*\* Received SIG[A-Z0-9]+\. Performing stop\. \*\*\*$"]),
    ("error_log_header", "the header of a data node error log file", [
        r"Current byte-offset of file-pointer is: \d+"]),
]

#: (group name, compiled regex) of the lines deliberately ignored; ``GROUP_DESCRIPTIONS`` says why
IGNORED: list[tuple[str, re.Pattern]] = [(name, re.compile("^(?:" + "|".join(subs) + ")"))
                                         for name, _, subs in _IGNORED_SPEC]
GROUP_DESCRIPTIONS: dict[str, str] = {name: why for name, why, _ in _IGNORED_SPEC}
# all groups in one regex: one C-level match per line, the group name from ``lastgroup``
_IGNORED_ANY = re.compile("^(?:" + "|".join(f"(?P<{name}>{rx.pattern[1:]})" for name, rx in IGNORED) + ")")


def match_ignored(msg: str) -> str | None:
    """The ignored group of one text (after the ``Node N:`` prefix), or None."""
    m = _IGNORED_ANY.match(msg)
    return m.lastgroup if m else None


# -- rule index --------------------------------------------------------------------------------
# Every rule starts with literal text ("Node ", "Communication to ", ...); a line can only match
# the rules whose literal start agrees with its first _KEY characters, so those are all we try
# (in _RULES order). A rule without such a literal start is tried for every line.
_KEY = 4
_META = set(".^$*+?()[]{}|\\")


def _literal_start(pattern: str) -> str:
    out = []
    i = 0
    while i < len(pattern) and len(out) < _KEY + 1:
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            out.append(pattern[i + 1])
            i += 2
            continue
        if c in _META:
            if c in "*+?{" and out:
                out.pop()  # the quantifier makes the previous character optional
            break
        out.append(c)
        i += 1
    return "".join(out)


def _build_index():
    keyed, wild = [], []
    for idx, (kind, pat, conv) in enumerate(_RULES):
        lit = _literal_start(pat.pattern[1:])
        (keyed if len(lit) >= _KEY else wild).append((idx, lit[:_KEY]))
    index: dict[str, tuple] = {}
    for key in {k for _, k in keyed}:
        idxs = sorted([i for i, k in keyed if k == key] + [i for i, _ in wild])
        index[key] = tuple(_RULES[i] for i in idxs)
    return index, tuple(_RULES[i] for i, _ in sorted(wild))


_INDEX, _WILD = _build_index()


def _action(text: str | None) -> dict:
    text = text or ""
    return {"restarting": ", restarting" in text, "no_start": ", no start" in text, "initial": ", initial" in text}


_REASON = re.compile(r"^(?P<message>.*)\((?P<classification>[^()]*)\)\. (?P<status>.*)$")


def _exit_reason(reason: str | None) -> dict:
    """``Node declared dead. See error log for details(Arbitration error). Temporary error, restart node``"""
    if not reason:
        return {}
    m = _REASON.match(reason)
    if not m:
        return {"reason": reason}
    return {"reason": m.group("message").strip(), "classification": m.group("classification"),
            "status": m.group("status")}


def _iso(date: str | None, time: str | None, utc: str | None = None) -> str | None:
    """ISO 8601 of a log stamp, with its fraction and zone when the line has them (9.x writes
    UTC with microseconds and ``Z``; 8.0 wrote whole seconds without a zone)."""
    if not date or not time:
        return None
    h, mi, s = time.split(":")
    zone = "" if not utc else "+00:00" if utc == "Z" else utc
    return f"{date}T{int(h):02d}:{mi}:{s}{zone}"


def match_text(msg: str) -> tuple[str, dict] | None:
    """The kind and fields of one event text (after the ``Node N:`` reporter prefix)."""
    for kind, pat, conv in _INDEX.get(msg[:_KEY], _WILD):
        m = pat.match(msg)
        if m:
            fields = {}
            if "node" in pat.groupindex and m.group("node") is not None:
                fields["node"] = int(m.group("node"))
            if conv:
                fields.update(conv(m))
            return kind, fields
    return None


def parse_line(line: str, reporter: int | None = None, keep_other: bool = False) -> dict | None:
    """One log line -> event dict, or None when it is not a recognised event (``keep_other``
    returns a line of an ignored group as kind ``ignored`` with its ``group``, and any other
    line as kind ``other``). Never raises on any input text."""
    text = line.rstrip("\r\n")
    if not text.strip():
        return None
    date = time = sev = utc = None
    src = None
    m = _LOG.match(text)
    if m:
        date, time, sev, msg = m.group("date"), m.group("time"), m.group("sev"), m.group("msg").rstrip()
        utc = m.group("utc")
        src = "cluster_log" if m.group("src") == "MgmtSrvr" else "node_log"
    else:
        m = _MGM_PRINTOUT.match(text)
        if m:
            date, time, msg = m.group("date"), m.group("time"), m.group("msg")
            src = "mgm_client"
        else:
            msg = text.strip()
    rep = reporter
    body = msg
    found = None
    rm = _REPORTER.match(msg) if src and msg.startswith("Node ") else None
    if rm:
        # "Node 2: Node 21: API ..." has two prefixes; only the first is the reporter. In a data
        # node's own log "Node 21: API ..." has none.
        found = match_text(rm.group("rest"))
        if found is not None or src != "node_log":
            rep, body = int(rm.group("rep")), rm.group("rest")
    if found is None:
        found = match_text(msg)
        if found is not None:
            rep, body = reporter, msg
    group = None
    if found is None:
        if not keep_other:
            return None
        group = match_ignored(body)
        if group is None and body is not msg:
            group = match_ignored(msg)
            if group is not None:
                rep, body = reporter, msg
        kind, fields = ("other", {}) if group is None else ("ignored", {"group": group})
    else:
        kind, fields = found
    node = fields.pop("node", None)
    if node is None and kind in _SELF_KINDS:
        node = rep
    ev = {"time": _iso(date, time, utc), "reporter": rep, "node": node, "kind": kind}
    ev.update(fields)
    ev["severity"] = sev.strip() if sev else None
    ev["source"] = src or "text"
    ev["text"] = body if kind != "other" else text.strip()
    return ev


# -- the multi-line error report of a data node (ndb_<id>_error.log) --------------------------
_ERR_KEYS = {"time": "time_text", "status": "status", "message": "message", "error": "exit_code",
             "error data": "error_data", "error object": "error_object", "program": "program",
             "pid": "pid", "version": "version", "trace file name": "trace_file",
             "trace file path": "trace_file"}
_ERR_LINE = re.compile(r"^(?P<key>Time|Status|Message|Error|Error data|Error object|Program|Pid|Version|"
                       r"Trace file name|Trace file path):\s*(?P<value>.*?)\s*$")
_ERR_TIME_FORMATS = ("%A %d %B %Y - %H:%M:%S", "%a %d %b %Y - %H:%M:%S", "%Y-%m-%d %H:%M:%S")


class NdbLogParser:
    """Line-by-line parser that also assembles data node error reports."""

    def __init__(self, reporter: int | None = None, keep_other: bool = False):
        self.reporter = reporter
        self.keep_other = keep_other
        self._block: dict | None = None
        self._block_keys_seen: set[str] = set()
        self._block_lines: list[str] = []

    def feed(self, line: str) -> list[dict]:
        out: list[dict] = []
        s = line.rstrip("\r\n").strip()
        m = _ERR_LINE.match(s)
        if m:
            key = m.group("key").lower()
            if self._block is not None and (key == "time" or key in self._block_keys_seen):
                out += self._flush()
            if self._block is None:
                self._block, self._block_keys_seen = {}, set()
            self._block_keys_seen.add(key)
            self._block[_ERR_KEYS[key]] = m.group("value")
            self._block_lines.append(s)
            return out
        if s == "***EOM***":
            return self._flush()
        if self._block is not None:
            out += self._flush()
        ev = parse_line(line, self.reporter, self.keep_other)
        if ev is not None:
            out.append(ev)
        return out

    def close(self) -> list[dict]:
        return self._flush()

    def _flush(self) -> list[dict]:
        b, self._block = self._block, None
        lines, self._block_lines = self._block_lines, []
        if not b or "exit_code" not in b:
            if b and self.keep_other:
                return [{"time": None, "reporter": self.reporter, "node": self.reporter, "kind": "other",
                         "severity": None, "source": "error_log", "text": " | ".join(lines)}]
            return []
        code = b.get("exit_code", "")
        try:
            b["exit_code"] = int(code)
        except ValueError:
            b["exit_code"] = None
        ev = {"time": _error_time(b.get("time_text")), "reporter": self.reporter, "node": self.reporter,
              "kind": "error_report"}
        ev.update(b)
        ev["severity"] = None
        ev["source"] = "error_log"
        ev["text"] = " | ".join(lines)
        return [ev]


def _error_time(text: str | None) -> str | None:
    if not text:
        return None
    for fmt in _ERR_TIME_FORMATS:
        try:
            return _dt.datetime.strptime(text.strip(), fmt).isoformat()
        except ValueError:
            continue
    return None


def parse_lines(lines: Iterable[str], reporter: int | None = None, keep_other: bool = False) -> Iterator[dict]:
    p = NdbLogParser(reporter, keep_other)
    for ln in lines:
        yield from p.feed(ln)
    yield from p.close()
