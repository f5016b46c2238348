"""Operations under load on a layout with spare data nodes: the online add of a node group.

``nodegroups=1,replicas=2,spare=2`` starts two data nodes in node group 0 and two in none
(NodeGroup=65536). ``add_nodegroup_under_load`` then runs, under the ledger's load, ``CREATE
NODEGROUP`` of the spares, ``REORGANIZE PARTITION`` and ``OPTIMIZE TABLE`` of the workload's
table; the ledger's fragments must then be on the new group's nodes too (ndbinfo), nothing may be
lost, and the cleanup gives the spares back (``DROP NODEGROUP``). The other operations (schema
change, backup and a verified restore) run in the default catalogue's session (test_first_run)."""

import pytest

from ndbchaos.checks import check_run
from ndbchaos.history import History
from ndbchaos.report.results import attachments

from .helpers import allure_results, labelled, project_of, run_pytest, skip_without_ndb

SPEC = "nodegroups=1,replicas=2,sql=2,mgm=1,spare=2"
SCENARIO = "add_nodegroup_under_load"


@pytest.mark.timeout(900)
def test_a_node_group_of_spares_joins_under_load(tmp_path):
    skip_without_ndb()
    results = tmp_path / "allure-results"
    r = run_pytest(["scenarios", "-m", "operations and not slow", "-k", f"[{SCENARIO}]", "--engine", "ndb",
                    "--ndb-layout", SPEC, "-p", "no:cacheprovider", "-q", "--alluredir", str(results)], timeout=800)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    project = project_of(out)
    assert project, out[-2000:]
    assert labelled("ps", project) == [] and labelled("network", project) == [], "cluster left behind"

    (x,) = allure_results(results)
    assert x["status"] == "passed", x.get("statusDetails")
    src = next(a["source"] for a in attachments(x) if a["name"] in ("run.jsonl", "run.nch"))
    history = History.read(str(results / src))
    proc = history.run["procedure"]
    assert [s["name"] for s in proc["steps"]] == ["create nodegroup", "reorganize ledger", "optimize ledger"]
    assert all(s["outcome"] == "done" for s in proc["steps"]), proc["steps"]
    assert "Nodegroup 1 created" in proc["steps"][0]["detail"]
    (spread,) = proc["outcomes"]
    assert spread["holds"] is True and "13" in spread["detail"] and "14" in spread["detail"], spread
    # the record's topology is the cluster's at the end of the procedure: the spares in group 1
    groups = {n["nodeid"]: n["nodegroup"] for n in history.run["topology"]["nodes"] if n["role"] == "data"}
    assert groups == {11: 0, 12: 0, 13: 1, 14: 1}, history.run["topology"]

    # the saved run judged again gives the same verdict, each step's client impact in it
    verdict = check_run(history)
    assert verdict.valid is True, verdict.summary
    steps = verdict.procedure.steps
    assert [s.name for s in steps] == ["create nodegroup", "reorganize ledger", "optimize ledger"]
    assert all(s.ok > 0 for s in steps[1:]), [(s.name, s.ok) for s in steps]
    assert verdict.durability.lost == 0
