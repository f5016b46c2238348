"""Integration tests need a Docker engine: under CI=true its absence fails the test (a skipped
chaos suite proves nothing); elsewhere the test is skipped with the reason.

NDBCHAOS_REPLICATION=subset (CI) runs, of test_replication*.py, the channel's check and one
scenario, the binlog server's loss with the documented channel failover (about 100 s with the
pair's start and teardown); the others run without it (about 250 s in all)."""

import os

import pytest

REPLICATION = os.environ.get("NDBCHAOS_REPLICATION", "full")
assert REPLICATION in ("full", "subset"), f"NDBCHAOS_REPLICATION={REPLICATION!r}: full or subset"
REPLICATION_SUBSET = ("test_the_channel_is_verified_and_observed_as_typed_values",
                      "test_binlog_server_killed_channel_fails_over_to_the_standby_and_converges")


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.docker)
    if REPLICATION == "subset":
        # the replication modules here (the catalogue's scenarios collected for CI), not the unit
        # tests of ndbchaos.replication (tests/unit/test_replication_*.py)
        left_out = [i for i in items if i.path.parent.name == "integration"
                    and i.path.stem.startswith("test_replication") and i.originalname not in REPLICATION_SUBSET]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [i for i in items if i not in left_out]
