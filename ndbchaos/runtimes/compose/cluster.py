"""The compose runtime: a containerized cluster this framework starts as a Compose project; its
nodes found by label, reset between scenarios and torn down.

``ComposeCluster`` is one of the two ``ndbchaos.handle.ClusterHandle`` runtimes (the other is an
inventory's hosts, ``ndbchaos.runtimes.inventory.InventoryCluster``); ``Cluster`` is its name for users.
One handle serves a whole pytest session. Its journal (``ndbchaos.journal.Journal``) keeps the
framework's events and every fault injected into it, so ``reset()`` and ``down()`` heal whatever
is still open on any path out.
"""

from __future__ import annotations

import logging
import random
import re
import socket
import time
import uuid
from pathlib import Path
from typing import Mapping, Protocol

from . import disks
from ... import holds
from .. import docker
from ... import topology as TP
from ...clock import RunClock
from ...errors import NdbChaosError
from .. import netns
from ...handle import ClusterHandle, HandleEngine
from ...settings import Settings, current
from ...topology import Node, Topology
from ...vocabulary import ClusterOptions, ClusterStatus

log = logging.getLogger("ndbchaos")


class ComposeEngine(HandleEngine, Protocol):
    """What the compose runtime asks of its engine besides a handle's: the Compose project (files,
    environment, profiles, services), its images and the engine's start order."""

    def compose_files(self, options: ClusterOptions) -> list[Path]: ...

    def compose_env(self, options: ClusterOptions) -> dict[str, str]: ...

    def compose_profiles(self, options: ClusterOptions) -> list[str]: ...

    def services(self, options: ClusterOptions) -> dict[str, list[str]]:
        """The Compose services of each role; asked only for ``options.data_disk_mb`` (bounded
        data disks, an option of the engines that name their services: NDB)."""

    def ensure_images(self, options: ClusterOptions) -> None: ...

    def images(self, options: ClusterOptions) -> list[str]: ...

    def start(self, cluster: ComposeCluster) -> None: ...


def new_project_id() -> str:
    return "ndbchaos-" + uuid.uuid4().hex[:10]


class ComposeCluster(ClusterHandle):
    """The compose runtime; it has the ``ndbchaos.handle.ComposeProject`` ability."""

    backend = "docker"
    netns_outlives_node = False  # a stopped container has no namespace left, nor rules

    def __init__(self, engine: ComposeEngine, options: ClusterOptions | Mapping | None = None,
                 project: str | None = None, clock: RunClock | None = None, settings: Settings | None = None):
        super().__init__(engine, options, project or new_project_id(), clock)
        #: the user's ports (NDBCHAOS_PORT_<SERVICE>): the settings handed in, else the process'
        self.user_ports: dict[str, str] = (settings or current()).port_env
        self.pinned_ports: dict[str, int] = {}  # NDBCHAOS_PORT_<SERVICE> -> host port we chose

    # -- compose ---------------------------------------------------------------------------
    @property
    def files(self) -> list[Path]:
        return self.engine.compose_files(self.options)

    @property
    def env(self) -> dict[str, str]:
        env = self.engine.compose_env(self.options)
        env.update(self.options.compose_env)  # overlays' variables (e.g. toxiproxy image)
        env["NDBCHAOS_PROJECT"] = self.project
        for k, v in self.user_ports.items():
            env.setdefault(k, v)
        for k, v in self.pinned_ports.items():
            env.setdefault(k, str(v))
        profiles = self.engine.compose_profiles(self.options)
        if profiles:
            env["COMPOSE_PROFILES"] = ",".join(profiles)
        return env

    def compose(self, *args: str, check: bool = True, timeout: float = 600):
        return docker.compose(self.project, self.files, self.env, *args, check=check, timeout=timeout)

    # -- lifecycle -------------------------------------------------------------------------
    def up(self, timeout: float = 240) -> ClusterStatus:
        """Start the cluster and wait until it is really ready. On failure, tear down."""
        docker.docker_client()
        self.engine.ensure_images(self.options)
        t0 = time.monotonic()
        self.started = True
        try:
            self.note("cluster_up_begin", project=self.project)
            self._make_disks()
            self._start_with_pinned_ports()
            self.discover()
            status = self.wait_healthy(timeout - (time.monotonic() - t0))
            self.engine.prepare(self)
            self.ready_seconds = time.monotonic() - t0
            self.note("cluster_ready", seconds=round(self.ready_seconds, 2))
            return status
        except BaseException:
            if not self.options.keep:
                self.down()
            raise

    def _make_disks(self) -> None:
        """With ``options.data_disk_mb``: each data node's data directory on a bounded disk of
        that size (``ndbchaos.runtimes.compose.disks``), put in place by a compose overlay."""
        size = self.options.data_disk_mb
        if not size:
            return
        services = self.engine.services(self.options).get(TP.DATA) or []
        overlay = disks.make(self.project, services, int(size))
        self.options = self.options.with_(overlays=[*self.options.overlays, overlay])
        self.note("disks_made", services=services, size_mb=int(size))

    def _start_with_pinned_ports(self, attempts: int = 3) -> None:
        """Start the engine with every published SQL port pinned to a host port chosen now.

        Compose files publish SQL ports as ``127.0.0.1:${NDBCHAOS_PORT_<SERVICE>:-}:3306``. Left
        empty, Docker picks a new host port each time the container starts, so a restarted node
        would move and its clients could never reconnect. Ports the user set (environment or
        options) are kept, and a clash with them is reported; ports we chose are chosen again.
        """
        for attempt in range(attempts):
            self.pin_ports()
            try:
                self.engine.start(self)
                return
            except NdbChaosError as e:
                ours = list(self.pinned_ports)
                if "port is already taken" not in str(e) or not ours or attempt == attempts - 1:
                    raise
                log.warning("a chosen port was taken meanwhile; choosing again (%s)", e)
                self.compose("down", "-v", "--remove-orphans", "-t", "1", check=False)
                for k in ours:
                    self.pinned_ports.pop(k)

    def pin_ports(self) -> dict[str, int]:
        text = "".join(f.read_text() for f in self.files if f.exists())
        user = {f"NDBCHAOS_PORT_{k.upper()}": int(v) for k, v in self.options.ports.items()}
        taken = set(self.pinned_ports.values()) | set(user.values()) | {int(v) for v in self.user_ports.values()}
        for name in sorted(set(re.findall(r"NDBCHAOS_PORT_([A-Z0-9_]+)", text))):
            var = f"NDBCHAOS_PORT_{name}"
            if var in self.user_ports or var in user or var in self.pinned_ports:
                continue
            port = free_port(exclude=taken)
            taken.add(port)
            self.pinned_ports[var] = port
        return self.pinned_ports

    def discover(self) -> Topology:
        """Build the topology from the containers that carry this project's label."""
        nodes = []
        for c in docker.project_containers(self.project):
            labels = c.labels or {}
            role = labels.get(TP.ROLE, "")
            if role in (TP.HELPER,):
                continue
            port = docker.published_port(c, 3306) if c.status == "running" else None
            prev = self.topology._by_name.get(labels.get(TP.NODE, "")) if self.topology else None
            if port is None and prev is not None:
                port = prev.sql_port  # a stopped container keeps its node's port for reporting
            ip = docker.container_ip(c, project=self.project) or (prev.ip if prev else None)
            n = Node.from_labels(c.name, c.id, labels, ip=ip, sql_port=port,
                                 serves_sql=role in self.engine_sql_roles())
            if n.name in self.joined:  # a spare that joined a node group: a data node of it now
                n.role, n.nodegroup = TP.DATA, self.joined[n.name]
            nodes.append(n)
        if not nodes:
            raise NdbChaosError(f"no containers labelled {TP.PROJECT}={self.project}")
        self.topology = Topology(self.project, self.engine.name, nodes)
        return self.topology

    def container(self, node: Node | str):
        """The docker-py container of a node, refusing anything outside this project."""
        name = node.container if isinstance(node, Node) else node
        return docker.owned(name, self.project)

    # -- where network faults work: a helper container in the node's namespace -----------------
    def net_helper(self, node: Node, purpose: str = "fault"):
        return netns.start_helper(self, node, purpose=purpose)

    def net_helpers(self, nodes, purpose: str = "fault") -> dict:
        return netns.start_helpers(self, nodes, purpose=purpose)

    def node_ips(self, node: Node) -> list[str]:
        """The node's addresses on the cluster network: what its peers' packets come from."""
        return netns.container_ips(self.container(node))

    def thaw_all(self) -> None:
        """Unpause every paused node of this project."""
        for c in docker.project_containers(self.project):
            if c.labels.get(TP.ROLE) == TP.HELPER:
                continue
            if c.status == "paused":
                c.unpause()

    def down(self) -> list[str]:
        """Remove every container and network of this project (helpers included)."""
        removed = []
        self.heal_all()
        holds.release(self.project)  # what a heal could not undo must not hold compose's stop
        try:
            self.compose("down", "-v", "--remove-orphans", "-t", "3", check=False, timeout=180)
        except NdbChaosError:
            pass
        # Whatever compose did not own (helpers, proxies started by faults) goes by label.
        removed += reap(self.project)
        self.started = False
        return removed

    def describe(self) -> dict[str, str | int]:
        return {"backend": self.backend, "images": ",".join(self.engine.images(self.options))}


#: the compose runtime under the name scenarios, tests and users know it by
Cluster = ComposeCluster


def reap(project: str | None = None) -> list[str]:
    """Remove containers and networks labelled by the framework (one project, or all), and their
    bounded disks; what was removed. NdbChaosError (one line) naming what could not be, after
    everything else was."""
    removed, problems = sweep(project)
    if problems:
        raise NdbChaosError("could not remove " + "; ".join(problems))
    return removed


#: how often a container Docker could not kill is tried again once what held it is released,
#: and the pause between
REMOVE_ATTEMPTS, REMOVE_PAUSE_S = 4, 2.0


def _detach_others(network) -> None:
    """Disconnect, forcibly, every container still attached to a project's network once the
    project's own containers are gone: Docker refuses to remove a network with an endpoint, and a
    container of another project may have been attached to it (the replica's applier on the
    source's network)."""
    network.reload()
    for cid in list((network.attrs.get("Containers") or {})):
        network.disconnect(cid, force=True)


def sweep(project: str | None = None) -> tuple[list[str], list[str]]:
    """``reap``'s work: (what was done, what could not be removed and why), one line each.

    What holds a node is released first (``ndbchaos.holds``: faultfs layers cleared or stopped,
    frozen containers thawed), so Docker can kill every process; then containers, networks, and
    the bounded disks with their layers, loop devices and ballasts (``disks.release``)."""
    done, problems = holds.release(project)
    try:
        containers = docker.project_containers(project)
    except Exception as e:
        return done, [*problems, f"the containers (Docker did not list them: {docker.one_line(e)})"]
    for c in containers:
        why = _remove(c)
        if why is None:
            done.append(f"container {c.name}")
        else:
            problems.append(f"container {c.name} ({why})")
    try:
        networks = docker.project_networks(project)
    except Exception as e:
        networks = []
        problems.append(f"the networks (Docker did not list them: {docker.one_line(e)})")
    for n in networks:
        try:
            _detach_others(n)  # a container of another project attached to it (a replication link)
            n.remove()
            done.append(f"network {n.name}")
        except Exception as e:
            if "not found" not in str(e).lower():
                problems.append(f"network {n.name} ({docker.one_line(e)})")
    # bounded disks (ndbchaos.runtimes.compose.disks): the project's, or those of every project with no container left
    if project is None:
        try:
            alive = {c.labels.get(TP.PROJECT) for c in docker.project_containers(None)}
            names = [p for p in disks.projects() if p not in alive]
        except Exception as e:
            names = []
            problems.append(f"the disks (Docker did not list the containers left: {docker.one_line(e)})")
    else:
        names = [project]
    for p in names:
        try:
            done += disks.release(p)
        except (NdbChaosError, OSError) as e:
            problems.append(f"the disks of {p} ({e})")
    return done, problems


def _remove(c) -> str | None:
    """Remove a container (force, with its anonymous volumes); None, or why it could not be."""
    why = ""
    for attempt in range(REMOVE_ATTEMPTS):
        try:
            c.remove(force=True, v=True)
            return None
        except Exception as e:
            if "No such container" in str(e):
                return None
            why = docker.one_line(e)
        held = holds.stuck(holds.pid_of(c))
        if held:
            why = held
        if attempt < REMOVE_ATTEMPTS - 1:
            time.sleep(REMOVE_PAUSE_S)
    return why


def free_port(exclude=(), low: int = 20000, high: int = 32000) -> int:
    """A port free on 127.0.0.1 now, below the kernel's ephemeral range (32768+) so outgoing
    connections cannot take it between now and the container's start."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(low, high)
        if port in exclude:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise NdbChaosError(f"no free port on 127.0.0.1 between {low} and {high}")

