"""Galera events from a mariadbd error log (docs/facts.md Galera A6).

Line prefix (MariaDB): ``2026-06-06 18:38:11 1 [Note] WSREP: ...`` -- date, time (the hour may be
a single digit padded with a space: ``2026-11-22  2:45:20 0 [Note] ...``), thread id, level. The
samples in A6 also appear without the prefix (``[Note] WSREP: ...``); both are accepted.

Three events span several lines and are assembled by ``GaleraLogParser``:

* the gcomm view ``view(view_id(PRIM,378c0ec7-a3db,17) memb { ... } joined { ... } left { ... }
  partitioned { ... })``                                            -> ``gcomm_view``
* the wsrep-lib view block ``View:`` / ``status: primary`` / ``members(3):`` -> ``view_change``
* ``Quorum results:`` with ``component = PRIMARY`` and ``members = 2/2`` -> ``quorum``

Galera events have no NDB node ids: ``reporter`` and ``node`` are null and the members are named
in the event's own fields.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

_PREFIX = re.compile(
    r"^(?P<date>\d{4}-\d{2}-\d{2})[ T]\s*(?P<h>\d{1,2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:\.\d+)?Z?\s+"
    r"(?P<thread>\d+)\s+\[(?P<level>[A-Za-z]+)\]\s?(?:\[MY-\d+\]\s+\[\w+\]\s+)?(?P<msg>.*?)\s*$")
_BARE = re.compile(r"^\[(?P<level>Note|Warning|ERROR|Error|System|Info|Debug)\]\s?(?P<msg>.*?)\s*$")

_UUID = r"[0-9a-fA-F-]{8,}"
_RULES: list[tuple[str, re.Pattern, object]] = []


def _rule(kind: str, pattern: str, conv=None):
    _RULES.append((kind, re.compile(pattern), conv))


# Membership / components
_rule("view_change",
      r"^WSREP: New cluster view: global state: (?P<uuid>" + _UUID + r"):(?P<seqno>-?\d+), view# (?P<view>-?\d+): "
      r"(?P<status>Primary|Non-Primary|non-Primary|Disconnected), number of nodes: (?P<n>\d+), "
      r"my index: (?P<idx>-?\d+)",
      lambda m: {"status": m.group("status").lower(), "primary": m.group("status") == "Primary",
                 "members": int(m.group("n")), "view": int(m.group("view")), "my_index": int(m.group("idx")),
                 "source_text": "galera3"})
_rule("component",
      r"^WSREP: New COMPONENT: primary = (?P<p>yes|no), bootstrap = (?P<b>yes|no), my_idx = (?P<idx>\d+), "
      r"memb_num = (?P<n>\d+)",
      lambda m: {"primary": m.group("p") == "yes", "bootstrap": m.group("b") == "yes",
                 "my_index": int(m.group("idx")), "members": int(m.group("n"))})
_rule("non_primary", r"^WSREP: (?:Received NON-PRIMARY\.|Non-primary view)")
_rule("primary_not_possible", r"^WSREP: No nodes coming from primary view, primary view is not possible")
_rule("suspect", r"suspecting node: (?P<peer>\S+)", lambda m: {"peer": m.group("peer")})
# State machine
_rule("state_shift", r"^WSREP: Shifting (?P<from>\S+) -> (?P<to>\S+) \(TO: (?P<seqno>-?\d+)\)",
      lambda m: {"from": m.group("from"), "to": m.group("to"), "seqno": int(m.group("seqno"))})
_rule("server_status", r"^WSREP: Server status change (?P<from>\S+) -> (?P<to>\S+)",
      lambda m: {"from": m.group("from"), "to": m.group("to")})
_rule("member_synced", r"^WSREP: Member (?P<idx>\S+) \((?P<name>.*)\) synced with group\.",
      lambda m: {"member": m.group("idx"), "name": m.group("name")})
_rule("synced", r"^WSREP: Synchronized with group, ready for connections")
_rule("ready_for_connections", r"^(?P<prog>mariadbd|mysqld|mariadb): ready for connections\.",
      lambda m: {"program": m.group("prog")})
# State transfer
_rule("state_transfer_requested",
      r"^WSREP: Member (?P<joiner>\S+) \((?P<jname>.*?)\) requested state transfer from '(?P<from>[^']*)'\. "
      r"Selected (?P<donor>\S+) \((?P<dname>.*?)\)\((?P<dstate>[^)]*)\) as donor\.",
      lambda m: {"joiner": m.group("joiner"), "joiner_name": m.group("jname"), "requested_from": m.group("from"),
                 "donor": m.group("donor"), "donor_name": m.group("dname"), "donor_state": m.group("dstate")})
_rule("state_transfer_complete",
      r"^WSREP: (?P<me>\S+) \((?P<mname>.*?)\): State transfer (?P<dir>to|from) "
      r"(?P<peer>\S+) \((?P<pname>.*?)\) complete\.",
      lambda m: {"member": m.group("me"), "name": m.group("mname"), "direction": m.group("dir"),
                 "peer": m.group("peer"), "peer_name": m.group("pname")})
_rule("ist_prepared",
      r"^WSREP: Prepared IST receiver for (?P<first>-?\d+)-(?P<last>-?\d+), listening at: (?P<addr>\S+)",
      lambda m: {"first": int(m.group("first")), "last": int(m.group("last")), "address": m.group("addr")})
_rule("ist_receiving", r"^WSREP: Receiving IST: (?P<n>\d+) writesets, seqnos (?P<first>-?\d+)-(?P<last>-?\d+)",
      lambda m: {"writesets": int(m.group("n")), "first": int(m.group("first")), "last": int(m.group("last"))})
_rule("ist_received", r"^WSREP: IST received: (?P<uuid>" + _UUID + r"):(?P<seqno>-?\d+)",
      lambda m: {"uuid": m.group("uuid"), "seqno": int(m.group("seqno"))})
_rule("ist_failed", r"Receiving IST failed, node restart required")
_rule("sst_received", r"^WSREP: SST received(?:: (?P<uuid>" + _UUID + r"):(?P<seqno>-?\d+))?",
      lambda m: {"uuid": m.group("uuid"), "seqno": int(m.group("seqno")) if m.group("seqno") else None})
_rule("sst_received", r"^WSREP: SST complete, seqno: (?P<seqno>-?\d+)",
      lambda m: {"uuid": None, "seqno": int(m.group("seqno"))})
# Startup, bootstrap and failure
_rule("saved_state",
      r"^WSREP: Found saved state: (?P<uuid>" + _UUID + r"):(?P<seqno>-?\d+), safe_to_bootstrap: (?P<safe>\d)",
      lambda m: {"uuid": m.group("uuid"), "seqno": int(m.group("seqno")), "safe_to_bootstrap": m.group("safe") == "1"})
_rule("connecting", r"^WSREP: Connecting with bootstrap option: (?P<b>\d)",
      lambda m: {"bootstrap": m.group("b") == "1"})
_rule("recovered_position", r"^WSREP: Recovered position: (?P<uuid>" + _UUID + r"):(?P<seqno>-?\d+)",
      lambda m: {"uuid": m.group("uuid"), "seqno": int(m.group("seqno"))})
_rule("bootstrap_refused", r"It may not be safe to bootstrap the cluster from this node")
_rule("failed_to_reach_primary",
      r"^WSREP: failed to open gcomm backend connection: (?P<code>\d+): failed to reach primary view",
      lambda m: {"code": int(m.group("code"))})
_rule("channel_open_failed",
      r"Failed to open channel '(?P<channel>[^']*)' at '(?P<address>[^']*)': (?P<code>-?\d+) \((?P<error>[^)]*)\)",
      lambda m: {"channel": m.group("channel"), "address": m.group("address"), "code": int(m.group("code")),
                 "error": m.group("error")})
_rule("aborting", r"^Aborting\s*$")

KINDS = tuple(dict.fromkeys([k for k, _, _ in _RULES] + ["gcomm_view", "view_change", "quorum"]))

_GCOMM_VIEW = re.compile(r"^WSREP: view\((?:view_id\((?P<type>PRIM|NON_PRIM|TRANS)"
                         r",(?P<rep>[^,]+),(?P<seq>-?\d+)\)\s+memb\s*\{|\(empty\)\))")
_GCOMM_SECTION = re.compile(r"^\}?\s*(?P<name>memb|joined|left|partitioned)\s*\{")
_VIEW_START = re.compile(r"^View:\s*$")
_VIEW_FIELD = re.compile(r"^\s*(?P<key>id|status|protocol_version|capabilities|final|own_index):\s*(?P<value>.*?)\s*$")
_VIEW_MEMBERS = re.compile(r"^\s*members\((?P<n>\d+)\):\s*$")
_QUORUM_START = re.compile(r"^WSREP: Quorum results:\s*$")
_QUORUM_FIELD = re.compile(r"^\s*(?P<key>[A-Za-z_. ]+?)\s*=\s*(?P<value>.*?),?\s*$")


def _iso(m) -> str:
    return f"{m.group('date')}T{int(m.group('h')):02d}:{m.group('mi')}:{m.group('s')}"


def split_prefix(line: str) -> tuple[str | None, str | None, str]:
    """(ISO time, level, message) of a mariadbd log line; (None, None, line) without a prefix."""
    text = line.rstrip("\r\n")
    m = _PREFIX.match(text)
    if m:
        return _iso(m), m.group("level"), m.group("msg")
    m = _BARE.match(text.strip())
    if m:
        return None, m.group("level"), m.group("msg")
    return None, None, text.strip()


def match_text(msg: str) -> tuple[str, dict] | None:
    for kind, pat, conv in _RULES:
        m = pat.search(msg)
        if m:
            return kind, (conv(m) if conv else {})
    return None


def _event(time, level, kind, fields, text) -> dict:
    ev = {"time": time, "reporter": None, "node": None, "kind": kind}
    ev.update(fields)
    ev["severity"] = level
    ev["source"] = "error_log"
    ev["text"] = text
    return ev


def parse_line(line: str, reporter: int | None = None, keep_other: bool = False) -> dict | None:
    """A single line -> event (single-line events only; see GaleraLogParser for the blocks)."""
    if not line.strip():
        return None
    time, level, msg = split_prefix(line)
    found = match_text(msg)
    if found is None:
        g = _GCOMM_VIEW.match(msg)
        if g and g.group("type") is None:  # "view((empty))" is complete on one line
            return _event(time, level, "gcomm_view", {"primary": False, "view_type": None, "members": 0,
                                                       "empty": True}, msg)
        return _event(time, level, "other", {}, line.strip()) if keep_other else None
    kind, fields = found
    if kind == "aborting" and level and level.upper() != "ERROR":
        return _event(time, level, "other", {}, line.strip()) if keep_other else None
    return _event(time, level, kind, fields, msg)


class GaleraLogParser:
    """Line-by-line parser that assembles the multi-line view and quorum blocks."""

    def __init__(self, keep_other: bool = False):
        self.keep_other = keep_other
        self._block: dict | None = None  # {"type": gcomm|view|quorum, ...}

    def feed(self, line: str) -> list[dict]:
        out: list[dict] = []
        raw = line.rstrip("\r\n")
        time, level, msg = split_prefix(raw)
        has_prefix = time is not None or level is not None
        if self._block is not None:
            done, consumed = self._continue(raw, msg, has_prefix)
            if done is not None:
                out.append(done)
            if consumed:
                return out
        g = _GCOMM_VIEW.match(msg)
        if g and g.group("type"):
            self._block = {"type": "gcomm", "time": time, "level": level, "view_type": g.group("type"),
                           "representative": g.group("rep"), "view": int(g.group("seq")),
                           "section": "memb", "counts": {"memb": 0, "joined": 0, "left": 0, "partitioned": 0},
                           "lines": [msg]}
            return out
        if _QUORUM_START.match(msg):
            self._block = {"type": "quorum", "time": time, "level": level, "fields": {}, "lines": [msg]}
            return out
        if msg.startswith("WSREP: ====") and has_prefix:
            self._block = {"type": "view", "time": time, "level": level, "fields": {}, "members": None,
                           "started": False, "lines": []}
            return out
        ev = parse_line(raw, keep_other=self.keep_other)
        if ev is not None:
            out.append(ev)
        return out

    # A block ends on its closing line or on the next prefixed log line.
    def _continue(self, raw: str, msg: str, has_prefix: bool) -> tuple[dict | None, bool]:
        b = self._block
        s = raw.strip()
        if b["type"] == "gcomm":
            if has_prefix:
                return self._finish(), False
            b["lines"].append(s)
            sec = _GCOMM_SECTION.match(s)
            if sec:
                b["section"] = sec.group("name")
                return None, True
            if s.startswith("})"):
                return self._finish(), True
            if s and s != "}":
                b["counts"][b["section"]] += 1
            return None, True
        if b["type"] == "quorum":
            m = _QUORUM_FIELD.match(raw) if not has_prefix else None
            if m:
                b["fields"][m.group("key").strip().lower()] = m.group("value")
                b["lines"].append(s)
                if m.group("key").strip().lower() == "group uuid":
                    return self._finish(), True
                return None, True
            return self._finish(), False
        # wsrep-lib view block
        if has_prefix and not msg.startswith("WSREP: ===="):
            return self._finish(), False
        if not has_prefix and _VIEW_START.match(s):
            b["started"] = True
            return None, True
        if s.startswith("====") or msg.startswith("WSREP: ===="):
            return (self._finish(), True) if b["started"] else (None, True)
        m = _VIEW_MEMBERS.match(raw)
        if m:
            b["members"] = int(m.group("n"))
            return None, True
        m = _VIEW_FIELD.match(raw)
        if m:
            b["fields"][m.group("key")] = m.group("value")
            return None, True
        return None, True  # member lines "0: <uuid>, <name>"

    def _finish(self) -> dict | None:
        b, self._block = self._block, None
        if b is None:
            return None
        if b["type"] == "gcomm":
            c = b["counts"]
            return _event(b["time"], b["level"], "gcomm_view",
                          {"primary": b["view_type"] == "PRIM", "view_type": b["view_type"], "view": b["view"],
                           "representative": b["representative"], "members": c["memb"], "joined": c["joined"],
                           "left": c["left"], "partitioned": c["partitioned"]},
                          " ".join(b["lines"]))
        if b["type"] == "quorum":
            f = b["fields"]
            comp = (f.get("component") or "").split(",")[0].split()[0].upper() if f.get("component") else ""
            fields = {"component": comp or None, "primary": comp == "PRIMARY"}
            mm = re.match(r"^(\d+)/(\d+)", f.get("members", ""))
            if mm:
                fields["members"], fields["total"] = int(mm.group(1)), int(mm.group(2))
            if f.get("conf_id", "").lstrip("-").isdigit():
                fields["conf_id"] = int(f["conf_id"])
            if f.get("group uuid"):
                fields["group_uuid"] = f["group uuid"]
            return _event(b["time"], b["level"], "quorum", fields, "Quorum results: " + ", ".join(b["lines"][1:]))
        f = b["fields"]
        if not b["started"]:
            return None
        status = (f.get("status") or "").split()[0].lower() if (f.get("status") or "").split() else None
        fields = {"status": status, "primary": status == "primary", "members": b["members"],
                  "view_id": f.get("id"),
                  "own_index": int(f["own_index"]) if f.get("own_index", "").lstrip("-").isdigit() else None,
                  "source_text": "wsrep"}
        return _event(b["time"], b["level"], "view_change", fields, f"View: status {status}, members {b['members']}")

    def close(self) -> list[dict]:
        ev = self._finish()
        return [ev] if ev is not None else []


def parse_lines(lines: Iterable[str], reporter: int | None = None, keep_other: bool = False) -> Iterator[dict]:
    p = GaleraLogParser(keep_other)
    for ln in lines:
        yield from p.feed(ln)
    yield from p.close()
