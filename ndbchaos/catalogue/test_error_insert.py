"""error_insert: NDB's own failure points, the error-insert codes its test suite crashes nodes
with, under steady client load and judged by every checker.

Each scenario is named after the NDB test it comes from (storage/ndb/test: NdbRestarts.cpp,
testNodeRestart.cpp, testBackup.cpp; ../shared/reference/error-insert.md has the file and line of
each code). The fault (``ndbchaos.engines.ndb.faults.errorinsert``) proves its code fired before anything is
judged: the node logged NDB_TAMPER for it, and its error log has the crash's entry naming the
block and line. Expected (the engine's rules, as for the same data nodes lost another way): the
survivors keep serving within the detection bound, the crashed node comes back by a node restart
(the angel restarts a node after an insert's crash by itself: RestartOnErrorInsert), no
acknowledged write is lost, and the transactional scenarios hold NDB's promise for the workload.

Only data nodes built with error insertion obey the codes (``NDBCHAOS_NDB_DIST`` set to an
error-insert distribution, e.g. shared/ndb/error-insert/); on any other cluster these scenarios
skip with that reason.
"""

from __future__ import annotations

import pytest

from ndbchaos.catalogue import masters, one_data_node, one_per_nodegroup, params, replicated
from ndbchaos.driver import Scenario, seeded
from ndbchaos.errors import NdbChaosError
from ndbchaos.engines.ndb.faults.errorinsert import ErrorInsert, ErrorInsertDuringBackup, ErrorInsertInRestart

NDB_ONLY = "error inserts are NDB's own (ndb_mgm ERROR); Galera has none"
TXN = {"workload": "list_append", "clients": 8}
SURVIVED = replicated("the scenario judges the survivors of the crash")


def obeys_error_inserts(cluster) -> str | None:
    """Why this cluster cannot play an error-insert scenario (None: its data nodes obey them),
    and the layout's premise (a crash survived)."""
    why = SURVIVED(cluster)
    if why:
        return why
    probe = getattr(cluster.engine, "error_inserts_unavailable", None)
    return probe(cluster) if probe is not None else NDB_ONLY


def backup_master(cluster, rng=None) -> list:
    """The backup's coordinator: the master data node as the management server marks it (SHOW's
    ``*``) when the fault is built, the node START BACKUP is coordinated by."""
    master = cluster.engine.master_node(cluster)
    if master is None:
        raise NdbChaosError("the management server marks no data node as master (ndb_mgm SHOW has no '*')")
    return [master]


def non_master(cluster, rng) -> list:
    """A data node that is not the master (drawn with the run's generator)."""
    master = backup_master(cluster)[0]
    return [seeded(rng, [n for n in cluster.topology.data_nodes if n.name != master.name])]


def _ei(name, title, fault, **kw) -> Scenario:
    kw.setdefault("expectation", "datanode_loss")  # the engine's rules for the same data nodes lost
    return Scenario(name, "error_insert", title, fault=fault, engines=("ndb",), elsewhere=NDB_ONLY,
                    needs=obeys_error_inserts, **kw)


pytestmark = [pytest.mark.error_insert, pytest.mark.docker]

SCENARIOS = [
    # NdbRestarts RestartRandomNodeError: ERROR 9999 on a random data node (CMVMI crashes it at once).
    _ei("restart_random_node_error", "ERROR 9999 on a random data node under load: crash, then its own node restart",
        lambda c, rng: ErrorInsert(c, one_data_node(c, rng), 9999)),
    # RestartMasterNodeError's intent: its own code, 39999, is discarded by 9.7.2's master DIH
    # (it crashes nothing); 9999 sent to the master is what the test means.
    _ei("restart_master_node_error", "ERROR 9999 on the master: the oldest survivor takes over",
        lambda c, rng: ErrorInsert(c, masters(c), 9999)),
    # NdbRestarts TwoNodeFailure: one node in each of two node groups crashed by 9999, 2 s apart
    # (each loss a majority of the nodes before it: no arbitration).
    _ei("two_node_failure", "ERROR 9999 on one data node in each of two node groups, 2 s apart",
        lambda c, rng: ErrorInsert(c, one_per_nodegroup(c, rng), 9999, gap_s=2.0),
        expectation="two_datanodes_different_ng"),
    # testNodeRestart GCP f_master_failure: 7003, the master crashes while it handles GCP_SAVE
    # (a global checkpoint being saved, every TimeBetweenGlobalCheckpoints).
    _ei("gcp_save_master_failure", "ERROR 7003: the master crashes while a global checkpoint is saved",
        lambda c, rng: ErrorInsert(c, masters(c), 7003)),
    # NdbRestarts RestartNodeDuringLCP (master list): 7009, the master crashes as a local
    # checkpoint starts (started at once with DUMP 7099).
    _ei("lcp_master_failure", "ERROR 7009 + DUMP 7099: the master crashes as a local checkpoint starts",
        lambda c, rng: ErrorInsert(c, masters(c), 7009, trigger="lcp")),
    # NdbRestarts RestartNFDuringNR: the code goes into a node held in 'not started'; it fires in
    # that node's own restart, which crashes and starts again. Three of its 28 codes, one per stage.
    _ei("nf_during_nr_start_permission", "RestartNFDuringNR 7121: crashed when granted permission to start",
        lambda c, rng: ErrorInsertInRestart(c, one_data_node(c, rng), 7121), slow=True),
    _ei("nf_during_nr_schema_copy", "RestartNFDuringNR 6000: crashed while copying the schema",
        lambda c, rng: ErrorInsertInRestart(c, one_data_node(c, rng), 6000), slow=True),
    _ei("nf_during_nr_copy_fragment", "RestartNFDuringNR 5002: crashed while its rows are copied in from its partner",
        lambda c, rng: ErrorInsertInRestart(c, one_data_node(c, rng), 5002)),
    # testNodeRestart Bug34216: 8057 (one COMMIT per round) and 5048 (crash on an update's
    # COMMIT) on one node, under list-append transactions: the node dies inside the commit
    # protocol. Does any acknowledged transaction vanish, does any read see half of one?
    _ei("commit_protocol_crash_txn", "Bug34216 5048+8057: a node dies inside the commit protocol, transactions "
        "running", lambda c, rng: ErrorInsert(c, one_data_node(c, rng), 5048, also=[(8057, None)]), **TXN),
    # testNodeRestart CommitAck: 8054, the TC drops a commit's confirmation and crashes (at most
    # 5 s later): the commit the client never heard of must be durable or absent, never half.
    _ei("commit_ack_lost_txn", "CommitAck 8054: the coordinator drops a commit's answer and crashes",
        lambda c, rng: ErrorInsert(c, one_data_node(c, rng), 8054), **TXN),
    # testBackup NFMaster: 10004 on the master (the backup's coordinator), START BACKUP: it
    # crashes in the backup, the backup fails, and once healed a second backup completes.
    _ei("backup_nf_master", "testBackup NFMaster 10004: the backup's coordinator crashes mid-backup",
        lambda c, rng: ErrorInsertDuringBackup(c, backup_master(c), 10004), expectation_kw={"during_backup": True}),
    # testBackup NFSlave: 10015 on a participant (not the master).
    _ei("backup_nf_slave", "testBackup NFSlave 10015: a backup participant crashes mid-backup",
        lambda c, rng: ErrorInsertDuringBackup(c, non_master(c, rng), 10015), expectation_kw={"during_backup": True},
        slow=True),
    # 9998: the CMVMI thread loops forever; the others declare the node dead (heartbeats), its
    # own watchdog ends it (6050), and StopOnError keeps it down until the heal. A hang inside the
    # process, against freeze_one_data_node's SIGSTOP of every thread.
    _ei("cmvmi_thread_hang", "ERROR 9998: one thread of a data node hangs; the watchdog ends it",
        lambda c, rng: ErrorInsert(c, one_data_node(c, rng), 9998)),
]


#: what fails today on a finding of the engine (docs/ndb.md), strict: a fix is noticed
KNOWN_FAILURES: dict[str, str] = {}


@pytest.mark.parametrize("sc", params(SCENARIOS, KNOWN_FAILURES))
def test_error_insert(sc, play):
    play(sc)
