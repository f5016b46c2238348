"""The expected outcome of the storage families: a data node's file system fills up
(``disk_full``), as pure functions of ``Facts``, the arbitrator in effect and the scenario's
keywords.
"""

from __future__ import annotations

from ..base import Expectation
from .expect_data import data_loss
from .expect_facts import Facts
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


def disk_full(f: Facts, arbitrator, kw: dict) -> Expectation:
    """The data directory of ``nodes`` is full: each shuts itself down with 2810 at its next
    write that needs a block (its REDO log: sparse files, allocated as they are written; a
    local checkpoint's files), and the cluster loses them as for a node failure (the same
    arbitration check); healed by freeing the disk, then a node restart."""
    lost = f.ids_of(kw.get("nodes") or [f.topo.data_nodes[0].name])
    exp = data_loss(f, arbitrator, lost, True, f.family, kw.get("succession"))
    names = f.names(lost)
    decision = GCPS_TO_FIRST_WRITE * f.tm["gcp_interval_s"] + OBSERVATION_SLACK
    exp.rule = (f"docs/facts.md NDB 11: a full file system under a data node's REDO log fails its next write: "
                f"the node shuts down (9.7.2: 2813 'Unknown file system error'; documented: 2810 'File system "
                f"full') within {GCPS_TO_FIRST_WRITE} global checkpoints; then " + exp.rule)
    exp.detection_bound_s = round(decision + exp.detection_bound_s, 3)
    # the full disks' nodes shut themselves down; survivors that lose their arbitration check as well
    exp.details.update({
        "shut_down": [*names, *(n for n in exp.details.get("shut_down", []) if n not in names)],
        "decision_bound_s": round(max(decision, exp.details.get("decision_bound_s", 0)), 3),
        "exit_code": DISK_FULL_EXITS[0],
        "exit_codes": {**exp.details.get("exit_codes", {}), **{n: list(DISK_FULL_EXITS) for n in names}},
        "expected_events": ["forced_shutdown", *exp.details.get("expected_events", [])],
        "decision_from": f"{GCPS_TO_FIRST_WRITE} x TimeBetweenGlobalCheckpoints + observation slack",
    })
    return exp


__all__ = ["DISK_FULL_EXITS", "disk_full"]
