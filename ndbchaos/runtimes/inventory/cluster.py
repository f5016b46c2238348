"""The inventory runtime: the cluster handle of an existing cluster on inventory hosts.

One of the two ``ndbchaos.handle.ClusterHandle`` runtimes (the other: ``ComposeCluster``). Same
roles, topology and status as a container cluster (the engine decides readiness, status,
expectations exactly as for containers); only the runtime differs: ``container(node)`` is a
``HostNode`` that signals the node's processes over ssh, network helpers are the hosts' own
namespaces (``guard.HostNetHelper``). The framework never starts, stops or reconfigures the
cluster as a whole: ``up`` verifies and attaches, ``down`` heals and detaches; nodes are only
restarted through their configured start commands, after a fault stopped them. It has no
Compose project (``ndbchaos.handle.ComposeProject``).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
from typing import Mapping, Protocol, runtime_checkable

from ... import topology as TP
from ...errors import BlastRadiusError, NdbChaosError
from .. import netns
from ...handle import ClusterHandle, HandleEngine
from ...topology import Node, Topology
from ...vocabulary import ClusterOptions, ClusterStatus
from .guard import HostNetHelper, disarm_script, guard_seconds
from .remote import HostNode, Remote
from .spec import Inventory, InventoryError

log = logging.getLogger("ndbchaos")

#: engines whose status, expectations and recovery have been run through this backend
SUPPORTED_ENGINES = ("ndb",)


@runtime_checkable
class InventoryCheck(Protocol):
    """An engine's ability: checks of its own on an existing cluster described by an inventory
    (notes to record), asked once the hosts are verified."""

    def check_inventory(self, cluster: InventoryCluster) -> list[str]: ...


class InventoryCluster(ClusterHandle):
    backend = "inventory"
    netns_outlives_node = True  # a host keeps its namespace and a partition's rules when a node stops

    def __init__(self, engine: HandleEngine, inventory: Inventory, options: ClusterOptions | Mapping | None = None,
                 clock=None):
        if engine.name != inventory.engine:
            raise InventoryError(f"inventory {inventory.path}: engine {inventory.engine}, "
                                 f"but --engine says {engine.name}")
        if engine.name not in SUPPORTED_ENGINES:
            raise InventoryError(f"inventory {inventory.path}: the inventory backend runs engine "
                                 f"{', '.join(SUPPORTED_ENGINES)} (not {engine.name} yet)")
        super().__init__(engine, options, inventory.project, clock)
        self.options = self.options.with_(inventory=str(inventory.path))
        self.inventory = inventory
        self.guard_s = guard_seconds()
        self.remotes = {hn: Remote(hs, inventory.ssh) for hn, hs in inventory.hosts.items()}
        self.handles: dict[str, HostNode] = {}
        for n in inventory.nodes:
            labels = {TP.PROJECT: self.project, TP.ROLE: n.role, TP.NODE: n.name, TP.ENGINE: inventory.engine,
                      TP.NODEGROUP: "" if n.nodegroup is None else str(n.nodegroup),
                      TP.NODEID: "" if n.nodeid is None else str(n.nodeid),
                      TP.LABEL_PREFIX + "host": n.host}
            if n.datadir:
                labels[TP.LABEL_PREFIX + "datadir"] = n.datadir
            self.handles[n.name] = HostNode(self.remotes[n.host], n, inventory.env_of(n), self.project, labels,
                                            guard_s=self.guard_s)
        if inventory.sql:
            for k in ("user", "password", "database"):
                if inventory.sql.get(k):
                    setattr(engine, f"sql_{k}", inventory.sql[k])

    # -- attach ---------------------------------------------------------------------------------
    def up(self, timeout: float = 240) -> ClusterStatus:
        """Verify the inventory against the hosts and the cluster, then wait until it is healthy
        and prepare the client account. Nothing is started or stopped here."""
        t0 = time.monotonic()
        self.note("cluster_up_begin", project=self.project, inventory=str(self.inventory.path))
        self.verify()
        self.started = True
        self.discover()
        # The client account first: the engine judges SQL nodes healthy by logging in with it.
        self.engine.prepare(self)
        status = self.wait_healthy(max(5.0, timeout - (time.monotonic() - t0)))
        self.ready_seconds = time.monotonic() - t0
        self.note("cluster_ready", seconds=round(self.ready_seconds, 2))
        return status

    def verify(self) -> None:
        """Every host answers, every node's process runs, and the cluster's own configuration
        agrees with the inventory (the engine checks that, and fills in what the inventory left
        out). One line, InventoryError, on the first problem; before any fault."""
        where = f"inventory {self.inventory.path}"

        def reach(item):
            name, r = item
            try:
                code, out = r.run("echo ndbchaos-ok", timeout=15)
            except NdbChaosError as e:
                return f"{where}: {e}"
            if code != 0 or "ndbchaos-ok" not in out:
                return f"{where}: host {name} ({r.spec.url}) did not run a command: {out.strip()[-160:]}"
            return None

        for problem in netns.parallel(reach, sorted(self.remotes.items())):
            if problem:
                raise InventoryError(problem)

        def find(h: HostNode):
            try:
                h.reload()
            except NdbChaosError as e:
                return f"{where}: {e}"
            if h.status == "exited":
                how = f"process pattern {h.spec.process!r}" if h.spec.process else f"pid file {h.spec.pidfile}"
                return f"{where}: {h.name}: no process found on host {h.spec.host} ({how}); the node must be running"
            h.baseline_processes = max(h.baseline_processes, len(h.procs))
            return None

        for problem in netns.parallel(find, [self.handles[n.name] for n in self.inventory.nodes]):
            if problem:
                raise InventoryError(problem)
        if isinstance(self.engine, InventoryCheck):
            for note in self.engine.check_inventory(self):
                self.note("inventory", detail=note)

    def discover(self) -> Topology:
        nodes = []
        for n in self.inventory.nodes:
            h = self.handles[n.name]
            serves = n.role in self.engine_sql_roles()
            nodes.append(Node(name=n.name, role=n.role, container=n.name, container_id=h.id,
                              nodegroup=n.nodegroup, nodeid=n.nodeid, ip=self._address(n.host),
                              sql_port=n.sql[1] if (serves and n.sql) else None,
                              sql_host=n.sql[0] if (serves and n.sql) else TP.LOCALHOST,
                              serves_sql=serves, labels=dict(h.labels)))
        self.topology = Topology(self.project, self.engine.name, nodes)
        return self.topology

    def _address(self, host: str) -> str | None:
        spec = self.inventory.hosts[host]
        addr = spec.address
        try:
            ipaddress.ip_address(addr)
            return addr
        except ValueError:
            pass
        try:
            return socket.gethostbyname(addr) if addr else None
        except OSError:
            ips = self.remotes[host].ips()
            return ips[0] if ips else None

    def container(self, node):
        """The node's handle; anything not in the inventory is refused."""
        name = node.name if isinstance(node, Node) else node
        h = self.handles.get(name)
        if h is None:
            raise BlastRadiusError(f"refusing to touch {name!r}: it is not a node of inventory {self.inventory.path}")
        return h

    # -- the network helpers of partitions --------------------------------------------------------
    def net_helper(self, node, purpose: str = "fault"):
        h = self.container(node)
        return HostNetHelper(h.remote, h.name, self.guard_s)

    def net_helpers(self, nodes, purpose: str = "fault") -> dict:
        return {n.name: self.net_helper(n, purpose) for n in nodes}

    def node_ips(self, node) -> list[str]:
        return self.container(node).remote.ips()

    # -- between scenarios and at the end ------------------------------------------------------------
    def thaw_all(self) -> None:
        for h in self.handles.values():
            h.reload()
            if h.status == "paused":
                h.unpause()

    def down(self, timeout: float = 300) -> list[str]:
        """Leave the cluster as it was found, then detach: heal what is open, thaw, start again
        any node a fault left stopped (every node ran when the run attached; a scenario that
        failed in its heal can leave one down), wait until healthy. Raises if it does not get
        there; the caller says so. A run that never attached (verification failed) only heals."""
        if not self.started:
            self.heal_all()
            return []
        try:
            self.reset(timeout=timeout)
        finally:
            self.started = False
        return []

    def describe(self) -> dict[str, str | int]:
        return {"backend": self.backend, "inventory": str(self.inventory.path), "hosts": len(self.remotes)}


def reap_inventory(inventory: Inventory) -> list[str]:
    """What killed runs left on the inventory's hosts: our iptables chains and their jumps,
    guards still waiting, frozen nodes (thawed), our start scripts. Only the inventory's hosts are
    contacted and only the inventory's nodes are signalled. Lines of what was done; an
    unreachable host is one of them (the rest are still cleaned)."""
    out: list[str] = []
    remotes = {hn: Remote(hs, inventory.ssh) for hn, hs in inventory.hosts.items()}
    script = "; ".join([
        disarm_script(None).removesuffix("; exit 0"),
        netns.remove_chains_script(None).replace("exit $rc", "true"),
        f"for f in /tmp/{inventory.project}-*.start.sh; do [ -e \"$f\" ] && rm -f \"$f\" && echo \"removed $f\"; done",
        "exit 0",
    ])

    def clean(item):
        name, r = item
        try:
            code, text = r.run(script, timeout=60)
        except NdbChaosError as e:
            return [f"{name}: {e}"]
        return [f"{name}: {ln.strip()}" for ln in text.splitlines() if ln.strip()]

    for lines in netns.parallel(clean, sorted(remotes.items())):
        out += lines
    for n in inventory.nodes:
        h = HostNode(remotes[n.host], n, inventory.env_of(n), inventory.project, {})
        try:
            h.reload()
            if h.status == "paused":
                h._signal("CONT", everyone=True)
                out.append(f"{n.host}: thawed {n.name}")
        except NdbChaosError as e:
            out.append(f"{n.host}: {n.name}: {e}")
    return out
