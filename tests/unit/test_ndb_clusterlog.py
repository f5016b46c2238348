"""ClusterLogFollower: incremental reads by offset, partial lines, rotation. The "container" runs the
follower's exec command on this machine (the same sh script the container would run)."""

import calendar
import datetime as dt
import subprocess
from types import SimpleNamespace

from ndbchaos import topology as TP
from ndbchaos.clock import RunClock
from ndbchaos.engines.ndb.clusterlog import ClusterLogFollower, cluster_log_path


class LocalContainer:
    status = "running"
    name = "local"

    def reload(self):
        pass

    def exec_run(self, cmd, user="", demux=False):
        r = subprocess.run(cmd, capture_output=True)
        return SimpleNamespace(exit_code=r.returncode, output=r.stdout + r.stderr)


def make(tmp_path):
    node = TP.Node("mgm1", TP.MGM, "c-mgm1", nodeid=1)
    topo = TP.Topology("p", "ndb", [node])
    wall0 = calendar.timegm(dt.datetime(2026, 6, 6, 18, 38, 0).timetuple())
    cl = SimpleNamespace(topology=topo, clock=RunClock(mono0=0.0, wall0=wall0))
    cl.container = lambda n: LocalContainer()
    path = tmp_path / "ndb_1_cluster.log"
    return cl, path


LINE1 = "2026-06-06 18:38:12 [MgmtSrvr] ALERT    -- Node 11: Node 12 Disconnected\n"
LINE2 = "2026-06-06 18:38:13 [MgmtSrvr] ALERT    -- Node 11: All nodes completed failure of Node 12\n"


def test_path():
    assert cluster_log_path(2) == "/var/lib/mysql/ndb_2_cluster.log"


def test_follow_incrementally_with_partial_lines_and_rotation(tmp_path):
    cl, path = make(tmp_path)
    f = ClusterLogFollower(cl, path=str(path))
    assert f.node.name == "mgm1"
    assert f.poll() == []  # no file yet
    path.write_text("2026-06-06 18:38:11 [MgmtSrvr] INFO     -- Id: 1, Command port: *:1186\n" + LINE1[:30])
    assert f.poll() == []  # the first line is not an event, the second is incomplete
    with open(path, "a") as fh:
        fh.write(LINE1[30:] + LINE2)
    evs = f.poll()
    assert [e["kind"] for e in evs] == ["node_disconnected", "node_failure_completed"]
    assert evs[0]["t"] == 12.0 and evs[1]["t"] == 13.0 and evs[0]["log"] == "mgm1"
    assert f.poll() == []
    path.write_text(LINE2)  # truncated: shorter than what was read
    evs = f.poll()
    assert [e["kind"] for e in evs] == ["node_failure_completed"] and not f.errors
    # rotation: ndb_mgmd renames the file and starts a new one, which may already be longer
    path.rename(tmp_path / "ndb_1_cluster.log.1")
    path.write_text(LINE1 * 5)
    evs = f.poll()
    assert [e["kind"] for e in evs] == ["node_disconnected"] * 5


def test_seek_end_skips_what_the_log_held(tmp_path):
    cl, path = make(tmp_path)
    f = ClusterLogFollower(cl, path=str(path))
    f.seek_end()  # no file yet: read it from its start once it exists
    assert f.offset == 0 and not f.errors
    path.write_text(LINE1 * 3)
    f.seek_end()
    assert f.offset == len(LINE1) * 3 and f.poll() == []
    with open(path, "a") as fh:
        fh.write(LINE2)
    assert [e["kind"] for e in f.poll()] == ["node_failure_completed"]
