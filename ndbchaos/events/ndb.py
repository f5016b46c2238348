"""NDB log events: the cluster log of ndb_mgmd and the data nodes' own logs.

Line forms (reference/ndb.md section 3):

    2017-05-13 17:27:09 [MgmtSrvr] WARNING  -- Node 2: Node 1 missed heartbeat 2     cluster log
    2024-10-08 09:56:27 [ndbd] ALERT    -- Arbitration check won - node group majority  data node log
    [ndbd] INFO     -- Node 5 disconnected in recv with errnum: 104 in state: 0       (no date)
    ndb_mgm> Node 2: Started (version 8.4.7)                                          ndb_mgm printout

In the cluster log the reporting node is the ``Node N:`` prefix that EventLogger::getText adds;
in a data node's own log there is no prefix and the reporter is the node whose log it is (pass
``reporter=``). The event texts are those of EventLogger.cpp (getText* functions), matched
exactly; anything else is ``None`` (or kind ``other`` when the caller keeps unknown lines).

The data node error log block (``Time:``/``Status:``/``Message:``/``Error: 2305``/... up to
``***EOM***``) is multi-line; ``NdbLogParser`` assembles it into one ``error_report`` event.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Iterable, Iterator

# -- line prefixes ---------------------------------------------------------------------------
_LOG = re.compile(
    r"^(?:(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{1,2}:\d{2}:\d{2})(?:\.\d+)?\s+)?"
    r"\[(?P<src>MgmtSrvr|ndbd|ndbmtd|ndb_mgmd|NdbApi|[A-Za-z_]+)\]\s+"
    r"(?P<sev>ALERT|CRITICAL|ERROR|WARNING|INFO|DEBUG|[A-Z]+)\s+--\s?(?P<msg>.*?)\s*$"
)
_MGM_PRINTOUT = re.compile(
    r"^(?:ndb_mgm>\s*)*(?:(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{1,2}:\d{2}:\d{2})\s+)?"
    r"(?P<msg>Node \d+: .*?)\s*$")
_REPORTER = re.compile(r"^Node (?P<rep>\d+): (?P<rest>.*)$")

# -- event texts (EventLogger.cpp) -------------------------------------------------------------
_VERSION = r"(?P<version>.*)"
_ACTION = r"(?P<action>(?:, restarting)?(?:, no start)?(?:, initial)?)"

# (kind, compiled pattern, converter of the match to extra fields). The first match wins; the
# order puts the more specific texts first. ``node`` is the subject of the event.
_RULES: list[tuple[str, re.Pattern, object]] = []


def _rule(kind: str, pattern: str, conv=None):
    _RULES.append((kind, re.compile("^" + pattern + "$"), conv))


def _i(m, g):
    v = m.group(g)
    return int(v) if v is not None else None


def _strip_version(v: str | None) -> str | None:
    if v is None:
        return None
    return v[len("version "):] if v.startswith("version ") else v


# Connection category
_rule("node_connected", r"Node (?P<node>\d+) Connected")
_rule("node_disconnected", r"Node (?P<node>\d+) Disconnected")
# Transporter message in a data node's own log (bug #116350 / #116429 samples)
_rule("node_disconnected",
      r"Node (?P<node>\d+) disconnected(?: in recv with errnum: (?P<errnum>\d+))?(?: in state: (?P<state>\d+))?",
      lambda m: {"errnum": _i(m, "errnum"), "state": _i(m, "state"), "source_text": "transporter"})
_rule("communication_closed", r"Communication to Node (?P<node>\d+) closed")
_rule("communication_opened", r"Communication to Node (?P<node>\d+) opened")
_rule("api_connected", r"Node (?P<node>\d+): API " + _VERSION, lambda m: {"version": m.group("version")})
# Error category: heartbeats
_rule("missed_heartbeat", r"Node (?P<node>\d+) missed heartbeat (?P<count>\d+)",
      lambda m: {"count": int(m.group("count"))})
_rule("declared_dead", r"Node (?P<node>\d+) declared dead due to missed heartbeat",
      lambda m: {"reason": "missed heartbeat"})
# The victim's own log: "We(1) have been declared dead by 2 (via 2) reason: Heartbeat failure(4)"
_rule("declared_dead",
      r"We\((?P<node>\d+)\) have been declared dead by (?P<by>\d+) \(via (?P<via>\d+)\) reason: (?P<reason>.*)",
      lambda m: {"by": int(m.group("by")), "via": int(m.group("via")), "reason": m.group("reason")})
_rule("transporter_error",
      r"Transporter to node (?P<node>\d+) reported error 0x(?P<code>[0-9a-fA-F]+): (?P<text>.*)",
      lambda m: {"code": int(m.group("code"), 16), "error": m.group("text")})
# NodeRestart category: node failure
_rule("node_failed", r"Node (?P<node>\d+) has failed\. The Node state at failure was (?P<state>\d+)",
      lambda m: {"state": int(m.group("state"))})
_rule("node_failure_completed", r"Node (?P<by>\d+) completed failure of Node (?P<node>\d+)",
      lambda m: {"by": int(m.group("by")), "all": False})
_rule("node_failure_completed", r"All nodes completed failure of Node (?P<node>\d+)",
      lambda m: {"by": None, "all": True})
_rule("node_failure_block_completed", r"Node failure of (?P<node>\d+) (?P<block>\w*) completed",
      lambda m: {"block": m.group("block") or None})
_rule("node_fail_rejected", r"Node failure (?:of|for) .*rejected.*")  # NodeFailRejected [UNVERIFIED text]
# StartUp category
_rule("start_initiated", r"Start initiated \(" + _VERSION + r"\)",
      lambda m: {"version": _strip_version(m.group("version"))})
_rule("node_started", r"Started \(" + _VERSION + r"\)",
      lambda m: {"version": _strip_version(m.group("version"))})
_rule("start_phase_completed",
      r"Start phase (?P<phase>\d+) completed ?(?:\((?P<type>initial start|system restart|node restart|initial node restart)\)"
      r"|\(unknown = (?P<unknown>-?\d+)\))?",
      lambda m: {"phase": int(m.group("phase")),
                 "start_type": m.group("type") or ("unknown" if m.group("unknown") is not None else None)})
_rule("cm_regconf",
      r"CM_REGCONF president = (?P<president>\d+), own Node = (?P<node>\d+), our dynamic id = (?P<dyn>\d+)/(?P<dyn2>\d+)",
      lambda m: {"president": int(m.group("president")), "dynamic_id": int(m.group("dyn"))})
_rule("cm_regref", r"CM_REGREF from Node (?P<from>\d+) to our Node (?P<node>\d+)\. Cause = (?P<cause>.*)",
      lambda m: {"from_node": int(m.group("from")), "cause": m.group("cause")})
_rule("find_neighbours",
      r"We are Node (?P<node>\d+) with dynamic ID (?P<dyn>\d+), our left neighbour is Node (?P<left>\d+), "
      r"our right is Node (?P<right>\d+)",
      lambda m: {"dynamic_id": int(m.group("dyn")), "left": int(m.group("left")), "right": int(m.group("right"))})
_rule("shutdown_initiated", r"(?P<scope>Cluster|Node) shutdown initiated",
      lambda m: {"scope": m.group("scope").lower()})
_rule("shutdown_completed", r"Node shutdown completed" + _ACTION + r"\.(?: Initiated by signal (?P<signal>\d+)\.)?",
      lambda m: {**_action(m.group("action")), "signal": _i(m, "signal")})
_rule("shutdown_aborted", r"Node shutdown aborted")
_rule("forced_shutdown",
      r"Forced node shutdown completed" + _ACTION + r"\.(?: Occurred during startphase (?P<sphase>\d+)\.)?"
      r"(?: Initiated by signal (?P<signal>\d+)\.)?"
      r"(?: Caused by error (?P<code>\d+): '(?P<reason>.*)'\.)?(?: \(extra info (?P<extra>\d+)\))?",
      lambda m: {**_action(m.group("action")), "exit_code": _i(m, "code"), "start_phase": _i(m, "sphase"),
                 "signal": _i(m, "signal"), "extra_info": _i(m, "extra"), **_exit_reason(m.group("reason"))})
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
_rule("gcp_takeover", r"GCP Take over (?P<phase>started|completed)", lambda m: {"phase": m.group("phase")})
_rule("lcp_takeover", r"LCP Take over (?P<phase>started|completed)(?: \(state = (?P<state>-?\d+)\))?",
      lambda m: {"phase": m.group("phase"), "state": _i(m, "state")})

#: every kind this module can produce (plus ``other`` for kept unknown lines)
KINDS = tuple(dict.fromkeys([k for k, _, _ in _RULES] + ["error_report"]))

#: kinds whose subject is the reporting node itself (no node id in the text)
_SELF_KINDS = {"start_initiated", "node_started", "start_phase_completed", "shutdown_initiated",
               "shutdown_completed", "shutdown_aborted", "forced_shutdown", "arbitration_check_lost",
               "arbitration_check_won", "arbitration_required", "arbitration_won", "arbitration_lost",
               "no_arbitrator", "arbitration_external", "arbitration_failure", "arbitration_thread_restarted",
               "gcp_takeover", "lcp_takeover"}


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


def _iso(date: str | None, time: str | None) -> str | None:
    if not date or not time:
        return None
    h, mi, s = time.split(":")
    return f"{date}T{int(h):02d}:{mi}:{s}"


def match_text(msg: str) -> tuple[str, dict] | None:
    """The kind and fields of one event text (after the ``Node N:`` reporter prefix)."""
    for kind, pat, conv in _RULES:
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
    returns those as kind ``other``). Never raises on any input text."""
    text = line.rstrip("\r\n")
    if not text.strip():
        return None
    date = time = sev = None
    src = None
    m = _LOG.match(text)
    if m:
        date, time, sev, msg = m.group("date"), m.group("time"), m.group("sev"), m.group("msg")
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
    rm = _REPORTER.match(msg)
    if rm and src in ("cluster_log", "mgm_client", "node_log"):
        # "Node 2: Node 21: API ..." has two prefixes; only the first is the reporter.
        cand = match_text(rm.group("rest"))
        if cand is not None or src != "node_log":
            rep, body = int(rm.group("rep")), rm.group("rest")
    found = match_text(body)
    if found is None and body is not msg:
        found = match_text(msg)
        if found is not None:
            rep, body = reporter, msg
    if found is None:
        if not keep_other:
            return None
        kind, fields = "other", {}
    else:
        kind, fields = found
    node = fields.pop("node", None)
    if node is None and kind in _SELF_KINDS:
        node = rep
    ev = {"time": _iso(date, time), "reporter": rep, "node": node, "kind": kind}
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
