"""storage: a data node's disk fails it.

Its data directory must be on a bounded disk of its own (``--data-disk SIZE``: ndbchaos.disks),
which the fault fills; without one the scenarios skip with that reason.

NDB: a data node whose file system is full fails its next write that needs a block (its REDO
log is written at every global checkpoint) and shuts itself down with 2810 (AFS_DISK_FULL); the
cluster loses it as it loses a killed node (the same arbitration check), and after the disk is
freed a node restart brings it back.
"""

from __future__ import annotations

import pytest

from ndbchaos.catalogue import one_data_node, params
from ndbchaos.driver import Scenario
from ndbchaos.faults.disk import DiskFull

NDB_ONLY = "what Galera does on a full disk has no expectation here yet"

pytestmark = [pytest.mark.storage, pytest.mark.docker]

SCENARIOS = [
    Scenario("fill_data_node_disk", "storage", "the file system under one data node fills up under load",
             fault=lambda c, rng: DiskFull(c, one_data_node(c, rng)), expectation="disk_full", needs_disk=True,
             engines=("ndb",), elsewhere=NDB_ONLY),
]


@pytest.mark.parametrize("sc", params(SCENARIOS))
def test_storage(sc, play):
    play(sc)
