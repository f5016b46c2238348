"""The event texts of NDB's logs: one rule per text (kind, anchored regex, converter of the match
to the event's fields), the kinds they produce, and the index that narrows the rules tried per
line. ``match_text`` is what the reader (``logs``) asks of one text.

The texts are EventLogger.cpp's plus the plain log messages of the 9.x data node and management
server that carry facts a chaos report needs, checked against real MySQL Cluster 9.7.2 logs in
tests/unit/fixtures/ndb-9.7/ (docs/facts.md NDB 3).
"""

from __future__ import annotations

import re

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


def _mask_ids(mask: str | None) -> list[int]:
    """Node ids of a NodeBitmask printed in hex (bit n = node n)."""
    if not mask:
        return []
    v = int(mask, 16)
    return [i for i in range(v.bit_length()) if v >> i & 1]


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
      r"Start phase (?P<phase>\d+) completed ?"
      r"(?:\((?P<type>initial start|system restart|node restart|initial node restart)\)"
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
      r"CM_REGCONF president = (?P<president>\d+), own Node = (?P<node>\d+), "
      r"our dynamic id = (?P<dyn>\d+)/(?P<dyn2>\d+)",
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
# The master's GCP monitor, every minute a global checkpoint is held up (measured on 9.7.2 with a
# stalled disk: "GCP Monitor: GCP_SAVE lag 60 sec (no max lag), [SignalCounter: m_count=1 000..2000]";
# the counter's bitmask holds the node ids the checkpoint waits for: 0x2000 is node 13)
_rule("gcp_lag",
      r"GCP Monitor: (?P<what>GCP_SAVE|GCP_COMMIT) lag (?P<lag>\d+) sec \((?P<max>[^)]*)\)"
      r"(?:, \[SignalCounter: m_count=\d+ (?P<mask>[0-9a-fA-F]+)\])?",
      lambda m: {"what": m.group("what"), "lag_s": int(m.group("lag")), "max_lag": m.group("max"),
                 "waiting_for": _mask_ids(m.group("mask"))})
# ... its limits, computed at start phase 5 and after a node failure when GCP stops are enabled
# (TimeBetweenEpochsTimeout > 0; 9.7.2: 140 s for 4 data nodes, 135 for 3) ...
_rule("gcp_max_lag", r"GCP Monitor: Computed max (?P<what>GCP_SAVE|GCP_COMMIT) lag to (?P<lag>\d+) seconds",
      lambda m: {"what": m.group("what"), "max_lag_s": int(m.group("lag"))})
# ... and the GCP stop: the master kills the nodes the checkpoint waits for
_rule("gcp_stop", r"Detected GCP stop\((?P<reason>\d+)\)\.\.\.sending kill to "
      r"\[SignalCounter: m_count=\d+ (?P<mask>[0-9a-fA-F]+)\]",
      lambda m: {"reason": int(m.group("reason")), "killed": _mask_ids(m.group("mask"))})
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
# Backup category (EventLogger.cpp getTextBackupStarted/Completed/Aborted): ``by`` is the node
# that started it (the management node that sent START BACKUP)
_rule("backup_completed", r"Backup (?P<backup>\d+) started from node (?P<by>\d+) completed\..*",
      lambda m: {"backup": int(m.group("backup")), "by": int(m.group("by"))})
_rule("backup_started", r"Backup (?P<backup>\d+) started from node (?P<by>\d+)",
      lambda m: {"backup": int(m.group("backup")), "by": int(m.group("by"))})
_rule("backup_aborted", r"Backup (?P<backup>\d+) started from (?P<by>\d+) has been aborted\. Error: (?P<error>\d+)",
      lambda m: {"backup": int(m.group("backup")), "by": int(m.group("by")), "error": int(m.group("error"))})
_rule("mgmd_started", r"MySQL Cluster Management Server (?P<version>\S+(?: \S+)?) started",
      lambda m: {"version": m.group("version")})
_rule("mgmd_shutdown_completed", r"Shutdown complete")

#: every kind this module can produce (plus ``other`` for kept unknown lines and ``ignored`` for
#: kept lines of a named ignored group)
KINDS = tuple(dict.fromkeys([k for k, _, _ in _RULES] + ["error_report"]))

#: kinds whose subject is the reporting node itself (no node id in the text)
_SELF_KINDS = {"shutdown_report_failed", "start_initiated", "node_started", "start_phase_completed",
               "shutdown_initiated", "shutdown_completed", "shutdown_aborted", "forced_shutdown",
               "arbitration_check_lost", "arbitration_check_won", "arbitration_required", "arbitration_won",
               "arbitration_lost", "no_arbitrator", "arbitration_external", "arbitration_failure",
               "arbitration_thread_restarted", "gcp_takeover", "lcp_takeover",
               # 9.x process messages and reports about the reporter's own state
               "joined_cluster", "master_takeover_started", "lcp_started", "lcp_completed", "gcp_lag", "gcp_max_lag",
               "gcp_stop", "start_waiting",
               "start_with_nodes", "system_restart", "restart_gci", "signal_received", "overslept",
               "thread_stuck", "arbitrator_shutdown", "mgmd_started", "mgmd_shutdown_completed",
               "backup_started", "backup_completed", "backup_aborted"}

_SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGABRT": 6, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11,
            "SIGUSR2": 12, "SIGTERM": 15}  # Linux numbers (the containers run Linux)


def _signal(num: str | None, name: str | None) -> dict:
    if num is not None:
        return {"signal": int(num), "signal_name": None}
    return {"signal": _SIGNALS.get(name), "signal_name": name}


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

