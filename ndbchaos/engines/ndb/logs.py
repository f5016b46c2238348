"""NDB log events: the cluster log of ndb_mgmd and the data nodes' own logs.

Line forms (docs/facts.md NDB 3):

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

* an event (``logtexts``: the EventLogger.cpp texts plus the plain log messages of the 9.x data
  node and management server that carry facts a chaos report needs, checked against real
  MySQL Cluster 9.7.2 logs in tests/unit/fixtures/ndb-9.7/);
* a line deliberately ignored (``logignored.IGNORED``: named groups of internal progress messages, one
  regex per topic); ``keep_other=True`` returns it as kind ``ignored`` with its ``group``;
* anything else: ``None``, or kind ``other`` when the caller keeps unknown lines.

The data node error log block (``Time:``/``Status:``/``Message:``/``Error: 2305``/... up to
``***EOM***``) is multi-line; ``NdbLogParser`` assembles it into one ``error_report`` event.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Iterable, Iterator

from .logignored import GROUP_DESCRIPTIONS, IGNORED, match_ignored
from .logtexts import _SELF_KINDS, KINDS, match_text

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


def _iso(date: str | None, time: str | None, utc: str | None = None) -> str | None:
    """ISO 8601 of a log stamp, with its fraction and zone when the line has them (9.x writes
    UTC with microseconds and ``Z``; 8.0 wrote whole seconds without a zone)."""
    if not date or not time:
        return None
    h, mi, s = time.split(":")
    zone = "" if not utc else "+00:00" if utc == "Z" else utc
    return f"{date}T{int(h):02d}:{mi}:{s}{zone}"


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


__all__ = ["GROUP_DESCRIPTIONS", "IGNORED", "KINDS", "NdbLogParser", "match_ignored", "match_text",
           "parse_line", "parse_lines"]
