"""The way out after a killed run (ndbchaos.holds, faultfs.release, cluster.sweep, the reap
command): what holds a node is released before its container is touched, a container Docker
cannot remove is said in one line with why, never a traceback.

The layer tests use a real FUSE mount over a temporary directory (root, /dev/fuse, fuse3; no
Docker), as tests/unit/test_faultfs.py does: a call waiting in a stall is answered by the release,
and a layer that does not answer (its process stopped) is stopped, its waiting call failing."""

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from ndbchaos.runtimes.compose import cluster as CL
from ndbchaos.runtimes.compose import faultfs
from ndbchaos import holds
from ndbchaos.errors import NdbChaosError
from ndbchaos.runtimes.compose.faultfs import Faults

from .test_faultfs import _mount


def _waiting_fsync(layer):
    """A thread whose fsync waits in the layer's stall; its outcome lands in the returned list."""
    fd = os.open(layer.mnt / "f", os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, b"x")
    faultfs.set_faults(layer.sock, Faults(delay_ms={"fsync": 600_000}))
    out = []

    def run():
        try:
            os.fsync(fd)
            out.append("ok")
        except OSError as e:
            out.append(errno.errorcode.get(e.errno, str(e.errno)))
        finally:
            try:
                os.close(fd)
            except OSError:  # the layer stopped: its descriptors are gone with it
                pass

    th = threading.Thread(target=run, daemon=True)
    th.start()
    deadline = time.monotonic() + 5
    while faultfs.status(layer.sock)["waiting"] != 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert faultfs.status(layer.sock)["waiting"] == 1 and not out
    return th, out


def test_release_answers_a_call_waiting_in_a_stall(tmp_path):
    layer = _mount(tmp_path)
    try:
        th, out = _waiting_fsync(layer)
        t = time.monotonic()
        line = faultfs.release(layer.root, "t", layer.mnt)
        th.join(5)
        assert out == ["ok"] and time.monotonic() - t < 3
        assert line == "cleared the faultfs layer of t (fsync 600000 ms late, 1 call(s) waiting)"
        st = faultfs.status(layer.sock)
        assert st["delay_ms"] == {} and st["waiting"] == 0  # the layer stays, healed
        assert faultfs.release(layer.root, "t", layer.mnt) is None  # nothing held any more
    finally:
        faultfs.unmount(layer.root, "t", layer.mnt)


def test_a_layer_that_does_not_answer_is_stopped_and_its_waiting_call_fails(tmp_path):
    layer = _mount(tmp_path)
    pid = int((layer.root / "t.faultfs.pid").read_text())
    try:
        th, out = _waiting_fsync(layer)
        os.kill(pid, signal.SIGSTOP)  # a layer stuck: its socket accepts, nothing answers
        t = time.monotonic()
        line = faultfs.release(layer.root, "t", layer.mnt, timeout=0.5)
        th.join(5)
        assert out and out[0] in ("ENOTCONN", "ECONNABORTED", "EIO"), out
        assert line.startswith("stopped the faultfs layer of t (it did not answer: ")
        assert time.monotonic() - t < 10
        assert not faultfs._alive(pid) and faultfs.connection_id(layer.mnt) is None
        assert not faultfs._in_mounts(layer.mnt) and not layer.sock.exists()
    finally:
        if faultfs._alive(pid):
            os.kill(pid, signal.SIGKILL)
        faultfs.unmount(layer.root, "t", layer.mnt)


def test_a_layer_whose_files_are_gone_is_found_by_its_command_line(tmp_path):
    """A layer process with no pid file (a run killed while it started one): found and stopped."""
    sock = tmp_path / "data1.sock"
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", faultfs.DAEMON,
                          str(tmp_path / "data1.disk"), str(tmp_path / "data1"), str(sock)])
    try:
        deadline = time.monotonic() + 5
        while p.pid not in faultfs.layer_processes(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert faultfs.layer_processes(tmp_path) == [p.pid]
        line = faultfs.release(tmp_path, "data1", tmp_path / "data1", timeout=0.5)
        assert line.startswith("stopped the faultfs layer of data1 (it did not answer: ")
        assert p.wait(5) is not None and faultfs.layer_processes(tmp_path) == []
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("line, want", [
    ("36 29 0:52 / /root/.cache/ndbchaos/disks/p/data1 rw,nosuid,nodev,relatime shared:1 - fuse.ndbchaos-faultfs "
     "ndbchaos-faultfs rw,user_id=0,group_id=0,allow_other", ("/root/.cache/ndbchaos/disks/p/data1", 0, 52,
                                                             "fuse.ndbchaos-faultfs")),
    ("40 29 7:3 / /a\\040b rw - ext4 /dev/loop3 rw", ("/a b", 7, 3, "ext4")),
    ("garbage", None),
    ("1 2 x:y / /m rw - ext4 /dev/x rw", None),
])
def test_mountinfo_lines(line, want):
    assert faultfs.parse_mountinfo(line) == want


@pytest.mark.parametrize("text, want", [
    ("12:freezer:/docker/abc\n11:memory:/docker/abc\n0::/system.slice/docker-abc.scope\n",
     ("freezer/docker/abc", "freezer.state")),
    ("0::/system.slice/docker-abc.scope\n", ("system.slice/docker-abc.scope", "cgroup.freeze")),
    ("5:cpu,cpuacct:/docker/abc\n", None),
    ("", None),
])
def test_the_freezer_of_a_process(text, want):
    assert holds.freezer_path(text) == want


def test_describe_says_what_a_layer_does():
    st = {"delay_ms": {"write": 600000.0}, "fail": {"fsync": {"errno": "EIO", "p": 1.0}}, "lazy": True,
          "cut": True, "waiting": 2}
    assert faultfs.describe(st) == ("write 600000 ms late, fsync fails with EIO (p 1), unsynced writes kept, "
                                    "power cut, 2 call(s) waiting")
    assert faultfs.describe({"delay_ms": {}, "fail": {}, "lazy": False, "cut": False, "waiting": 0}) == ""


def test_a_process_that_is_not_stuck_is_not_said_to_be():
    assert holds.stuck(os.getpid()) is None and holds.stuck(0) is None


class _Container:
    def __init__(self, name, fails=0, error="tried to kill container, but did not receive an exit event"):
        self.name, self.fails, self.error, self.calls = name, fails, error, 0
        self.attrs, self.labels, self.status = {"State": {"Pid": 0}}, {}, "running"

    def remove(self, **kw):
        self.calls += 1
        if self.calls <= self.fails:
            raise RuntimeError(f"500 Server Error: Internal Server Error (\"Could not kill running container "
                               f"{self.name}, cannot remove - {self.error}\")")


def _docker(monkeypatch, containers, released=(["cleared the faultfs layer of data1 (write 600000 ms late)"], [])):
    order = []
    monkeypatch.setattr(CL.holds, "release", lambda p: (order.append("release"), released)[1])
    monkeypatch.setattr(CL.docker, "project_containers",
                        lambda p=None: (order.append("list"), [c for c in containers if c.calls <= c.fails])[1])
    monkeypatch.setattr(CL.docker, "project_networks", lambda p=None: [])
    monkeypatch.setattr(CL.disks, "release", lambda p: [f"disk {p}/data1"])
    monkeypatch.setattr(CL, "REMOVE_PAUSE_S", 0.0)
    return order


def test_sweep_releases_first_and_tries_a_container_again(monkeypatch):
    cs = [_Container("p-data1-1", fails=2), _Container("p-mgm1-1")]
    order = _docker(monkeypatch, cs)
    done, problems = CL.sweep("p")
    assert order[0] == "release" and problems == []
    assert done == ["cleared the faultfs layer of data1 (write 600000 ms late)", "container p-data1-1",
                    "container p-mgm1-1", "disk p/data1"]
    assert cs[0].calls == 3


def test_what_cannot_be_removed_is_one_line_and_the_rest_is_removed(monkeypatch, capsys):
    cs = [_Container("p-data1-1", fails=99), _Container("p-mgm1-1")]
    _docker(monkeypatch, cs, released=([], ["the faultfs layer of data1 (x) could not be stopped"]))
    done, problems = CL.sweep("p")
    assert "container p-mgm1-1" in done and "disk p/data1" in done
    assert problems == ["the faultfs layer of data1 (x) could not be stopped",
                        "container p-data1-1 (500 Server Error: Internal Server Error (\"Could not kill running "
                        "container p-data1-1, cannot remove - tried to kill container, but did not receive an exit "
                        "event\"))"]
    with pytest.raises(NdbChaosError, match="^could not remove the faultfs layer") as e:
        CL.reap("p")
    assert "\n" not in str(e.value)
    from ndbchaos.commands import reap as R
    monkeypatch.setattr(R, "docker_client", lambda: None)
    rc = R.run(SimpleNamespace(inventory=None, project="p"))
    out, err = capsys.readouterr()
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("ndbchaos reap: could not remove the faultfs layer of data1") and "p-data1-1" in err
    assert "removed container p-mgm1-1" in out and "removed disk p/data1" in out


class _Network:
    """A project's network that another project's container is still attached to (the replica's
    applier on the source's network): Docker refuses to remove it until that one is disconnected."""

    def __init__(self, name, attached):
        self.name, self.attached, self.disconnected = name, list(attached), []
        self.attrs = {}

    def reload(self):
        self.attrs = {"Containers": {c: {} for c in self.attached}}

    def disconnect(self, container, force=False):
        assert force
        self.attached.remove(container)
        self.disconnected.append(container)

    def remove(self):
        if self.attached:
            raise RuntimeError(f"409 Client Error: error while removing network: network {self.name} has active "
                               "endpoints")


def test_a_network_another_project_is_attached_to_is_removed(monkeypatch):
    net = _Network("p_net", ["applier-of-p-replica"])
    _docker(monkeypatch, [_Container("p-sql1-1")], released=([], []))
    monkeypatch.setattr(CL.docker, "project_networks", lambda p=None: [net])
    done, problems = CL.sweep("p")
    assert problems == [] and "network p_net" in done and net.disconnected == ["applier-of-p-replica"]


def test_a_node_address_is_on_its_own_project_network():
    from ndbchaos.runtimes import docker
    c = SimpleNamespace(attrs={"NetworkSettings": {"Networks": {
        "a_net": {"IPAddress": "10.213.90.104"},  # the source's network, the applier attached as the link
        "a-replica_net": {"IPAddress": "10.213.91.104"}}}})
    assert docker.container_ip(c, project="a-replica") == "10.213.91.104"
    assert docker.container_ip(c, project="a") == "10.213.90.104"
    assert docker.container_ip(c) == "10.213.90.104" and docker.container_ip(c, "a-replica_net") == "10.213.91.104"
    assert docker.container_ip(c, "other") is None


def test_aborting_the_connection_fails_a_waiting_call_whatever_the_layer_does(tmp_path):
    """The last resort for a layer process that survives SIGKILL (stuck in the kernel itself):
    its FUSE connection aborted through fusectl (mounted when it is not)."""
    layer = _mount(tmp_path)
    try:
        th, out = _waiting_fsync(layer)
        conn = faultfs.connection_id(layer.mnt)
        assert conn is not None
        assert faultfs.abort_connection(conn) is True and (faultfs.FUSECTL / str(conn)).is_dir()
        th.join(5)
        assert out and out[0] in ("ENOTCONN", "ECONNABORTED"), out
    finally:
        faultfs._stop([int((layer.root / "t.faultfs.pid").read_text())], grace=0)
        faultfs.unmount(layer.root, "t", layer.mnt)
    assert faultfs.connection_id(layer.mnt) is None and not faultfs._in_mounts(layer.mnt)


def test_status_of_a_project_it_cannot_attach_to_shows_its_traces(monkeypatch, capsys):
    """A killed run's partial project (some containers removed, one stuck): what its containers
    and disks show, and the reason in one line, exit 1."""
    from ndbchaos.commands import status as S
    monkeypatch.setattr(S, "docker_client", lambda: None)

    def attach(project):
        raise NdbChaosError(f"project {project}: node ids [('data', 11)] match no NDB layout (default, small)")

    monkeypatch.setattr(S.state, "attach", attach)
    monkeypatch.setattr(S.state, "traces", lambda p: ([
        {"kind": "stuck", "node": "data1", "detail": "its process 7 is in uninterruptible sleep (request_wait_answer)"},
        {"kind": "storage", "node": "data1", "detail": "faultfs: write 600000 ms late, 2 call(s) waiting"}], ["data1"]))
    monkeypatch.setattr(S.docker, "project_containers",
                        lambda p: [SimpleNamespace(name="p-data1-1", status="running")])
    rc = S.run(SimpleNamespace(project="p", json=False, no_netns=False))
    out, err = capsys.readouterr()
    assert rc == 1
    assert err == "ndbchaos status: project p: node ids [('data', 11)] match no NDB layout (default, small)\n"
    assert "p-data1-1" in out and "faultfs: write 600000 ms late" in out and "request_wait_answer" in out


def test_heal_releases_what_holds_a_node_even_when_the_cluster_cannot_be_attached(monkeypatch, capsys):
    from ndbchaos.commands import fault as F
    calls = []
    monkeypatch.setattr(F.holds, "release", lambda p, remount=False: (calls.append(remount), (
        ["cleared the faultfs layer of data1 (write 600000 ms late)", "thawed data4"], []))[1])

    def attach(project):
        raise NdbChaosError(f"project {project}: node ids match no NDB layout")

    monkeypatch.setattr(F.state, "attach", attach)
    rc = F.run(SimpleNamespace(kind="heal", project="p"))
    out, err = capsys.readouterr()
    assert calls == [True] and rc == 1
    assert out.splitlines() == ["cleared the faultfs layer of data1 (write 600000 ms late)", "thawed data4"]
    assert err == "ndbchaos fault heal: could not heal the rest (project p: node ids match no NDB layout)\n"


def test_a_frozen_container_docker_will_not_unpause_is_thawed_through_its_freezer(tmp_path, monkeypatch):
    class Frozen:
        name, labels, attrs = "p-data4-1", {"ndbchaos.node": "data4"}, {"State": {"Pid": 4242}}

        def unpause(self):
            raise RuntimeError("500 Server Error: Internal Server Error (\"timeout waiting for the freezer\")")

    state = tmp_path / "freezer.state"
    state.write_text("FROZEN")
    monkeypatch.setattr(holds, "freezer_file", lambda pid: state if pid == 4242 else None)
    line = holds.thaw(Frozen())
    assert state.read_text() == "THAWED"
    assert line == f"thawed data4 through {state} (Docker refused: 500 Server Error: Internal Server Error " \
                   "(\"timeout waiting for the freezer\"))"
    monkeypatch.setattr(holds, "freezer_file", lambda pid: None)
    with pytest.raises(NdbChaosError, match="^could not thaw data4: Docker refused .* cgroup was not found$"):
        holds.thaw(Frozen())
