"""The expected outcome of the storage families, as pure functions of ``Facts``, the arbitrator in
effect and the scenario's keywords: a data node's file system fills up (``disk_full``), its disk is
slow (``slow_disk``) or stalls past the GCP stop timeout (``disk_stall``), its writes or syncs fail
(``failing_io``), every data node loses power and what it had not synced (``power_loss``).
"""

from __future__ import annotations

from ...vocabulary import Expectation
from .expect_data import data_loss
from .expect_facts import Facts
from .expect_restarts import system_restart
from .rules import OBSERVATION_SLACK

#: What a data node whose file system is full shuts down with. Documented: 2810, ndbd_exit_codes.h
#: NDBD_EXIT_AFS_DISK_FULL, "File system full", "Permanent error, external action needed"
#: (docs/facts.md NDB 11). Measured on 9.7.2: 2813, "Unknown file system error (Internal error,
#: programming error or missing error message, please report a bug). Temporary error, restart
#: node", after "DBLQH: File system write failed during LogFileOperationRecord state 17. OS errno:
#: 2813" (its REDO log write got ENOSPC; docs/ndb.md finding 35). Either is the rule at work.
DISK_FULL_EXITS = [2813, 2810]
#: a data node writes its REDO log at least once per global checkpoint under a write load: the
#: first write that needs a block of the full file system fails within that many GCP intervals
#: (one for the GCP in flight when the disk filled, one for the next)
GCPS_TO_FIRST_WRITE = 2


def _shuts_itself_down(f: Facts, arbitrator, kw: dict, decision: float, exits: list[int], why: str,
                       decision_from: str) -> Expectation:
    """The storage of ``nodes`` makes each shut itself down within ``decision`` seconds with one
    of ``exits``; the cluster loses them as killed nodes (the same arbitration check: survivors
    that lose it shut down as well); healed, a node restart (or a system restart) brings them back."""
    lost = f.ids_of(kw.get("nodes") or [f.topo.data_nodes[0].name])
    exp = data_loss(f, arbitrator, lost, True, f.family, kw.get("succession"))
    names = f.names(lost)
    exp.rule = f"docs/facts.md NDB 11: {why}; then " + exp.rule
    exp.detection_bound_s = round(decision + exp.detection_bound_s, 3)
    exp.details.update({
        "shut_down": [*names, *(n for n in exp.details.get("shut_down", []) if n not in names)],
        "decision_bound_s": round(max(decision, exp.details.get("decision_bound_s", 0)), 3),
        "exit_code": exits[0],
        "exit_codes": {**exp.details.get("exit_codes", {}), **{n: list(exits) for n in names}},
        "expected_events": ["forced_shutdown", *exp.details.get("expected_events", [])],
        "decision_from": decision_from,
    })
    return exp


def disk_full(f: Facts, arbitrator, kw: dict) -> Expectation:
    """The data directory of ``nodes`` is full: each shuts itself down with 2810 at its next
    write that needs a block (its REDO log: sparse files, allocated as they are written; a
    local checkpoint's files), and the cluster loses them as for a node failure (the same
    arbitration check); healed by freeing the disk, then a node restart."""
    decision = GCPS_TO_FIRST_WRITE * f.tm["gcp_interval_s"] + OBSERVATION_SLACK
    return _shuts_itself_down(
        f, arbitrator, kw, decision, DISK_FULL_EXITS,
        f"a full file system under a data node's REDO log fails its next write: the node shuts down (9.7.2: 2813 "
        f"'Unknown file system error'; documented: 2810 'File system full') within {GCPS_TO_FIRST_WRITE} global "
        f"checkpoints", f"{GCPS_TO_FIRST_WRITE} x TimeBetweenGlobalCheckpoints + observation slack")


#: the file system errors a data node shuts down with (ndbd_exit_codes.h, NDBD_EXIT_AFS_*: 2801-2816;
#: ndb-operations 6.3): a write or sync that fails is one of them (9.7.2: 2813 for ENOSPC)
AFS_EXITS = list(range(2801, 2817))
#: "Node N killed this node because GCP stop was detected" (docs/facts.md NDB 11, 8.4 manual)
GCP_STOP_EXIT = 2303
#: the GCP monitor's max lag beyond TimeBetweenGlobalCheckpointsTimeout, per data node (9.7.2 with
#: TimeBetweenEpochsTimeout 4000 and the default 120000: "Computed max GCP_SAVE lag to 140 seconds"
#: with 4 data nodes, 135 once one was lost: inferred from those two, finding 37)
GCP_LAG_PER_DATA_NODE_S = 5
#: what the stalled node's process logs once its disk answers after a GCP stop (9.7.2)
WATCHDOG_EXIT = 6050
#: the master's GCP monitor reports a held-up checkpoint every this many seconds ("GCP Monitor:
#: GCP_SAVE lag 60 sec", measured on 9.7.2); a stall must last longer to be seen in the log
GCP_LAG_REPORT_S = 60
#: errors clients may see while a data node's REDO log cannot keep up (ndb-operations 6.2): 410
#: out of log file space, 1220/1234 log files overloaded, 1221 REDO buffers overloaded: each
#: temporary (or overload), so the transaction may be retried
REDO_ERRORS = [410, 1220, 1221, 1234]


def slow_disk(f: Facts, arbitrator, kw: dict) -> Expectation:
    """The data directory of ``nodes`` answers each write and sync ``delay_ms`` late, less than
    the GCP stop timeout: a commit is in memory on every replica and the REDO log reaches disk at
    each global checkpoint, so the node keeps up (its checkpoints take longer) and nobody is shut
    down; clients may see the REDO log's temporary errors while it lags. Nothing to recover."""
    names = f.names(f.ids_of(kw.get("nodes") or [f.topo.data_nodes[0].name]))
    timeout = f.tm["gcp_timeout_s"]
    return Expectation(
        family=f.family, survivors_serve=True, cluster_survives=True,
        rule=(f"docs/facts.md NDB 11: commits are in memory on every replica, the REDO log is written and "
              f"synced at each global checkpoint; a disk slower by {kw.get('delay_ms', '?')} ms per call delays "
              f"the checkpoints, far less than a GCP stop needs (if enabled: {timeout:g} s): no node is stopped"),
        detection_bound_s=f.det_data, recovery_bound_s=f.rec_node, recovery="none",
        details={"nodes": names, "lost": [], "excluded": [], "delay_ms": kw.get("delay_ms"),
                 "unexpected_events": ["forced_shutdown"],
                 "gcp_stop_timeout_s": timeout if f.tm["epochs_timeout_s"] else None,
                 "client_errors": {"allowed": REDO_ERRORS, "class": "temporary",
                                   "text": "REDO log overload while the disk lags (410, 1220, 1221, 1234)"},
                 "timing": f.timing})


def disk_stall(f: Facts, arbitrator, kw: dict) -> Expectation:
    """The data directory of ``nodes`` stops answering writes and syncs: the global checkpoint
    cannot complete (it waits for their REDO log). Whether NDB stops the node for it is the GCP
    stop's setting (docs/facts.md NDB 11):

    - TimeBetweenEpochsTimeout 0 (the default): GCP stops are disabled. 9.7.2 logs "GCP Monitor:
      GCP_SAVE lag 60 sec (no max lag)" every minute and stops nobody (finding 37): the node
      stays in the cluster, commits go on in memory, and nothing is durable while it lasts.
    - otherwise (measured with TimeBetweenEpochsTimeout 4000): the master computes the max lag
      ("GCP Monitor: Computed max GCP_SAVE lag to 140 seconds" with 4 data nodes, 135 with 3:
      TimeBetweenGlobalCheckpointsTimeout + 5 s per data node), and past it logs "Detected GCP
      stop(1)...sending kill to" the node behind it; the cluster excludes that node as a failed
      one. The node's process cannot exit while its I/O waits on the stalled disk: it logs its
      forced shutdown only once the disk answers (6050 "WatchDog terminate", after the heal).
    """
    nodes = f.ids_of(kw.get("nodes") or [f.topo.data_nodes[0].name])
    names = f.names(nodes)
    timeout, epochs = f.tm["gcp_timeout_s"], f.tm["epochs_timeout_s"]
    if not epochs:
        return Expectation(
            family=f.family, survivors_serve=True, cluster_survives=True,
            rule=("docs/facts.md NDB 11: TimeBetweenEpochsTimeout 0 (the default) disables GCP stops: a stalled disk "
                  "holds the global checkpoint up ('GCP_SAVE lag ... (no max lag)') and stops no node (finding 37); "
                  "commits go on in memory"),
            detection_bound_s=f.det_data, recovery_bound_s=f.rec_node, recovery="none",
            details={"nodes": names, "lost": [], "excluded": [], "unexpected_events": ["forced_shutdown"],
                     # the master's GCP monitor says so every minute the checkpoint is held up
                     "expected_events": ["gcp_lag"], "gcp_lag_after_s": GCP_LAG_REPORT_S,
                     "gcp_stop": "disabled (TimeBetweenEpochsTimeout 0)", "gcp_stop_timeout_s": None,
                     "client_errors": {"allowed": REDO_ERRORS, "class": "temporary",
                                       "text": "REDO log overload while the checkpoint is held up"},
                     "timing": f.timing})
    max_lag = max(timeout, epochs) + GCP_LAG_PER_DATA_NODE_S * len(f.data_ids)
    exp = data_loss(f, arbitrator, set(nodes), True, f.family, kw.get("succession"))
    exp.rule = (f"docs/facts.md NDB 11: a global checkpoint held up past the GCP monitor's max lag ({max_lag:g} s: "
                f"TimeBetweenGlobalCheckpointsTimeout {timeout:g} s + {GCP_LAG_PER_DATA_NODE_S:g} s per data node, "
                f"as 9.7.2 computes it) is a GCP stop: the master sends a kill to the node behind it and the cluster "
                f"excludes it; its process, stuck in the stalled disk, shuts down once the disk answers (9.7.2: 6050, "
                f"finding 37); then " + exp.rule)
    exp.detection_bound_s = round(max_lag + f.tm["gcp_interval_s"] + exp.detection_bound_s, 3)
    exp.details.update({
        "expected_events": ["gcp_lag", "gcp_stop", *exp.details.get("expected_events", [])],
        "exit_on_heal": {n: [WATCHDOG_EXIT, GCP_STOP_EXIT, *AFS_EXITS] for n in names},
        "gcp_stop": "enabled", "gcp_stop_timeout_s": max_lag,
        "decision_from": "the GCP monitor's max lag (TimeBetweenGlobalCheckpointsTimeout + 5 s per data node) + "
                         "TimeBetweenGlobalCheckpoints + a node failure's detection",
    })
    return exp


def failing_io(f: Facts, arbitrator, kw: dict) -> Expectation:
    """Every ``call`` (write or fsync) of ``nodes`` fails: the node's next REDO log write or sync
    (at least one per global checkpoint under a write load) fails and it shuts itself down with a
    file system error (28xx, NDBD_EXIT_AFS_*); the cluster loses it as a killed node; after the
    heal a node restart brings it back."""
    decision = GCPS_TO_FIRST_WRITE * f.tm["gcp_interval_s"] + OBSERVATION_SLACK
    exp = _shuts_itself_down(
        f, arbitrator, kw, decision, AFS_EXITS,
        f"a data node whose file system write or sync fails shuts down with a file system error (28xx; 9.7.2: "
        f"2809) within {GCPS_TO_FIRST_WRITE} global checkpoints",
        f"{GCPS_TO_FIRST_WRITE} x TimeBetweenGlobalCheckpoints + observation slack")
    exp.details["call"] = kw.get("call")
    return exp


def power_loss(f: Facts, arbitrator, kw: dict) -> Expectation:
    """Every data node loses power at once, and with it each write it had not synced: NDB's
    promise is the system restart's (docs/facts.md NDB 7): the cluster comes back at its last
    completed global checkpoint, whose REDO log every node synced before it completed, so only
    commits acknowledged in the last 2 x TimeBetweenGlobalCheckpoints may be lost, as after a kill
    of every data node. Unsynced writes lost beyond that would break it."""
    exp = system_restart(f, arbitrator, {"how": "kill"})
    exp.rule = ("docs/facts.md NDB 7 and 11: every data node lost power and every write it had not synced; "
                "a global checkpoint completes only once every node synced its REDO log, so the system restart "
                "recovers the last completed one: " + exp.rule)
    exp.details["durability"] = (f"acknowledged commits of the last {exp.details['gcp_loss_window_s']:g} s before "
                                 "the power loss may be lost (2 x TimeBetweenGlobalCheckpoints); none before")
    return exp


__all__ = ["AFS_EXITS", "DISK_FULL_EXITS", "GCP_LAG_PER_DATA_NODE_S", "GCP_LAG_REPORT_S", "GCP_STOP_EXIT",
           "REDO_ERRORS", "WATCHDOG_EXIT", "disk_full", "disk_stall", "failing_io", "power_loss", "slow_disk"]
