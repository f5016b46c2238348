"""NDB log events: the verbatim samples of reference/ndb.md section 3.3 (and 2.3), and one line
per kind built from the EventLogger.cpp formats of section 3.1/3.2, in both the cluster log form
and the data node log form (with and without a date)."""

import pytest

from ndbchaos.events import KINDS, parse_line, parse_lines
from ndbchaos.events import ndb as ndbev

# ndb.md 3.3 -- heartbeat-detected failure (Pro MySQL NDB Cluster, listing 17-1), verbatim
HEARTBEAT_SEQUENCE = """\
2017-05-13 17:27:09 [MgmtSrvr] WARNING  -- Node 2: Node 1 missed heartbeat 2
2017-05-13 17:27:14 [MgmtSrvr] WARNING  -- Node 2: Node 1 missed heartbeat 3
2017-05-13 17:27:19 [MgmtSrvr] WARNING  -- Node 2: Node 1 missed heartbeat 4
2017-05-13 17:27:19 [MgmtSrvr] ALERT    -- Node 2: Node 1 declared dead due to missed heartbeat
... snip ...
2017-05-13 17:27:22 [MgmtSrvr] ALERT    -- Node 1: Forced node shutdown completed. Caused by error 2315: 'Node declared dead. See error log for details(Arbitration error). Temporary error, restart node'.
"""
VICTIM = "We(1) have been declared dead by 2 (via 2) reason: Heartbeat failure(4)"

# ndb.md 3.3 -- surviving data node after a peer disconnects (bug #116350, ndb_2_out.log), verbatim
SURVIVOR = """\
[ndbd] INFO     -- Node 5 disconnected in recv with errnum: 104 in state: 0
[ndbd] INFO     -- findNeighbours from: 6085 old (left: 5 right: 3) new (4 3)
[ndbd] ALERT    -- Arbitration check won - node group majority
[ndbd] INFO     -- President restarts arbitration thread [state=6]
[ndbd] INFO     -- NR Status: node=5,OLD=Initial state,NEW=Node failed, fail handling ongoing
[ndbd] INFO     -- DBTC 0: Started failure handling for node 5
"""

# ndb.md 3.3 -- arbitrator lost, later shutdown (bug #116429), verbatim
ARBITRATOR_LOST = """\
[ndbd] INFO -- Node 1 disconnected in state: 0
[ndbd] INFO -- Lost arbitrator node 1 - process failure [state=6]
...
Status: Temporary error, restart node
Message: Node lost connection to other nodes and can not form a unpartitioned cluster, please investigate if there are error(s) on other node(s) (Arbitration error)
Error: 2305
Error data: Arbitrator decided to shutdown this node
Error object: QMGR (Line: 7376) 0x00000002
"""

# ndb.md 2.3 -- event printout during a rolling restart (8.4 manual), verbatim
RESTART_PRINTOUT = """\
ndb_mgm> 2 RESTART
Node 2: Node shutdown initiated
Node 2: Node shutdown completed, restarting, no start.
Node 2 is being restarted
ndb_mgm> Node 2: Start initiated (version 8.4.7)
ndb_mgm> Node 2: Started (version 8.4.7)
"""

# One text per kind, as EventLogger.cpp formats it: (text, kind, expected fields)
V = "8.4.7-ndb-8.4.7"
TEXTS = [
    ("Node 3 Connected", "node_connected", {"node": 3}),
    ("Node 3 Disconnected", "node_disconnected", {"node": 3}),
    ("Communication to Node 3 closed", "communication_closed", {"node": 3}),
    ("Communication to Node 3 opened", "communication_opened", {"node": 3}),
    (f"Node 21: API {V}", "api_connected", {"node": 21, "version": V}),
    ("Node 4 missed heartbeat 3", "missed_heartbeat", {"node": 4, "count": 3}),
    ("Node 4 declared dead due to missed heartbeat", "declared_dead", {"node": 4}),
    ("Transporter to node 4 reported error 0x16: The send buffer was full, but sleeping for a while solved",
     "transporter_error", {"node": 4, "code": 0x16}),
    ("Node 12 has failed. The Node state at failure was 1", "node_failed", {"node": 12, "state": 1}),
    ("Node 11 completed failure of Node 12", "node_failure_completed", {"node": 12, "by": 11, "all": False}),
    ("All nodes completed failure of Node 12", "node_failure_completed", {"node": 12, "all": True}),
    ("Node failure of 12 DBTC completed", "node_failure_block_completed", {"node": 12, "block": "DBTC"}),
    (f"Start initiated ({V})", "start_initiated", {"version": V}),
    ("Start initiated (version 8.4.7)", "start_initiated", {"version": "8.4.7"}),
    (f"Started ({V})", "node_started", {"version": V}),
    ("Start phase 1 completed (initial start)", "start_phase_completed", {"phase": 1, "start_type": "initial start"}),
    ("Start phase 5 completed (system restart)", "start_phase_completed", {"phase": 5, "start_type": "system restart"}),
    ("Start phase 4 completed (node restart)", "start_phase_completed", {"phase": 4, "start_type": "node restart"}),
    ("Start phase 101 completed (initial node restart)", "start_phase_completed",
     {"phase": 101, "start_type": "initial node restart"}),
    ("Start phase 0 completed ", "start_phase_completed", {"phase": 0, "start_type": None}),
    ("Start phase 3 completed (unknown = 9)", "start_phase_completed", {"phase": 3, "start_type": "unknown"}),
    ("CM_REGCONF president = 11, own Node = 12, our dynamic id = 0/2", "cm_regconf",
     {"node": 12, "president": 11, "dynamic_id": 0}),
    ("CM_REGREF from Node 11 to our Node 12. Cause = Busy", "cm_regref", {"node": 12, "from_node": 11, "cause": "Busy"}),
    ("We are Node 12 with dynamic ID 2, our left neighbour is Node 11, our right is Node 13", "find_neighbours",
     {"node": 12, "left": 11, "right": 13}),
    ("Cluster shutdown initiated", "shutdown_initiated", {"scope": "cluster"}),
    ("Node shutdown initiated", "shutdown_initiated", {"scope": "node"}),
    ("Node shutdown completed.", "shutdown_completed", {"restarting": False, "signal": None}),
    ("Node shutdown completed, restarting, no start, initial. Initiated by signal 15.", "shutdown_completed",
     {"restarting": True, "no_start": True, "initial": True, "signal": 15}),
    ("Node shutdown aborted", "shutdown_aborted", {}),
    ("Forced node shutdown completed. Occurred during startphase 5. Caused by error 2305: 'Node lost connection to "
     "other nodes and can not form a unpartitioned cluster, please investigate if there are error(s) on other "
     "node(s)(Arbitration error). Temporary error, restart node'.", "forced_shutdown",
     {"exit_code": 2305, "start_phase": 5, "classification": "Arbitration error",
      "status": "Temporary error, restart node",
      "reason": "Node lost connection to other nodes and can not form a unpartitioned cluster, please investigate "
                "if there are error(s) on other node(s)"}),
    ("Forced node shutdown completed, restarting. Initiated by signal 6.", "forced_shutdown",
     {"exit_code": None, "signal": 6, "restarting": True}),
    ("Forced node shutdown completed. Caused by error 2308: 'Another node failed during system restart, please "
     "investigate error(s) on other node(s)(Restart error). Temporary error, restart node'. (extra info 4)",
     "forced_shutdown", {"exit_code": 2308, "classification": "Restart error", "extra_info": 4}),
    ("Arbitration check lost - less than 1/2 nodes left", "arbitration_check_lost",
     {"reason": "less than 1/2 nodes left"}),
    ("Arbitration check lost - missing node group", "arbitration_check_lost", {"reason": "missing node group"}),
    ("Arbitration check won - all node groups and more than 1/2 nodes left", "arbitration_check_won",
     {"reason": "all node groups and more than 1/2 nodes left"}),
    ("Arbitration check won - node group majority", "arbitration_check_won", {"reason": "node group majority"}),
    ("Network partitioning - arbitration required", "arbitration_required", {}),
    ("Arbitration won - positive reply from node 1", "arbitration_won", {"arbitrator": 1}),
    ("Arbitration lost - negative reply from node 1", "arbitration_lost", {"arbitrator": 1}),
    ("Network partitioning - no arbitrator available", "no_arbitrator", {"reason": "no arbitrator available"}),
    ("Network partitioning - no arbitrator configured", "no_arbitrator", {"reason": "no arbitrator configured"}),
    ("Continuing after wait for external arbitration, nodes: 11,13", "arbitration_external", {"nodes": "11,13"}),
    ("Arbitration failure - timeout [state=7]", "arbitration_failure", {"reason": "timeout", "state": 7}),
    ("President restarts arbitration thread [state=1]", "arbitration_thread_restarted", {"state": 1}),
    ("Prepare arbitrator node 1 [ticket=4b2d0003a9c1f7e4]", "arbitrator_prepared",
     {"node": 1, "arbitrator": 1, "ticket": "4b2d0003a9c1f7e4"}),
    ("Receive arbitrator node 1 [ticket=4b2d0003a9c1f7e4]", "arbitrator_received", {"arbitrator": 1}),
    ("Started arbitrator node 2 [ticket=4b2d0004a9c1f7e4]", "arbitrator_started", {"node": 2, "arbitrator": 2}),
    ("Lost arbitrator node 1 - process failure [state=6]", "arbitrator_lost",
     {"arbitrator": 1, "reason": "process failure", "state": 6}),
    ("Lost arbitrator node 1 - process exit [state=6]", "arbitrator_lost", {"reason": "process exit"}),
    ("Lost arbitrator node 2 - timeout [state=3]", "arbitrator_lost", {"reason": "timeout", "state": 3}),
    ("GCP Take over started", "gcp_takeover", {"phase": "started"}),
    ("LCP Take over completed (state = 4)", "lcp_takeover", {"phase": "completed", "state": 4}),
    (VICTIM, "declared_dead", {"node": 1, "by": 2, "via": 2, "reason": "Heartbeat failure(4)"}),
]

REQUIRED = {"node_connected", "node_disconnected", "communication_closed", "communication_opened", "missed_heartbeat",
            "declared_dead", "node_failed", "node_failure_completed", "start_initiated", "start_phase_completed",
            "node_started", "shutdown_initiated", "shutdown_completed", "forced_shutdown", "arbitration_check_won",
            "arbitration_check_lost", "arbitration_required", "arbitration_won", "arbitration_lost", "no_arbitrator",
            "arbitrator_prepared", "arbitrator_started", "arbitrator_lost"}


def _check(ev, kind, fields):
    assert ev is not None, kind
    assert ev["kind"] == kind
    for k, v in fields.items():
        assert ev[k] == v, (kind, k, ev)
    assert list(ev)[:4] == ["time", "reporter", "node", "kind"]


def test_required_kinds_exist_and_every_kind_has_a_test_line():
    assert REQUIRED <= set(KINDS["ndb"])
    tested = {k for _, k, _ in TEXTS} | {"error_report"}
    assert set(KINDS["ndb"]) - {"node_fail_rejected"} <= tested


@pytest.mark.parametrize("text,kind,fields", TEXTS, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(TEXTS)])
def test_cluster_log_form(text, kind, fields):
    line = f"2026-06-06 18:38:11 [MgmtSrvr] {'ALERT':<8} -- Node 12: {text}"
    ev = parse_line(line)
    _check(ev, kind, fields)
    assert ev["time"] == "2026-06-06T18:38:11" and ev["reporter"] == 12 and ev["source"] == "cluster_log"
    assert ev["severity"] == "ALERT"
    if kind in ndbev._SELF_KINDS:
        assert ev["node"] == 12  # an event about the reporter itself
    else:
        assert ev["node"] is not None and ev["node"] == fields.get("node", ev["node"])


@pytest.mark.parametrize("text,kind,fields", TEXTS, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(TEXTS)])
def test_data_node_log_form_with_and_without_date(text, kind, fields):
    ev = parse_line(f"2024-10-08 09:56:27 [ndbd] INFO     -- {text}", reporter=11)
    _check(ev, kind, fields)
    assert ev["time"] == "2024-10-08T09:56:27" and ev["reporter"] == 11 and ev["source"] == "node_log"
    ev = parse_line(f"[ndbd] WARNING  -- {text}")
    _check(ev, kind, fields)
    assert ev["time"] is None and ev["reporter"] is None


def test_heartbeat_sequence_verbatim():
    evs = list(parse_lines(HEARTBEAT_SEQUENCE.splitlines()))
    assert [e["kind"] for e in evs] == ["missed_heartbeat"] * 3 + ["declared_dead", "forced_shutdown"]
    assert [e["count"] for e in evs[:3]] == [2, 3, 4]
    assert all(e["reporter"] == 2 and e["node"] == 1 for e in evs[:4])
    fs = evs[4]
    assert fs["reporter"] == 1 and fs["node"] == 1 and fs["exit_code"] == 2315
    assert fs["classification"] == "Arbitration error" and fs["status"] == "Temporary error, restart node"
    assert fs["reason"] == "Node declared dead. See error log for details"
    assert fs["time"] == "2017-05-13T17:27:22" and fs["severity"] == "ALERT"
    ev = parse_line(VICTIM, reporter=1)
    assert ev["kind"] == "declared_dead" and ev["node"] == 1 and ev["by"] == 2


def test_survivor_log_verbatim():
    evs = list(parse_lines(SURVIVOR.splitlines(), reporter=2))
    assert [e["kind"] for e in evs] == ["node_disconnected", "arbitration_check_won", "arbitration_thread_restarted"]
    assert evs[0]["node"] == 5 and evs[0]["errnum"] == 104 and evs[0]["state"] == 0
    assert evs[1]["reason"] == "node group majority" and evs[1]["node"] == 2 and evs[1]["reporter"] == 2
    kept = list(parse_lines(SURVIVOR.splitlines(), reporter=2, keep_other=True))
    assert len(kept) == 6 and [e["kind"] for e in kept].count("other") == 3


def test_arbitrator_lost_and_error_report_verbatim():
    evs = list(parse_lines(ARBITRATOR_LOST.splitlines(), reporter=4))
    assert [e["kind"] for e in evs] == ["node_disconnected", "arbitrator_lost", "error_report"]
    assert evs[0]["node"] == 1 and evs[0]["state"] == 0
    assert evs[1]["arbitrator"] == 1 and evs[1]["reason"] == "process failure" and evs[1]["state"] == 6
    er = evs[2]
    assert er["exit_code"] == 2305 and er["error_data"] == "Arbitrator decided to shutdown this node"
    assert er["status"] == "Temporary error, restart node" and er["node"] == 4
    assert er["error_object"].startswith("QMGR")


def test_error_log_block_with_time_and_eom():
    text = ("Time: Tuesday 8 October 2024 - 09:56:27\nStatus: Temporary error, restart node\n"
            "Message: Another node failed during system restart, please investigate error(s) on other node(s) "
            "(Restart error)\nError: 2308\nError data: Node 3 disconnected\nError object: DBDIH\nProgram: ndbd\n"
            "Pid: 123\nVersion: mysql-8.0.40 ndb-8.0.40\nTrace file name: ndb_4_trace.log.1\n***EOM***\n"
            "Time: Tuesday 8 October 2024 - 09:57:01\nStatus: Temporary error, restart node\nError: 2339\n")
    evs = list(parse_lines(text.splitlines(), reporter=4))
    assert [e["exit_code"] for e in evs] == [2308, 2339]
    assert evs[0]["time"] == "2024-10-08T09:56:27" and evs[0]["trace_file"] == "ndb_4_trace.log.1"
    assert evs[0]["version"] == "mysql-8.0.40 ndb-8.0.40" and evs[1]["time"] == "2024-10-08T09:57:01"


def test_restart_printout_verbatim():
    evs = list(parse_lines(RESTART_PRINTOUT.splitlines()))
    assert [e["kind"] for e in evs] == ["shutdown_initiated", "shutdown_completed", "start_initiated", "node_started"]
    assert all(e["reporter"] == 2 and e["node"] == 2 and e["source"] == "mgm_client" for e in evs)
    assert evs[1]["restarting"] and evs[1]["no_start"] and not evs[1]["initial"]
    assert evs[3]["version"] == "8.4.7"


def test_api_version_has_two_prefixes():
    ev = parse_line(f"2024-01-01 10:00:00 [MgmtSrvr] INFO     -- Node 11: Node 21: API {V}")
    assert ev["kind"] == "api_connected" and ev["reporter"] == 11 and ev["node"] == 21


def test_single_digit_hour_and_fractional_seconds():
    ev = parse_line("2026-11-22 2:45:20 [MgmtSrvr] INFO     -- Node 11: Node 12 Connected")
    assert ev["time"] == "2026-11-22T02:45:20"


@pytest.mark.parametrize("line", [
    "", "   ", "garbage", "Node 2: started (mysql-8.0.44 ndb-8.0.44)",  # ALL STATUS, not an event
    "2024-01-01 10:00:00 [MgmtSrvr] INFO     -- Id: 1, Command port: *:1186",
    "2024-01-01 10:00:00 [MgmtSrvr] INFO     -- Node 11: Data usage is 2%(59 32K pages of total 2560)",
    "[ndbd] INFO     -- Node 5", "Node x: Started (", "\x00\xff binary", "Error: not a number",
    "2026-06-06 18:38:11 1 [Note] WSREP: Shifting OPEN -> PRIMARY (TO: 2)",
])
def test_unrecognised_lines_are_skipped_or_other(line):
    assert parse_line(line) is None
    ev = parse_line(line, keep_other=True)
    assert ev is None if not line.strip() else ev["kind"] == "other"


def test_parser_object_never_raises_on_block_fragments():
    p = ndbev.NdbLogParser(keep_other=True)
    out = []
    for ln in ["Status: x", "Message: y", "plain text", "Error: abc", "***EOM***", "***EOM***"]:
        out += p.feed(ln)
    out += p.close()
    assert [e["kind"] for e in out] == ["other", "other", "error_report"]
    assert out[2]["exit_code"] is None
