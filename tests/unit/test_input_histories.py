"""The files ``check``, ``export`` and ``events`` read, validated at the edge: a bad one is one line
on stderr naming the file (and its line, op or offset) and exit 2, never a traceback; a
well-formed one gets a verdict (0 valid, 1 invalid or unknown), never a silent pass on nothing."""

from __future__ import annotations

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
    ([["append", 1]], "[f, k, v]"),
    ("x", "list of [f, k, v]"),
    ([["r", {"a": 1}, [1]]], "numbers or strings"),
    ([["r", 1, [[1]]]], "numbers or strings"),
])
def test_a_transactional_run_with_bad_values_is_malformed_not_unknown(tmp_path, capsys, value, what):
    p = tmp_path / "h.jsonl"
    p.write_text(LA_HEADER + txn_line([["append", 1, 1]]) + txn_line(value, 1))
    for argv in (["check", str(p)], ["export", str(p)], ["check", "--model", "list-append", str(p)]):
        line = one_line_error(argv, capsys, p, ":3:" if "--model" not in argv else ":")
        assert what in line or "micro-op" in line, line
