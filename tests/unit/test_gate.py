"""The availability gate without a cluster: the file's validation (one line naming file, line and
key), every objective judged on run records, safety that no file can turn off, severities,
NOT EVALUATED for what did not run, regression against a baseline, and the CLI's exit codes."""

from __future__ import annotations

import json

import pytest

from ndbchaos.cli import main
from ndbchaos.gate import FAIL, GATE_FAILED, NOT_EVALUATED, PASS, WARN, GateFileError, Run, evaluate, load
from ndbchaos.history import ErrorInfo
from tests.unit.test_check_expectation import history, record

E_PERM = ErrorInfo(1146, None, "permanent", "Table doesn't exist")


def run(test="test_datanode_loss[kill_one_data_node]", family="datanode_loss", h=None, **over):
    h = h or history(gap_on="sql1", gap=(10.0, 12.0))  # sql1 serves nothing for 2 s
    h.run = record(**over)
    h.run["scenario"] = {"name": test.split("[")[-1].rstrip("]"), "family": family, "test": test,
                         "markers": [family, "docker"]}
    return Run(test, [family, "docker"], h, [h.run["scenario"]["name"]])


def gate_file(tmp_path, text: str):
    p = tmp_path / "gate.toml"
    p.write_text(text)
    return load(p)


def rows(result, objective=None):
    return [r for r in result["rows"] if objective is None or r["objective"].startswith(objective)]


# -- the file -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,where", [
    ('[[scenario]]\nmatch = "datanode_loss"\noutage_s = "fast"\n', ":3: [[scenario]] #1 outage_s: must be a number"),
    ('[defaults]\nrecovery_s = 60\n\n[[scenario]]\nmatch = "x"\nbogus = 1\n', ":6: [[scenario]] #1 bogus: unknown key"),
    ('[[scenario]]\nmatch = "x"\nlatency_p99_ms = { during = 5 }\n', ":3: [[scenario]] #1 latency_p99_ms: 'during'"),
    ('[[scenario]]\nmatch = "x"\nfailed_share = { fault = 2 }\n',
     ":3: [[scenario]] #1 failed_share: fault: must be a share"),
    ('[[scenario]]\noutage_s = 1\n', "[[scenario]] #1 match: must be"),
    ('severity = "warn"\n', ":1: severity: unknown key"),
    ('[[scenario]]\nmatch = "x"\nwarn = ["nope"]\n', ":3: [[scenario]] #1 warn:"),
    ('[[scenario]]\nmatch = "x"\nregression_pct = { latency_p99_ms = 10 }\n', "only objectives in seconds"),
    ('[[scenario]]\nmatch = "x"\ncluster = "maybe"\n', 'cluster: must be "survives" or "stops"'),
    ("[[scenario\n", "not valid TOML"),
    ('version = true\n[defaults]\noutage_s = 1\n', ":1: version: must be 1"),
    ('[[scenario]]\nmatch = "x"\noutage_s = 1\nwarn = [["outage_s"]]\n', "warn: must be a list of objective names"),
    ('[[scenario]]\nmatch = "x"\nlatency_p99_ms = {}\n', "latency_p99_ms: an empty table bounds nothing"),
    ('[[scenario]]\nmatch = "x"\nstep_outage_s = {}\n', "step_outage_s: an empty table bounds nothing"),
    ('[[scenario]]\nmatch = []\noutage_s = 1\n', "match: must be"),
    ('[[scenario]]\nmatch = "x"\noutage_sec = 1\n', "outage_sec: unknown key (objectives: outage_s, "),
])
def test_a_bad_gate_file_is_one_line_naming_line_and_key(tmp_path, text, where):
    with pytest.raises(GateFileError) as ei:
        gate_file(tmp_path, text)
    msg = str(ei.value)
    assert where in msg and "\n" not in msg and str(tmp_path / "gate.toml") in msg


def test_a_missing_gate_file(tmp_path):
    with pytest.raises(GateFileError, match="not found"):
        load(tmp_path / "nope.toml")


# -- objectives -----------------------------------------------------------------------------------

GATE = """
[defaults]
recovery_s = 60

[[scenario]]
match = "datanode_loss"
outage_per_node_s = 3.0
outage_s = 2.0  # some SQL node always served
detection_s = 5
first_success_s = 1
latency_p99_ms = { fault = 100 }
failed_share = { all = 0.01 }
allowed_error_classes = ["temporary", "unknown"]
arbitration = true
cluster = "survives"
"""


def test_a_healthy_run_passes_every_objective(tmp_path):
    res = evaluate(gate_file(tmp_path, GATE), [run()])
    assert res["result"] == "pass", res["rows"]
    names = {r["objective"] for r in res["rows"]}
    assert {"safety: durability", "scenario verdict", "recovery_s", "outage_per_node_s sql1",
            "outage_per_node_s sql2", "detection_s", "first_success_s", "latency_p99_ms fault",
            "failed_share all", "allowed_error_classes", "arbitration", "cluster", "outage_s"} <= names
    assert all(r["status"] == PASS for r in res["rows"])
    assert res["figures"]["test_datanode_loss[kill_one_data_node]"]["recovery_s"] == pytest.approx(3.0)


def test_a_tight_objective_fails_and_names_scenario_measured_and_limit(tmp_path):
    g = gate_file(tmp_path, '[[scenario]]\nmatch = "kill_one_data_node"\noutage_per_node_s = 0.1\n')
    res = evaluate(g, [run()])
    bad = [r for r in res["rows"] if r["status"] == FAIL]
    assert res["result"] == "fail" and [r["objective"] for r in bad] == ["outage_per_node_s sql1"]
    assert bad[0]["scenario"] == "test_datanode_loss[kill_one_data_node]"
    assert bad[0]["measured"] == pytest.approx(2.1, abs=0.02) and bad[0]["limit"] == 0.1


def test_warn_severity_does_not_fail_the_gate(tmp_path):
    g = gate_file(tmp_path, '[[scenario]]\nmatch = "datanode_loss"\noutage_per_node_s = 0.1\n'
                            'recovery_s = 1\nwarn = ["outage_per_node_s"]\n')
    res = evaluate(g, [run()])
    st = {r["objective"]: r["status"] for r in res["rows"]}
    assert st["outage_per_node_s sql1"] == WARN and st["recovery_s"] == FAIL
    g = gate_file(tmp_path, '[[scenario]]\nmatch = "datanode_loss"\nseverity = "warn"\noutage_per_node_s = 0.1\n')
    assert evaluate(g, [run()])["result"] == "warn"


def test_a_lost_write_fails_the_gate_whatever_the_file_says(tmp_path):
    h = history()
    h.add(7, "insert", 99_999_999, "ok", 5.0, 5.01, "sql1")  # acknowledged, absent from the final read
    g = gate_file(tmp_path, '[defaults]\nseverity = "warn"\nrecovery_s = 1000\n')
    res = evaluate(g, [run(h=h)])
    safety = rows(res, "safety")[0]
    assert safety["status"] == FAIL and res["result"] == "fail"


def test_error_classes_and_codes(tmp_path):
    h = history(errors=[(5.0, "sql1", E_PERM)])
    g = gate_file(tmp_path, '[[scenario]]\nmatch = "datanode_loss"\nallowed_error_classes = ["temporary"]\n'
                            'allowed_error_codes = [1297]\n')
    res = evaluate(g, [run(h=h)])
    st = {r["objective"]: r for r in res["rows"]}
    assert st["allowed_error_classes"]["status"] == FAIL and "permanent" in st["allowed_error_classes"]["note"]
    assert st["allowed_error_codes"]["status"] == FAIL and st["allowed_error_codes"]["measured"] == [1146]


def test_the_cluster_outcome_and_the_engines_arbitration(tmp_path):
    g = gate_file(tmp_path, '[[scenario]]\nmatch = "datanode_loss"\ncluster = "stops"\narbitration = true\n')
    res = evaluate(g, [run(events=[])])  # the engine logged none of the expected events
    st = {r["objective"]: r["status"] for r in res["rows"]}
    assert st["cluster"] == FAIL and st["arbitration"] == FAIL


def test_a_named_scenario_that_did_not_run_is_not_evaluated(tmp_path):
    g = gate_file(tmp_path, '[[scenario]]\nmatch = "nodegroup_loss"\noutage_s = 1\n')
    res = evaluate(g, [run()], expected=[(["test_nodegroup_loss[kill_whole_nodegroup]"], ["nodegroup_loss"])])
    ne = [r for r in res["rows"] if r["status"] == NOT_EVALUATED]
    assert [r["scenario"] for r in ne] == ["test_nodegroup_loss[kill_whole_nodegroup]"]
    # the gate judged none of its objectives on any scenario: never a pass (issue 38)
    assert res["result"] == "not evaluated" and res["judged"] == 0
    g2 = gate_file(tmp_path, '[[scenario]]\nmatch = "nodegroup_loss"\noutage_s = 1\n'
                             '[[scenario]]\nmatch = "datanode_loss"\noutage_s = 5\n')
    res = evaluate(g2, [run()], expected=[(["test_nodegroup_loss[kill_whole_nodegroup]"], ["nodegroup_loss"])])
    assert res["result"] == "pass" and res["judged"] == 1  # one scenario judged: the other NOT EVALUATED
    assert [r["scenario"] for r in res["rows"] if r["status"] == NOT_EVALUATED] == [
        "test_nodegroup_loss[kill_whole_nodegroup]"]
    res = evaluate(g, [run()])  # no catalogue known (offline): the entry itself is listed
    assert [r["scenario"] for r in res["rows"] if r["status"] == NOT_EVALUATED] == ["nodegroup_loss"]


def test_regression_against_a_baseline(tmp_path):
    g = gate_file(tmp_path, '[[scenario]]\nmatch = "datanode_loss"\nregression_pct = { recovery_s = 20 }\n')
    tid = "test_datanode_loss[kill_one_data_node]"
    ok = evaluate(g, [run()], baseline={tid: {"recovery_s": 2.8}})  # 3.0 <= 2.8 * 1.2
    assert rows(ok, "regression")[0]["status"] == PASS
    bad = evaluate(g, [run()], baseline={tid: {"recovery_s": 2.0}})  # 3.0 > 2.4
    r = rows(bad, "regression")[0]
    assert r["status"] == FAIL and r["limit"] == pytest.approx(2.4)
    assert rows(evaluate(g, [run()], baseline={}), "regression")[0]["status"] == NOT_EVALUATED


# -- offline --------------------------------------------------------------------------------------

def test_cli_judges_saved_records_with_the_live_answer_and_exit_codes(tmp_path, capsys):
    r = run()
    d = tmp_path / "results"
    d.mkdir()
    r.history.write_jsonl(d / "run.jsonl")
    (tmp_path / "tight.toml").write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_per_node_s = 0.1\n')
    (tmp_path / "loose.toml").write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_per_node_s = 5\n')
    out = tmp_path / "gate.json"
    assert main(["gate", str(tmp_path / "tight.toml"), str(d), "--json-out", str(out)]) == GATE_FAILED
    text = capsys.readouterr().out
    assert "test_datanode_loss[kill_one_data_node]" in text and "outage_per_node_s sql1" in text and "FAIL" in text
    live = evaluate(load(tmp_path / "tight.toml"), [run()])
    assert json.loads(out.read_text())["rows"] == live["rows"]
    assert main(["gate", str(tmp_path / "loose.toml"), str(d)]) == 0
    assert main(["gate", str(tmp_path / "loose.toml"), str(tmp_path / "nothing")]) == 2
    assert main(["gate", str(tmp_path / "missing.toml"), str(d)]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "Traceback" not in err


def test_the_live_verdict_is_reused_and_gives_the_offline_rows(tmp_path):
    from ndbchaos.checks import check_run
    from ndbchaos.gate import judge
    g = gate_file(tmp_path, GATE + 'throughput_back_s = 60\n')
    r = run()
    live = check_run(r.history)
    assert judge(r, g, verdict=live)[0] == judge(r, g)[0]
    # another throughput level needs the availability checker again, whatever verdict is given
    g2 = gate_file(tmp_path, '[[scenario]]\nmatch = "datanode_loss"\nthroughput_back_s = 60\n'
                             'throughput_back_pct = 50\n')
    rows = {x.objective: x for x in judge(r, g2, verdict=live)[0]}
    assert rows["throughput_back_s"].note == "at 50 % of baseline"


def test_a_scenario_for_other_engines_only_is_not_expected_of_the_session(tmp_path):
    from types import SimpleNamespace

    from ndbchaos.driver import Scenario
    from ndbchaos.gate.pytest_gate import GatePlugin

    def item(name, sc, family):
        return SimpleNamespace(name=f"test_{family}[{name}]",
                               nodeid=f"scenarios/test_{family}.py::test_{family}[{name}]",
                               fixturenames=["play"], callspec=SimpleNamespace(id=name, params={"sc": sc}),
                               iter_markers=lambda: [SimpleNamespace(name=family)])
    both = Scenario("kill_whole_nodegroup", "nodegroup_loss", "t", fault=None)
    ndb_only = Scenario("kill_every_group_at_once", "nodegroup_loss", "t", fault=None, engines=("ndb",))
    g = GatePlugin(gate_file(tmp_path, '[[scenario]]\nmatch = "nodegroup_loss"\noutage_s = 1\n'
                                       '[[scenario]]\nmatch = "kill_every_group_at_once"\nrecovery_s = 1\n'),
                   tmp_path / "gate.json", None)
    g.pytest_collection_modifyitems(None, None, [item(both.name, both, "nodegroup_loss"),
                                                 item(ndb_only.name, ndb_only, "nodegroup_loss")])
    session = SimpleNamespace(exitstatus=0, config=SimpleNamespace(option=SimpleNamespace()))
    for engine, want in (("galera", ["test_nodegroup_loss[kill_whole_nodegroup]"]),
                         ("ndb", ["test_nodegroup_loss[kill_whole_nodegroup]",
                                  "test_nodegroup_loss[kill_every_group_at_once]"])):
        g.engine = engine
        g.pytest_sessionfinish(session)
        # the entry naming only the NDB scenario is about another engine on Galera: no row at all
        assert [r["scenario"] for r in g.result["rows"] if r["status"] == NOT_EVALUATED] == want, engine


def test_a_reports_folder_is_judged_from_the_results_inside_it(tmp_path, capsys):
    """`ndbchaos gate FILE reports`: Allure's own reports/history.jsonl and the trends file are
    not run records; the one results folder inside is used, several are named in one line."""
    from ndbchaos.gate.results import load_runs
    reports = tmp_path / "reports"
    res = reports / "allure-results"
    res.mkdir(parents=True)
    (reports / "history.jsonl").write_text('{"uuid": "x", "allure": 3}\n')
    (reports / "trends.jsonl").write_text('{"test": "t"}\n')
    r = run()
    r.history.write_jsonl(res / "abc-attachment.jsonl")
    (res / "abc-result.json").write_text(json.dumps({
        "name": "kill", "status": "passed",
        "attachments": [{"name": "run.jsonl", "source": "abc-attachment.jsonl"}]}))
    assert [x.test_id for x in load_runs(reports)] == ["test_datanode_loss[kill_one_data_node]"]
    (reports / "soak-allure-results").mkdir()
    (reports / "soak-allure-results" / "x-result.json").write_text("{}")
    assert main(["gate", str(tmp_path / "nothing.toml"), str(reports)]) == 2
    (tmp_path / "g.toml").write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_per_node_s = 5\n')
    assert main(["gate", str(tmp_path / "g.toml"), str(reports)]) == 2
    err = capsys.readouterr().err
    assert "holds several Allure results folders, pass one" in err and "Traceback" not in err
    # a folder of files none of which is a run record says which folder to pass
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "history.jsonl").write_text('{"uuid": "x"}\n')
    assert main(["gate", str(tmp_path / "g.toml"), str(lone)]) == 2
    assert "not run records: history.jsonl" in capsys.readouterr().err


def test_a_declared_consistency_model_fails_on_an_anomaly_it_forbids_whatever_the_severity(tmp_path):
    from ndbchaos.checks import RunVerdict, check_run
    from ndbchaos.gate.evaluate import judge
    r = run()
    verdict = check_run(r.history)

    def with_txns(found, lost=0):
        v = verdict.to_json()
        v["checks"]["transactions"] = {"valid": True, "details": {"model": "list-append", "found": found, "lost": lost}}
        return RunVerdict.from_json(v)

    g = gate_file(tmp_path, '[[scenario]]\nmatch = "datanode_loss"\nseverity = "warn"\n'
                            'consistency_models = ["read-committed"]\n')
    rows_ok, _ = judge(r, g, verdict=with_txns({"G-single-item": 3, "lost-update": 1}))
    (row,) = [x for x in rows_ok if x.objective == "consistency_models"]
    assert row.status == PASS and row.measured == "none" and "G-single-item x3" in row.note
    rows_bad, _ = judge(r, g, verdict=with_txns({"G1c": 1, "G-single-item": 3}))
    (row,) = [x for x in rows_bad if x.objective == "consistency_models"]
    assert row.status == "FAIL" and row.severity == "fail" and row.measured == ["G1c"]
    rows_lost, _ = judge(r, g, verdict=with_txns({}, lost=2))
    assert [x.status for x in rows_lost if x.objective == "safety: transactions durability"] == ["FAIL"]
    with pytest.raises(GateFileError, match="unknown consistency model"):
        gate_file(tmp_path, '[[scenario]]\nmatch = "x"\nconsistency_models = ["serialisable"]\n')


def _operation(gap_on="*", gap=(10.0, 12.0)):
    """An operations run: a two-step procedure whose second step saw every SQL node stop serving
    for 2 s (``gap``), and a step skipped after it."""
    from tests.unit.test_check_expectation import history as hist
    h = hist(gap_on=gap_on, gap=gap)
    r = run("test_operations[rolling_config_change_under_load]", "operations", h=h)
    h.run["procedure"] = {"name": "rolling_config_change", "steps": [
        {"name": "reload configuration", "start": 2.0, "end": 8.0, "outcome": "done", "expected": ["done"],
         "detail": "", "fault": None, "max_outage_s": None},
        {"name": "restart data1", "start": 8.0, "end": 14.0, "outcome": "done", "expected": ["done"],
         "detail": "", "fault": None, "max_outage_s": None},
        {"name": "restart data2", "start": 14.0, "end": 14.0, "outcome": "skipped", "expected": ["done"],
         "detail": "not run", "fault": None, "max_outage_s": None}],
        "outcomes": []}
    return r


def test_a_procedure_steps_client_impact_is_an_objective_per_step(tmp_path):
    """step_outage_s / step_p99_ms: a limit for every step, or per step name or glob; a skipped
    step is not judged; a run with no procedure is not evaluated."""
    g = gate_file(tmp_path, '[[scenario]]\nmatch = "operations"\nstep_outage_s = { "restart data*" = 0.5 }\n'
                            'step_p99_ms = 1000\n')
    res = evaluate(g, [_operation()])
    outage = {r["objective"]: r for r in rows(res, "step_outage_s")}
    assert set(outage) == {"step_outage_s restart data1"}  # the reload has no limit, data2 was skipped
    row = outage["step_outage_s restart data1"]
    assert row["status"] == FAIL and row["limit"] == 0.5 and row["measured"] == pytest.approx(2.0, abs=0.15)
    p99 = {r["objective"]: r["status"] for r in rows(res, "step_p99_ms")}
    assert p99 == {"step_p99_ms reload configuration": PASS, "step_p99_ms restart data1": PASS}
    # the same steps with no gap pass; a scenario that is no operation is not evaluated
    assert all(r["status"] == PASS for r in rows(evaluate(g, [_operation(gap_on=None)]), "step_"))
    g2 = gate_file(tmp_path, '[[scenario]]\nmatch = "*"\nstep_outage_s = 1\n')
    assert [r["status"] for r in rows(evaluate(g2, [run()]), "step_outage_s")] == [NOT_EVALUATED]


@pytest.mark.parametrize("text,where", [
    ('[[scenario]]\nmatch = "x"\nstep_outage_s = { "restart*" = -1 }\n', "restart*: must be a number of seconds"),
    ('[[scenario]]\nmatch = "x"\nstep_p99_ms = 0\n', "*: must be a number of ms > 0"),
])
def test_a_bad_step_objective_is_one_line(tmp_path, text, where):
    with pytest.raises(GateFileError, match=None) as ei:
        gate_file(tmp_path, text)
    assert where in str(ei.value) and "\n" not in str(ei.value)


# -- no silent pass, and bad input at the edge (issue 38) -------------------------------------------

def allure_folder(tmp_path, name="res", result=None):
    """An Allure results folder holding one scenario that ran (its run.jsonl attached)."""
    d = tmp_path / name
    d.mkdir()
    run().history.write_jsonl(d / "a-attachment.jsonl")
    (d / "a-result.json").write_text(json.dumps(result if result is not None else {
        "name": "test_datanode_loss[kill_one_data_node]", "status": "passed",
        "attachments": [{"name": "run.jsonl", "source": "a-attachment.jsonl"}]}))
    return d


def cli(argv, capsys) -> tuple[int, str, list[str]]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err.strip().splitlines()


def test_a_gate_that_judges_nothing_fails_offline_with_the_live_code(tmp_path, capsys):
    from ndbchaos.gate import NOTHING_JUDGED
    res = allure_folder(tmp_path)
    g = tmp_path / "g.toml"
    # a pattern that names no scenario of the results: 4, one line naming file, line and pattern
    g.write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_s = 5\n\n[[scenario]]\nmatch = "partiton"\n'
                 'outage_s = 5\n')
    code, out, err = cli(["gate", str(g), str(res)], capsys)
    assert code == NOTHING_JUDGED == 4 and len(err) == 1 and f"{g}:6: match ['partiton']: no scenario" in err[0]
    # an empty gate file, and one with only severities: no objective; safety held, nothing judged
    for text in ("", '[defaults]\nseverity = "warn"\n', '[[scenario]]\nmatch = "datanode_loss"\n'):
        g.write_text(text)
        assert not load(g).states_objectives
        code, out, err = cli(["gate", str(g), str(res)], capsys)
        assert code == 4 and len(err) == 1 and str(g) in err[0] and "states no objective" in err[0]
        assert "Traceback" not in out
    # objectives that nothing in the run can measure: the table, then 4, never 0
    g.write_text('[[scenario]]\nmatch = "datanode_loss"\nconsistency_models = ["read-committed"]\n')
    code, out, err = cli(["gate", str(g), str(res), "--json-out", str(tmp_path / "o" / "gate.json")], capsys)
    assert code == 4 and "gate NOT EVALUATED" in out and len(err) == 1 and "no objective of the gate" in err[0]
    assert json.loads((tmp_path / "o" / "gate.json").read_text())["result"] == "not evaluated"


def test_a_skipped_scenario_the_gate_names_is_not_evaluated_not_a_pattern_naming_nothing(tmp_path, capsys):
    res = allure_folder(tmp_path)
    (res / "b-result.json").write_text(json.dumps({
        "name": "test_partition[split_brain]", "status": "skipped",
        "parameters": [{"name": "sc", "value": "split_brain"}], "labels": [{"name": "tag", "value": "partition"}]}))
    g = tmp_path / "g.toml"
    g.write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_per_node_s = 5\n\n'
                 '[[scenario]]\nmatch = "partition"\noutage_s = 5\n')
    code, out, err = cli(["gate", str(g), str(res)], capsys)
    assert code == 0 and err == []
    assert "test_partition[split_brain]" in out and "NOT EVALUATED (did not run" in out


def test_live_a_session_whose_gate_judged_nothing_exits_4(tmp_path):
    from types import SimpleNamespace

    from ndbchaos.gate import NOTHING_JUDGED
    from ndbchaos.gate.pytest_gate import GatePlugin
    g = GatePlugin(gate_file(tmp_path, '[[scenario]]\nmatch = "datanode_loss"\n'
                                       'consistency_models = ["read-committed"]\n'), tmp_path / "gate.json", None)
    item = SimpleNamespace(name="test_datanode_loss[kill_one_data_node]", nodeid="s.py::t",
                           callspec=SimpleNamespace(id="kill_one_data_node", params={}),
                           iter_markers=lambda: [SimpleNamespace(name="datanode_loss")])
    g.add(item, run().history)
    session = SimpleNamespace(exitstatus=0, config=SimpleNamespace(option=SimpleNamespace()))
    g.pytest_sessionfinish(session)
    assert session.exitstatus == NOTHING_JUDGED and g.result["result"] == "not evaluated"
    session.exitstatus = 1  # a failed test stays a failed test
    g.pytest_sessionfinish(session)
    assert session.exitstatus == 1


@pytest.mark.parametrize("result,why", [
    ([1, 2], "a JSON list, not an object"),
    ({"name": "k", "status": "passed", "attachments": "run.jsonl"}, "attachments must be a list"),
    ({"name": "k", "status": "passed", "steps": [{"attachments": [{"name": "run.jsonl"}]}]},
     "steps[0] attachments[0] must be"),
    ({"name": "k", "status": "passed", "start": "yesterday"}, "start must be a number"),
    ({"name": "k", "status": "passed", "attachments": [{"name": "run.jsonl", "source": "../../../etc/passwd"}]},
     "source '../../../etc/passwd' is outside the results folder"),
    ({"name": "k", "status": "passed", "attachments": [{"name": "run.jsonl", "source": "/etc/passwd"}]},
     "is outside the results folder"),
])
def test_a_bad_allure_result_is_one_line_for_gate_and_summary(tmp_path, capsys, result, why):
    res = allure_folder(tmp_path, result=result)
    g = tmp_path / "g.toml"
    g.write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_s = 5\n')
    for argv in (["gate", str(g), str(res)], ["summary", str(res)]):
        code, out, err = cli(argv, capsys)
        assert code == 2 and len(err) == 1 and str(res / "a-result.json") in err[0] and why in err[0], (argv, err)


def test_an_attachment_linked_out_of_the_folder_is_never_read(tmp_path, capsys):
    outside = tmp_path / "secret.jsonl"
    run().history.write_jsonl(outside)
    res = allure_folder(tmp_path)
    (res / "a-attachment.jsonl").unlink()
    (res / "a-attachment.jsonl").symlink_to(outside)
    g = tmp_path / "g.toml"
    g.write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_s = 5\n')
    code, out, err = cli(["gate", str(g), str(res)], capsys)
    assert code == 2 and len(err) == 1 and "outside the results folder" in err[0] and out == ""


def test_bad_json_out_deep_inputs_and_unreadable_run_records_are_one_line(tmp_path, capsys):
    res = allure_folder(tmp_path)
    g = tmp_path / "g.toml"
    g.write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_s = 5\n')
    (tmp_path / "dir").mkdir()
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 50_000 + "]" * 50_000)
    bad_fig = tmp_path / "figs.json"
    bad_fig.write_text(json.dumps({"figures": {"t": {"outage_s": "fast"}}}))
    deep_toml = tmp_path / "deep.toml"
    deep_toml.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    cases = [
        (["gate", str(g), str(res), "--json-out", str(tmp_path / "dir")], "--json-out", "a folder"),
        (["gate", str(g), str(res), "--baseline", str(deep)], str(deep), "nested too deep"),
        (["gate", str(g), str(res), "--baseline", str(bad_fig)], str(bad_fig), "must map objectives to numbers"),
        (["gate", str(deep_toml), str(res)], str(deep_toml), ""),
    ]
    for argv, name, why in cases:
        code, out, err = cli(argv, capsys)
        assert code == 2 and len(err) == 1 and name in err[0] and why in err[0], (argv, err)
    assert not (tmp_path / "dir" / "gate.json").exists()
    # a run record an Allure result names that cannot be read is refused, not dropped
    (res / "a-attachment.jsonl").write_text('{"history": 1, "workload": "ledger"}\n{"type": "ok"\n')
    code, out, err = cli(["gate", str(g), str(res)], capsys)
    assert code == 2 and len(err) == 1 and str(res / "a-attachment.jsonl") in err[0] and "not a run record" in err[0]


def test_a_gate_file_that_is_not_utf8_is_one_line(tmp_path, capsys):
    g = tmp_path / "g.toml"
    g.write_bytes(b'[[scenario]]\nmatch = "\xff"\noutage_s = 1\n')
    code, out, err = cli(["gate", str(g), str(allure_folder(tmp_path))], capsys)
    assert code == 2 and err == [f"ndbchaos gate: gate file {g}: not a TOML file (not UTF-8 text at byte 22)"]


def test_a_folder_as_gate_file_or_live_gate_out_is_one_line(tmp_path):
    from ndbchaos.errors import UsageError
    from ndbchaos.gate.pytest_gate import GatePlugin
    with pytest.raises(GateFileError, match="a folder, not a file"):
        load(tmp_path)
    g = gate_file(tmp_path, '[defaults]\noutage_s = 1\n')
    with pytest.raises(UsageError, match="--gate-out .*: a folder, give a file path"):
        GatePlugin(g, tmp_path, None)  # the session would have ended in IsADirectoryError


def test_offline_a_deselected_scenario_is_not_evaluated_when_the_live_session_recorded_its_catalogue(tmp_path, capsys):
    """A `-m "not slow"` session with --gate records what it collected in its results folder;
    offline, a pattern naming a deselected scenario is then NOT EVALUATED, as it is live, not a
    pattern that names nothing (exit 4, which it stays for a run that recorded no catalogue)."""
    from types import SimpleNamespace

    from ndbchaos.gate.pytest_gate import GatePlugin
    from ndbchaos.gate.results import CATALOGUE
    res = allure_folder(tmp_path)
    g = tmp_path / "g.toml"
    g.write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_per_node_s = 5\n\n'
                 '[[scenario]]\nmatch = "kill_again_while_recovering"\nrecovery_s = 60\n')
    code, out, err = cli(["gate", str(g), str(res)], capsys)
    assert code == 4 and "kill_again_while_recovering" in err[0]

    def item(name):
        return SimpleNamespace(name=f"test_datanode_loss[{name}]", nodeid=f"s/test_datanode_loss.py::x[{name}]",
                               fixturenames=["play"], callspec=SimpleNamespace(id=name, params={}),
                               iter_markers=lambda: [SimpleNamespace(name="datanode_loss")])
    live = GatePlugin(load(g), tmp_path / "gate.json", None)
    config = SimpleNamespace(option=SimpleNamespace(allure_report_dir=str(res)))
    live.pytest_collection_modifyitems(None, config, [item("kill_one_data_node"), item("kill_again_while_recovering")])
    assert (res / CATALOGUE).exists()
    code, out, err = cli(["gate", str(g), str(res)], capsys)
    assert code == 0 and err == [] and "test_datanode_loss[kill_again_while_recovering]" in out
    assert "NOT EVALUATED (did not run" in out
    (res / CATALOGUE).write_text('[{"ids": "x"}]')
    code, out, err = cli(["gate", str(g), str(res)], capsys)
    assert code == 2 and len(err) == 1 and CATALOGUE in err[0] and "not a scenario catalogue" in err[0]


def test_a_name_with_a_newline_stays_one_line(tmp_path, capsys):
    """An attachment source holding a newline (found by a wider fuzz of the results folder): the
    error names it escaped, in one line, for the gate and summary alike."""
    res = allure_folder(tmp_path, result={"name": "k", "status": "passed", "attachments": [
        {"name": "run.jsonl", "source": "a\nb.jsonl"}, {"name": "measurements", "source": "m\n.json"}]})
    g = tmp_path / "g.toml"
    g.write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_s = 5\n')
    for argv, why in ((["gate", str(g), str(res)], "not a run record"),
                      (["summary", str(res)], "the measurements attachment cannot be read")):
        code, out, err = cli(argv, capsys)
        assert code == 2 and len(err) == 1 and "\\n" in err[0] and why in err[0], err
