"""The faultfs layer (ndbchaos.runtimes.compose.faultfs and its process) on a real FUSE mount over a temporary
directory (root, /dev/fuse and Debian's fuse3; no Docker): every call passes through; delays,
failures, kept unsynced writes, their loss and the power cut do what they say; the layer's
counters show it; unmount stops the process. And the storage faults' refusals."""

import os
import shutil
import threading
import time
from types import SimpleNamespace

import pytest

from ndbchaos.runtimes.compose import disks, faultfs
from ndbchaos.errors import NdbChaosError
from ndbchaos.runtimes.compose.faultfs import Failure, Faults
from ndbchaos.faults import storage as S


def _mount(root):
    why = faultfs.unavailable() or (None if os.geteuid() == 0 else "FUSE mounts with allow_other need root")
    if why:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"faultfs under CI=true: {why}")
        pytest.skip(why)
    backing, mnt = root / "disk", root / "layer"
    backing.mkdir()
    faultfs.mount(root, "t", backing, mnt)
    return SimpleNamespace(backing=backing, mnt=mnt, sock=root / "t.sock", root=root)


@pytest.fixture(scope="module")
def mounted(tmp_path_factory):
    """One mount for the module (a start is a Python process loading libfuse: about a second)."""
    m = _mount(tmp_path_factory.mktemp("faultfs"))
    yield m
    faultfs.unmount(m.root, "t", m.mnt)


@pytest.fixture
def layer(mounted):
    """The module's mount, its faults cleared and emptied (through the layer: the kernel caches
    its entries) after each test."""
    yield mounted
    faultfs.set_faults(mounted.sock, Faults())
    faultfs.drop(mounted.sock)
    for p in mounted.mnt.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def test_calls_pass_through_and_are_counted(layer):
    (layer.mnt / "d").mkdir()
    with open(layer.mnt / "d" / "f", "wb") as fh:
        fh.write(b"hello")
        fh.flush()
        os.fsync(fh.fileno())
    os.rename(layer.mnt / "d" / "f", layer.mnt / "d" / "g")
    assert (layer.backing / "d" / "g").read_bytes() == b"hello" == (layer.mnt / "d" / "g").read_bytes()
    assert os.listdir(layer.mnt / "d") == ["g"]
    os.truncate(layer.mnt / "d" / "g", 2)
    assert (layer.backing / "d" / "g").read_bytes() == b"he"
    st = faultfs.status(layer.sock)
    assert st["counts"]["write"] >= 1 and st["counts"]["fsync"] >= 1 and st["counts"]["open"] >= 2
    assert st["delay_ms"] == {} and st["fail"] == {} and not st["lazy"] and not st["cut"]
    st_fs, st_b = os.statvfs(layer.mnt), os.statvfs(layer.backing)
    assert st_fs.f_blocks == st_b.f_blocks  # the file system below is what the node sees


def test_a_delay_slows_each_call_and_a_heal_ends_a_waiting_one_at_once(layer):
    fd = os.open(layer.mnt / "f", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        faultfs.set_faults(layer.sock, Faults(delay_ms={"fsync": 300}))
        t = time.monotonic()
        os.fsync(fd)
        assert 0.28 <= time.monotonic() - t < 2.0
        faultfs.set_faults(layer.sock, Faults(delay_ms={"fsync": 60_000}))  # a stall
        done = []
        th = threading.Thread(target=lambda: (os.fsync(fd), done.append(time.monotonic())))
        t = time.monotonic()
        th.start()
        time.sleep(0.3)
        assert faultfs.status(layer.sock)["waiting"] == 1 and not done
        faultfs.set_faults(layer.sock, Faults())
        th.join(5)
        assert done and done[0] - t < 3.0
        st = faultfs.status(layer.sock)
        assert st["delayed"]["fsync"] >= 2 and st["waiting"] == 0
    finally:
        os.close(fd)


def test_a_failure_fails_the_call_before_it_reaches_the_disk(layer):
    fd = os.open(layer.mnt / "f", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        faultfs.set_faults(layer.sock, Faults(fail={"write": Failure("ENOSPC", 1.0)}))
        with pytest.raises(OSError) as e:
            os.pwrite(fd, b"x" * 10, 0)
        assert e.value.errno == 28
        assert (layer.backing / "f").read_bytes() == b""
        # a probability is seeded: the same seed fails the same calls
        outcomes = []
        for _ in range(2):
            faultfs.set_faults(layer.sock, Faults(fail={"write": Failure("EIO", 0.5)}, seed=7))
            run = []
            for i in range(40):
                try:
                    os.pwrite(fd, b"y", i)
                    run.append(True)
                except OSError as err:
                    assert err.errno == 5
                    run.append(False)
            outcomes.append(run)
        assert outcomes[0] == outcomes[1] and 5 < outcomes[0].count(False) < 35
        assert faultfs.status(layer.sock)["failed"]["write"] == 1 + 2 * outcomes[0].count(False)
    finally:
        os.close(fd)


def test_unsynced_writes_are_kept_seen_and_lost_synced_ones_stay(layer):
    faultfs.set_faults(layer.sock, Faults(lazy=True))
    fd = os.open(layer.mnt / "redo", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b"A" * 10, 0)
        os.fsync(fd)  # durable
        os.pwrite(fd, b"B" * 5, 5)
        os.pwrite(fd, b"C" * 4, 20)  # past the end: the file grows, with a hole
        assert os.pread(fd, 100, 0) == b"AAAAABBBBB" + b"\0" * 10 + b"CCCC"
        assert os.fstat(fd).st_size == 24  # the node sees its writes
        assert (layer.backing / "redo").read_bytes() == b"A" * 10  # the disk does not
        st = faultfs.status(layer.sock)
        assert st["pending_bytes"] == 9 and st["pending_files"] == 1 and st["synced_bytes"] == 10
        assert faultfs.drop(layer.sock) == {"ok": True, "dropped_bytes": 9, "dropped_files": 1}
    finally:
        os.close(fd)
    assert (layer.mnt / "redo").read_bytes() == b"A" * 10


def test_a_write_through_a_sync_descriptor_is_durable_at_once(layer):
    faultfs.set_faults(layer.sock, Faults(lazy=True))
    fd = os.open(layer.mnt / "log", os.O_RDWR | os.O_CREAT | os.O_DSYNC, 0o644)
    try:
        os.write(fd, b"synced")
    finally:
        os.close(fd)
    assert faultfs.drop(layer.sock)["dropped_bytes"] == 0
    assert (layer.backing / "log").read_bytes() == b"synced"
    # a write through such a descriptor lands after what was kept of the same file, not under it
    (layer.mnt / "log").write_bytes(b"AAAA")
    fd = os.open(layer.mnt / "log", os.O_RDWR | os.O_DSYNC)
    try:
        os.pwrite(fd, b"B", 0)
    finally:
        os.close(fd)
    assert (layer.mnt / "log").read_bytes() == b"BAAA" == (layer.backing / "log").read_bytes()


def test_turning_lazy_off_writes_back_what_was_kept(layer):
    faultfs.set_faults(layer.sock, Faults(lazy=True))
    (layer.mnt / "f").write_bytes(b"kept")
    assert (layer.backing / "f").read_bytes() == b""
    faultfs.set_faults(layer.sock, Faults())
    assert (layer.backing / "f").read_bytes() == b"kept"


def test_the_cut_fails_every_later_write_and_sync_and_the_one_waiting(layer):
    faultfs.set_faults(layer.sock, Faults(lazy=True, delay_ms={"fsync": 60_000}))
    fd = os.open(layer.mnt / "f", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b"unsynced", 0)
        errors = []

        def sync():
            try:
                os.fsync(fd)
            except OSError as e:
                errors.append(e.errno)

        th = threading.Thread(target=sync)
        th.start()
        time.sleep(0.3)
        assert faultfs.drop(layer.sock, cut=True)["dropped_bytes"] == 8
        th.join(5)
        assert errors == [5]  # the waiting sync: EIO, never a success
        with pytest.raises(OSError):
            os.pwrite(fd, b"late", 0)
        assert faultfs.status(layer.sock)["cut"]
        faultfs.set_faults(layer.sock, Faults())  # power back
        os.pwrite(fd, b"after", 0)
    finally:
        os.close(fd)
    assert (layer.backing / "f").read_bytes() == b"after"


def test_unmount_stops_the_process_even_when_it_died(tmp_path):
    own = _mount(tmp_path)
    pid = int((own.root / "t.faultfs.pid").read_text())
    os.kill(pid, 9)
    time.sleep(0.3)
    faultfs.unmount(own.root, "t", own.mnt)
    assert not os.path.ismount(own.mnt) and not (own.root / "t.sock").exists()
    assert f" {own.mnt} " not in open("/proc/self/mounts").read()


@pytest.mark.parametrize("kw, match", [
    ({"delay_ms": {"unlink": 5}}, "no call 'unlink'"),
    ({"delay_ms": {"fsync": -1}}, "must be a number of ms"),
    ({"fail": {"write": Failure("EIO", 1.0)}, "delay_ms": {"sync": 1}}, "no call 'sync'"),
])
def test_bad_faults_are_one_line(kw, match):
    with pytest.raises(NdbChaosError, match=match) as e:
        Faults(**kw)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("kw, match", [({"errno": "EPERM"}, "errno 'EPERM'"), ({"p": 0}, "probability"),
                                       ({"p": 1.5}, "probability")])
def test_bad_failures_are_one_line(kw, match):
    with pytest.raises(NdbChaosError, match=match):
        Failure(**kw)


def test_a_layer_that_does_not_answer_is_one_line(tmp_path):
    with pytest.raises(NdbChaosError, match="faultfs at .*nope.sock"):
        faultfs.status(tmp_path / "nope.sock")


def _cluster(project):
    from ndbchaos.topology import DATA, Node, Topology
    nodes = [Node("data1", DATA, f"{project}-data1-1", nodegroup=0, nodeid=11,
                  labels={"com.docker.compose.service": "data1"})]
    return SimpleNamespace(project=project, topology=Topology(project, "ndb", nodes),
                           container=lambda n: SimpleNamespace(attrs={}, status="running"))


def test_a_storage_fault_refuses_a_node_without_a_layer(tmp_path, monkeypatch):
    monkeypatch.setenv("NDBCHAOS_DISKS", str(tmp_path / "disks"))
    monkeypatch.setattr("ndbchaos.faults.base.resolve", lambda c, targets: (list(c.topology.nodes), {}))
    cl = _cluster("ndbchaos-t9")
    for make in (lambda: S.SlowDisk(cl, ["data1"], delay_ms=10), lambda: S.FailingIO(cl, ["data1"]),
                 lambda: S.PowerLoss(cl, ["data1"])):
        with pytest.raises(NdbChaosError, match="data1's data directory has no faultfs layer") as e:
            make()
        assert "--data-disk SIZE" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(NdbChaosError, match="window_s"):
        S.PowerLoss(cl, ["data1"], window_s=0)
    assert not disks.layered("ndbchaos-t9")


def test_a_fault_left_in_a_layer_is_listed_and_cleared(tmp_path, monkeypatch):
    """What a detached fault (``ndbchaos fault slow-disk``) or a killed controller leaves in a
    project's layers and disks: ``status`` lists it, ``fault heal`` removes it."""
    monkeypatch.setenv("NDBCHAOS_DISKS", str(tmp_path / "disks"))
    root = disks.project_dir("ndbchaos-t8")
    root.mkdir(parents=True)
    own = _mount_at(root, "data2")
    try:
        assert S.active("ndbchaos-t8") == []
        faultfs.set_faults(own.sock, Faults(delay_ms={"fsync": 500}, fail={"write": Failure("EIO", 0.5)}))
        (own.backing / ".ndbchaos-ballast").write_bytes(b"\0" * 2**20)
        found = S.active("ndbchaos-t8")
        assert found == [
            {"kind": "storage", "node": "data2", "detail": "faultfs: fsync 500 ms late, write fails with EIO (p 0.5)"},
            {"kind": "disk_full", "node": "data2", "detail": "ballast 1 MB on its disk"}]
        done = S.clear("ndbchaos-t8")
        assert done == ["cleared the faultfs layer of data2 (fsync 500 ms late, write fails with EIO (p 0.5))",
                        "removed the ballast on data2's disk"]
        assert S.active("ndbchaos-t8") == [] and not (own.backing / ".ndbchaos-ballast").exists()
    finally:
        faultfs.unmount(root, "data2", own.mnt)


def _mount_at(root, svc):
    """A layer laid out as ``disks.make`` lays it out: ``<svc>.disk`` below, ``<svc>`` the mount."""
    if faultfs.unavailable() or os.geteuid() != 0:
        _mount(root)  # skips (or fails under CI) with the reason
    backing, mnt = root / f"{svc}.disk", root / svc
    backing.mkdir()
    faultfs.mount(root, svc, backing, mnt)
    return SimpleNamespace(backing=backing, mnt=mnt, sock=root / f"{svc}.sock")
