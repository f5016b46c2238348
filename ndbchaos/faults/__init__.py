"""Faults: objects with a window. Inject, verify it took effect, hold, heal, verify it healed.

Every fault registers with its cluster before it touches anything, so it is healed on every path
out (normal exit, assertion failure, exception, Ctrl-C, session end) by ``Cluster.heal_all()``;
``faults.safety`` adds atexit and SIGTERM/SIGHUP, and ``ndbchaos reap`` covers SIGKILL.

The catalogue (see docs/faults.md):

    targets     one_data, node, nodegroup, one_per_nodegroup, master, arbitrators, sql, ...
    node        Kill, KillInTurn, RestartWithout, Stop, Pause, Restart, KillDuringRecovery
    mgm         MgmRestart, MgmStop, SystemRestart, RollingRestart (ndb_mgm; NDB only)
    network     Isolate, Components, Halves, NodeGroupSplit, Bridge, MajoritiesRing, OneWay,
                RoleSplit (SqlDataSplit, MgmDataSplit), Partition (any grudge), Disconnect
    netem       Netem (Delay, Loss, Duplicate, Corrupt): NetemUnsupported without sch_netem
    toxiproxy   Latency, Bandwidth, Timeout, ResetPeer, Slicer, ProxyDown; proxy_ports()
"""

from __future__ import annotations

import contextlib

from .base import Fault, FaultNotEffective, FaultUnsupported, FaultWindow  # noqa: F401


@contextlib.contextmanager
def skip_if_unsupported():
    """In a test: turn ``FaultUnsupported`` (e.g. no sch_netem) into a pytest skip with its
    reason. The pytest plugin can do the same for every test with a wrapper on
    ``pytest_runtest_setup`` / ``pytest_runtest_call``."""
    try:
        yield
    except FaultUnsupported as e:
        import pytest

        pytest.skip(e.reason)
