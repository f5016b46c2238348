"""storage: a data node's disk fails it: full, slow, stalled, failing, or losing what was not synced.

Its data directory must be on a bounded disk of its own (``--data-disk SIZE``: ndbchaos.runtimes.compose.disks),
which ``disk_full`` fills; the other faults act in the faultfs layer over that disk
(ndbchaos.runtimes.compose.faultfs: FUSE), which slows, fails or keeps unsynced each call the node makes. Without
the disk (or the layer) the scenarios skip with that reason.

NDB (docs/facts.md NDB 11; ndb-operations 6): a commit is in memory on every replica; the REDO
log is written and synced at every global checkpoint. A full file system or a failing write or
sync shuts the node down with a file system error (28xx); a disk that stalls holds up the global
checkpoint, which stops the node only when GCP stops are enabled (TimeBetweenEpochsTimeout > 0;
0, the default, disables them: finding 37); a disk that is only slow delays the checkpoints and
stops nobody. A power loss of every data node loses
what each had not synced; the system restart recovers the last completed global checkpoint, which
every node had synced: acknowledged commits of at most the last 2 x TimeBetweenGlobalCheckpoints
may be lost.
"""

from __future__ import annotations

import pytest

from ndbchaos.catalogue import every_data_node, one_data_node, params
from ndbchaos.driver import Scenario
from ndbchaos.faults.disk import DiskFull
from ndbchaos.faults.storage import FailingIO, PowerLoss, SlowDisk

NDB_ONLY = "what Galera does on a failing disk has no expectation here yet"

pytestmark = [pytest.mark.storage, pytest.mark.docker]

#: a slow disk: each write and sync 100 ms late (a saturated or remote disk), far below the GCP
#: stop timeout: NDB must keep every node
SLOW_MS = 100
#: a stalled disk: no write or sync answers until the heal
STALL_MS = 600_000
#: how long the stall is held: past the master's first GCP monitor report (60 s; with GCP stops
#: enabled, the expectation's decision bound holds the fault longer by itself)
STALL_HOLD_S = 75.0
#: the layer keeps unsynced writes this long before the power loss: several global checkpoints
#: (each syncs the REDO log), and whatever was written after the last sync is lost
POWER_LOSS_WINDOW_S = 6.0

SCENARIOS = [
    Scenario("fill_data_node_disk", "storage", "the file system under one data node fills up under load",
             fault=lambda c, rng: DiskFull(c, one_data_node(c, rng)), expectation="disk_full", needs_disk=True,
             engines=("ndb",), elsewhere=NDB_ONLY),
    Scenario("slow_disk_on_one_data_node", "storage",
             f"every write and fsync of one data node {SLOW_MS} ms late under load: no node stopped",
             fault=lambda c, rng: SlowDisk(c, one_data_node(c, rng), delay_ms=SLOW_MS), expectation="slow_disk",
             expectation_kw={"delay_ms": SLOW_MS}, hold_s=20.0, needs_disk=True, needs_layer=True,
             engines=("ndb",), elsewhere=NDB_ONLY),
    Scenario("stalled_disk_on_one_data_node", "storage",
             "one data node's writes and fsyncs stall: the global checkpoint is held up (stopped only if GCP stops "
             "are enabled)",
             fault=lambda c, rng: SlowDisk(c, one_data_node(c, rng), delay_ms=STALL_MS), expectation="disk_stall",
             hold_s=STALL_HOLD_S, needs_disk=True, needs_layer=True, slow=True, engines=("ndb",), elsewhere=NDB_ONLY),
    Scenario("failing_writes_on_one_data_node", "storage",
             "every write of one data node fails with EIO: the node shuts down with a file system error",
             fault=lambda c, rng: FailingIO(c, one_data_node(c, rng), call="write", errno="EIO"),
             expectation="failing_io", expectation_kw={"call": "write"}, needs_disk=True, needs_layer=True,
             engines=("ndb",), elsewhere=NDB_ONLY),
    Scenario("failing_fsync_on_one_data_node", "storage",
             "every fsync of one data node fails with EIO: the node shuts down with a file system error",
             fault=lambda c, rng: FailingIO(c, one_data_node(c, rng), call="fsync", errno="EIO"),
             expectation="failing_io", expectation_kw={"call": "fsync"}, needs_disk=True, needs_layer=True,
             slow=True, engines=("ndb",), elsewhere=NDB_ONLY),
    Scenario("power_loss_of_every_data_node", "storage",
             "every data node loses power and its unsynced writes: loss only within the GCP window",
             fault=lambda c, rng: PowerLoss(c, every_data_node(c), window_s=POWER_LOSS_WINDOW_S),
             expectation="power_loss", needs_disk=True, needs_layer=True, engines=("ndb",), elsewhere=NDB_ONLY),
    Scenario("power_loss_under_list_append", "storage",
             "every data node loses power and its unsynced writes under transactional list appends",
             fault=lambda c, rng: PowerLoss(c, every_data_node(c), window_s=POWER_LOSS_WINDOW_S),
             workload="list_append", clients=8, expectation="power_loss", needs_disk=True, needs_layer=True, slow=True,
             engines=("ndb",), elsewhere=NDB_ONLY),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_storage(sc, play):
    play(sc)
