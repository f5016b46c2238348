"""The inventory backend against real hosts: the lab's eight containers running sshd, the MySQL
Cluster started on them over ssh (``ndbchaos lab up``), reached only over ssh and the SQL port.

* the default catalogue runs through ``--inventory`` and passes, with the report a container run
  has (phases, timeline, verdict, node states);
* bad inventories stop the session with one line before any fault;
* a dry run of the default catalogue prints every scenario's plan and changes nothing on any host
  (the processes of the cluster and of the framework, iptables rules, qdiscs, the files the
  framework writes);
* a controller SIGKILLed in the middle of a partition: the guard on each host removes the rules
  by itself, and ``ndbchaos reap --inventory`` then finds nothing; with a long guard, reap removes
  the rules and the guards itself.

Needs the NDB distribution (NDBCHAOS_NDB_DIST; skipped with the reason without it)."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ndbchaos.report.results import attachments

from .helpers import REPO, allure_results, catalogue, only_elsewhere, run_pytest, skip_without_ndb

EXAMPLE = REPO / "examples" / "inventory" / "hosts.yml"
CHAIN_GUARD_S = 20  # the controller-killed test's guard: long enough to verify the cut, short to wait for
#: the catalogue over ssh: "full" (every scenario of the default run, about as long as the
#: container run of it) or "subset" (CI: one scenario per way a fault reaches a host over ssh:
#: a kill, a freeze, a whole node group killed, an iptables partition; the container run of the
#: full catalogue covers the rest)
SSH_CATALOGUE = os.environ.get("NDBCHAOS_SSH_CATALOGUE", "full")
assert SSH_CATALOGUE in ("full", "subset"), f"NDBCHAOS_SSH_CATALOGUE={SSH_CATALOGUE!r}: full or subset"
# one scenario per way a fault reaches a host over ssh: a data node killed (and restarted by the
# inventory's start command), frozen, every data node of a group killed (a system restart), an
# iptables partition. The master's kill is the first one's with its target read from status,
# which every scenario reads; the arbitrator's and mysqld's are the same kill on a management or
# an SQL host, each restarted by its own start command as the data node's is: the full run has
# all three.
SSH_SUBSET = ("kill_one_data_node", "freeze_one_data_node", "kill_whole_nodegroup", "isolate_one_data_node")


@pytest.fixture(scope="module")
def lab():
    skip_without_ndb()
    from ndbchaos.runtimes.inventory import lab as L
    try:
        cluster = L.up(EXAMPLE, say=lambda s: None)
    except BaseException:
        L.down()
        raise
    yield cluster
    L.down()


def ndbchaos(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "ndbchaos.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def chains_on(cluster, node):
    code, out = cluster.container(node).remote.run("iptables -w 5 -S", timeout=15)
    assert code == 0, out
    return [ln.split()[1] for ln in out.splitlines() if ln.startswith("-N NDBCHAOS-")]


def guards_on(cluster, node):
    from ndbchaos.runtimes.inventory import guard
    return cluster.container(node).remote.run(guard.list_script(), timeout=15)[1].split()


def write_inventory(tmp_path, mutate) -> Path:
    doc = yaml.safe_load(EXAMPLE.read_text())
    mutate(doc)
    p = tmp_path / "bad.yml"
    p.write_text(yaml.safe_dump(doc))
    return p


NODES = ("data1", "data2", "data3", "data4", "mgm1", "mgm2", "sql1", "sql2")
#: what the framework could change on a host: the cluster's and its own processes (a restart gives
#: a new pid; a guard is a process), every iptables rule (counters aside), the qdiscs, and the
#: files it writes (/tmp/<run label>-<node>.start.sh and .log)
SNAPSHOT = ("ps -eo pid=,args= | grep -E 'ndbmtd|ndbd|ndb_mgmd|mysqld|ndbchaos' | grep -v -e grep -e 'ps -eo' | sort; "
            "echo ---; iptables-save 2>/dev/null | grep -v '^#' | sed 's/\\[[0-9]*:[0-9]*\\]//'; "
            "echo ---; tc qdisc show 2>/dev/null; echo ---; ls -1 /tmp | grep -i ndbchaos; exit 0")


def snapshot(cluster) -> dict[str, str]:
    out = {}
    for n in NODES:
        code, text = cluster.container(n).remote.run(SNAPSHOT, timeout=30)
        assert code == 0, (n, text)
        out[n] = text
    return out


@pytest.mark.timeout(900)
def test_a_dry_run_prints_every_plan_and_changes_nothing_on_any_host(lab):
    before = snapshot(lab)
    assert any("ndbmtd" in v for v in before.values()), before  # the snapshot sees the cluster
    r = run_pytest(["scenarios", "-m", "not slow", "-p", "no:cacheprovider", "-q", "--inventory", str(EXAMPLE),
                    "--dry-run", "--seed", "7", "-rs"], timeout=800)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    planned = set(re.findall(r"^ndbchaos dry run: (\S+) \(", out, re.M))
    # what the session would play here: every scenario of the default run that can act on these hosts
    runnable = {sc.name for _, sc in catalogue() if not sc.slow and sc.why_not_on(lab) is None}
    assert runnable and planned == runnable, (sorted(runnable - planned), sorted(planned - runnable))
    assert "fault        kill on data" in out and "kill switch  may be down:" in out, out[-3000:]
    assert "--seed 7 plays this plan" in out
    after = snapshot(lab)
    assert after == before, {n: (before[n], after[n]) for n in NODES if before[n] != after[n]}


@pytest.mark.timeout(2400)
def test_default_catalogue_over_ssh(lab):
    # kept after the run (reports/ is output only): `ndbchaos summary reports/inventory-allure-results`
    # prints what each scenario measured over ssh, next to the container run's reports/allure-results
    results = REPO / "reports" / "inventory-allure-results"
    shutil.rmtree(results, ignore_errors=True)
    only = ["-k", " or ".join(f"[{n}]" for n in SSH_SUBSET)] if SSH_CATALOGUE == "subset" else []
    r = run_pytest(["scenarios", "-m", "not slow", *only, "-p", "no:cacheprovider", "-q", "--inventory", str(EXAMPLE),
                    "--alluredir", str(results)], timeout=2100)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "run label ndbchaos-inv-lab" in out, out[-2000:]
    by_name = {next(p["value"] for p in x.get("parameters", []) if p["name"] == "sc"): x
               for x in allure_results(results)}
    # client-path faults need the toxiproxy, storage faults the bounded disks, a backup's restore a
    # fresh cluster of containers, that the container backend places (and adding a node group
    # spare data nodes): skipped over ssh with why
    proxied = {sc.name for _, sc in catalogue()
               if sc.family == "client_path" or sc.needs_disk or getattr(sc, "needs", None)}
    for name in SSH_SUBSET + (("kill_master_data_node", "kill_arbitrator", "lose_one_sql_node")
                              if SSH_CATALOGUE == "full" else ()):
        assert name in by_name, sorted(by_name)
    for name, x in by_name.items():
        if name in only_elsewhere("ndb") or name in proxied:
            assert x["status"] == "skipped", (name, x["status"])
            continue
        assert x["status"] == "passed", (name, x.get("statusDetails"))
        names = {a["name"] for a in attachments(x)}
        for want in ("node states before", "node states after", "run.jsonl", "timeline", "verdict"):
            assert want in names, (name, sorted(names))
    kill = by_name["kill_one_data_node"]
    assert [s["name"].split(":")[0] for s in kill["steps"][:3]] == ["baseline", "fault", "recovery"]
    params = {p["name"]: p["value"] for p in kill.get("parameters", []) if p["name"] != "sc"}
    assert {"detection [s]", "recovery [s]", "outage (all SQL nodes) [s]"} <= set(params), sorted(params)
    # Nothing is left on the hosts, and the cluster still runs: the framework detached.
    assert all(not chains_on(lab, n) for n in ("data1", "data2", "data3", "data4", "sql1", "sql2"))
    r = ndbchaos("reap", "--inventory", str(EXAMPLE))
    assert r.returncode == 0 and "nothing left" in r.stdout, r.stdout + r.stderr
    assert lab.status().healthy


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["hosts"].update(sql2="ssh://root@10.213.78.250"), "host sql2 (ssh://root@10.213.78.250) unreachable"),
    (lambda d: d["nodes"][2].update(nodeid=19), "data1: node id 19 is not in the cluster's configuration"),
    (lambda d: d["nodes"][3].update(process="ndbmtd .*--ndb-nodeid=99( |$)"), "data2: no process found on host data2"),
    (lambda d: d["nodes"].append(dict(d["nodes"][2])), "duplicate node name 'data1'"),
    (lambda d: d["nodes"][2].update(nodegroup=1), "data1: node group 1 in the inventory, 0 in the cluster"),
], ids=["unreachable_host", "wrong_node_id", "process_not_found", "duplicate_node", "wrong_nodegroup"])
def test_bad_inventories_stop_before_any_fault(lab, tmp_path, mutate, expected):
    bad = write_inventory(tmp_path, mutate)
    doc = yaml.safe_load(bad.read_text())
    doc["ssh"]["connect_timeout"] = 3
    bad.write_text(yaml.safe_dump(doc))
    r = run_pytest(["scenarios", "-m", "datanode_loss", "-k", "kill_one_data_node", "-p", "no:cacheprovider", "-q",
                    "--inventory", str(bad)], timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out[-3000:]
    lines = [ln for ln in out.splitlines() if "ndbchaos: inventory" in ln]
    assert len(lines) == 1 and expected in lines[0], out[-3000:]
    assert "Traceback" not in out and "inject" not in out, out[-3000:]
    assert lab.status().healthy  # nothing was done to the cluster


def hold_partition(node: str, guard_s: int) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([sys.executable, str(REPO / "tests" / "integration" / "hold_partition.py"), str(EXAMPLE),
                          node], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "NDBCHAOS_GUARD_S": str(guard_s), "PYTHONPATH": str(REPO)})
    line = p.stdout.readline()
    if not line.startswith("APPLIED "):
        p.kill()
        raise AssertionError(f"the controller did not apply the partition: {line}{p.communicate()[1][-2000:]}")
    return p, line.split()[1]


@pytest.mark.timeout(600)
def test_the_guard_heals_a_partition_whose_controller_was_killed(lab):
    # An SQL node cut off from every other member: the cluster goes on without it and takes it
    # back when it can talk again, so the next test finds a healthy cluster.
    p, chain = hold_partition("sql2", CHAIN_GUARD_S)
    t_kill = time.monotonic()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    assert chain in chains_on(lab, "sql2"), "the partition was not in place when the controller died"
    assert any(g.endswith(chain) for g in guards_on(lab, "sql2"))
    from ndbchaos.runtimes.inventory.guard import wait_gone
    waited = wait_gone(lab.container("sql2").remote, chain, CHAIN_GUARD_S + 30)
    assert waited is not None, f"{chain} still on sql2 {CHAIN_GUARD_S + 30} s after the controller died"
    gone_after = time.monotonic() - t_kill
    for n in ("data1", "data2", "data3", "data4", "mgm1", "mgm2"):
        assert chain not in chains_on(lab, n), n
    assert gone_after >= CHAIN_GUARD_S - 5, f"the rules went after {gone_after:.1f} s, before the guard's deadline"
    r = ndbchaos("reap", "--inventory", str(EXAMPLE))
    assert r.returncode == 0 and "nothing left" in r.stdout, r.stdout + r.stderr
    lab.wait_healthy(120)


@pytest.mark.timeout(600)
def test_reap_removes_what_a_killed_controller_left(lab):
    p, chain = hold_partition("sql1", 600)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=10)
    assert chain in chains_on(lab, "sql1")
    r = ndbchaos("reap", "--inventory", str(EXAMPLE))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"sql1: removed {chain}" in r.stdout and f"disarmed ndbchaos-guard-{chain}" in r.stdout, r.stdout
    assert not chains_on(lab, "sql1") and not guards_on(lab, "sql1")
    r = ndbchaos("reap", "--inventory", str(EXAMPLE))
    assert "nothing left" in r.stdout, r.stdout
    lab.wait_healthy(120)
