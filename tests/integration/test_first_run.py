"""The spine, end to end: the default scenario catalogue on a real cluster produces passed Allure
results with the measured outage and recovery times, an HTML report, and leaves nothing behind.

Once per engine: NDB (a real MySQL Cluster, from an image present locally or one built from
NDBCHAOS_NDB_DIST; skipped with the reason when neither is available) and Galera. The storage
scenarios need data nodes on disks of their own (--data-disk), which the default run does not
give: they skip with that reason (test_layouts.py runs them).

NDBCHAOS_FIRST_RUN_GALERA=subset (CI) runs Galera's catalogue on one scenario of each kind the
checks below name (a kill, a node group, the arbitrator, an SQL node, a partition, a client-path
latency) instead of all of it: Galera is the peer, and test_faults_galera.py covers its faults."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ndbchaos.gate.spec import load as load_gate, matches as gate_matches
from ndbchaos.report.results import attachments

from .helpers import (REPO, allure_results, assert_rebuilt_like_live, catalogue, labelled, module_markers,
                      only_elsewhere, project_of, run_pytest, skip_without_ndb)

EXAMPLE_GATE = REPO / "examples" / "gate" / "availability.toml"
GALERA = os.environ.get("NDBCHAOS_FIRST_RUN_GALERA", "full")
assert GALERA in ("full", "subset"), f"NDBCHAOS_FIRST_RUN_GALERA={GALERA!r}: full or subset"
#: the scenarios every run must have played (and Galera's subset)
ESSENTIAL = ("kill_one_data_node", "kill_whole_nodegroup", "kill_arbitrator", "lose_one_sql_node",
             "isolate_one_data_node", "latency_on_one_sql_node")
ALLURE = Path(os.environ.get("NDBCHAOS_TOOLS", Path.home() / ".cache" / "ndbchaos" / "tools")) \
    / "npm" / "node_modules" / ".bin" / "allure"


def _attachment_source(result, name: str) -> str:
    found = [a["source"] for a in attachments(result) if a["name"] == name]
    assert found, f"no attachment {name!r}"
    return found[0]


def _attachments(result) -> set[str]:
    return {a["name"] for a in attachments(result)}


# The catalogue takes about 6 minutes on Galera and 10 on NDB on a quiet 2-core machine; allow
# for a loaded one.
@pytest.mark.timeout(2700)
@pytest.mark.parametrize("engine", ["ndb", "galera"])
def test_default_catalogue_end_to_end(tmp_path, engine):
    if engine == "ndb":
        skip_without_ndb()
    results, gate_out = tmp_path / "allure-results", tmp_path / "gate.json"
    subset = engine == "galera" and GALERA == "subset"
    only = ["-k", " or ".join(f"[{n}]" for n in ESSENTIAL)] if subset else []
    # error_insert needs data nodes built with error insertion: test_error_insert_live.py plays
    # them on a cluster of that build
    r = run_pytest(["scenarios", "-m", "not slow and not error_insert", *only, "-p", "no:cacheprovider", "-q",
                    "--engine", engine, "--alluredir", str(results), "--gate", str(EXAMPLE_GATE),
                    "--gate-out", str(gate_out)],
                   timeout=2400)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    project = project_of(out)
    assert project, out[-2000:]
    assert labelled("ps", project) == [] and labelled("network", project) == [], "cluster left behind"

    res = allure_results(results)
    # each result's parameter "sc" is the scenario declaration's name (its test id's parameter:
    # test_datanode_loss[kill_one_data_node])
    by_name = {next(p["value"] for p in x.get("parameters", []) if p["name"] == "sc"): x for x in res}
    for name in ESSENTIAL:
        assert name in by_name, sorted(by_name)
    if subset:
        assert set(by_name) == set(ESSENTIAL), sorted(by_name)
    if engine == "ndb":
        assert {"kill_master_data_node", "kill_every_management_node"} <= set(by_name), sorted(by_name)
    needs_disk = {sc.name for _, sc in catalogue() if sc.needs_disk}
    needs_layout = {sc.name for _, sc in catalogue() if getattr(sc, "needs", None)}  # e.g. spare data nodes
    for name, x in list(by_name.items()):
        if x["status"] == "skipped" and name in needs_disk and name not in only_elsewhere(engine):
            # a storage fault on a cluster without bounded disks: skipped with how to give them
            assert "--data-disk" in (x.get("statusDetails") or {}).get("message", ""), (name, x.get("statusDetails"))
            del by_name[name]
            continue
        if x["status"] == "skipped" and name in needs_layout and name not in only_elsewhere(engine):
            # an operation this layout cannot play (no spare data nodes): skipped with the layout to use
            assert "--ndb-layout" in (x.get("statusDetails") or {}).get("message", ""), (name, x.get("statusDetails"))
            del by_name[name]
            continue
        if x["status"] == "skipped" and name in only_elsewhere(engine):
            # a declaration for other engines only: skipped with its reason, never run
            assert "only:" in (x.get("statusDetails") or {}).get("message", ""), (name, x.get("statusDetails"))
            del by_name[name]
            continue
        assert x["status"] == "passed", (name, x.get("statusDetails"))
        names = _attachments(x)
        for want in ("node states before", "node states after", "run.jsonl", "timeline", "verdict"):
            assert want in names, (name, sorted(names))
    kill = by_name["kill_one_data_node"]
    params = {p["name"]: float(p["value"]) for p in kill.get("parameters", []) if p["name"] != "sc"}
    assert {"detection [s]", "recovery [s]", "outage (all SQL nodes) [s]"} <= set(params), sorted(params)
    steps = [s["name"] for s in kill["steps"]]
    assert [s.split(":")[0] for s in steps[:3]] == ["baseline", "fault", "recovery"], steps
    # The saved run judged again from its file alone gives the live verdict.
    src = _attachment_source(kill, "run.jsonl")
    live = json.loads((results / _attachment_source(kill, "verdict")).read_text())
    c = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "check", "--compact", "--quiet", str(results / src)],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    again = json.loads(c.stdout)
    assert c.returncode == 0 and again["valid"] is True, c.stdout[-2000:] + c.stderr[-2000:]
    assert {k: v["valid"] for k, v in again["checks"].items()} == {k: v["valid"] for k, v in live["checks"].items()}
    assert (again["checks"]["expectation"]["details"]["objectives"]
            == live["checks"]["expectation"]["details"]["objectives"])
    # ... and its report is rebuilt from the file alone as the live one, byte for byte (six runs:
    # each takes a few seconds to judge and draw again)
    assert assert_rebuilt_like_live(results, tmp_path / "rebuilt", limit=6) == 6
    assert (results / "environment.properties").exists()
    env = (results / "environment.properties").read_text()
    assert f"engine={engine}\n" in env, env

    # The example gate passes on a healthy run; the slow scenarios it names (deselected by
    # "not slow"), and in Galera's subset those out of it, are NOT EVALUATED, and nothing else is;
    # judged again offline from the saved results, every judged row is the same.
    gate = json.loads(gate_out.read_text())
    assert gate["result"] in ("pass", "warn"), [x for x in gate["rows"] if x["status"] == "FAIL"]
    assert "availability gate" in out and ("gate PASS" in out or "gate WARN" in out), out[-3000:]
    spec = load_gate(EXAMPLE_GATE)
    slow_named = {test_id for test_id, sc in catalogue() if sc.slow and not sc.skip_reason(engine) and any(
        gate_matches(e, [test_id, sc.name], [*module_markers(test_id), "slow"]) for e in spec.entries)}
    assert "test_datanode_loss[kill_again_while_recovering]" in slow_named, sorted(slow_named)
    left_out = {test_id for test_id, sc in catalogue() if subset and sc.name not in ESSENTIAL and not sc.slow
                and not sc.skip_reason(engine) and any(gate_matches(e, [test_id, sc.name], module_markers(test_id))
                                                       for e in spec.entries)}
    assert {x["scenario"] for x in gate["rows"] if x["status"] == "NOT EVALUATED" and x["objective"] == "(all)"
            } == slow_named | left_out
    again = tmp_path / "again.json"
    g = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "gate", str(EXAMPLE_GATE), str(results),
                        "--json-out", str(again)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert g.returncode == 0, g.stdout[-2000:] + g.stderr[-2000:]
    judged = [x for x in gate["rows"] if x["status"] != "NOT EVALUATED"]
    assert [x for x in json.loads(again.read_text())["rows"] if x["status"] != "NOT EVALUATED"] == judged

    # The HTML report, as `bin/chaos run` builds it.
    assert ALLURE.exists(), f"Allure is not installed at {ALLURE} (bin/chaos setup installs it)"
    report = tmp_path / "allure-report"
    g = subprocess.run([str(ALLURE), "generate", str(results), "-o", str(report)], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert g.returncode == 0, g.stdout[-1000:] + g.stderr[-1000:]
    assert (report / "index.html").exists()
