"""Any topology: the catalogue on a layout generated from a spec, not the shipped default.

One node group of three replicas (NoOfReplicas=3, supported since NDB 8.0): a data node's loss
leaves two of three (more than half, the group present: the cluster survives with no
arbitrator asked), and the whole node group's loss is every data node's (the cluster stops, and
a system restart brings it back). The expectations come from the same rules as the default
layout's, for this layout; the run records the layout it ran on.

The data nodes run on disks of their own (--data-disk) under the faultfs layer, and the losses
are CI's subset of the storage scenarios: one data node lost as every one of its writes fails
(it shuts itself down; two of three left), another as its disk fills (which it must see), and
the whole node group as every data node loses power with the writes none had synced, after
which the system restart may lose only the GCP window. (A plain kill of one data node is the
first run's; here it would repeat the failing writes' rule at a minute's cost.) The cluster is kept
for a short `ndbchaos baseline --project` on it, then reaped."""

import json
import subprocess
import sys

import pytest

from ndbchaos.runtimes.compose import disks
from ndbchaos.history import History
from ndbchaos.report.results import attachments

from .helpers import allure_results, labelled, project_of, run_pytest, skip_without_ndb

SPEC = "nodegroups=1,replicas=3"
SCENARIOS = ("failing_writes_on_one_data_node", "power_loss_of_every_data_node", "fill_data_node_disk")


@pytest.mark.timeout(1200)
def test_one_nodegroup_of_three_replicas(tmp_path):
    skip_without_ndb()
    results = tmp_path / "allure-results"
    r = run_pytest(["scenarios", "-m", "not slow", "-k", " or ".join(f"[{n}]" for n in SCENARIOS),
                    "--engine", "ndb", "--ndb-layout", SPEC, "--data-disk", "512M", "-p", "no:cacheprovider", "-q",
                    "--keep-cluster", "--alluredir", str(results)], timeout=1100)
    out = r.stdout + r.stderr
    project = project_of(out)
    try:
        assert r.returncode == 0, out[-4000:]
        assert project, out[-2000:]
        # the layout's steady figures on the same cluster (`ndbchaos baseline --project`): every SQL
        # node served both workloads with no failure, and each role's containers were measured
        figures = tmp_path / "baseline.json"
        b = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "baseline", "--project", project, "--seconds", "3",
                            "--warmup", "1", "--json", str(figures)], capture_output=True, text=True, timeout=300)
        assert b.returncode == 0, (b.stdout + b.stderr)[-3000:]
        steady = {x["workload"]: x for x in json.loads(figures.read_text())["results"]}
        assert sorted(steady) == ["fakebook", "pk_update"], b.stdout
        for name, x in steady.items():
            assert x["ok"] > 0 and x["failed"] == 0 and sorted(x["per_node"]) == ["sql1", "sql2"], (name, x)
            assert 0 < x["p50_ms"] <= x["p99_ms"] <= x["max_ms"], (name, x)
            assert x["roles"]["data"]["containers"] == 3 and x["roles"]["data"]["memory_mib"] > 0, (name, x)
            assert x["roles"]["sql"]["containers"] == 2 and x["roles"]["data"]["cpu_cores"] > 0, (name, x)
    finally:
        if project:
            subprocess.run([sys.executable, "-m", "ndbchaos.cli", "reap", "--project", project],
                           capture_output=True, text=True, timeout=300)
    assert labelled("ps", project) == [] and labelled("network", project) == [], "cluster left behind"
    assert project not in disks.projects()

    by_name = {next(p["value"] for p in x.get("parameters", []) if p["name"] == "sc"): x
               for x in allure_results(results)}
    assert sorted(by_name) == sorted(SCENARIOS), sorted(by_name)
    for name, x in by_name.items():
        assert x["status"] == "passed", (name, x.get("statusDetails"))
    def record(name):
        src = next(a["source"] for a in attachments(by_name[name]) if a["name"] in ("run.jsonl", "run.nch"))
        return History.read(str(results / src)).run

    failing = record("failing_writes_on_one_data_node")
    data = [n for n in failing["topology"]["nodes"] if n["role"] == "data"]
    assert len(data) == 3 and {n["nodegroup"] for n in data} == {0}, data
    exp = failing["expectation"]
    # two of three left, the group present: more than half, no arbitrator asked
    assert exp["cluster_survives"] is True and "more than 1/2 nodes left" in exp["rule"], exp["rule"]
    power = record("power_loss_of_every_data_node")
    whole = power["expectation"]
    assert whole["cluster_survives"] is False and whole["recovery"] == "system_restart", whole
    assert whole["details"]["lost"] == sorted(n["name"] for n in data), json.dumps(whole)[:2000]
    # the layer really lost unsynced writes, and the ledger's losses all lie in the GCP window
    (w,) = [w for w in power["windows"] if w["kind"] == "power_loss"]
    assert "unsynced writes lost" in w["verification"][0], w
    assert sum(d["dropped_bytes"] for d in w["params"]["dropped"].values()) > 0, w["params"]
    assert w["verification"][-1].startswith("restarted"), w

    # the full disk: the node saw it (df in its container), shut itself down with a file system
    # error (9.7.2: 2813; documented: 2810), and the others served on
    full = record("fill_data_node_disk")
    (w,) = [w for w in full["windows"] if w["kind"] == "disk_full"]
    assert "as the node sees it" in w["verification"][0] and w["verification"][-1].startswith("ballast removed"), w
    target = next(n["nodeid"] for n in data if n["name"] == w["targets"][0])
    codes = [e.get("exit_code") for e in full["events"]
             if e.get("kind") == "forced_shutdown" and e.get("node") == target]
    assert set(codes) & {2813, 2810}, codes
    assert full["expectation"]["cluster_survives"] is True

    # every write failing: the layer counted the failures, the node shut down with a file system
    # error (9.7.2: 2809)
    (w,) = [w for w in failing["windows"] if w["kind"] == "failing_io"]
    assert "failed with EIO" in w["verification"][0] and w["verification"][-1].startswith("layer cleared"), w
    target = next(n["nodeid"] for n in data if n["name"] == w["targets"][0])
    codes = [e.get("exit_code") for e in failing["events"]
             if e.get("kind") == "forced_shutdown" and e.get("node") == target]
    assert codes and all(2801 <= c <= 2816 for c in codes), codes
