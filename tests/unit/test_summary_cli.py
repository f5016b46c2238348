"""ndbchaos summary: the per-scenario table from a run's Allure results."""

import json

from ndbchaos.cli import main


def write_result(folder, name, measurements, verdict, status="passed", start=1):
    (folder / f"{name}-m.json").write_text(json.dumps(measurements))
    (folder / f"{name}-v.json").write_text(json.dumps(verdict))
    (folder / f"{name}-result.json").write_text(json.dumps({
        "name": name.replace("_", " "), "fullName": f"scenarios.test_x#{name}", "status": status, "start": start,
        "labels": [{"name": "epic", "value": "engine: ndb"}],
        "steps": [{"name": "stop load", "attachments": [{"name": "measurements", "source": f"{name}-m.json"},
                                                         {"name": "verdict", "source": f"{name}-v.json"}]}]}))


def m(name, value, bound=None, unit="s"):
    return {name: {"name": name, "value": value, "unit": unit, "note": "", "bound": bound}}


def test_table_from_results(tmp_path, capsys):
    write_result(tmp_path, "test_kill_whole_nodegroup",
                 {**m("stopped serving", 0.41, 10.0), **m("recovery", 24.5, 250.0), **m("outage on sql1", 26.0)},
                 {"checks": {"errors": {"details": {"all": {"codes": [
                     {"errno": 1296, "engine_code": 4009, "class": "unknown", "count": 90},
                     {"errno": 2013, "engine_code": None, "class": "unknown", "count": 4}]}}},
                     "durability": {"details": {"acknowledged": 9000, "lost": 120, "explained_by_gcp": 120,
                                                "indeterminate": 7}}}}, start=2)
    write_result(tmp_path, "test_bank_invariant_through_a_kill", {**m("detection", 0.7, 7.0)},
                 {"checks": {"invariant": {"valid": True}}}, start=1)
    (tmp_path / "other-result.json").write_text(json.dumps({"name": "a unit test", "status": "passed"}))
    assert main(["summary", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| scenario | engine | result | fault applied s | detection s")
    assert lines[2].startswith("| test_bank_invariant_through_a_kill | ndb | passed |  | 0.7 (≤7) |")
    assert "invariant held" in lines[2]
    row = lines[3]
    assert "0.4 (≤10)" in row and "24.5 (≤250)" in row and "sql1 26.0" in row
    assert "1296/4009 x90, 2013 x4 (unknown)" in row and "lost 120 (all 120 in the crash window)" in row
    assert main(["summary", "--json", str(tmp_path)]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2


def test_no_results_is_one_line(tmp_path, capsys):
    assert main(["summary", str(tmp_path / "missing")]) == 2
    assert main(["summary", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no such folder" in err[0] and "no scenario results" in err[1]


def test_rows_are_named_by_scenario_and_transactions_are_summed_up(tmp_path, capsys):
    write_result(tmp_path, "test_txn", {**m("recovery", 20.0, 60.0)},
                 {"checks": {"transactions": {"details": {
                     "model": "list-append", "found": {"G-single-item": 3, "lost-update": 1},
                     "txns": {"ok": 900, "fail": 40, "info": 2},
                     "valid_models": True, "consistency_models": ["read-committed"], "lost": 0}}}})
    res = tmp_path / "test_txn-result.json"
    r = json.loads(res.read_text())
    r["parameters"] = [{"name": "sc", "value": "txn_kill_one_data_node"}]
    res.write_text(json.dumps(r))
    assert main(["summary", str(tmp_path)]) == 0
    row = capsys.readouterr().out.splitlines()[2]
    assert row.startswith("| txn_kill_one_data_node | ndb |")
    assert "900/40/2 txns ok/fail/info, held read-committed, G-single-item x3, lost-update x1, lost 0" in row


def test_the_terminal_line_of_a_scenario():
    from ndbchaos.checks import RunVerdict
    from ndbchaos.report.terminal import scenario_line
    from ndbchaos.record import Measurement
    ms = {"detection": Measurement("detection", 4.31, "s"), "outage on sql1": Measurement("outage on sql1", 0.2, "s"),
          "outage on sql2": Measurement("outage on sql2", 0.24, "s"), "recovery": Measurement("recovery", 22.3, "s")}
    line = scenario_line("kill_one_data_node", ms,
                         RunVerdict.from_json({"valid": True, "checks": {"durability": {"valid": True}}}))
    assert line == ("ndbchaos: kill_one_data_node PASS  detection 4.3 s | outage sql1 0.2 s, sql2 0.2 s | "
                    "recovery 22.3 s")
    bad = scenario_line("x", {}, RunVerdict.from_json({"valid": False, "checks": {"durability": {"valid": False},
                                                                                 "latency": {"valid": True}}}))
    assert bad == "ndbchaos: x FAIL (durability)"


def test_a_bad_measurements_or_verdict_attachment_is_one_line_naming_it(tmp_path, capsys):
    good_v = {"checks": {"invariant": {"valid": True}}}
    cases = [
        ({"detection": 5}, good_v, "x-m.json", "measurement 'detection': must be"),
        ({"detection": {"value": "fast", "bound": 1}}, good_v, "x-m.json", "measurement 'detection'"),
        ({"outage on sql1": {"value": 1, "bound": "x"}}, good_v, "x-m.json", "measurement 'outage on sql1'"),
        ([1], good_v, "x-m.json", "a JSON list, not an object"),
        (m("detection", 1.0), {"checks": "x"}, "x-v.json", "checks must map check names to objects"),
        (m("detection", 1.0), ["v"], "x-v.json", "a JSON list, not an object"),
        (m("detection", 1.0), {"checks": {"durability": {"details": {"acknowledged": "x", "lost": []}}}},
         "x-v.json", "not the verdict a run writes"),
    ]
    for measurements, verdict, name, why in cases:
        write_result(tmp_path, "x", measurements, verdict)
        assert main(["summary", str(tmp_path)]) == 2, (measurements, verdict)
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(tmp_path / name) in err[0] and why in err[0], err
    write_result(tmp_path, "x", m("detection", 1.0), good_v)
    (tmp_path / "x-v.json").write_text("[" * 50_000 + "]" * 50_000)
    assert main(["summary", str(tmp_path)]) == 2
    assert "nested too deep" in capsys.readouterr().err
    (tmp_path / "x-v.json").unlink()
    assert main(["summary", str(tmp_path)]) == 2
    assert "the verdict attachment cannot be read" in capsys.readouterr().err
