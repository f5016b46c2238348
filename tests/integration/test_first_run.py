"""The spine, end to end: the datanode_loss scenario on a real cluster produces a passed Allure
result with the measured outage and recovery times, and leaves nothing behind."""

from .helpers import allure_results, labelled, project_of, run_pytest


def test_datanode_loss_scenario_end_to_end(tmp_path):
    results = tmp_path / "allure-results"
    r = run_pytest(["scenarios", "-m", "datanode_loss", "-p", "no:cacheprovider", "-q",
                    "--alluredir", str(results)])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    project = project_of(out)
    assert project, out[-2000:]
    assert labelled("ps", project) == [] and labelled("network", project) == [], "cluster left behind"

    res = [x for x in allure_results(results) if x["name"] == "test_kill_one_data_node"]
    assert len(res) == 1 and res[0]["status"] == "passed", res
    params = {p["name"]: p["value"] for p in res[0].get("parameters", [])}
    for name in ("detection", "rejoin", "outage (all SQL nodes)"):
        assert name in params, sorted(params)
    steps = [s["name"] for s in res[0]["steps"]]
    assert any(s.startswith("baseline") for s in steps) and any(s.startswith("fault") for s in steps) \
        and any(s.startswith("recovery") for s in steps), steps
    names = set()

    def walk(node):
        for a in node.get("attachments", []):
            names.add(a["name"])
        for s in node.get("steps", []):
            walk(s)
    walk(res[0])
    for want in ("node states before", "node states after", "history.jsonl", "timeline", "verdict"):
        assert want in names, sorted(names)
    assert (results / "environment.properties").exists()
