"""``pytest --gate FILE`` in a real session: a bad file or a pattern that names nothing stops the
session in one line before any cluster starts; a tight objective on a real run fails the gate
with its exit code, the table names scenario, objective, measured value and limit, and
``ndbchaos gate`` on the saved results gives the same rows."""

import json
import subprocess
import sys

import pytest

from ndbchaos.gate import GATE_FAILED

from .helpers import REPO, allure_results, labelled, only_elsewhere, project_of, run_pytest


def _one_line_usage_error(r):
    out = r.stdout + r.stderr
    assert r.returncode == 4, out[-3000:]
    errors = [ln for ln in out.splitlines() if ln.startswith("ERROR:")]
    assert len(errors) == 1, out[-3000:]
    assert "Traceback" not in out and "ndbchaos: engine" not in out  # nothing started
    return errors[0]


@pytest.mark.parametrize("text,says", [
    ('[[scenario]]\nmatch = "datanode_loss"\noutage_s = "short"\n', ":3: [[scenario]] #1 outage_s: must be a number"),
    ('[[scenario]]\nmatch = "datanode_los"\noutage_s = 1\n', "no collected scenario or marker matches"),
])
def test_a_bad_gate_stops_the_session_before_anything_starts(tmp_path, text, says):
    gate = tmp_path / "gate.toml"
    gate.write_text(text)
    r = run_pytest(["scenarios", "-p", "no:cacheprovider", "-q", "--gate", str(gate)], timeout=300)
    assert says in _one_line_usage_error(r)


def test_a_missing_gate_file_is_one_line(tmp_path):
    r = run_pytest(["scenarios", "-p", "no:cacheprovider", "-q", "--gate", str(tmp_path / "none.toml")], timeout=300)
    assert "not found" in _one_line_usage_error(r)


@pytest.mark.docker
@pytest.mark.timeout(1200)
def test_a_tight_objective_fails_the_gate_with_its_exit_code(tmp_path):
    gate = tmp_path / "tight.toml"
    gate.write_text('[[scenario]]\nmatch = "mgmnode_loss"\nrecovery_s = 0.001\nwarn = []\n'
                    '[[scenario]]\nmatch = "nodegroup_loss"\noutage_s = 1\n')
    results, out = tmp_path / "allure-results", tmp_path / "gate.json"
    r = run_pytest(["scenarios", "-m", "mgmnode_loss", "-p", "no:cacheprovider", "-q", "--engine", "galera",
                    "--alluredir", str(results), "--gate", str(gate), "--gate-out", str(out)], timeout=1100)
    text = r.stdout + r.stderr
    assert r.returncode == GATE_FAILED, text[-4000:]
    project = project_of(text)
    assert project and labelled("ps", project) == [], "cluster left behind"
    row = [ln for ln in text.splitlines() if "test_mgmnode_loss[kill_arbitrator]" in ln and "recovery_s" in ln]
    assert row and "FAIL" in row[0] and "0.001" in row[0], text[-3000:]
    live = json.loads(out.read_text())
    assert live["result"] == "fail"
    # the deselected node group scenario is named, not passed
    assert any(x["scenario"] == "test_nodegroup_loss[kill_whole_nodegroup]" and x["status"] == "NOT EVALUATED"
               for x in live["rows"])
    # the scenario itself passed: the gate, not the test, failed (the marker's NDB-only
    # scenarios are skipped on Galera with their reason)
    res = allure_results(results)
    elsewhere = only_elsewhere("galera")
    ran = [x for x in res if next(p["value"] for p in x["parameters"] if p["name"] == "sc") not in elsewhere]
    assert [x["status"] for x in ran] == ["passed"], [(x["name"], x["status"]) for x in res]
    assert all(x["status"] == "skipped" for x in res if x not in ran)
    again = tmp_path / "again.json"
    c = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "gate", str(gate), str(results),
                        "--json-out", str(again)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert c.returncode == GATE_FAILED, c.stdout[-2000:] + c.stderr[-2000:]
    judged = [x for x in live["rows"] if x["status"] != "NOT EVALUATED"]
    assert [x for x in json.loads(again.read_text())["rows"] if x["status"] != "NOT EVALUATED"] == judged

    # The same real run with one acknowledged write taken out of its final read: the gate fails
    # even with a file whose every objective only warns (safety is not the file's to relax).
    records = [f for f in results.glob("*-attachment.txt") if f.read_text()[:20].startswith('{"history"')]
    assert records, sorted(p.name for p in results.iterdir())
    lines = records[0].read_text().splitlines()
    ops = [json.loads(ln) for ln in lines[1:]]
    final = max((o for o in ops if o["f"] == "read" and o["type"] == "ok"), key=lambda o: o["end"])
    acked = next(o["value"] for o in ops if o["f"] == "insert" and o["type"] == "ok" and o["end"] < final["start"])
    final["value"] = [v for v in final["value"] if v != acked]
    tampered = tmp_path / "lost-write.jsonl"
    tampered.write_text("\n".join([lines[0]] + [json.dumps(o) for o in ops]) + "\n")
    lenient = tmp_path / "lenient.toml"
    lenient.write_text('[defaults]\nseverity = "warn"\n')
    c = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "gate", str(lenient), str(tampered)],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert c.returncode == GATE_FAILED, c.stdout[-2000:] + c.stderr[-2000:]
    assert [ln for ln in c.stdout.splitlines() if "safety: durability" in ln and "FAIL" in ln], c.stdout[-2000:]
