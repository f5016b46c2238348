"""Galera events on the log lines of docs/facts.md Galera A6 (verbatim, with the
documentation's own annotations where it has them), with and without the MariaDB prefix."""

import pytest

from ndbchaos.events import kinds as event_kinds, parse_line, parse_lines

P = "2026-06-06 18:38:11 1 [Note] "
P2 = "2026-11-22  2:45:20 0 [Note] "  # two spaces before a single-digit hour, as seen here

VIEWS = """\
[Note] WSREP: view(view_id(PRIM,378c0ec7-a3db,17) memb {
\t378c0ec7-a3db,1
} joined {
} left {
} partitioned {
\t4d1157d4-8693,1
})
[Note] WSREP: No nodes coming from primary view, primary view is not possible
[Note] WSREP: view(view_id(NON_PRIM,df707cd2-8983,1) memb {
\tdf707cd2-8983,0
} joined {
} left {
} partitioned {
})
[Note] WSREP: view((empty))
[Note] WSREP: Save the discovered primary-component to disk
[Note] WSREP: New COMPONENT: primary = yes, bootstrap = no, my_idx = 1, memb_num = 2
[Note] WSREP: Received NON-PRIMARY.            (gcs.cpp)
[Note] WSREP: Non-primary view                 (wsrep-lib server_state.cpp)
[Warning] WSREP: last inactive check more than PT1.5S (3*evs.inactive_check_period) ago (PT2.00221S), skipping check
"""

QUORUM = """\
[Note] WSREP: Quorum results:
\tversion    = 6,
\tcomponent  = PRIMARY,            (or NON-PRIMARY)
\tconf_id    = 7,
\tmembers    = 2/2 (primary/total),
\tact_id     = 17,
\tlast_appl. = 0,
\tprotocols  = 0/9/3 (gcs/repl/appl),
\tvote policy= 0,                  (present in 26.4 source)
\tgroup UUID = 2cb0d532-1d69-11ea-b1f5-13b666d13d7a
"""

WSREP_VIEW = """\
[Note] WSREP: ================================================
View:
  id: 378cdc73-9236-11f0-a8d4-426872f4d003:1810
  status: primary            (or non-primary / disconnected)
  protocol_version: 4
  capabilities: MULTI-MASTER, CERTIFICATION, ...
  final: no
  own_index: 0
  members(3):
\t0: <uuid>, <node name>
\t...
=================================================
"""

SINGLE = [
    ("[Note] WSREP: New cluster view: global state: afbfeed1-38e8-11e6-84b1-d20f5b484535:12812, view# 34: Primary, "
     "number of nodes: 2, my index: 1, protocol version 3", "view_change",
     {"primary": True, "members": 2, "view": 34, "status": "primary"}),
    ("[Note] WSREP: Shifting CLOSED -> OPEN (TO: 0)", "state_shift", {"from": "CLOSED", "to": "OPEN", "seqno": 0}),
    ("[Note] WSREP: Shifting OPEN -> PRIMARY (TO: 2)", "state_shift", {"from": "OPEN", "to": "PRIMARY"}),
    ("[Note] WSREP: Shifting PRIMARY -> JOINER (TO: 31389)", "state_shift", {"to": "JOINER", "seqno": 31389}),
    ("[Note] WSREP: Shifting SYNCED -> DONOR/DESYNCED (TO: 7717)", "state_shift", {"to": "DONOR/DESYNCED"}),
    ("[Note] WSREP: Shifting DONOR/DESYNCED -> JOINED (TO: 7717)", "state_shift", {"from": "DONOR/DESYNCED"}),
    ("[Note] WSREP: Shifting JOINED -> SYNCED (TO: 7717)", "state_shift", {"from": "JOINED", "to": "SYNCED"}),
    ("[Note] WSREP: Server status change joined -> synced", "server_status", {"from": "joined", "to": "synced"}),
    ("[Note] WSREP: Member 1.0 (ip-172-31-13-186) synced with group.", "member_synced",
     {"member": "1.0", "name": "ip-172-31-13-186"}),
    ("[Note] WSREP: Synchronized with group, ready for connections", "synced", {}),
    ("[Note] mariadbd: ready for connections.", "ready_for_connections", {"program": "mariadbd"}),
    ("[Note] WSREP: Member 0.0 (demo-cluster-0) requested state transfer from '*any*'. Selected 1.0 "
     "(demo-cluster-1)(SYNCED) as donor.", "state_transfer_requested",
     {"joiner": "0.0", "joiner_name": "demo-cluster-0", "requested_from": "*any*", "donor": "1.0",
      "donor_name": "demo-cluster-1", "donor_state": "SYNCED"}),
    ("[Note] WSREP: Prepared IST receiver for 5-17, listening at: tcp://10.0.0.2:4568", "ist_prepared",
     {"first": 5, "last": 17}),
    ("[Note] WSREP: Receiving IST: 13 writesets, seqnos 5-17", "ist_receiving", {"writesets": 13, "first": 5}),
    ("[Note] WSREP: IST received: 2cb0d532-1d69-11ea-b1f5-13b666d13d7a:17", "ist_received", {"seqno": 17}),
    ("[Note] WSREP: SST received: 2cb0d532-1d69-11ea-b1f5-13b666d13d7a:17", "sst_received", {"seqno": 17}),
    ("[Note] WSREP: SST received", "sst_received", {"seqno": None}),
    ("[Note] WSREP: SST complete, seqno: 0", "sst_received", {"seqno": 0}),
    ("[Note] WSREP: 1.0 (ip-172-31-13-186): State transfer to 0.0 (ip-172-31-15-177) complete.",
     "state_transfer_complete", {"direction": "to", "member": "1.0", "peer": "0.0"}),
    ("[Note] WSREP: 0.0 (ip-172-31-15-177): State transfer from 1.0 (ip-172-31-13-186) complete.",
     "state_transfer_complete", {"direction": "from", "peer_name": "ip-172-31-13-186"}),
    ("[ERROR] WSREP: Receiving IST failed, node restart required: got unexpected seqno", "ist_failed", {}),
    ("[Note] WSREP: Found saved state: 00000000-0000-0000-0000-000000000000:-1, safe_to_bootstrap: 1", "saved_state",
     {"seqno": -1, "safe_to_bootstrap": True}),
    ("[Note] WSREP: Connecting with bootstrap option: 0", "connecting", {"bootstrap": False}),
    ("[Note] WSREP: Recovered position: 37bb872a-ad73-11e6-819f-f3b71d9c5ada:345628", "recovered_position",
     {"seqno": 345628}),
    ("[ERROR] WSREP: failed to open gcomm backend connection: 110: failed to reach primary view",
     "failed_to_reach_primary", {"code": 110}),
    ("[ERROR] WSREP: ./gcs/src/gcs.cpp:gcs_open():1742: Failed to open channel 'galera_cluster' at "
     "'gcomm://app_db': -110 (Connection timed out)", "channel_open_failed",
     {"channel": "galera_cluster", "code": -110, "error": "Connection timed out"}),
    ("[ERROR] Aborting", "aborting", {}),
    ("[ERROR] WSREP: It may not be safe to bootstrap the cluster from this node. It was not the last one to leave "
     "the cluster and may not contain all the updates. To force cluster bootstrap with this node, edit the "
     "grastate.dat file manually and set safe_to_bootstrap to 1 .", "bootstrap_refused", {}),
    ("[Note] WSREP: New COMPONENT: primary = yes, bootstrap = no, my_idx = 1, memb_num = 2", "component",
     {"primary": True, "members": 2, "my_index": 1}),
    ("[Note] WSREP: Received NON-PRIMARY.", "non_primary", {}),
    ("[Note] WSREP: No nodes coming from primary view, primary view is not possible", "primary_not_possible", {}),
    ("[Note] WSREP: evs::proto(...) suspecting node: 4d1157d4-8693", "suspect", {"peer": "4d1157d4-8693"}),
]


def _with(prefix, block):
    return [(prefix + ln[len("[Note] "):]) if ln.startswith("[Note] ") else ln for ln in block.splitlines()]


def test_required_kinds():
    need = {"view_change", "gcomm_view", "state_shift", "synced", "state_transfer_requested", "state_transfer_complete",
            "ist_received", "sst_received", "quorum", "ready_for_connections", "aborting", "failed_to_reach_primary"}
    assert need <= set(event_kinds("galera"))


@pytest.mark.parametrize("line,kind,fields", SINGLE, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(SINGLE)])
@pytest.mark.parametrize("prefix", ["", "2026-06-06 18:38:11 1 ", "2026-11-22  2:45:20 0 "])
def test_single_lines(line, kind, fields, prefix):
    ev = parse_line(prefix + line, engine="galera")
    assert ev is not None and ev["kind"] == kind
    for k, v in fields.items():
        assert ev[k] == v, (k, ev)
    assert ev["reporter"] is None and ev["node"] is None
    if prefix.startswith("2026-06"):
        assert ev["time"] == "2026-06-06T18:38:11"
    elif prefix:
        assert ev["time"] == "2026-11-22T02:45:20"
    else:
        assert ev["time"] is None
    assert ev["severity"] in ("Note", "ERROR")


@pytest.mark.parametrize("prefix", [None, P, P2])
def test_gcomm_views_verbatim(prefix):
    lines = VIEWS.splitlines() if prefix is None else _with(prefix, VIEWS)
    evs = list(parse_lines(lines, engine="galera"))
    kinds = [e["kind"] for e in evs]
    assert kinds == ["gcomm_view", "primary_not_possible", "gcomm_view", "gcomm_view", "component", "non_primary",
                     "non_primary"]
    prim, nonprim, empty = evs[0], evs[2], evs[3]
    assert prim["primary"] and prim["view"] == 17 and prim["members"] == 1 and prim["partitioned"] == 1
    assert not nonprim["primary"] and nonprim["members"] == 1 and nonprim["partitioned"] == 0
    assert empty["members"] == 0 and not empty["primary"]
    assert evs[4]["primary"] and evs[4]["members"] == 2
    if prefix == P2:
        assert prim["time"] == "2026-11-22T02:45:20"


@pytest.mark.parametrize("prefix", [None, P])
def test_quorum_block_verbatim(prefix):
    lines = QUORUM.splitlines() if prefix is None else _with(prefix, QUORUM)
    evs = list(parse_lines(lines + ["[Note] WSREP: Shifting OPEN -> PRIMARY (TO: 2)"], engine="galera"))
    assert [e["kind"] for e in evs] == ["quorum", "state_shift"]
    q = evs[0]
    assert q["component"] == "PRIMARY" and q["primary"] and q["members"] == 2 and q["total"] == 2
    assert q["conf_id"] == 7 and q["group_uuid"] == "2cb0d532-1d69-11ea-b1f5-13b666d13d7a"


def test_quorum_non_primary_joined_total_and_block_cut_short():
    lines = [P + "WSREP: Quorum results:", "\tversion    = 6,", "\tcomponent  = NON-PRIMARY,",
             "\tconf_id    = -1,", "\tmembers    = 1/2 (joined/total),",
             P + "WSREP: Received NON-PRIMARY."]  # no "group UUID" line: the next log line ends it
    evs = list(parse_lines(lines, engine="galera"))
    assert [e["kind"] for e in evs] == ["quorum", "non_primary"]
    assert not evs[0]["primary"] and evs[0]["members"] == 1 and evs[0]["total"] == 2 and evs[0]["conf_id"] == -1


@pytest.mark.parametrize("prefix", [None, P, P2])
def test_wsrep_view_block_verbatim(prefix):
    lines = WSREP_VIEW.splitlines() if prefix is None else _with(prefix, WSREP_VIEW)
    evs = list(parse_lines(lines, engine="galera"))
    assert [e["kind"] for e in evs] == ["view_change"]
    v = evs[0]
    assert v["status"] == "primary" and v["primary"] and v["members"] == 3 and v["own_index"] == 0
    assert v["view_id"] == "378cdc73-9236-11f0-a8d4-426872f4d003:1810"


def test_wsrep_view_non_primary_then_next_line():
    lines = [P + "WSREP: ================================================", "View:", "  id: x:-1",
             "  status: non-primary", "  members(1):", "\t0: abc, data1",
             "=================================================",
             P + "WSREP: Non-primary view"]
    evs = list(parse_lines(lines, engine="galera"))
    assert [e["kind"] for e in evs] == ["view_change", "non_primary"]
    assert evs[0]["status"] == "non-primary" and not evs[0]["primary"] and evs[0]["members"] == 1


def test_unknown_lines_and_keep_other():
    lines = [P + "WSREP: Save the discovered primary-component to disk", "garbage", "",
             "WSREP_SST: [INFO] Total time on donor: 0 seconds (20191001 06:47:28.360)"]
    assert list(parse_lines(lines, engine="galera")) == []
    kept = list(parse_lines(lines, engine="galera", keep_other=True))
    assert [e["kind"] for e in kept] == ["other"] * 3


def test_aborting_only_at_error_level():
    assert parse_line(P + "Aborting", engine="galera") is None
    assert parse_line("2026-06-06 18:38:11 0 [ERROR] Aborting", engine="galera")["kind"] == "aborting"
