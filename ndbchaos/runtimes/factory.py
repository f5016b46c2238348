"""The one place a runtime is built: the pytest session's cluster, a command's, and a cluster a
procedure starts beside the one it runs on (NDB's restore into a fresh cluster). Engines never
build a runtime: they ask here, handing the cluster they run on (``beside``).
"""

from __future__ import annotations

from typing import Mapping

from ..clock import RunClock
from ..errors import UsageError
from ..handle import ClusterHandle, ComposeProject, HandleEngine
from .compose.cluster import ComposeCluster, ComposeEngine
from .inventory.cluster import InventoryCluster
from .inventory.spec import Inventory
from ..vocabulary import ClusterOptions


def compose(engine: ComposeEngine, options: ClusterOptions | Mapping | None = None,
            project: str | None = None, clock: RunClock | None = None) -> ComposeCluster:
    """Containers this framework starts as a Compose project (``project``: attach to a running
    one of that id instead; ``clock``: a run clock shared with another cluster); not started here
    (``up``)."""
    return ComposeCluster(engine, options, project=project, clock=clock)


def inventory(engine: HandleEngine, inv: Inventory,
              options: ClusterOptions | Mapping | None = None) -> InventoryCluster:
    """An existing cluster on an inventory's hosts; verified and attached by ``up``."""
    return InventoryCluster(engine, inv, options)


def beside(cluster: ClusterHandle, options: ClusterOptions) -> ClusterHandle:
    """A fresh cluster of the same runtime and engine as ``cluster`` (a new engine of its class,
    a project of its own, ``options`` its shape), not started. Only a runtime that starts its
    clusters has one: the compose runtime; an inventory's hosts hold one cluster."""
    if not isinstance(cluster, ComposeProject):
        raise UsageError(f"the {cluster.backend} runtime cannot start a cluster beside its own "
                         f"(only the compose runtime starts clusters)")
    return compose(type(cluster.engine)(), options)
