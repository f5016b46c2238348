"""What every cluster handle is, whatever runs its nodes: the protocol the rest of the code types
against.

Two runtimes implement it:

    ``ndbchaos.runtimes.compose.cluster.ComposeCluster``        containers this framework starts (Compose v2)
    ``ndbchaos.runtimes.inventory.InventoryCluster``    an existing cluster on an inventory's hosts (ssh)

``ClusterHandle`` holds only what both share: the engine, the options, the run clock, the
topology, the journal of framework events and open faults, and what follows from them (status,
waiting, healing, the reset between scenarios). Each runtime says how its nodes are found
(``discover``), reached (``container``: a docker-py container or a ``HostNode``, both with the
same node handle's methods), cut off (``net_helper``), thawed, attached and released.

An ability only one runtime has is asked through its type, never by catching a refusal:
``isinstance(cluster, ComposeProject)`` for a cluster the framework started as a Compose project
(its services, overlays such as toxiproxy in front of the SQL nodes, containers that take their
network namespace with them when they stop).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Mapping, Protocol, runtime_checkable

from .clock import RunClock
from .errors import ClusterNotReady, UsageError
from .journal import Journal
from .topology import Node, Topology
from .vocabulary import ClusterOptions, ClusterStatus, OptionError
from .waiting import Deadline, wait_until

log = logging.getLogger("ndbchaos")


class HandleEngine(Protocol):
    """What every cluster handle asks of its engine. An engine acts on handles (``ndbchaos.engines``
    types against ``ClusterHandle``), so a handle names only the part of the engine it calls."""

    name: str
    #: roles whose nodes are the clients' SQL endpoints
    sql_roles: tuple[str, ...]

    def prepare(self, cluster: ClusterHandle) -> None: ...

    def status(self, cluster: ClusterHandle) -> ClusterStatus: ...

    def recover_nodes(self, cluster: ClusterHandle, nodes: list[Node]) -> None: ...


class ClusterHandle(ABC):
    """A running cluster, as scenarios, faults, the driver, the soak and the commands see it."""

    #: the runtime's name, for reports and messages (``docker`` or ``inventory``); never branched on
    backend: str = ""
    #: whether a node's network namespace (and the rules a partition put there) outlives the node's
    #: process: a host's does; a container's goes when the container stops
    netns_outlives_node: bool = False

    def __init__(self, engine: HandleEngine, options: ClusterOptions | Mapping | None = None, project: str = "",
                 clock: RunClock | None = None):
        self.engine = engine
        try:
            self.options = ClusterOptions.of(options)
        except OptionError as e:
            raise UsageError(str(e)) from None
        self.project = project
        self.clock = clock or RunClock()
        self.topology: Topology | None = None
        self.journal = Journal(self.clock)
        self.started = False
        self.ready_seconds: float | None = None
        self._target_draws = 0  # seeded target choices drawn so far (faults.targets)
        #: spare data nodes that joined a node group since the start (NDB's CREATE NODEGROUP):
        #: name -> group. ``discover`` applies it, so the rules count them as the engine does
        self.joined: dict[str, int] = {}

    # -- what each runtime says ------------------------------------------------------------------
    @abstractmethod
    def up(self, timeout: float = 240) -> ClusterStatus:
        """Attach to a ready cluster (starting it where this runtime starts clusters)."""

    @abstractmethod
    def down(self) -> list[str]:
        """Release the cluster: heal what is open, then remove what this runtime started (or leave
        an inventory's cluster as healthy as it was found). Lines of what was removed."""

    @abstractmethod
    def discover(self) -> Topology:
        """The topology as the runtime finds it now."""

    @abstractmethod
    def container(self, node: Node | str):
        """The handle faults drive for a node (refusing anything that is not this cluster's)."""

    @abstractmethod
    def net_helper(self, node: Node, purpose: str = "fault"):
        """Where a network fault on ``node`` installs its rules (``install``/``uninstall``/``exec``)."""

    @abstractmethod
    def net_helpers(self, nodes, purpose: str = "fault") -> dict:
        """``net_helper`` of several nodes, by node name."""

    @abstractmethod
    def node_ips(self, node: Node) -> list[str]:
        """The node's addresses on the cluster network: what its peers' packets come from."""

    @abstractmethod
    def thaw_all(self) -> None:
        """Unpause every frozen node."""

    @abstractmethod
    def describe(self) -> dict[str, str | int]:
        """What a report says about where the cluster runs (backend, images or hosts)."""

    # -- shared ------------------------------------------------------------------------------------
    def engine_sql_roles(self) -> tuple[str, ...]:
        return self.engine.sql_roles

    def next_target_draw(self) -> int:
        """The number of this seeded target choice in the run (1, 2, ...): with the run's seed, it
        makes each choice's own seed."""
        self._target_draws += 1
        return self._target_draws

    def note(self, kind: str, **fields) -> dict:
        """A framework event on the run clock (for the timeline and the run record)."""
        return self.journal.note(kind, **fields)

    def status(self) -> ClusterStatus:
        return self.engine.status(self)

    def wait_healthy(self, timeout: float, poll: float = 0.5) -> ClusterStatus:
        last: list[ClusterStatus] = []

        def healthy():
            last[:] = [self.status()]
            return last[0] if last[0].healthy else None

        return wait_until(healthy, max(timeout, 1), poll, on_timeout=lambda: ClusterNotReady(
            f"cluster {self.project} not healthy after {timeout:.0f}s: " + "; ".join(last[0].problems[:4])))

    def wait_for(self, predicate, timeout: float, poll: float = 0.25, what: str = "condition"):
        """Poll ``status()`` until ``predicate(status)`` is true; return (status, seconds)."""
        d, last = Deadline(timeout), []

        def reached():
            last[:] = [self.status()]
            return last[0] if predicate(last[0]) else None

        st = wait_until(reached, timeout, poll, on_timeout=lambda: ClusterNotReady(
            f"{what} not reached within {timeout:.0f}s: " + "; ".join(last[0].problems[:4])))
        return st, d.elapsed()

    def heal_all(self) -> list[str]:
        """Heal every open fault (newest first). Errors are collected, not raised, so that one
        failing heal does not leave the others in place."""
        problems = []
        for f in reversed(self.journal.open_faults()):
            try:
                f.heal()
            except Exception as e:  # keep healing the rest
                problems.append(f"{f.kind}: {e}")
        return problems

    def reset(self, timeout: float = 300) -> ClusterStatus:
        """Back to healthy between scenarios: heal faults, unpause, restart dead nodes, wait."""
        problems = self.heal_all()
        self.thaw_all()
        self.discover()
        st = self.status()
        dead = [self.topology.node(n.node) for n in st.nodes if n.container in ("exited", "dead", "created")]
        if dead:
            self.engine.recover_nodes(self, dead)
        st = self.wait_healthy(timeout)
        self.discover()
        if problems:
            log.warning("reset healed with problems: %s", problems)
        return st


@runtime_checkable
class ComposeProject(Protocol):
    """The ability of a cluster this framework started as a Compose project: its services can be
    started, stopped and added to (an engine's start order, overlays such as the toxiproxy in
    front of the SQL nodes). Only ``ComposeCluster`` has it."""

    def compose(self, *args: str, check: bool = True, timeout: float = 600): ...
