"""NDB log events: the verbatim samples of docs/facts.md NDB 3.3 (and 2.3), one line per
kind built from the EventLogger.cpp formats of section 3.1/3.2 or copied from a real 9.7.2 log,
in both the cluster log form and the data node log form (with and without a date); and the real
MySQL Cluster 9.7.2 logs of tests/unit/fixtures/ndb-9.7/ (see the README there), line by line and
fault by fault."""

import datetime as dt
import json
import re
from pathlib import Path

import pytest

from ndbchaos.cli import main as cli_main
from ndbchaos.events import kinds as event_kinds, parse_file, parse_line, parse_lines, time_to_epoch
from ndbchaos.engines.ndb import logs as ndbev
from ndbchaos.engines.ndb import logtexts

# docs/facts.md NDB 3.3 -- heartbeat-detected failure (Pro MySQL NDB Cluster, listing 17-1), verbatim
HEARTBEAT_SEQUENCE = """\
2017-05-13 17:27:09 [MgmtSrvr] WARNING  -- Node 2: Node 1 missed heartbeat 2
2017-05-13 17:27:14 [MgmtSrvr] WARNING  -- Node 2: Node 1 missed heartbeat 3
2017-05-13 17:27:19 [MgmtSrvr] WARNING  -- Node 2: Node 1 missed heartbeat 4
2017-05-13 17:27:19 [MgmtSrvr] ALERT    -- Node 2: Node 1 declared dead due to missed heartbeat
... snip ...
2017-05-13 17:27:22 [MgmtSrvr] ALERT    -- Node 1: Forced node shutdown completed. Caused by error 2315: 'Node declared dead. See error log for details(Arbitration error). Temporary error, restart node'.
"""  # noqa: E501
VICTIM = "We(1) have been declared dead by 2 (via 2) reason: Heartbeat failure(4)"

# docs/facts.md NDB 3.3 -- surviving data node after a peer disconnects (bug #116350, ndb_2_out.log), verbatim
SURVIVOR = """\
[ndbd] INFO     -- Node 5 disconnected in recv with errnum: 104 in state: 0
[ndbd] INFO     -- findNeighbours from: 6085 old (left: 5 right: 3) new (4 3)
[ndbd] ALERT    -- Arbitration check won - node group majority
[ndbd] INFO     -- President restarts arbitration thread [state=6]
[ndbd] INFO     -- NR Status: node=5,OLD=Initial state,NEW=Node failed, fail handling ongoing
[ndbd] INFO     -- DBTC 0: Started failure handling for node 5
"""

# docs/facts.md NDB 3.3 -- arbitrator lost, later shutdown (bug #116429), verbatim
ARBITRATOR_LOST = """\
[ndbd] INFO -- Node 1 disconnected in state: 0
[ndbd] INFO -- Lost arbitrator node 1 - process failure [state=6]
...
Status: Temporary error, restart node
Message: Node lost connection to other nodes and can not form a unpartitioned cluster, please investigate if there are error(s) on other node(s) (Arbitration error)
Error: 2305
Error data: Arbitrator decided to shutdown this node
Error object: QMGR (Line: 7376) 0x00000002
"""  # noqa: E501

# docs/facts.md NDB 2.3 -- event printout during a rolling restart (8.4 manual), verbatim
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
    ("CM_REGREF from Node 11 to our Node 12. Cause = Busy", "cm_regref",
     {"node": 12, "from_node": 11, "cause": "Busy"}),
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
    # texts copied from the real 9.7.2 logs of fixtures/ndb-9.7 (not EventLogger texts unless noted)
    ("Node 1 transporter to node 11 (id 2) disconnected", "transporter_disconnected",
     {"node": 11, "by": 1, "transporter_id": 2}),
    ("Node 1 missed heartbeat 2 from node 12.", "missed_heartbeat", {"node": 12, "by": 1, "count": 2}),
    ("Node 11 leaving cluster due to Connection failure.  Members : 12, 13 and 14", "node_left",
     {"node": 11, "reason": "Connection failure", "by": None, "members": [12, 13, 14]}),
    ("Node 12 leaving cluster due to Heartbeat failure (notified by node 13).  Members : 11, 13 and 14", "node_left",
     {"node": 12, "reason": "Heartbeat failure", "by": 13, "members": [11, 13, 14]}),
    ("Node 13 leaving cluster due to Connection failure.  Members : 14", "node_left", {"node": 13, "members": [14]}),
    ("Node 11 joined cluster.  Members : 11, 12, 13 and 14", "node_joined", {"node": 11, "members": [11, 12, 13, 14]}),
    ("Joined cluster.  Members : 11 and 12", "joined_cluster", {"members": [11, 12]}),
    ("NR Status: node=11,OLD=Node failed, fail handling ongoing,NEW=Node failure handling complete",
     "node_restart_status", {"node": 11, "old": "Node failed, fail handling ongoing",
                             "new": "Node failure handling complete"}),
    ("NR Status: node=5,OLD=Initial state,NEW=Node failed, fail handling ongoing", "node_restart_status",
     {"node": 5, "old": "Initial state", "new": "Node failed, fail handling ongoing"}),
    ("Node 14 taking over as DICT master", "dict_master_takeover", {"node": 14}),
    ("Master takeover started from 11", "master_takeover_started", {"old_master": 11}),
    ("System Restart: master node: 11, num starting: 4, gci: 152", "system_restart",
     {"master": 11, "starting": 4, "gci": 152}),
    ("Restarting cluster to GCI: 152", "restart_gci", {"gci": 152}),
    ("We are performing a restart of the cluster, restoring GCI = 152", "restart_gci", {"gci": 152}),
    ("Node 11 has completed its restart", "node_restart_completed", {"node": 11}),
    ("Node 11 has completed node fail handling", "node_fail_handling_completed", {"node": 11}),
    ("Received signal 15. Performing stop.", "signal_received", {"signal": 15, "signal_name": None}),
    ("Unable to report shutdown reason to '10.213.77.101 1186'(error: Could not connect to socket)",
     "shutdown_report_failed", {"to": "10.213.77.101 1186", "error": "Could not connect to socket"}),
    ("Node 1 disconnecting node 12 due to missed heartbeat", "declared_dead",
     {"node": 12, "by": 1, "reason": "missed heartbeat"}),
    ("Received SIGTERM. Performing stop.", "signal_received", {"signal": 15, "signal_name": "SIGTERM"}),
    ("Arbitrator decided to shutdown this node", "arbitrator_shutdown", {}),
    ("Nodeid 11 allocated for NDB at 10.213.77.111", "node_id_allocated",
     {"node": 11, "node_type": "NDB", "address": "10.213.77.111"}),
    ("Nodeid 22 allocated for API at 10.213.77.122", "node_id_allocated", {"node": 22, "node_type": "API"}),
    ("Alloc node id 13 rejected, no new president yet", "node_id_rejected",
     {"node": 13, "reason": "no new president yet"}),
    ("Local checkpoint 5 started. Keep GCI = 88 oldest restorable GCI = 86", "lcp_started",
     {"lcp": 5, "keep_gci": 88, "oldest_restorable_gci": 86}),
    ("Local checkpoint 5 completed", "lcp_completed", {"lcp": 5}),
    # the GCP monitor with a stalled disk (9.7.2, GCP stops disabled): the bitmask names node 12
    ("GCP Monitor: GCP_SAVE lag 60 sec (no max lag), [SignalCounter: m_count=1 "
     "0000000000000000000000000000000000001000]", "gcp_lag",
     {"what": "GCP_SAVE", "lag_s": 60, "max_lag": "no max lag", "waiting_for": [12]}),
    ("GCP Monitor: GCP_SAVE lag 120 sec (max lag: 140s), [SignalCounter: m_count=1 "
     "0000000000000000000000000000000000004000]", "gcp_lag",
     {"what": "GCP_SAVE", "lag_s": 120, "max_lag": "max lag: 140s", "waiting_for": [14]}),
    ("GCP Monitor: Computed max GCP_SAVE lag to 140 seconds", "gcp_max_lag", {"what": "GCP_SAVE", "max_lag_s": 140}),
    ("Detected GCP stop(1)...sending kill to [SignalCounter: m_count=1 0000000000000000000000000000000000002000]",
     "gcp_stop", {"reason": 1, "killed": [13]}),
    ("thr: 3 Overslept 19023 ms, expected ~10ms, user time: 54 us, sys_time: 0 us", "overslept",
     {"detector": "thread", "thread": 3, "ms": 19023, "expected_ms": 10, "user_us": 54, "sys_us": 0}),
    ("thr: 2: Overslept 1500 ms, expected ~10ms", "overslept",  # the 7.x/8.0 source form
     {"detector": "thread", "thread": 2, "ms": 1500, "expected_ms": 10, "user_us": None}),
    ("Watchdog: Warning overslept 242 ms, expected 100 ms.", "overslept",
     {"detector": "watchdog", "thread": None, "ms": 242, "expected_ms": 100}),
    ("timerHandlingLab, expected 10ms sleep, not scheduled for: 162 (ms), exec_time 0 us, sys_time 132 us",
     "overslept", {"detector": "timer", "thread": None, "ms": 162, "expected_ms": 10}),
    ("Ndb kernel thread 2 is stuck in: Yielding to OS elapsed=115", "thread_stuck",
     {"thread": 2, "place": "Yielding to OS", "elapsed_ms": 115}),
    ("Ndb kernel thread 1 is stuck in: Unknown place 0 elapsed=12", "thread_stuck",
     {"thread": 1, "place": "Unknown place 0", "elapsed_ms": 12}),
    ("MySQL Cluster Management Server mysql-9.7.2 ndb-9.7.2 started", "mgmd_started",
     {"version": "mysql-9.7.2 ndb-9.7.2"}),
    ("Shutdown complete", "mgmd_shutdown_completed", {}),
    ("Node shutdown completed. Initiated by signal 15.", "shutdown_completed",
     {"restarting": False, "no_start": False, "signal": 15}),
    # StartReport (EventLogger): two 9.7 lines, the other forms from the NDB manual's list
    ("Initial start, waiting for 11, 12 and 13 to connect,  nodes [ all: 11, 12, 13 and 14 connected: 14 no-wait:  ]",
     "start_waiting", {"initial": True, "wait_seconds": None, "waiting_for": [11, 12, 13], "connected": [14]}),
    ("Waiting 28 sec for nodes 14 to connect, nodes [ all: 11, 12, 13 and 14 connected: 11, 12 and 13 no-wait:  ]",
     "start_waiting", {"initial": False, "wait_seconds": 28, "waiting_for": [14], "connected": [11, 12, 13]}),
    ("Waiting until nodes: 12 connects, nodes [ all: 11 and 12 connected: 11 no-wait:  ]", "start_waiting",
     {"wait_seconds": None, "waiting_for": [12], "connected": [11]}),
    ("Waiting 57 sec for non partitioned start, nodes [ all: 1 and 2 connected: 1 missing: 2 no-wait:  ]",
     "start_waiting", {"wait_seconds": 57, "waiting_for": [2], "missing": [2], "connected": [1]}),
    ("Initial start with nodes 11, 12, 13 and 14 [ missing:  no-wait:  ]", "start_with_nodes",
     {"mode": "initial", "nodes": [11, 12, 13, 14], "missing": []}),
    ("Start with all nodes 11, 12, 13 and 14", "start_with_nodes",
     {"mode": "all", "nodes": [11, 12, 13, 14], "missing": []}),
    ("Start with nodes 11 and 12 [ missing: 13 no-wait:  ]", "start_with_nodes",
     {"mode": "partial", "nodes": [11, 12], "missing": [13]}),
    ("Start potentially partitioned with nodes 1  [ missing: 2 no-wait:  ]", "start_with_nodes",
     {"mode": "partitioned", "nodes": [1], "missing": [2]}),
    ("Backup 3 started from node 1", "backup_started", {"backup": 3, "by": 1}),
    ("Backup 3 started from node 1 completed. StartGCP: 5 StopGCP: 8 #Records: 2061 #LogRecords: 0 "
     "Data: 52336 bytes Log: 0 bytes", "backup_completed", {"backup": 3, "by": 1}),
    ("Backup 4 started from 1 has been aborted. Error: 1326", "backup_aborted", {"backup": 4, "by": 1, "error": 1326}),
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
    assert REQUIRED <= set(event_kinds("ndb"))
    tested = {k for _, k, _ in TEXTS} | {"error_report"}
    assert set(event_kinds("ndb")) - {"node_fail_rejected"} <= tested


@pytest.mark.parametrize("text,kind,fields", TEXTS, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(TEXTS)])
def test_cluster_log_form(text, kind, fields):
    line = f"2026-06-06 18:38:11 [MgmtSrvr] {'ALERT':<8} -- Node 12: {text}"
    ev = parse_line(line)
    _check(ev, kind, fields)
    assert ev["time"] == "2026-06-06T18:38:11" and ev["reporter"] == 12 and ev["source"] == "cluster_log"
    assert ev["severity"] == "ALERT"
    if kind in logtexts._SELF_KINDS:
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
    assert [e["kind"] for e in evs] == ["node_disconnected", "arbitration_check_won", "arbitration_thread_restarted",
                                        "node_restart_status"]
    assert evs[0]["node"] == 5 and evs[0]["errnum"] == 104 and evs[0]["state"] == 0
    assert evs[1]["reason"] == "node group majority" and evs[1]["node"] == 2 and evs[1]["reporter"] == 2
    assert evs[3]["node"] == 5 and evs[3]["new"] == "Node failed, fail handling ongoing"
    kept = list(parse_lines(SURVIVOR.splitlines(), reporter=2, keep_other=True))
    assert len(kept) == 6 and [e["kind"] for e in kept].count("other") == 0
    assert [e["group"] for e in kept if e["kind"] == "ignored"] == ["start_phases", "node_failure_handling"]


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


# -- ignored lines ------------------------------------------------------------------------------

IGNORED_SAMPLES = [  # verbatim 9.7.2 texts, one or more per group
    ("LDM(1): Completed LCP, #frags = 14 #records = 1183, #bytes = 66184", "ldm_redo"),
    ("Start reading LCP for table 2 fragment: 0", "ldm_redo"),
    ("Start NDB start phase 1", "start_phases"),
    ("Phase 1 initialised some variables and included node in cluster, locked memory if configured to do so",
     "start_phases"),
    ("findNeighbours from: 6085 old (left: 5 right: 3) new (4 3)", "start_phases"),
    ("Restore Database Off-line Starting on node 11", "restart_progress"),
    ("Node: 11 StartLog: [GCI Keep: 135 LastCompleted: 152 NewestRestorable: 152]", "restart_progress"),
    ("DBTC 0: Started failure handling for node 5", "node_failure_handling"),
    ("m_LCP_COMPLETE_REP_From_Master_Received = 1", "lcp_internals"),
    ("Angel pid: 1 started child: 7", "startup_config"),
    ("DataMemory set to 80 MB", "memory_config"),
    ("Suma: handover complete", "suma_handover"),
    ("DICT: locked by node 11 for NodeRestart", "dict"),
    ("Started thread, index = 0, id = 8, type = NdbfsThread", "threads"),
    ("TR : Ignored connection attempt as this node is not expecting a connection from node 13. State 3", "transporter"),
    ("Id: 1, Command port: *:1186", "mgmd_config"),
    ("Node 2 connected", "mgmd_config"),
    ("Alloc node id 22 succeeded", "node_id_allocation"),
    ("mysqld --server-id=1", "api_info"),
    ("Watchdog: User time: 3  System time: 17", "watchdog_detail"),
    ("QMGR (Line: 6910) 0x00000002", "shutdown_steps"),
    (" #8 0x562913273ed9 _Z8ndbd_runbiPKciS0_bbbjiimS0_i", "stack_trace"),
    ("[Entrypoint] Starting ndbmtd", "container_console"),
    ("Current byte-offset of file-pointer is: 1067", "error_log_header"),
    ("NDB_TAMPER : block CMVMI/0 error 0 0 -> 9999 0", "error_insert"),
    ("Child has terminated (pid 7). Angel restarting child process", "startup_config"),
    ("Restarting system", "shutdown_steps"),
]


def test_ignored_catalogue_is_named_described_and_not_a_catch_all():
    names = [name for name, _ in ndbev.IGNORED]
    assert len(names) == len(set(names)) and set(names) == set(ndbev.GROUP_DESCRIPTIONS)
    assert all(isinstance(rx, re.Pattern) and ndbev.GROUP_DESCRIPTIONS[n] for n, rx in ndbev.IGNORED)
    for text in ["", "x", "garbage", "Node 5", "Node 12: something new", "LDM", "Phase one", "DBTC x: y",
                 "Data usage is 2%(59 32K pages of total 2560)", "Shutdown", "started"]:
        assert ndbev.match_ignored(text) is None, text
    assert {g for _, g in IGNORED_SAMPLES} == set(names)  # every group has a sample


@pytest.mark.parametrize("text,group", IGNORED_SAMPLES, ids=[g for _, g in IGNORED_SAMPLES])
def test_ignored_lines_are_kept_only_on_request(text, group):
    for line, rep in [(f"2026-11-23T14:22:17.433687Z [ndbd] INFO     -- {text}", 11),
                      (f"2026-11-23T14:22:17.433687Z [MgmtSrvr] INFO     -- Node 11: {text}", None)]:
        if text.startswith((" #", "[Entrypoint]", "Current byte-offset")):
            line = text  # written without a log prefix
        assert parse_line(line, reporter=rep) is None
        ev = parse_line(line, reporter=rep, keep_other=True)
        assert ev["kind"] == "ignored" and ev["group"] == group, (line, ev)
        assert list(ev)[:4] == ["time", "reporter", "node", "kind"] and ev["node"] is None


def test_an_event_is_never_hidden_by_an_ignored_group():
    for text, kind, _ in TEXTS:
        ev = parse_line(f"2026-11-23T14:22:17.433687Z [ndbd] INFO     -- {text}", reporter=11, keep_other=True)
        assert ev["kind"] == kind, text


# -- real MySQL Cluster 9.7.2 logs (tests/unit/fixtures/ndb-9.7) ----------------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "ndb-9.7"
FIXTURE_FILES = sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".log", ".out", ".txt"))
_STAMP_9 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00$")


def _reporter(name: str) -> int | None:
    """A data node's own log: data1..data4 are nodes 11..14; error-log-2315.txt is node 12's."""
    if name.startswith("error-log"):
        return 12
    m = re.search(r"\.data(\d)\.", name)
    return 10 + int(m.group(1)) if m else None


def _events(name: str, keep_other: bool = False) -> list[dict]:
    return list(parse_file(FIXTURES / name, reporter=_reporter(name), keep_other=keep_other))


def _only(evs, kind, **match):
    return [e for e in evs if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def test_fixtures_are_present_and_small():
    assert len(FIXTURE_FILES) >= 20 and (FIXTURES / "README.md").is_file()
    assert sum((FIXTURES / n).stat().st_size for n in FIXTURE_FILES) < 350_000


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_every_real_line_is_an_event_or_a_named_ignored_group(name):
    raw = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    evs = _events(name, keep_other=True)
    others = [e["text"] for e in evs if e["kind"] == "other"]
    assert others == []
    groups = {n for n, _ in ndbev.IGNORED}
    assert all(e["kind"] in event_kinds("ndb") or (e["kind"] == "ignored" and e["group"] in groups) for e in evs)
    if name.startswith("error-log"):
        assert [e["kind"] for e in evs] == ["ignored", "error_report"]
    else:  # one event per non-blank line: nothing silently dropped
        assert len(evs) == sum(1 for ln in raw if ln.strip())
    for e in evs:
        if e["source"] in ("cluster_log", "node_log"):  # 9.x stamps: UTC with microseconds
            assert _STAMP_9.match(e["time"]), e
            assert time_to_epoch(e["time"]) == dt.datetime.fromisoformat(e["time"]).timestamp()


def test_fixtures_cover_every_ignored_group_and_the_observed_kinds():
    kinds, groups = set(), set()
    for name in FIXTURE_FILES:
        for e in _events(name, keep_other=True):
            kinds.add(e["kind"])
            groups.add(e.get("group"))
    assert {n for n, _ in ndbev.IGNORED} <= groups
    never_seen_in_97 = {"arbitration_lost", "arbitration_failure", "arbitration_external", "shutdown_aborted",
                        "node_fail_rejected", "transporter_error"}
    assert set(event_kinds("ndb")) - never_seen_in_97 <= kinds


def test_time_keeps_microseconds_and_utc():
    ev = _events("kill-data-node.cluster.log")[1]
    assert ev["text"] == "Node 11 Disconnected" and ev["reporter"] == 12
    assert ev["time"] == "2026-11-23T14:23:00.804195+00:00"
    assert time_to_epoch(ev["time"]) == dt.datetime(2026, 11, 23, 14, 23, 0, 804195, tzinfo=dt.timezone.utc).timestamp()


def test_initial_start():
    mgm = _events("initial-start.mgm1.out")
    assert _only(mgm, "mgmd_started", version="mysql-9.7.2 ndb-9.7.2")
    assert [(e["node"], e["node_type"], e["address"]) for e in _only(mgm, "node_id_allocated")] == [
        (14, "NDB", "10.213.77.114"), (11, "NDB", "10.213.77.111"), (12, "NDB", "10.213.77.112"),
        (13, "NDB", "10.213.77.113")]
    log = _events("initial-start.cluster.log")
    assert {e["node"] for e in _only(log, "node_started", version="mysql-9.7.2 ndb-9.7.2")} == {11, 12, 13, 14}
    assert _only(log, "start_with_nodes", reporter=11, mode="initial")[0]["nodes"] == [11, 12, 13, 14]
    waits = _only(log, "start_waiting", reporter=14)
    assert waits[0]["initial"] and waits[0]["waiting_for"] == [11, 12, 13] and waits[0]["connected"] == [14]
    # early start phases of an initial start are reported as "(system restart)" by 9.7 (the
    # type is only right from phase 2 on)
    assert _only(log, "start_phase_completed", node=14, phase=0)[0]["start_type"] == "system restart"
    assert _only(log, "start_phase_completed", node=14, phase=4)[0]["start_type"] == "initial start"
    own = _events("initial-start.data1.log")
    assert own[0]["kind"] == "node_connected" and own[1] == {**own[1], "kind": "start_initiated", "node": 11,
                                                             "version": "mysql-9.7.2 ndb-9.7.2"}
    assert _only(own, "node_started", node=11)
    stuck = _events("initial-start.data3.log")
    assert [(e["thread"], e["place"], e["elapsed_ms"]) for e in _only(stuck, "thread_stuck")] == [
        (1, "Unknown place 0", 12), (2, "Unknown place 0", 11), (2, "Yielding to OS", 115), (2, "Yielding to OS", 100)]
    assert [(e["detector"], e["ms"], e["expected_ms"]) for e in _only(stuck, "overslept")] == [
        ("timer", 162, 10), ("watchdog", 242, 100)]
    assert all(e["node"] == 13 for e in _only(stuck, "overslept"))


def test_kill_of_data_node_11():
    evs = _events("kill-data-node.cluster.log")
    # the management server's own view first, then every survivor and the management server
    assert evs[0] == {**evs[0], "kind": "transporter_disconnected", "node": 11, "by": 1, "reporter": None}
    assert {e["reporter"] for e in _only(evs, "node_disconnected", node=11)} == {1, 12, 13, 14}
    won = _only(evs, "arbitration_check_won")
    assert len(won) == 1 and won[0]["reason"] == "node group majority"
    assert won[0]["reporter"] == 14 and won[0]["node"] == 14  # the president of that run
    assert {e["reporter"] for e in _only(evs, "node_failed", node=11)} == {12, 13, 14}
    assert {e["reporter"] for e in _only(evs, "node_failure_completed", node=11, all=True)} == {12, 13, 14}
    assert _only(evs, "dict_master_takeover", node=14, reporter=14)
    statuses = [(e["old"], e["new"]) for e in _only(evs, "node_restart_status", node=11, reporter=14)]
    assert statuses[:2] == [("Initial state", "Node failed, fail handling ongoing"),
                            ("Node failed, fail handling ongoing", "Node failure handling complete")]
    assert statuses[-1] == ("Wait handover of subscriptions", "Restart completed")
    assert _only(evs, "node_id_allocated", node=11, node_type="NDB")
    phases = _only(evs, "start_phase_completed", node=11)
    assert {e["start_type"] for e in phases if e["phase"] >= 2} == {"node restart"}
    started = _only(evs, "node_started", node=11)
    assert len(started) == 1 and started[0]["time"] == "2026-11-23T14:23:36.146753+00:00"
    # survivor node 12's own log
    own = _events("kill-data-node.data2.log")
    assert _only(own, "transporter_disconnected", node=11, by=12)
    left = _only(own, "node_left", node=11)
    assert left[0]["reason"] == "Connection failure" and left[0]["by"] is None and left[0]["members"] == [12, 13, 14]
    assert _only(own, "master_takeover_started", node=12, old_master=11)
    assert _only(own, "node_fail_handling_completed", node=11)
    assert _only(own, "node_joined", node=11)[0]["members"] == [11, 12, 13, 14]
    assert _only(own, "node_restart_completed", node=11)
    # node 11's own log as it rejoins: president 14
    back = _events("node-restart.data1.log")
    assert _only(back, "cm_regconf", node=11, president=14)
    assert _only(back, "joined_cluster", node=11, members=[11, 12, 13, 14])
    assert _only(back, "start_waiting", node=11)[0]["waiting_for"] == [12, 13, 14]


def test_freeze_and_unpause_of_data_node_12():
    evs = _events("freeze-unpause.cluster.log")
    hb = _only(evs, "missed_heartbeat", node=12, reporter=13)
    assert [e["count"] for e in hb] == [1, 2, 3, 4]
    dead = _only(evs, "declared_dead", node=12)
    assert len(dead) == 1 and dead[0]["reporter"] == 13 and dead[0]["time"] > hb[-1]["time"]
    # the management server misses heartbeats of the frozen node too (NDB API ClusterMgr)
    assert [(e["count"], e["by"]) for e in _only(evs, "missed_heartbeat", node=12, reporter=None)] == [(1, 1), (2, 1)]
    fs = _only(evs, "forced_shutdown", node=12)
    assert len(fs) == 1 and fs[0]["exit_code"] == 2315 and fs[0]["reporter"] == 12
    assert fs[0]["reason"] == "Node declared dead. See error log for details"
    assert fs[0]["classification"] == "Arbitration error" and fs[0]["time"] == "2026-11-23T14:24:12.558959+00:00"
    # node 13, which declared it dead
    own = _events("freeze-unpause.data3.log")
    assert [e["count"] for e in _only(own, "missed_heartbeat", node=12)] == [1, 2, 3, 4]
    assert _only(own, "node_left", node=12, reason="Heartbeat failure", by=None, members=[11, 13, 14])
    assert _only(own, "declared_dead", node=12, reporter=13)
    # the frozen node's own log after the unpause: it overslept ~19 s, then shut itself down
    frozen = _events("freeze-unpause.data2.log")
    over = _only(frozen, "overslept", node=12, detector="thread")
    assert sorted(e["thread"] for e in over) == [0, 1, 2, 3] and all(19000 <= e["ms"] <= 19100 for e in over)
    assert over[0]["time"] == "2026-11-23T14:24:12.284137+00:00"  # unpause was at 14:24:12.249
    assert {e["node"] for e in _only(frozen, "transporter_disconnected", by=12)} == {1, 2, 11, 13, 14, 21, 22}
    fs = _only(frozen, "forced_shutdown", node=12)
    assert len(fs) == 1 and fs[0]["exit_code"] == 2315 and fs[0]["time"] > over[-1]["time"]


def test_error_log_block_of_node_12():
    (er,) = _events("error-log-2315.txt")
    assert er["kind"] == "error_report" and er["node"] == 12 and er["exit_code"] == 2315
    assert "declared dead by 13" in er["error_data"]
    assert er["error_data"] == "We(12) have been declared dead by 13 (via 11) reason: Heartbeat failure(4)"
    assert er["status"] == "Temporary error, restart node" and er["error_object"].startswith("QMGR (Line: ")
    assert er["time"] == "2026-11-23T14:24:12" and er["program"] == "ndbmtd"
    assert er["version"] == "mysql-9.7.2 ndb-9.7.2" and er["trace_file"].startswith("/var/lib/mysql/ndb_12_trace.log.1")


def test_graceful_stop_of_node_13():
    evs = _events("graceful-stop.cluster.log")
    assert _only(evs, "shutdown_initiated", node=13, scope="node")[0]["time"] == "2026-11-23T14:24:52.641763+00:00"
    done = _only(evs, "shutdown_completed", node=13)
    assert len(done) == 1 and done[0]["signal"] is None and not done[0]["restarting"]
    assert _only(evs, "arbitration_check_won", reporter=14, reason="node group majority")
    assert {e["reporter"] for e in _only(evs, "node_failure_completed", node=13, all=True)} == {11, 12, 14}
    own = _events("graceful-stop.data3.log", keep_other=True)
    assert [e["kind"] for e in own if e["kind"] in ("shutdown_initiated", "shutdown_completed")] == [
        "shutdown_initiated", "shutdown_completed"]
    assert {e["group"] for e in own if e["kind"] == "ignored"} >= {"suma_handover", "shutdown_steps"}


def test_docker_stop_of_node_14_sigkill_then_sigterm_to_the_child():
    evs = _events("docker-stop.cluster.log")
    assert evs[0] == {**evs[0], "kind": "transporter_disconnected", "node": 14, "by": 1}
    assert _only(evs, "arbitration_check_won", reporter=11, reason="node group majority")
    assert _only(evs, "dict_master_takeover", node=11)  # node 14 was the master
    assert {e["reporter"] for e in _only(evs, "node_failure_completed", node=14, all=True)} == {11, 12, 13}
    assert not _only(evs, "shutdown_completed") and not _only(evs, "signal_received")  # SIGKILL: no word
    own = _events("sigterm-child.data4.log", keep_other=True)
    sig = _only(own, "signal_received", node=14)
    assert len(sig) == 1 and sig[0]["signal"] == 15 and sig[0]["time"] == "2026-11-23T14:26:40.890870+00:00"
    done = _only(own, "shutdown_completed", node=14)
    assert len(done) == 1 and done[0]["signal"] == 15
    assert len([e for e in own if e.get("group") == "stack_trace"]) == 28  # every non-log line but the banner


def test_loss_of_node_group_0_and_system_restart():
    own3 = _events("nodegroup-loss.data3.log")
    lost = _only(own3, "arbitration_check_lost", node=13)
    assert len(lost) == 1 and lost[0]["reason"] == "missing node group"
    assert [e["kind"] for e in own3[-3:]] == ["arbitration_thread_restarted", "arbitrator_shutdown", "forced_shutdown"]
    fs = own3[-1]
    assert fs["node"] == 13 and fs["exit_code"] == 2305 and fs["classification"] == "Arbitration error"
    assert [(e["node"], e["members"]) for e in _only(own3, "node_left")] == [(11, [12, 13, 14]), (12, [13, 14])]
    own4 = _events("nodegroup-loss.data4.log")
    assert _only(own4, "arbitration_check_lost", node=14, reason="missing node group")
    assert _only(own4, "forced_shutdown", node=14, exit_code=2305)
    assert [(e["node"], e["by"]) for e in _only(own4, "node_left")] == [(11, 13), (12, 13), (13, None)]
    # FINDING: the cluster log has the 2305 shutdowns but not the "Arbitration check lost - missing
    # node group" lines (nor "Arbitrator decided to shutdown this node"): the verdict's reason is
    # only in the data nodes' own logs.
    log = _events("nodegroup-loss.cluster.log")
    assert not _only(log, "arbitration_check_lost") and not _only(log, "arbitrator_shutdown")
    assert {e["node"] for e in _only(log, "forced_shutdown", exit_code=2305)} == {13, 14}
    assert [e["node"] for e in _only(log, "transporter_disconnected", by=1)] == [11, 12, 13, 14]
    # the system restart of all four restores GCI 152
    sr = _events("system-restart.cluster.log")
    (sys_r,) = [e for e in _only(sr, "system_restart") if e["gci"] != 0]
    assert sys_r == {**sys_r, "reporter": 11, "master": 11, "starting": 4, "gci": 152}
    assert [e["gci"] for e in _only(sr, "restart_gci")] == [152]
    assert _only(sr, "start_with_nodes", reporter=11, mode="all", nodes=[11, 12, 13, 14])
    assert {e["node"] for e in _only(sr, "node_id_rejected", reason="no new president yet")} == {13, 14}
    assert {e["node"] for e in _only(sr, "start_phase_completed", start_type="system restart")} == {11, 12, 13, 14}
    assert {e["node"] for e in _only(sr, "node_started")} == {11, 12, 13, 14}
    assert max(e["time"] for e in _only(sr, "node_started")) == "2026-11-23T14:28:11.219935+00:00"
    own1 = _events("system-restart.data1.log")
    assert [(e["node"], e["gci"]) for e in _only(own1, "restart_gci")] == [(11, 152)]


def test_kill_of_management_node_1_the_arbitrator():
    evs = _events("mgm-kill.ndb_2_cluster.log")
    assert evs[0] == {**evs[0], "kind": "transporter_disconnected", "node": 1, "by": 2}
    lost = _only(evs, "arbitrator_lost")
    assert len(lost) == 1 and lost[0]["arbitrator"] == 1 and lost[0]["reason"] == "process failure"
    assert lost[0]["reporter"] == 11 and lost[0]["state"] == 6
    prepared = _only(evs, "arbitrator_prepared", arbitrator=2)
    started = _only(evs, "arbitrator_started", arbitrator=2)
    assert {e["reporter"] for e in prepared} == {12, 13, 14} and [e["reporter"] for e in started] == [11]
    assert lost[0]["time"] < min(e["time"] for e in prepared) <= max(e["time"] for e in prepared) < started[0]["time"]
    assert prepared[0]["ticket"] == started[0]["ticket"] == "00077f500010f294"
    assert {e["reporter"] for e in _only(evs, "node_disconnected", node=1)} == {2, 11, 12, 13, 14}
    assert {e["reporter"] for e in _only(evs, "api_connected", node=1)} == {11, 12, 13, 14}  # mgm1 back


def test_kill_of_sql_node_22():
    evs = _events("sql-kill.ndb_2_cluster.log")
    assert {e["reporter"] for e in _only(evs, "node_disconnected", node=22)} == {11, 12, 13, 14}
    assert {e["reporter"] for e in _only(evs, "api_connected", node=22)} == {11, 12, 13, 14}


def test_sigterm_of_management_node_2():
    evs = _events("mgm-sigterm.mgm2.out", keep_other=True)
    kinds = [e["kind"] for e in evs if e["kind"] in ("signal_received", "mgmd_shutdown_completed", "mgmd_started")]
    assert kinds == ["signal_received", "mgmd_shutdown_completed", "mgmd_started"]
    sig = _only(evs, "signal_received")[0]
    assert sig["signal"] == 15 and sig["signal_name"] == "SIGTERM" and sig["time"] == "2026-11-23T14:27:05.440122+00:00"
    console = [e["text"] for e in evs if e.get("group") == "container_console"]
    assert "*** Received SIGTERM. Performing stop. ***" in console and "==CONFIRMED==" in console


def _cli(capsys, path, *args):
    assert cli_main(["events", "--engine", "ndb", *args, str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return [json.loads(ln) for ln in out.splitlines()]


def _collapse(kinds):
    return [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]


def test_cli_on_real_logs_gives_the_kinds_of_the_documented_samples(tmp_path, capsys):
    # the documented CLI sample (tests/unit/test_events_cli.py): node 12 fails and restarts
    from tests.unit.test_events_cli import CLUSTER_LOG as DOC_CLUSTER_LOG
    doc = tmp_path / "doc_cluster.log"
    doc.write_text(DOC_CLUSTER_LOG)
    doc_kinds = [e["kind"] for e in _cli(capsys, doc)]
    # the same facts for node 11 in the real 9.7 cluster log of E1, first occurrence of each kind
    real = _cli(capsys, FIXTURES / "kill-data-node.cluster.log")
    seen = []
    for e in real:
        about_11 = e["node"] == 11 or e["kind"] == "arbitration_check_won"  # the president's own verdict
        if e["kind"] in doc_kinds and about_11 and e["kind"] not in seen:
            seen.append(e["kind"])
    assert seen == doc_kinds
    assert all(_STAMP_9.match(e["time"]) for e in real)
    assert len(real) == len(_events("kill-data-node.cluster.log"))  # the CLI prints the events, not the ignored
    # the documented heartbeat sequence (ndb.md 3.3) and the real freeze of node 12 (E2)
    doc_hb = list(parse_lines(HEARTBEAT_SEQUENCE.splitlines()))
    real_hb = [e for e in _cli(capsys, FIXTURES / "freeze-unpause.cluster.log")
               if e["node"] == 12 and e["reporter"] in (12, 13)
               and e["kind"] in ("missed_heartbeat", "declared_dead", "forced_shutdown")]
    assert _collapse([e["kind"] for e in real_hb]) == _collapse([e["kind"] for e in doc_hb])
    assert real_hb[-1]["exit_code"] == doc_hb[-1]["exit_code"] == 2315
    assert real_hb[-1]["reason"] == doc_hb[-1]["reason"]
    assert real_hb[-1]["classification"] == doc_hb[-1]["classification"]
    # --all adds the ignored lines with their group, and no "other"
    every = _cli(capsys, FIXTURES / "kill-data-node.cluster.log", "--all")
    assert len(every) == 255 and {e["kind"] for e in every} - set(event_kinds("ndb")) == {"ignored"}


def test_parser_never_raises_on_cut_or_mangled_real_lines():
    seen = set()
    for name in FIXTURE_FILES:
        for ln in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
            shape = re.sub(r"\d+", "N", ln[30:90])
            if shape in seen:
                continue
            seen.add(shape)
            for cut in range(0, len(ln), 9):
                for variant in (ln[:cut], ln[cut:], ln[:cut] + "\x00\ufffd" + ln[cut:]):
                    parse_line(variant, reporter=11, keep_other=True)
                    parse_line(variant)
    assert len(seen) > 300


def test_rule_index_gives_the_same_answer_as_trying_every_rule():
    def brute(msg):
        for kind, pat, conv in logtexts._RULES:
            m = pat.match(msg)
            if m:
                return kind
        return None
    texts = [t for t, _, _ in TEXTS] + [t for t, _ in IGNORED_SAMPLES] + ["", "N", "Node", "We(1) x", "Nodeid"]
    for name in FIXTURE_FILES:
        texts += [e["text"] for e in _events(name, keep_other=True)]
    for t in texts:
        found = ndbev.match_text(t)
        assert (found[0] if found else None) == brute(t), t


# -- partitions, isolation, a second kill during recovery (9.7.2, recorded 16:55-16:58) ----------

def _t(e) -> float:
    return dt.datetime.fromisoformat(e["time"]).timestamp()


def test_isolated_node_finds_its_peers_one_after_the_other():
    """Node 13 cut off from everyone: it declares its three peers dead one at a time around the
    heartbeat ring, about 5 s apart (4 missed 1 s heartbeats each), then, alone, loses the
    arbitration check and shuts down with 2305."""
    evs = _events("isolate.data3.log")
    left = _only(evs, "node_left", reason="Heartbeat failure")
    assert [e["node"] for e in left] == [12, 14, 11]
    assert all(4.0 <= _t(b) - _t(a) <= 6.0 for a, b in zip(left, left[1:]))
    assert _only(evs, "arbitration_check_lost", reason="missing node group")
    assert [e["exit_code"] for e in _only(evs, "forced_shutdown")] == [2305]


def test_split_with_the_arbitrator_on_one_side():
    evs = _events("split-arbitrator-side.cluster.log")
    assert _only(evs, "arbitration_required") and _only(evs, "arbitration_won", arbitrator=1)
    # the management server's own heartbeat watch drops the nodes of the other side
    assert {e["node"] for e in _only(evs, "declared_dead", by=1)} >= {12, 14}


def test_split_with_the_arbitrator_isolated_president_then_peer():
    """Each half's president shuts down first ('no arbitrator available', 2305); its peer on the
    same side sees the transporter close but excludes it only by heartbeat, then loses the check."""
    pres = _events("split-arbitrator-isolated.data1.log")
    assert _only(pres, "no_arbitrator") and [e["exit_code"] for e in _only(pres, "forced_shutdown")] == [2305]
    peer = _events("split-arbitrator-isolated.data3.log")
    closed = _only(peer, "transporter_disconnected", node=11)
    gone = _only(peer, "node_left", node=11, reason="Heartbeat failure")
    assert closed and gone and _t(gone[0]) - _t(closed[0]) >= 3.0
    assert _only(peer, "arbitration_check_lost", reason="missing node group")
    assert [e["exit_code"] for e in _only(peer, "forced_shutdown")] == [2305]


def test_killed_again_in_its_first_start_phase():
    """Node 12 restarted, then SIGKILLed again 0.8 s later in start phase 0: its log shows the
    process start and nothing of the kill (SIGKILL leaves no line), then the next start."""
    evs = _events("kill-during-recovery.data2.log", keep_other=True)
    starts = [e for e in evs if e["kind"] == "ignored" and e["text"].startswith("[Entrypoint] Starting")]
    assert len(starts) >= 2
    assert not _only(evs, "node_started")


def test_angel_cut_off_from_every_management_server():
    """A forced shutdown while no ndb_mgmd is reachable: the angel tries for 120 s to report it."""
    evs = _events("angel-cut-off.data4.log")
    shut, failed = _only(evs, "forced_shutdown", exit_code=2305), _only(evs, "shutdown_report_failed")
    assert shut and failed and failed[0]["to"] == "10.213.77.101 1186" and failed[0]["node"] == 14
    assert 119.5 <= _t(failed[0]) - _t(shut[0]) <= 121.0
