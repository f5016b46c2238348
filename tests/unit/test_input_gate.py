"""Property-based: malformed gate files, results folders, summary attachments and inventories.

Valid inputs (those of test_gate.py, test_summary_cli.py and test_inventory.py) are mutated: keys
dropped, added or retyped, values of every JSON/TOML/YAML kind, nesting too deep, random bytes,
invalid UTF-8, attachments pointing outside the folder. Whatever comes out, the command gives a
documented code (gate: 0 pass, 6 failed, 4 judged nothing; summary: 0) or refuses in one stderr
line naming the file with exit 2, never a traceback; the mutations that certainly break the input
must be refused, and nothing outside the results folder is ever read."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest

from ndbchaos.cli import main
from ndbchaos.runtimes.inventory.spec import InventoryError, load as load_inventory
from ndbchaos.gate.spec import OBJECTIVES
from tests.unit.test_gate import run
from tests.unit.test_inventory import base_doc

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

settings.register_profile("input_gate", max_examples=50, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])
PROFILE = settings.get_profile("input_gate")

VERDICT_CODES = {"gate": {0, 4, 6}, "summary": {0}}


def cli(capsys, argv: list[str]) -> tuple[int, str, list[str]]:
    """main(argv) in this process: (code, stdout, stderr lines); an exception escapes (a traceback)."""
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err.strip().splitlines()


def assert_contract(capsys, argv: list[str], names: list[Path], must_refuse: bool = False) -> int:
    """The command gives a documented code, or exit 2 with one line naming one of ``names`` (for
    the gate, ``names[0]`` is the gate file)."""
    code, out, err = cli(capsys, argv)
    cmd = argv[0]
    if code == 2:
        assert len(err) == 1 and err[0].startswith(f"ndbchaos {cmd}: "), err
        assert any(str(n) in err[0] for n in names), (err, names)
        return code
    assert not must_refuse, (argv, code, out[-300:], err)
    assert code in VERDICT_CODES[cmd], (argv, code, err)
    if cmd == "gate" and code == 4:  # judged nothing: one line naming the gate file (the table, if any, before)
        assert len(err) == 1 and str(names[0]) in err[0] and "Traceback" not in out, err
    elif cmd == "gate":  # the table
        assert out.strip().splitlines()[-1].startswith("gate ") and err == [], err
    return code


# -- values of every kind -----------------------------------------------------------------------

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                    st.sampled_from(["", "ok", "fail", "warn", "survives", "../../../etc/passwd", "/etc/passwd",
                                     "run.jsonl", "a-attachment.jsonl", "datanode_loss", "*", "fault", "all"]))
JSONISH = st.recursive(SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), kids, max_size=4)),
                       max_leaves=12)


def deep(n: int, leaf="1") -> str:
    return "[" * n + leaf + "]" * n


# -- gate files -----------------------------------------------------------------------------------

def toml_value(v) -> str | None:
    """An inline TOML rendering of ``v`` (None: TOML has no such value, e.g. null)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v) if -2 ** 63 <= v < 2 ** 63 else None
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v) if all(c >= " " or c == "\t" for c in v) and "\x7f" not in v else None
    if isinstance(v, list):
        parts = [toml_value(x) for x in v]
        return None if None in parts else "[" + ", ".join(parts) + "]"
    parts = [(json.dumps(k), toml_value(x)) for k, x in v.items()]
    return None if any(p is None for _, p in parts) else "{" + ", ".join(f"{k} = {p}" for k, p in parts) + "}"


def toml_doc(doc: dict) -> str:
    lines = []
    for k, v in doc.items():
        r = toml_value(v)
        if r is not None:
            lines.append(f"{json.dumps(k)} = {r}")
    return "\n".join(lines) + "\n"


GOOD_OBJECTIVES = {
    "outage_s": st.floats(0, 100), "outage_per_node_s": st.floats(0, 100), "recovery_s": st.integers(0, 600),
    "latency_p99_ms": st.one_of(st.floats(0.1, 1e4), st.fixed_dictionaries({"fault": st.floats(0.1, 1e4)})),
    "failed_share": st.one_of(st.floats(0, 1), st.fixed_dictionaries({"all": st.floats(0, 1)})),
    "allowed_error_classes": st.lists(st.sampled_from(["temporary", "unknown", "permanent"]), max_size=3),
    "allowed_error_codes": st.lists(st.integers(0, 5000), max_size=3),
    "cluster": st.sampled_from(["survives", "stops"]), "arbitration": st.just(True),
    "consistency_models": st.just(["read-committed"]),
}
#: a well-formed gate: objectives with values of the right kind, patterns that may name nothing
GOOD_GATE = st.builds(
    lambda defaults, entries: {"defaults": defaults, "scenario": entries},
    st.dictionaries(st.sampled_from(sorted(GOOD_OBJECTIVES)), st.none(), max_size=2).flatmap(
        lambda d: st.fixed_dictionaries({k: GOOD_OBJECTIVES[k] for k in d})),
    st.lists(st.tuples(st.sampled_from(["datanode_loss", "kill_one_data_node", "test_datanode_loss[*]", "nothing"]),
                       st.dictionaries(st.sampled_from(sorted(GOOD_OBJECTIVES)), st.none(), min_size=1, max_size=3),
                       st.sampled_from(["fail", "warn"])), max_size=3).flatmap(
        lambda es: st.tuples(*[st.fixed_dictionaries({"match": st.just(m), "severity": st.just(sev),
                                                      **{k: GOOD_OBJECTIVES[k] for k in ks}})
                               for m, ks, sev in es]).map(list)))

KEYS = sorted({*OBJECTIVES, "match", "severity", "warn", "regression_pct", "version", "baseline", "defaults",
               "scenario", "bogus"})


@st.composite
def bad_gate(draw) -> tuple[bytes, bool]:
    """(file bytes, certainly refused): a well-formed gate with one thing broken."""
    doc = draw(GOOD_GATE)
    how = draw(st.sampled_from(["retype", "unknown key", "bytes", "cut", "deep", "not utf-8", "top"]))
    if how == "retype":  # one key of one table set to a value of any kind
        table = draw(st.sampled_from(["defaults"] + [i for i in range(len(doc["scenario"]))]))
        t = doc["defaults"] if table == "defaults" else doc["scenario"][table]
        t[draw(st.sampled_from(KEYS))] = draw(JSONISH)
        return toml_doc(doc).encode(), False
    if how == "unknown key":
        doc["defaults"][draw(st.sampled_from(["bogus", "outage", "Outage_s", "recovery"]))] = 1
        return toml_doc(doc).encode(), True
    if how == "top":
        doc[draw(st.sampled_from(["version", "baseline", "defaults", "scenario", "nope"]))] = draw(JSONISH)
        return toml_doc(doc).encode(), False
    text = toml_doc(doc).encode()
    if how == "bytes":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.binary(min_size=1, max_size=8)) + text[at:], False
    if how == "cut":
        return text[:draw(st.integers(0, len(text)))], False
    if how == "deep":
        return text + f"x = {deep(draw(st.sampled_from([50, 3000])))}\n".encode(), True
    return text + b'baseline = "\xc3\x28"\n', True


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """An Allure results folder with one scenario that ran: its run record, measurements and
    verdict attached (what both gate and summary read)."""
    d = tmp_path_factory.mktemp("results")
    fill_results(d)
    return d


def fill_results(d: Path, result: dict | None = None) -> None:
    r = run()
    r.history.write_jsonl(d / "a-attachment.jsonl")
    (d / "m.json").write_text(json.dumps({"detection": {"name": "detection", "value": 4.2, "unit": "s",
                                                        "bound": 7.0}, "outage on sql1": {"value": 2.0}}))
    (d / "v.json").write_text(json.dumps({"valid": True, "checks": {"invariant": {"valid": True}}}))
    (d / "a-result.json").write_text(json.dumps(result if result is not None else base_result()))


def base_result() -> dict:
    return {"name": "test_datanode_loss[kill_one_data_node]", "status": "passed", "start": 1,
            "fullName": "scenarios.test_datanode_loss#test_datanode_loss",
            "labels": [{"name": "epic", "value": "engine: ndb"}, {"name": "tag", "value": "datanode_loss"}],
            "parameters": [{"name": "sc", "value": "kill_one_data_node"}],
            "attachments": [{"name": "run.jsonl", "source": "a-attachment.jsonl"}],
            "steps": [{"name": "stop load", "attachments": [{"name": "measurements", "source": "m.json"},
                                                             {"name": "verdict", "source": "v.json"}]}]}


@settings(PROFILE)
@given(doc=GOOD_GATE)
def test_a_well_formed_gate_gets_a_verdict_code(capsys, results, doc):
    with tempfile.TemporaryDirectory() as t:
        g = Path(t) / "gate.toml"
        g.write_text(toml_doc(doc))
        code = assert_contract(capsys, ["gate", str(g), str(results)], [g])
        assert code != 2, f"a well-formed gate was refused as bad input: {toml_doc(doc)}"


@settings(PROFILE)
@given(case=bad_gate())
def test_a_malformed_gate_file_is_one_line_naming_it(capsys, results, case):
    data, refused = case
    with tempfile.TemporaryDirectory() as t:
        g = Path(t) / "gate.toml"
        g.write_bytes(data)
        assert_contract(capsys, ["gate", str(g), str(results)], [g], must_refuse=refused)


# -- results folders ------------------------------------------------------------------------------

ATTACHMENT_PATHS = [("attachments",), ("steps", 0, "attachments")]


@st.composite
def bad_result(draw) -> tuple[object, bool, bool]:
    """(result.json content, certainly refused, points outside the folder)."""
    r = base_result()
    how = draw(st.sampled_from(["whole", "key", "attachments", "attachment", "source", "outside", "deep"]))
    if how == "whole":
        v = draw(JSONISH)
        return v, not isinstance(v, dict), False
    if how == "key":
        r[draw(st.sampled_from(["name", "status", "start", "labels", "parameters", "steps", "attachments",
                                "fullName"]))] = draw(JSONISH)
        return r, False, False
    path = draw(st.sampled_from(ATTACHMENT_PATHS))
    node = r
    for k in path[:-1]:
        node = node[k]
    if how == "attachments":
        v = draw(JSONISH)
        node["attachments"] = v
        return r, not isinstance(v, list), False
    if how == "attachment":
        node["attachments"][0] = draw(JSONISH)
        return r, True, False
    if how == "source":
        node["attachments"][0]["source"] = draw(JSONISH)
        return r, False, False
    if how == "outside":
        node["attachments"][0]["source"] = draw(st.sampled_from(
            ["../secret.jsonl", "../../../etc/passwd", "/etc/passwd", "link.jsonl", ".", "sub/../../secret.jsonl"]))
        return r, True, True
    return deep(3000), True, False


@settings(PROFILE)
@given(case=bad_result(), garble=st.sampled_from(["", "run", "result bytes"]))
def test_a_malformed_results_folder_is_one_line_for_gate_and_summary(capsys, case, garble):
    content, refused, outside = case
    with tempfile.TemporaryDirectory() as t:
        t = Path(t)
        d = t / "res"
        d.mkdir()
        fill_results(d)
        # outside the folder: a valid run record and a link to it; reading either would pass the gate
        run().history.write_jsonl(t / "secret.jsonl")
        (d / "link.jsonl").symlink_to(t / "secret.jsonl")
        f = d / "a-result.json"
        f.write_text(content if isinstance(content, str) else json.dumps(content, allow_nan=True))
        if garble == "run":
            (d / "a-attachment.jsonl").write_bytes(b'{"history": 1, "workload": "ledger"}\n\xff\x00{"type"\n')
        elif garble == "result bytes":
            f.write_bytes(f.read_bytes()[:-3] + b"\xff\xfe")
            refused = True
        g = t / "gate.toml"
        g.write_text('[[scenario]]\nmatch = "datanode_loss"\noutage_per_node_s = 50\n')
        assert_contract(capsys, ["gate", str(g), str(d)], [g, d], must_refuse=refused)
        # outside the folder: never read, refused in one line by either command
        assert_contract(capsys, ["summary", str(d)], [d], must_refuse=refused)


# -- summary's attachments ------------------------------------------------------------------------

MEASUREMENT = st.one_of(JSONISH, st.fixed_dictionaries({"value": JSONISH, "bound": JSONISH}))


@settings(PROFILE)
@given(measurements=st.one_of(JSONISH, st.dictionaries(st.sampled_from(["detection", "recovery", "outage on sql1",
                                                                        "other"]), MEASUREMENT, max_size=3)),
       verdict=st.one_of(JSONISH, st.fixed_dictionaries({"checks": st.one_of(JSONISH, st.dictionaries(
           st.sampled_from(["durability", "invariant", "errors", "transactions", "latency"]),
           st.one_of(JSONISH, st.fixed_dictionaries({"valid": JSONISH, "details": JSONISH})), max_size=3))})),
       raw=st.sampled_from([None, b"", b"\xff\xfe", b"[" * 3000, b"{\"a\": "]))
def test_malformed_summary_attachments_are_one_line_naming_the_file(capsys, measurements, verdict, raw):
    with tempfile.TemporaryDirectory() as t:
        d = Path(t)
        fill_results(d)
        (d / "m.json").write_text(json.dumps(measurements, allow_nan=True))
        (d / "v.json").write_text(json.dumps(verdict, allow_nan=True))
        if raw is not None:
            (d / "v.json").write_bytes(raw)
        assert_contract(capsys, ["summary", str(d)], [d / "m.json", d / "v.json"],
                        must_refuse=raw is not None or not isinstance(measurements, dict))


# -- inventories ----------------------------------------------------------------------------------

def inventory_problem(path: Path) -> str | None:
    """None when the inventory reads; else its one-line error (any other exception escapes)."""
    try:
        load_inventory(path, environ={})
    except InventoryError as e:
        msg = str(e)
        assert msg.startswith(f"inventory {path}: ") and "\n" not in msg, msg
        return msg
    return None


@st.composite
def bad_inventory(draw) -> tuple[bytes, bool]:
    import yaml
    doc = base_doc()
    how = draw(st.sampled_from(["top", "node", "host", "drop", "bytes", "deep", "alias", "binary"]))
    if how == "top":
        doc[draw(st.sampled_from(["engine", "name", "ssh", "env", "hosts", "nodes", "sql", "connectstring",
                                  "bogus"]))] = draw(JSONISH)
    elif how == "node":
        i = draw(st.integers(0, 2))
        doc["nodes"][i][draw(st.sampled_from(["name", "role", "host", "nodeid", "nodegroup", "process", "pidfile",
                                              "start", "systemd", "logs", "sql", "env", "datadir", "x"]))] = \
            draw(JSONISH)
    elif how == "host":
        doc["hosts"][draw(st.sampled_from(["h1", "h2", "new"]))] = draw(JSONISH)
    elif how == "drop":
        doc.pop(draw(st.sampled_from(["engine", "hosts", "nodes"])))
        return yaml.safe_dump(doc).encode(), True
    text = yaml.safe_dump(doc, allow_unicode=True).encode()
    if how == "bytes":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.binary(min_size=1, max_size=8)) + text[at:], False
    if how == "deep":
        return text + b"env: " + deep(draw(st.sampled_from([40, 3000]))).encode() + b"\n", True
    if how == "alias":
        return b"engine: ndb\nhosts: &a {h1: *a}\nnodes: &n [*n]\n", True
    if how == "binary":
        return draw(st.binary(min_size=1, max_size=64)) + b"\xff", True
    return text, False


@settings(PROFILE)
@given(case=bad_inventory())
def test_a_malformed_inventory_is_one_line_naming_it(case):
    data, refused = case
    with tempfile.TemporaryDirectory() as t:
        f = Path(t) / "inv.yml"
        f.write_bytes(data)
        msg = inventory_problem(f)
        assert msg is not None or not refused, data[:200]
