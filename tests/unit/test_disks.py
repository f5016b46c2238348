"""Bounded disks (ndbchaos.runtimes.compose.disks) and the disk_full fault's fill and heal, on real loop-mounted
file systems (root and loop devices; no Docker)."""

import os
from types import SimpleNamespace

import pytest

from ndbchaos.runtimes.compose import disks
from ndbchaos.errors import NdbChaosError, UsageError
from ndbchaos.faults import disk as D


@pytest.fixture
def disks_dir(tmp_path, monkeypatch):
    why = disks.unavailable()
    if why:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"bounded disks under CI=true: {why}")
        pytest.skip(why)
    monkeypatch.setenv("NDBCHAOS_DISKS", str(tmp_path / "disks"))
    yield tmp_path / "disks"
    for p in disks.projects():
        disks.release(p)


@pytest.mark.parametrize("value,mb", [("512M", 512), (512, 512), ("2G", 2048), (" 64mb ", 64)])
def test_sizes(value, mb):
    assert disks.parse_size_mb(value) == mb


@pytest.mark.parametrize("value", ["", "lots", "10M", "100T", "-5", "1.5G"])
def test_bad_sizes_are_one_line(value):
    with pytest.raises(UsageError) as e:
        disks.parse_size_mb(value)
    assert "\n" not in str(e.value)


def test_a_disk_per_service_its_overlay_and_release(disks_dir):
    overlay = disks.make("ndbchaos-t1", ["data1", "data2"], 64)
    text = overlay.read_text()
    for svc in ("data1", "data2"):
        mnt = disks.mount_of("ndbchaos-t1", svc)
        assert disks.mounted(mnt) and f"{mnt}:{disks.DATA_PATH}" in text
        assert list(mnt.iterdir()) == []  # an empty data directory, as a fresh volume
        free, size = disks.usage(mnt)
        assert 40 * 2**20 < free <= size <= 64 * 2**20
    assert disks.projects() == ["ndbchaos-t1"]
    assert disks.release("ndbchaos-t1") == ["disk ndbchaos-t1/data1", "disk ndbchaos-t1/data2"]
    assert disks.projects() == [] and not (disks_dir / "ndbchaos-t1").exists()
    with pytest.raises(NdbChaosError, match="no bounded disk"):
        disks.mount_of("ndbchaos-t1", "data1")


def test_a_failed_make_leaves_nothing(disks_dir):
    with pytest.raises(NdbChaosError, match="not a service name"):
        disks.make("ndbchaos-t2", ["data1", "../etc"], 64)
    assert disks.projects() == []


class _Container:
    def __init__(self, mnt):
        self.attrs = {"Mounts": [{"Destination": disks.DATA_PATH, "Source": str(mnt)}]}
        self.status = "exited"  # seen from the host only: no exec into a container here


def _cluster(project, mounts):
    from ndbchaos.topology import DATA, Node, Topology
    nodes = [Node(n, DATA, f"{project}-{n}-1", nodegroup=0, nodeid=11 + i,
                  labels={"com.docker.compose.service": n}) for i, n in enumerate(mounts)]
    journal = SimpleNamespace(opened=lambda f: None, closed=lambda f: None)
    clock = SimpleNamespace(now=lambda: 1.0)
    return SimpleNamespace(project=project, topology=Topology(project, "ndb", nodes), journal=journal, clock=clock,
                           note=lambda *a, **k: None, container=lambda n: _Container(mounts[getattr(n, "name", n)]))


def test_disk_full_fills_to_what_it_leaves_and_heals(disks_dir, monkeypatch):
    disks.make("ndbchaos-t3", ["data1"], 64)
    mnt = disks.mount_of("ndbchaos-t3", "data1")
    cluster = _cluster("ndbchaos-t3", {"data1": mnt})
    monkeypatch.setattr("ndbchaos.faults.base.resolve", lambda c, targets: (list(c.topology.nodes), {}))
    monkeypatch.setattr("ndbchaos.faults.base.register_for_safety", lambda c: None)
    f = D.DiskFull(cluster, ["data1"], free_mb=2)
    w = f.inject()
    free, _ = disks.usage(mnt)
    assert free <= (2 + D.SLACK_MB) * 2**20 and free >= 1 * 2**20
    assert "MB free on its disk" in w.verification[0] and "seen from the host only" in w.verification[0]
    with pytest.raises(OSError):  # the node's next write that needs a block fails: ENOSPC
        with open(mnt / "x", "wb") as fh:
            fh.write(b"\0" * (4 * 2**20))
            fh.flush()
            os.fsync(fh.fileno())
    (mnt / "x").unlink()
    f.heal()
    assert not (mnt / D.BALLAST).exists() and disks.usage(mnt)[0] > 40 * 2**20
    assert w.verification[-1].startswith("ballast removed")


def test_disk_full_refuses_a_node_without_a_bounded_disk(disks_dir, tmp_path, monkeypatch):
    cluster = _cluster("ndbchaos-t4", {"data1": tmp_path})
    monkeypatch.setattr("ndbchaos.faults.base.resolve", lambda c, targets: (list(c.topology.nodes), {}))
    with pytest.raises(NdbChaosError, match="no bounded disk"):
        D.DiskFull(cluster, ["data1"])
    with pytest.raises(NdbChaosError, match="free_mb"):
        D.DiskFull(cluster, ["data1"], free_mb=-1)
