"""Any topology: the catalogue on a layout generated from a spec, not the shipped default.

One node group of three replicas (NoOfReplicas=3, supported since NDB 8.0): a data node's loss
leaves two of three (more than half, the group present: the cluster survives with no
arbitrator asked), and the whole node group's loss is every data node's (the cluster stops, and
a system restart brings it back). The expectations come from the same rules as the default
layout's, for this layout; the run records the layout it ran on.

The data nodes run on disks of their own (--data-disk), so the storage scenario runs here too: a
data node's disk filled, which it must see, and which shuts it down (two of three left)."""

import json

import pytest

from ndbchaos import disks
from ndbchaos.history import History
from ndbchaos.report.results import attachments

from .helpers import allure_results, labelled, project_of, run_pytest, skip_without_ndb

SPEC = "nodegroups=1,replicas=3"
SCENARIOS = ("kill_one_data_node", "kill_whole_nodegroup", "fill_data_node_disk")


@pytest.mark.timeout(1200)
def test_one_nodegroup_of_three_replicas(tmp_path):
    skip_without_ndb()
    results = tmp_path / "allure-results"
    r = run_pytest(["scenarios", "-m", "not slow", "-k", " or ".join(f"[{n}]" for n in SCENARIOS),
                    "--engine", "ndb", "--ndb-layout", SPEC, "--data-disk", "512M", "-p", "no:cacheprovider", "-q",
                    "--alluredir", str(results)], timeout=1100)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    project = project_of(out)
    assert project, out[-2000:]
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

    one = record("kill_one_data_node")
    data = [n for n in one["topology"]["nodes"] if n["role"] == "data"]
    assert len(data) == 3 and {n["nodegroup"] for n in data} == {0}, data
    exp = one["expectation"]
    # two of three left, the group present: more than half, no arbitrator asked
    assert exp["cluster_survives"] is True and "more than 1/2 nodes left" in exp["rule"], exp["rule"]
    whole = record("kill_whole_nodegroup")["expectation"]
    assert whole["cluster_survives"] is False and whole["recovery"] == "system_restart", whole
    assert whole["details"]["lost"] == sorted(n["name"] for n in data), json.dumps(whole)[:2000]

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
