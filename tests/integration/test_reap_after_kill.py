"""A way out that always works: a run killed with SIGKILL in the middle of every storage fault and
of a freeze leaves a cluster `ndbchaos status` can still describe and `ndbchaos reap` removes
whole (exit 0): no container, network, FUSE mount, loop device, layer process or ballast of the
project is left.

One cluster holds every fault at once, to cost one start (CI's budget): the default layout's four
data nodes on bounded disks under the faultfs layer, each layer holding a different fault when the
run is killed:

- data1: a stalled disk (every write and fsync 600 s late): its writes wait in the layer, read by
  it and unanswered, so even SIGKILL leaves the process there (Docker: "tried to kill container,
  but did not receive an exit event"): what made reap end in a traceback before;
- data2: failing I/O (every write fails with EIO: the node shuts itself down);
- data3: lazy writes (kept in the layer until a sync), then the power cut (what was kept is
  lost, every later write fails), and then its layer stops answering (SIGSTOP): every call of
  the node waits on a layer that will never answer;
- data4: a full disk (its ballast) and the node frozen (docker pause).

The run is a small driver on the real cluster (the storage faults' own classes, verified as in a
scenario), killed once all are in place.
"""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import REPO, labelled, skip_without_ndb

DRIVER = '''
import os, signal, sys, time
from ndbchaos.runtimes.compose import disks, faultfs
from ndbchaos.runtimes.compose.cluster import ComposeCluster
from ndbchaos.engines import get_engine
from ndbchaos.faults.disk import DiskFull
from ndbchaos.faults.node import Pause
from ndbchaos.faults.storage import FailingIO, SlowDisk
from ndbchaos.waiting import wait_until

t0 = time.monotonic()
c = ComposeCluster(get_engine("ndb"), {"data_disk_mb": 512, "keep": True})
print("PROJECT", c.project, flush=True)
c.up()
print(f"UP {time.monotonic() - t0:.1f} s", flush=True)
d = sorted(c.topology.data_nodes, key=lambda n: n.name)
assert len(d) == 4, [n.name for n in d]
svc = lambda n: n.labels.get("com.docker.compose.service", n.name)
# lazy writes first, while every node still writes: kept until a sync, as a page cache keeps them
lazy = disks.layer_of(c.project, svc(d[2]))
faultfs.set_faults(lazy, faultfs.Faults(lazy=True))
# NDB syncs its REDO log right after each write: what is kept at a given moment comes and goes
kept = wait_until(lambda: faultfs.status(lazy)["kept_bytes"], 30, poll=0.1)
if not kept:
    sys.exit(f"{d[2].name} wrote nothing through its lazy layer within 30 s")
print(f"LAZY {d[2].name} {kept} bytes kept until their sync", flush=True)
print("FAILING", FailingIO(c, [d[1]], call="write", errno="EIO").inject().verification, flush=True)
print("STALL", SlowDisk(c, [d[0]], delay_ms=600_000).inject().verification, flush=True)
print("FULL", DiskFull(c, [d[3]]).inject().verification, flush=True)
print("FROZEN", Pause(c, [d[3]], backend="native").inject().verification, flush=True)
# the power goes off under data3 (what it kept is lost, every later write fails), then its layer
# stops answering
print("CUT", d[2].name, faultfs.drop(lazy, cut=True), flush=True)
os.kill(int((disks.project_dir(c.project) / f"{svc(d[2])}.faultfs.pid").read_text()), signal.SIGSTOP)
print(f"READY {time.monotonic() - t0:.1f} s", flush=True)
time.sleep(3600)
'''


def _require_host():
    """Bounded disks and the faultfs layer need root, loop devices and FUSE: without them the test
    skips with the reason, and fails under CI=true (CI provides them)."""
    from ndbchaos.runtimes.compose import disks, faultfs
    why = disks.unavailable() or faultfs.unavailable()
    if why:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"bounded disks with the faultfs layer under CI=true: {why}")
        pytest.skip(f"bounded disks with the faultfs layer: {why}")


def _left(project: str) -> dict[str, list[str]]:
    """What of ``project`` is still on this host, by kind."""
    from ndbchaos.runtimes.compose import disks, faultfs
    root = disks.project_dir(project)
    mounts = [ln.split()[4] for ln in Path("/proc/self/mountinfo").read_text().splitlines()
              if f"/{project}" in ln.split()[4]]
    loops = subprocess.run(["losetup", "-n", "-O", "NAME,BACK-FILE", "-l"], capture_output=True, text=True,
                           timeout=30).stdout
    return {"containers": labelled("ps", project), "networks": labelled("network", project), "mounts": mounts,
            "loops": [ln for ln in loops.splitlines() if f"/{project}/" in ln],
            "layer processes": [str(p) for p in faultfs.layer_processes(root)],
            "files": sorted(os.listdir(root)) if root.exists() else []}  # never into a mount: it may be stalled


def _cli(*args, timeout=300):
    t = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "ndbchaos.cli", *args], cwd=REPO, capture_output=True, text=True,
                       timeout=timeout)
    return r, time.monotonic() - t


@pytest.mark.timeout(900)
def test_reap_after_sigkill_in_every_storage_fault_and_a_freeze(tmp_path):
    skip_without_ndb()
    _require_host()
    (tmp_path / "driver.py").write_text(DRIVER)
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, str(tmp_path / "driver.py")], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    lines, project = [], None
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("PROJECT "):
                project = line.split()[1]
            if line.startswith("READY"):
                break
        out = "".join(lines)
        assert project and lines and lines[-1].startswith("READY"), out[-4000:]
        p.kill()  # SIGKILL: nothing of the run's own teardown runs
        p.wait(30)
        held = _left(project)
        assert held["containers"] and held["mounts"] and held["loops"] and len(held["layer processes"]) == 4, held

        # status describes what the killed run left, without a traceback, within its bounds
        r, status_s = _cli("status", "--project", project, timeout=240)
        text = r.stdout + r.stderr
        assert "Traceback" not in text and r.returncode in (0, 1), text[-3000:]
        assert re.search(r"storage +data1 +faultfs: write 600000 ms late, fsync 600000 ms late", text), text[-3000:]
        assert re.search(r"storage +data2 +faultfs: write fails with EIO", text), text[-3000:]
        assert re.search(r"storage +data3 +faultfs layer not answering", text), text[-3000:]
        assert re.search(r"disk_full +data4 +ballast \d+ MB on its disk", text), text[-3000:]
        assert re.search(r"pause +data4 +container paused", text), text[-3000:]

        # reap: exit 0, and nothing of the project left
        r, reap_s = _cli("reap", "--project", project, timeout=300)
        text = r.stdout + r.stderr
        assert r.returncode == 0 and "Traceback" not in text, text[-3000:]
        assert "cleared the faultfs layer of data1 (write 600000 ms late, fsync 600000 ms late" in r.stdout, r.stdout
        assert "stopped the faultfs layer of data3 (it did not answer" in r.stdout, r.stdout
        assert "thawed data4" in r.stdout, r.stdout
        left = _left(project)
        assert not any(left.values()), left
        print(f"driver ready {float(lines[-1].split()[1]):.1f} s; status {status_s:.1f} s; reap {reap_s:.1f} s; "
              f"whole test {time.monotonic() - t0:.1f} s")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if project and any(_left(project).values()):
            _cli("reap", "--project", project)
