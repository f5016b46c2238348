"""Faults: objects with a window. Inject, verify it took effect, hold, heal, verify it healed.

Every fault registers with its cluster before it touches anything, so it is healed on every path
out (normal exit, assertion failure, exception, Ctrl-C, session end) by ``Cluster.heal_all()``;
``faults.safety`` adds atexit and SIGTERM/SIGHUP, and ``ndbchaos reap`` covers SIGKILL.

The catalogue (see docs/faults.md):

    targets     one_data, node, nodegroup, one_per_nodegroup, master, arbitrators, sql, ...
    node        Kill, KillInTurn, RestartWithout, Stop, Pause, Restart, KillDuringRecovery
    network     Isolate, Components, Halves, NodeGroupSplit, Bridge, MajoritiesRing, OneWay,
                RoleSplit (SqlDataSplit, MgmDataSplit), Partition (any grudge), Disconnect
    netem       Netem (Delay, Loss, Duplicate, Corrupt): NetemUnsupported without sch_netem
    toxiproxy   Latency, Bandwidth, Timeout, ResetPeer, Slicer, ProxyDown; proxy_ports()

The kinds here name no engine. An engine's own faults live with it: NDB's management-client
faults and error inserts in ``ndbchaos.engines.ndb.faults`` (``mgm``, ``errorinsert``).
"""

from __future__ import annotations

import contextlib

from ..settings import current
from .base import Fault, FaultNotEffective, FaultUnsupported, FaultWindow  # noqa: F401


def host_limit(e: FaultUnsupported) -> bool:
    """Whether ``e`` is a limit of this host or its kernel (no sch_netem), the one kind of
    unsupported fault a CI run may skip. An engine without the fault's tool (Galera has no
    ndb_mgm) is not: the catalogue declares where a scenario runs (``Scenario.engines``), so
    reaching such a fault under CI is a defect of the declaration."""
    from .netem import NetemUnsupported  # late: netem brings the helpers' image and Docker's client
    return isinstance(e, NetemUnsupported) or bool(getattr(e, "host_limit", False))


def unsupported(e: FaultUnsupported, ci: bool | None = None) -> None:
    """A test's way out of ``e``: a pytest skip with its reason; under CI=true a failure
    unless it names a limit of the host (``host_limit``). ``ci``: default, the settings' CI."""
    import pytest

    if (current().ci if ci is None else ci) and not host_limit(e):
        pytest.fail(f"under CI=true only a limit of the host or its kernel may skip a fault, "
                    f"and this is not one: {e.reason or e}", pytrace=False)
    pytest.skip(f"this host cannot do the fault: {e.reason or e}" if host_limit(e) else (e.reason or str(e)))


@contextlib.contextmanager
def skip_if_unsupported():
    """In a test: turn ``FaultUnsupported`` (e.g. no sch_netem) into a pytest skip with its
    reason, or a failure under CI=true when it is no limit of the host (``unsupported``). The
    pytest plugin does the same for every test (its wrapper on ``pytest_runtest_call``)."""
    try:
        yield
    except FaultUnsupported as e:
        unsupported(e)
