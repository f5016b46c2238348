"""The inventory lab: hosts made of containers running sshd, and a MySQL Cluster started on them
over ssh with the start commands of an inventory (examples/inventory/hosts.yml), the way an
operator starts one on servers. It exists so the inventory backend is tested for real here; the
framework itself never starts an inventory's cluster.

    up     key pair, the ndbhost image, the hosts (compose), then over ssh: management nodes, data
           nodes (until all are started), SQL nodes; then the same verification a run does
    down   the hosts and their network (by label)
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from .. import docker
from ... import topology as TP
from ..compose.cluster import reap
from ...engines.ndb import NdbEngine
from ...errors import NdbChaosError
from ...resources import BUILD, COMPOSE_DIR, LAB_INVENTORY
from ...vocabulary import ClusterOptions
from ...waiting import Deadline, wait_until
from .cluster import InventoryCluster
from .spec import load

PROJECT = "ndbchaos-lab"
SUBNET = "10.213.78"
COMPOSE = COMPOSE_DIR / "ndb-hosts.yml"
EXAMPLE = LAB_INVENTORY
BUILD_TIMEOUT_S = 1200


def key_path() -> Path:
    return Path(os.path.expanduser("~/.cache/ndbchaos/lab/id_ed25519"))


def ensure_key() -> Path:
    k = key_path()
    if not k.exists():
        k.parent.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ndbchaos-lab", "-f", str(k)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise NdbChaosError(f"ssh-keygen failed: {(r.stderr or r.stdout).strip()[-200:]}")
    return k


def image() -> str:
    r = subprocess.run(["bash", str(BUILD), "--tag", "ndbhost"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise NdbChaosError(f"the lab needs the NDB distribution (NDBCHAOS_NDB_DIST): {r.stderr.strip()[-200:]}")
    tag = r.stdout.strip()
    if not docker.image_present(tag):
        try:  # debootstrap from the Debian mirror: about a minute here; a stuck mirror must not hang a run
            r = subprocess.run(["bash", str(BUILD), "ndbhost"], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise NdbChaosError(f"building {tag} did not finish within {BUILD_TIMEOUT_S} s") from None
        if r.returncode != 0 or not docker.image_present(tag):
            raise NdbChaosError(f"building {tag} failed: {(r.stderr or r.stdout).strip()[-300:]}")
    return tag


def compose_env() -> dict[str, str]:
    ini, cnf = NdbEngine().config_files(ClusterOptions(ndb_subnet=SUBNET))
    return {"NDBCHAOS_PROJECT": PROJECT, "NDBCHAOS_NDBHOST_IMAGE": image(), "NDBCHAOS_LAB_SUBNET": SUBNET,
            "NDBCHAOS_LAB_KEY": str(ensure_key()) + ".pub", "NDBCHAOS_NDB_CONFIG": str(ini),
            "NDBCHAOS_NDB_MYCNF": str(cnf)}


def up(inventory: str | Path = EXAMPLE, timeout: float = 600, say=print) -> InventoryCluster:
    """Hosts up, then the cluster on them over ssh; returns the attached, healthy cluster."""
    docker.docker_client()
    t0 = time.monotonic()
    env = compose_env()
    say(f"lab: starting 8 hosts ({env['NDBCHAOS_NDBHOST_IMAGE']}, {SUBNET}.0/24)...")
    docker.compose(PROJECT, [COMPOSE], env, "up", "-d", "--pull", "never")
    inv = load(inventory)
    engine = NdbEngine()
    cluster = InventoryCluster(engine, inv)
    cluster.discover()
    d = Deadline(timeout)
    for r in cluster.remotes.values():
        wait_until(lambda r=r: _answers(r), min(60.0, d.remaining()), poll=0.5, on_timeout=lambda r=r: NdbChaosError(
            f"lab host {r.name} ({r.spec.url}) does not answer over ssh"))
    say(f"lab: ssh answers on every host ({time.monotonic() - t0:.0f} s); starting the cluster over ssh...")
    topo = cluster.topology
    for n in topo.role(TP.MGM):
        cluster.container(n).start()
    for n in topo.role(TP.MGM):
        engine.shell.wait_mgm(cluster, n, min(90.0, d.remaining()))
    for n in topo.data_nodes:
        cluster.container(n).start()
    engine.lifecycle.wait_data_started(cluster, d)
    for n in topo.role(TP.SQL):
        cluster.container(n).start()
    for n in topo.role(TP.SQL):  # the first start initializes the data directory first
        h = cluster.container(n)
        wait_until(lambda h=h: (h.reload() or True) and h.status == "running", min(180.0, d.remaining()), poll=1.0,
                   on_timeout=lambda n=n: NdbChaosError(f"lab: {n.name}'s mysqld did not start (see {h.start_log} "
                                                        f"and its log on host {n.name})"))
        engine.lifecycle.wait_local_sql(cluster, n, d)
    cluster.up(timeout=d.remaining())
    say(f"lab: cluster healthy on the hosts in {time.monotonic() - t0:.0f} s; "
        f"run: pytest -m datanode_loss --inventory {inventory}")
    return cluster


def _answers(remote) -> bool:
    try:
        return remote.run("echo ok", timeout=10)[0] == 0
    except NdbChaosError:
        return False


def down() -> list[str]:
    """Remove the hosts and their network; what was there (compose removes most of it, the
    framework's own reap whatever compose did not know)."""
    docker.docker_client()
    there = [f"container {c.name}" for c in docker.project_containers(PROJECT)] + \
            [f"network {n.name}" for n in docker.project_networks(PROJECT)]
    docker.compose(PROJECT, [COMPOSE], {"NDBCHAOS_PROJECT": PROJECT}, "down", "-v", "-t", "2", check=False)
    left = reap(PROJECT)
    return there + [x for x in left if x not in there]
