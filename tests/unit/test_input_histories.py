"""The files ``check``, ``export`` and ``events`` read, validated at the edge: a bad one is one line
on stderr naming the file (and its line, op or offset) and exit 2, never a traceback; a
well-formed one gets a verdict (0 valid, 1 invalid or unknown), never a silent pass on nothing."""

from __future__ import annotations

import gzip
import json

import pytest

from ndbchaos.cli import main
from ndbchaos.history import History
from ndbchaos.history.columnar import json_depth
from ndbchaos.history.jsonl import MAX_DEPTH, too_deep

HEADER = '{"history": 1, "workload": "ledger", "params": {}}\n'
GOOD = '{"process": 1, "f": "insert", "value": 1, "type": "ok", "start": 0.1, "end": 0.2, "node": "a", "error": null}\n'


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def run_cli(argv, capsys):
    """``main(argv)``: its exit code, stdout and stderr lines; any exception (a traceback for the
    user) fails the test."""
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err.strip().splitlines()


def one_line_error(argv, capsys, path, where=":") -> str:
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == "" and len(err) == 1, (code, out, err)
    assert err[0].startswith(f"ndbchaos {argv[0]}: {path}{where}"), err
    return err[0]


def txn_line(value, index=0) -> str:
    return json.dumps({"process": 1, "f": "txn", "value": value, "type": "ok", "start": index, "end": index + 0.5,
                       "node": "n", "error": None}) + "\n"


LA_HEADER = '{"history": 1, "workload": "list_append", "params": {}}\n'


# -- values nested too deep: RecursionError before, one line now --------------------------------

@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000, 1020, 5000])
@pytest.mark.parametrize("argv", [["check"], ["check", "--model", "list-append"], ["export"]])
def test_a_value_nested_too_deep_is_one_line(tmp_path, capsys, depth, argv):
    p = tmp_path / "h.jsonl"
    p.write_text(HEADER + GOOD + '{"process": 1, "f": "x", "value": ' + nested(depth)
                 + ', "type": "ok", "start": 0, "end": 1, "node": null, "error": null}\n')
    line = one_line_error(argv[:1] + [str(p)] + argv[1:], capsys, p, ":3:")
    assert f"nested deeper than {MAX_DEPTH} levels" in line


@pytest.mark.parametrize("depth", [MAX_DEPTH, 2000])
def test_a_header_nested_too_deep_is_one_line(tmp_path, capsys, depth):
    p = tmp_path / "h.jsonl"
    p.write_text('{"history": 1, "workload": "ledger", "params": {"x": ' + nested(depth) + "}}\n" + GOOD)
    assert "nested deeper than" in one_line_error(["check", str(p)], capsys, p, ":1:")


def test_a_value_as_deep_as_allowed_is_read(tmp_path):
    h = History("pk_update", {})
    h.add(1, "x", json.loads(nested(MAX_DEPTH)), "ok", 0.0, 0.1, "n")
    for name in ("h.jsonl", "h.nch"):
        h.write(tmp_path / name)
        assert History.read(tmp_path / name).cols.value(0) == json.loads(nested(MAX_DEPTH))


def test_a_columnar_value_nested_too_deep_names_the_op(tmp_path, capsys):
    h = History("pk_update", {})
    h.add(1, "x", 1, "ok", 0.0, 0.1, "n")
    h.add(1, "x", json.loads(nested(MAX_DEPTH + 1)), "ok", 0.0, 0.2, "n")
    p = tmp_path / "h.nch"
    h.write(p)
    line = one_line_error(["check", str(p)], capsys, p, ":offset ")
    assert "op 1 of this chunk" in line and "nested deeper" in line


def test_json_depth_and_too_deep_agree_with_a_walk():
    values = [1, [], {}, [[1, "a[b"], {"k]": ['x\\"[[']}], {"a": [{"b": [[]]}]}, ["\\\\", [["]]}"]]]]

    def walk(v):
        if isinstance(v, (list, dict)):
            return 1 + max(map(walk, v.values() if isinstance(v, dict) else v), default=0)
        return 0
    for v in values:
        d = walk(v)
        assert json_depth(json.dumps(v).encode()) == d
        assert too_deep(v, d) is False and (d == 0 or too_deep(v, d - 1) is True)


# -- transactional histories: maps and sets are not keys or values -------------------------------

EDN_CASES = {
    "set-key": "[[:r #{1 2} nil]]",
    "map-key": "[[:append {:a 1} 2]]",
    "map-value": "[[:r 1 {:a 1}]]",
    "set-read": "[[:r 1 #{1 2}]]",
    "nested-read": "[[:r 1 [[1] 2]]]",
}


@pytest.mark.parametrize("case", sorted(EDN_CASES))
@pytest.mark.parametrize("model", ["list-append", "rw-register"])
def test_edn_maps_and_sets_as_keys_or_values_are_one_line(tmp_path, capsys, case, model):
    p = tmp_path / "h.edn"
    value = EDN_CASES[case]
    p.write_text("{:type :invoke, :f :txn, :value [[:r 1 nil]], :process 0, :index 0}\n"
                 f"{{:type :ok, :f :txn, :value {value}, :process 0, :index 1}}\n")
    line = one_line_error(["check", "--model", model, str(p)], capsys, p, ":op 1:")
    assert "micro-op" in line


def test_edn_nested_too_deep_names_the_line(tmp_path, capsys):
    p = tmp_path / "h.edn"
    p.write_text("{:type :ok, :process 0,\n :value " + nested(3000) + "}\n")
    assert "nested deeper" in one_line_error(["check", "--model", "list-append", str(p)], capsys, p, ":2:")


@pytest.mark.parametrize("value, what", [
    ([["append", 1]], "micro-op is not [f, k, v]: ['append', 1]"),
    ("x", "value is not a list of micro-ops: 'x'"),
    ([["r", {"a": 1}, [1]]], "micro-op key is a map ({'a': 1})"),
    ([["r", 1, [[1]]]], "micro-op value is a nested list ([[1]])"),
])
def test_a_transactional_run_with_bad_values_is_malformed_not_unknown(tmp_path, capsys, value, what):
    p = tmp_path / "h.jsonl"
    p.write_text(LA_HEADER + txn_line([["append", 1, 1]]) + txn_line(value, 1))
    for argv in (["check", str(p)], ["export", str(p)], ["check", "--model", "list-append", str(p)]):
        line = one_line_error(argv, capsys, p, ":op 1: ")
        assert what in line, line


# -- no silent pass: unknown names are errors, nothing judged is unknown -------------------------

def ledger_with_lost_and_phantom(tmp_path, workload: str):
    h = History(workload, {"rate": None})
    for i in range(1, 6):
        h.add(1, "insert", i, "ok", i * 0.1, i * 0.1 + 0.01, "sql1")
    h.add(2, "read", [1, 2, 4, 5, 99], "ok", 1.0, 1.1, "sql2")  # 3 lost, 99 a phantom
    p = tmp_path / f"{workload}.jsonl"
    h.write_jsonl(p)
    return p


def test_an_unknown_or_mis_cased_workload_is_an_error_listing_the_known_ones(tmp_path, capsys):
    assert main(["check", "-q", str(ledger_with_lost_and_phantom(tmp_path, "ledger"))]) == 1
    capsys.readouterr()
    p = ledger_with_lost_and_phantom(tmp_path, "Ledger")
    line = one_line_error(["check", str(p)], capsys, p, ":")
    assert "unknown workload 'Ledger'; did you mean 'ledger'?" in line
    assert "known: bank, fakebook, ledger, list_append" in line and "rw_register" in line
    p = ledger_with_lost_and_phantom(tmp_path, "nosuch")
    assert "unknown workload 'nosuch' (known:" in one_line_error(["check", str(p)], capsys, p, ":")


def test_a_workload_of_an_entry_point_is_known(tmp_path, capsys, monkeypatch):
    from ndbchaos.commands import _runcheck

    class EP:
        name = "orders_ep"
    monkeypatch.setattr(_runcheck, "entry_points", lambda group: [EP()] if group == "ndbchaos.workloads" else [])
    h = History("orders_ep", {})
    h.add(1, "x", 1, "ok", 0.0, 0.1, "n")
    p = tmp_path / "h.jsonl"
    h.write_jsonl(p)
    assert main(["check", "-q", str(p)]) == 0
    assert "orders_ep" in _runcheck.known_workloads()


G2_HISTORY = [  # write skew: each reads the other's key empty, then appends to its own
    {"index": 0, "type": "invoke", "process": 0, "value": [["r", 1, None], ["append", 2, 1]]},
    {"index": 1, "type": "invoke", "process": 1, "value": [["r", 2, None], ["append", 1, 1]]},
    {"index": 2, "type": "ok", "process": 0, "value": [["r", 1, []], ["append", 2, 1]]},
    {"index": 3, "type": "ok", "process": 1, "value": [["r", 2, []], ["append", 1, 1]]},
    {"index": 4, "type": "invoke", "process": 2, "value": [["r", 1, None], ["r", 2, None]]},
    {"index": 5, "type": "ok", "process": 2, "value": [["r", 1, [1]], ["r", 2, [1]]]},
]


@pytest.mark.parametrize("extra, what", [
    (["--consistency-models", ""], "--consistency-models names no model"),
    (["--consistency-models", " , "], "--consistency-models names no model"),
    (["--consistency-models", "serialisable"], "unknown consistency model(s) serialisable (known: "),
    (["--anomalies", "bogus"], "unknown anomaly name(s) bogus (known: G-MSR"),
    (["--anomalies", ""], "--anomalies names no anomaly"),
    (["--model", "list-append", "--anomalies", "G2,bogus"], "unknown anomaly name(s) bogus"),
])
def test_model_and_anomaly_names_are_checked(tmp_path, capsys, extra, what):
    p = tmp_path / "g2.json"
    p.write_text(json.dumps(G2_HISTORY))
    argv = ["check", *(["--model", "list-append"] if "--model" not in extra else []), *extra, str(p)]
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == "" and len(err) == 1 and what in err[0], err


def test_the_g2_history_is_invalid_and_anomalies_alone_still_judge(tmp_path, capsys):
    p = tmp_path / "g2.json"
    p.write_text(json.dumps(G2_HISTORY))
    assert main(["check", "--model", "list-append", "-q", str(p)]) == 1
    assert json.loads(capsys.readouterr().out)["anomaly_types"] == ["G2-item"]
    assert main(["check", "--model", "list-append", "-q", "--consistency-models", "", "--anomalies", "G2",
                 "--compact", str(p)]) == 1  # Elle's way: no model, only the anomalies named
    v = json.loads(capsys.readouterr().out)
    assert v["valid"] is False and v["anomaly_types"] == ["G2-item"] and v["consistency_models"] == []
    assert main(["check", "--model", "list-append", "-q", "--consistency-models", "read-committed", str(p)]) == 0


@pytest.mark.parametrize("opt", [["--anomalies", "G2"], ["--consistency-models", "serializable"], ["--wfr-keys"],
                                 ["--directory", "d"]])
def test_transactional_options_without_model_are_refused_not_ignored(tmp_path, capsys, opt):
    p = ledger_with_lost_and_phantom(tmp_path, "ledger")
    code, out, err = run_cli(["check", str(p), *opt], capsys)
    assert code == 2 and len(err) == 1 and f"{opt[0]}: only with --model" in err[0], err


def test_a_run_is_judged_with_its_own_model(tmp_path, capsys):
    p = tmp_path / "h.jsonl"
    p.write_text(LA_HEADER + txn_line([["append", 1, 1]]) + txn_line([["r", 1, [1]]], 1))
    assert main(["check", "--model", "list-append", "-q", str(p)]) in (0, 1)
    capsys.readouterr()
    assert "judged with --model list-append, not rw-register" in one_line_error(
        ["check", "--model", "rw-register", str(p)], capsys, p, ":")
    q = ledger_with_lost_and_phantom(tmp_path, "ledger")
    assert "a run of workload 'ledger' holds no transactions" in one_line_error(
        ["check", "--model", "list-append", str(q)], capsys, q, ":")


def write(tmp_path, workload, ops, name="h.jsonl"):
    h = History(workload, {})
    for op in ops:
        h.add(*op)
    p = tmp_path / name
    h.write_jsonl(p)
    return p


E_UNK = __import__("ndbchaos.history", fromlist=["ErrorInfo"]).ErrorInfo(2013, None, "unknown", "lost")


@pytest.mark.parametrize("workload, ops, why", [
    ("pk_update", [], "no operation succeeded (0 operations)"),
    ("pk_update", [(1, "update", 1, "info", 0.0, 1.0, "n", E_UNK)] * 3, "no operation succeeded (3 operations)"),
    ("pk_update", [(1, "update", 1, "fail", 0.0, 1.0, "n", E_UNK)] * 3, "no operation succeeded"),
    ("ledger", [(1, "insert", i, "info", i, i + 0.5, "n", E_UNK) for i in range(4)]
     + [(2, "read", [], "ok", 9.0, 9.5, "n")], "no insert with a known outcome (4 inserts, all indeterminate)"),
    ("ledger", [(2, "read", [], "ok", 9.0, 9.5, "n")], "no insert in it"),
])
def test_nothing_judged_is_unknown_never_valid(tmp_path, capsys, workload, ops, why):
    p = write(tmp_path, workload, ops)
    assert main(["check", "--compact", str(p)]) == 1
    out, err = capsys.readouterr()
    v = json.loads(out)
    assert v["valid"] == "unknown" and why in v["checks"]["input"]["summary"]
    assert "input: unknown: " + why.split(" (")[0] in err


def test_a_single_transaction_is_an_empty_graph_not_valid(tmp_path, capsys):
    p = tmp_path / "one.json"
    p.write_text(json.dumps([{"type": "invoke", "process": 0, "value": [["w", 1, 1]]},
                             {"type": "ok", "process": 0, "value": [["w", 1, 1]]}]))
    assert main(["check", "--model", "rw-register", "--compact", "-q", str(p)]) == 1
    v = json.loads(capsys.readouterr().out)
    assert v["valid"] == "unknown" and v["anomaly_types"] == ["empty-transaction-graph"]


@pytest.mark.parametrize("text, what", [
    ("[]", "no fault window in it"),
    ('{"windows": []}', "no fault window in it"),
    ("", "not JSON"),
    ("\xff\xfe", "not UTF-8"),
    (nested(3000), "nested deeper than"),
    ('{"windows": ' + nested(70) + "}", "nested deeper than"),
    ('[{"start": "x"}]', "window 0: start must be a number"),
    ('["a"]', "window 0: must be an object"),
    ('{"a": 1}', "fault windows must be a list"),
])
def test_a_bad_windows_file_is_one_line(tmp_path, capsys, text, what):
    p = ledger_with_lost_and_phantom(tmp_path, "ledger")
    w = tmp_path / "w.json"
    w.write_bytes(text.encode("latin-1") if text.startswith("\xff") else text.encode())
    line = one_line_error(["check", str(p), "--windows", str(w)], capsys, w, "")
    assert what in line, line


def test_a_windows_directory_or_missing_file_is_one_line(tmp_path, capsys):
    p = ledger_with_lost_and_phantom(tmp_path, "ledger")
    assert "cannot open" in one_line_error(["check", str(p), "--windows", str(tmp_path)], capsys, tmp_path, ":")
    assert "cannot open" in one_line_error(["check", str(p), "--windows", str(tmp_path / "no")], capsys,
                                           tmp_path / "no", ":")


@pytest.mark.parametrize("run, what", [
    ({"steps": "x"}, "run record field 'steps' must be a list, not str"),
    ({"steps": [1]}, "run record steps[0] must be an object"),
    ({"steps": [{"begin": "a", "end": 1}]}, "steps[0].begin must be a number"),
    ({"phases": "x"}, "run record field 'phases' must be a list"),
    ({"windows": "x"}, "run record field 'windows' must be a list or an object"),
    ({"cluster_samples": [{"t": None}]}, "cluster_samples[0].t must be a number"),
])
def test_a_bad_run_record_is_one_line(tmp_path, capsys, run, what):
    p = tmp_path / "h.jsonl"
    p.write_text(json.dumps({"history": 1, "workload": "ledger", "params": {}, "run": run}) + "\n" + GOOD)
    assert what in one_line_error(["check", str(p)], capsys, p, ":")


def test_a_bad_declaration_is_one_line(tmp_path, capsys):
    p = tmp_path / "h.jsonl"
    p.write_text(json.dumps({"history": 1, "workload": "orders", "params": {"declared": {"operations": [1]}}})
                 + "\n" + GOOD)
    assert "params.declared must be" in one_line_error(["check", str(p)], capsys, p, ":")
    p.write_text(json.dumps({"history": 1, "workload": "orders", "params": {
        "declared": {"operations": [{"name": "insert", "key": "k"}], "final_keys": True}}}) + "\n" + GOOD)
    assert "declares key 'k'" in one_line_error(["check", str(p)], capsys, p, ":")


# -- property-based: malformed inputs for every command that reads a history ------------------------
# Valid histories of each workload and format are mutated (fields dropped, duplicated or retyped,
# values nested too deep, lines cut, random bytes, invalid UTF-8); whatever comes out, the command
# gives a verdict (0 or 1, JSON on stdout) or refuses in one line naming the file (2), never a
# traceback; the mutations that certainly break the file must be refused.

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

settings.register_profile("input_histories", max_examples=40, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = settings.get_profile("input_histories")
FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures"


def _cli(argv):
    """main(argv) in this process: (code, stdout, stderr lines); an exception escapes (a traceback)."""
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue().strip().splitlines()


def _run_jsonl(workload: str, ops) -> bytes:
    h = History(workload, {"accounts": 2, "total": 20} if workload == "bank" else {})
    for op in ops:
        h.add(*op)
    import io
    buf = io.StringIO()
    h.dump(buf)
    return buf.getvalue().encode()


def _bases() -> dict[str, bytes]:
    """Valid inputs: (name -> bytes); the name says its format and which commands read it."""
    ledger = [(1, "insert", i, "ok", i * 0.1, i * 0.1 + 0.05, "sql1") for i in range(1, 6)]
    ledger += [(2, "insert", 6, "info", 0.6, 0.9, "sql2", E_UNK), (3, "read", [1, 2, 3, 4, 5], "ok", 1.0, 1.1, "sql1")]
    bank = [(1, "transfer", {"from": 0, "to": 1, "amount": 3}, "ok", 0.1, 0.2, "sql1"),
            (2, "read", {"balances": {"0": 7, "1": 13}}, "ok", 0.3, 0.4, "sql2")]
    la = [(1, "txn", [["append", 1, 1], ["r", 2, []]], "ok", 0.1, 0.2, "sql1"),
          (2, "txn", [["append", 2, 1], ["r", 1, [1]]], "ok", 0.3, 0.4, "sql2"),
          (3, "txn", [["r", 1, [1]], ["r", 2, [1]]], "ok", 0.5, 0.6, "sql1")]
    rw = [(1, "txn", [["w", 1, 1]], "ok", 0.1, 0.2, "sql1"),
          (2, "txn", [["r", 1, 1], ["w", 2, 2]], "ok", 0.3, 0.4, "n"),
          (3, "txn", [["r", 2, 2]], "ok", 0.5, 0.6, "sql1")]
    jepsen = json.dumps(G2_HISTORY)
    edn = "\n".join("{:index %d, :type :%s, :process %d, :value [%s]}" % (
        e["index"], e["type"], e["process"],
        " ".join("[:%s %d %s]" % (f, k, "nil" if v is None else ("[" + " ".join(map(str, v)) + "]")
                                  if isinstance(v, list) else v) for f, k, v in e["value"])) for e in G2_HISTORY)
    return {"ledger.jsonl": _run_jsonl("ledger", ledger), "bank.jsonl": _run_jsonl("bank", bank),
            "la.jsonl": _run_jsonl("list_append", la), "rw.jsonl": _run_jsonl("rw_register", rw),
            "g2.json": jepsen.encode(), "g2-lines.jsonl": "\n".join(map(json.dumps, G2_HISTORY)).encode() + b"\n",
            "g2.edn": edn.encode() + b"\n"}


BASES = _bases()
#: the commands each base is read by (its own model for the transactional ones)
COMMANDS = {
    "ledger.jsonl": [["check", "-q"]], "bank.jsonl": [["check", "-q"]],
    "la.jsonl": [["check", "-q"], ["check", "-q", "--model", "list-append"], ["export", "-o", "-"]],
    "rw.jsonl": [["check", "-q"], ["check", "-q", "--model", "rw-register"], ["export", "-o", "-"]],
    "g2.json": [["check", "-q", "--model", "list-append"]],
    "g2-lines.jsonl": [["check", "-q", "--model", "list-append"]],
    "g2.edn": [["check", "-q", "--model", "list-append"]],
}
#: the op fields a run's reader requires
REQUIRED = {"process", "f", "type", "start", "end"}
WRONG = ["x", [1], {"a": 1}, None, True, 1.5, -1, 2 ** 70, [[1, [2]]], {"a": [{"b": {}}]}]


def _number(v) -> bool:
    return type(v) in (int, float)


def retyped_is_bad(run: bool, op: dict, field: str) -> bool:
    """Whether an op with ``field`` set to a wrong value (``op[field]``) must be refused: the
    fields each reader checks (a run's: docs/history-format.md; Jepsen's: type, index, value)."""
    v = op[field]
    if not run:
        return field == "type" or (field == "index" and v is not None and type(v) is not int) or (
            field == "value" and v is not None)
    if field == "process":
        return not (type(v) is int and -2 ** 31 <= v < 2 ** 31)
    if field == "f":
        return type(v) is not str
    if field == "type":
        return v not in ("ok", "fail", "info")
    if field in ("start", "end"):
        return not (_number(op["start"]) and _number(op["end"]) and float(op["start"]) <= float(op["end"]))
    if field == "node":
        return v is not None and type(v) is not str
    if field == "error":
        return v is not None and not (isinstance(v, dict) and set(v) <= {"a"})
    return field == "value" and op.get("f") == "txn" and v is not None  # a transaction's micro-ops


def test_the_valid_bases_get_a_verdict(tmp_path):
    for name, data in BASES.items():
        p = tmp_path / name
        p.write_bytes(data)
        for cmd in COMMANDS[name]:
            code, out, err = _cli([*cmd, str(p)])
            assert code in (0, 1) and err == [], (name, cmd, code, err)
            if cmd[0] == "check":
                assert json.loads(out)["valid"] in (True, False, "unknown")


def _json_lines(data: bytes) -> list:
    return [json.loads(x) for x in data.decode().splitlines() if x.strip()]


def _whole_lines_cut(data: bytes, at: int) -> bool:
    """Whether cutting ``data`` at ``at`` leaves only whole lines (or whitespace) behind it."""
    return data[at - 1:at] == b"\n" or data[at:at + 1] == b"\n" or data[at:].strip() == b""


@st.composite
def mutated(draw):
    """(base name, mutated bytes, certainly bad: bool, what was done)."""
    name = draw(st.sampled_from(sorted(BASES)))
    data = BASES[name]
    kind = draw(st.sampled_from(["drop", "retype", "duplicate", "not-object", "deep", "cut", "bytes", "utf8",
                                 "lines", "gzip", "gzip-cut"]))
    structured = kind in ("drop", "retype", "duplicate", "not-object", "deep")
    if structured and name.endswith(".edn"):  # EDN, as text: (from, to, certainly bad)
        old, new, bad = draw(st.sampled_from([
            (":type :ok", ":type #{1 2}", True), (":value [", ":value [[:r #{1 2} nil] ", True),
            (":value [", ":value [[:append {:a 1} 1] ", True), ("[:r 1 nil]", "[:r 1 {:a 1}]", True),
            (":process 0", ':process "zero"', False), (":index 0", ":index :zero", True),
            (":value [", ":value " + "[" * (MAX_DEPTH + 5), True), (":type :ok", "", True)]))
        return name, data.decode().replace(old, new, 1).encode(), bad, kind
    if structured:
        array = name.endswith(".json")
        items = json.loads(data) if array else _json_lines(data)
        run = "history" in items[0]
        k = draw(st.integers(1 if run else 0, len(items) - 1))  # a run's header stays its header
        op = dict(items[k])
        if kind == "drop":
            field = draw(st.sampled_from(sorted(op)))
            del op[field]
            bad = field in REQUIRED if run else field == "type"
        elif kind == "retype":
            field = draw(st.sampled_from(sorted(op)))
            op[field] = draw(st.sampled_from(WRONG))
            bad = retyped_is_bad(run, op, field)
        elif kind == "not-object":
            op = draw(st.sampled_from([1, "x", [1, 2], None]))
            bad = True
        elif kind == "deep":
            op["value"] = json.loads(nested(draw(st.integers(MAX_DEPTH + 1, 1100))))
            bad = True
        else:  # a key twice: JSON keeps the last, the original (written after a wrong one)
            bad = False
        items[k] = op
        if array:
            return name, json.dumps(items).encode(), bad, kind
        compact = draw(st.booleans())  # as History.dump writes (the column-wise reader's lines) or spaced
        lines = [json.dumps(x, separators=(",", ":") if compact else None) for x in items]
        if kind == "duplicate":
            lines[k] = '{"process": "dup", "type": [], ' + lines[k][1:]
        return name, ("\n".join(lines) + "\n").encode(), bad, kind
    if kind == "cut":
        at = draw(st.integers(1, len(data) - 1))
        return name, data[:at], not _whole_lines_cut(data, at), kind
    if kind == "bytes":  # anything may come of it, but never a traceback
        at = draw(st.integers(0, len(data)))
        return name, data[:at] + draw(st.binary(min_size=1, max_size=40)) + data[at:], False, kind
    if kind == "utf8":
        at = draw(st.integers(0, len(data) - 1))
        return name, data[:at] + b"\xff\xfe" + data[at:], True, kind  # not UTF-8 wherever it is
    if kind == "lines":  # lines deleted, doubled or swapped: a verdict or a refusal, never a traceback
        lines = data.split(b"\n")
        k = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["delete", "double", "swap"]))
        if how == "delete":
            del lines[k]
        elif how == "double":
            lines.insert(k, lines[k])
        elif k:
            lines[k - 1], lines[k] = lines[k], lines[k - 1]
        return name, b"\n".join(lines), False, kind
    packed = gzip.compress(data)
    if kind == "gzip":
        return name, packed, False, kind
    return name, packed[:draw(st.integers(1, len(packed) - 1))], True, kind  # gzip cut short


def _judge(code, out, err, path, cmd, bad, what):
    if code == 2:
        assert out == "" or cmd[0] == "export", (what, out[:200])  # export streams events before a late error
        assert len(err) == 1 and err[0].startswith(f"ndbchaos {cmd[0]}: {path}"), (what, err)
    else:
        assert code in (0, 1) and not bad, (what, code, err)
        if cmd[0] == "check":
            assert json.loads(out)["valid"] in (True, False, "unknown"), what


@settings(PROFILE, max_examples=80)
@given(case=mutated())
def test_a_mutated_history_gets_a_verdict_or_one_line(tmp_path_factory, case):
    name, data, bad, kind = case
    d = tmp_path_factory.mktemp("mutated")
    p = d / name
    p.write_bytes(data)
    for cmd in COMMANDS[name]:
        code, out, err = _cli([*cmd, str(p)])
        _judge(code, out, err, p, cmd, bad, (kind, cmd, data[:300]))


@PROFILE
@given(junk=st.one_of(st.binary(max_size=200), st.sampled_from([b"", b"\n", b"\x1f\x8b", b"NDBCH", b"\xff" * 10])))
def test_random_bytes_are_one_line_for_every_reader(tmp_path_factory, junk):
    p = tmp_path_factory.mktemp("junk") / "junk.jsonl"
    p.write_bytes(junk)
    for cmd in (["check", "-q"], ["check", "-q", "--model", "list-append"], ["check", "-q", "--model", "rw-register"],
                ["export", "-o", "-"]):
        code, out, err = _cli([*cmd, str(p)])
        _judge(code, out, err, p, cmd, False, (cmd, junk))
        if cmd == ["check", "-q"]:
            assert code == 2, junk  # no random bytes make a run's header


def _columnar_base(tmp_path_factory) -> bytes:
    p = tmp_path_factory.mktemp("nch") / "base.nch"
    h = History.load(__import__("io").BytesIO(BASES["ledger.jsonl"]), "ledger")
    h.write(p)
    return p.read_bytes()


@PROFILE
@given(data=st.data())
def test_a_damaged_columnar_history_is_one_line(tmp_path_factory, data):
    base = _columnar_base(tmp_path_factory)
    how = data.draw(st.sampled_from(["flip", "cut", "insert"]))
    at = data.draw(st.integers(0, len(base) - 1))
    if how == "flip":
        bad = base[:at] + bytes([base[at] ^ data.draw(st.integers(1, 255))]) + base[at + 1:]
    elif how == "cut":
        bad = base[:at]
    else:
        bad = base[:at] + data.draw(st.binary(min_size=1, max_size=16)) + base[at:]
    p = tmp_path_factory.mktemp("nch") / "h.nch"
    p.write_bytes(bad)
    for cmd in (["check", "-q"], ["export", "-o", "-"]):
        code, out, err = _cli([*cmd, str(p)])
        assert code == 2 and len(err) == 1 and err[0].startswith(f"ndbchaos {cmd[0]}: {p}"), (how, at, err)


WINDOW = {"kind": "kill", "start": 0.2, "end": 0.4, "targets": ["ndbd-1"]}


@PROFILE
@given(field=st.sampled_from(["kind", "start", "end", "targets"]), value=st.sampled_from(WRONG + ["", [], 0.3]),
       wrap=st.booleans())
def test_a_mutated_windows_file_gets_a_verdict_or_one_line(tmp_path_factory, field, value, wrap):
    d = tmp_path_factory.mktemp("windows")
    h = d / "ledger.jsonl"
    h.write_bytes(BASES["ledger.jsonl"])
    w = dict(WINDOW, **{field: value})
    p = d / "w.json"
    p.write_text(json.dumps({"windows": [w]} if wrap else [w]))
    code, out, err = _cli(["check", "-q", str(h), "--windows", str(p)])
    if code == 2:
        assert len(err) == 1 and err[0].startswith(f"ndbchaos check: {p}"), err
    else:
        assert code in (0, 1) and json.loads(out)["windows"][0]["start"] == w["start"]


LOGS = sorted((FIXTURES / "ndb-9.7").glob("*.log"))


@PROFILE
@given(log=st.sampled_from(LOGS), junk=st.binary(max_size=64), at=st.floats(0, 1),
       engine=st.sampled_from(["ndb", "galera"]), every=st.booleans())
def test_events_reads_any_bytes_without_a_traceback(tmp_path_factory, log, junk, at, engine, every):
    data = log.read_bytes()[:4000]
    k = int(at * len(data))
    p = tmp_path_factory.mktemp("events") / "x.log"
    p.write_bytes(data[:k] + junk + b"\xff\xfe" + data[k:])
    code, out, err = _cli(["events", "--engine", engine, *(["--all"] if every else []), str(p)])
    assert code == 0 and err == []
    for line in out.splitlines():
        assert isinstance(json.loads(line), dict)


def test_events_refuses_a_directory_or_a_missing_file_in_one_line(tmp_path):
    for p in (tmp_path, tmp_path / "missing.log"):
        code, out, err = _cli(["events", str(p)])
        assert code == 2 and out == "" and len(err) == 1 and str(p) in err[0], err


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_a_max_outage_that_bounds_nothing_is_refused(tmp_path, capsys, value):
    h = History("pk_update", {})
    for t in (0.0, 0.1, 5.0, 5.1):  # a 4.9 s outage
        h.add(1, "u", 1, "ok", t, t + 0.01, "n")
    p = tmp_path / "gap.jsonl"
    h.write_jsonl(p)
    assert main(["check", "-q", str(p), "--max-outage", "1"]) == 1
    capsys.readouterr()
    code, out, err = run_cli(["check", "-q", str(p), "--max-outage", value], capsys)
    assert code == 2 and len(err) == 1 and "--max-outage must be a finite number" in err[0], err


@pytest.mark.parametrize("constant, shown", [("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf")])
@pytest.mark.parametrize("where, record", [
    ("check_options.max_outage_s", '{"check_options": {"max_outage_s": %s}}'),
    ("check_options.max_p99_ms.fault", '{"check_options": {"max_p99_ms": {"fault": %s}}}'),
    ("steps[0].expectation.bounds[1]", '{"steps": [{"begin": 0, "end": 1, "expectation": {"bounds": [1, %s]}}]}'),
])
def test_nan_in_a_run_records_bounds_is_refused_not_a_bound_that_passes_everything(tmp_path, capsys, constant,
                                                                                    shown, where, record):
    h = History("pk_update", {})
    for t in (0.0, 0.1, 5.0, 5.1):  # a 4.9 s outage
        h.add(1, "u", 1, "ok", t, t + 0.01, "n")
    p = tmp_path / "h.jsonl"
    h.write_jsonl(p)
    head, rest = p.read_text().split("\n", 1)
    p.write_text(head[:-1] + ', "run": ' + record % constant + "}\n" + rest)
    line = one_line_error(["check", str(p)], capsys, p, ":")
    assert f"run record {where} is {shown}: a bound that is not a finite number" in line, line


def test_a_jepsen_history_without_model_says_to_use_model(tmp_path, capsys):
    p = tmp_path / "g2.json"
    p.write_text(json.dumps(G2_HISTORY))
    assert "header must be" in one_line_error(["check", str(p)], capsys, p, ":1:")
    q = tmp_path / "g2.edn"
    q.write_text("{:type :invoke, :process 0, :value [[:r 1 nil]]}\n")
    for path in (p, q):
        line = one_line_error(["check", str(path)], capsys, path, ":1:")
        assert line.endswith("(a Jepsen/Elle history? judge it with --model list-append or rw-register)"), line


@pytest.mark.parametrize("value", [{"from": [1], "to": 2, "amount": 1}, {"from": 1, "to": {}, "amount": 1},
                                   {"from": 1, "to": 2, "amount": "x"}, {"from": 1, "to": 2}])
def test_a_bank_transfer_of_the_wrong_shape_is_refused(tmp_path, capsys, value):
    p = tmp_path / "bank.jsonl"
    p.write_bytes(_run_jsonl("bank", [(1, "transfer", value, "ok", 0.1, 0.2, "n"),
                                      (2, "read", {"balances": {"0": 10, "1": 10}}, "ok", 0.3, 0.4, "n")]))
    assert "bank transfer value must be" in one_line_error(["check", str(p)], capsys, p, ":2:")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


@PROFILE
@given(name=st.sampled_from(sorted(BASES)), data=st.data())
def test_any_json_value_in_any_field_gets_a_verdict_or_one_line(tmp_path_factory, name, data):
    if name.endswith(".edn"):
        name = "g2.json"
    items = json.loads(BASES[name]) if name.endswith(".json") else _json_lines(BASES[name])
    k = data.draw(st.integers(0, len(items) - 1))
    field = data.draw(st.sampled_from(sorted(items[k]) + ["extra"]))
    items[k] = {**items[k], field: data.draw(JSON_VALUES)}
    p = tmp_path_factory.mktemp("anyjson") / name
    seps = (",", ":") if data.draw(st.booleans()) else None  # as History.dump writes, or spaced
    p.write_text(json.dumps(items) if name.endswith(".json")
                 else "\n".join(json.dumps(x, separators=seps) for x in items) + "\n")
    for cmd in COMMANDS[name]:
        code, out, err = _cli([*cmd, str(p)])
        _judge(code, out, err, p, cmd, False, (cmd, field, items[k]))


EDN_TOKENS = [":type", ":ok", ":invoke", ":info", ":fail", ":process", ":value", ":index", ":r", ":w", ":append",
              "0", "1", "-1", "1/0", "1/x", "3/4", "1e999", "12abc", "99999999999999999999N", "1.5M", "nil", "true",
              "[", "]", "{", "}", "(", ")", "#{", "#_", "#inst", '"s"', "\\a", "\\u00e9", ";c\n", ",",
              "#jepsen.history.Op"]


@PROFILE
@given(tokens=st.lists(st.sampled_from(EDN_TOKENS), max_size=40), text=st.text(max_size=30))
def test_any_edn_gets_a_verdict_or_one_line(tmp_path_factory, tokens, text):
    p = tmp_path_factory.mktemp("edn") / "h.edn"
    p.write_text("{:type :invoke, :process 0, :value [[:r 1 nil]]}\n{" + " ".join(tokens) + "}\n" + text)
    for model in ("list-append", "rw-register"):
        code, out, err = _cli(["check", "-q", "--model", model, str(p)])
        _judge(code, out, err, p, ["check"], False, (tokens, text))



def test_a_ledger_id_the_durability_check_cannot_hold_names_the_file(tmp_path, capsys):
    # the reader keeps integers beyond 64 bits (they round-trip); the durability checker refuses them
    p = tmp_path / "h.jsonl"
    p.write_bytes(_run_jsonl("ledger", [(1, "insert", 2 ** 70, "ok", 0.1, 0.2, "n"),
                                        (2, "read", [2 ** 70], "ok", 0.3, 0.4, "n")]))
    assert "ledger insert values must be integer ids" in one_line_error(["check", str(p)], capsys, p, ": ")


@pytest.mark.parametrize("window, outside", [
    ({"start": 100, "end": 200}, "window 0 (100 to 200 s) lies outside the history (0.1 to 1.1 s)"),
    ({"start": -50, "end": -10}, "window 0 (-50 to -10 s) lies outside"),
    ({"start": 30, "end": None}, "window 0 (30 to never s) lies outside"),
    ({"start": 0.5, "end": 0.7}, None), ({"start": -5, "end": None}, None),
])
def test_a_window_on_another_clock_is_refused(tmp_path, capsys, window, outside):
    h = tmp_path / "ledger.jsonl"
    h.write_bytes(BASES["ledger.jsonl"])
    w = tmp_path / "w.json"
    w.write_text(json.dumps([{"kind": "kill", "targets": ["ndbd-1"], **window}]))
    if outside is None:
        assert main(["check", "-q", str(h), "--windows", str(w)]) in (0, 1)
    else:
        assert outside in one_line_error(["check", str(h), "--windows", str(w)], capsys, w, ":")
