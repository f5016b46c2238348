"""``ndbchaos check``: JSON on stdout, exit 0 valid / 1 invalid or unknown / 2 malformed input."""

from __future__ import annotations

import gzip
import json

import pytest

from ndbchaos.cli import main
from ndbchaos.history import ErrorInfo, History

E_UNK = ErrorInfo(2013, None, "unknown", "Lost connection to MySQL server during query")


def ledger(tmp_path, read_ids, name="h.jsonl", extra=()):
    h = History("ledger", {"rate": None})
    for i in range(1, 6):
        h.add(1, "insert", i, "ok", i * 0.1, i * 0.1 + 0.01, "sql1")
    for op in extra:
        h.add(*op)
    h.add(2, "read", read_ids, "ok", 1.0, 1.1, "sql2")
    p = tmp_path / name
    h.write_jsonl(p)
    return p


def test_valid_history_exits_0_with_json(tmp_path, capsys):
    p = ledger(tmp_path, [1, 2, 3, 4, 5], name="h.jsonl.gz")
    assert main(["check", str(p)]) == 0
    out, err = capsys.readouterr()
    v = json.loads(out)
    assert v["valid"] is True and v["checks"]["durability"]["lost"] == 0
    assert "VALID" in err and "durability: valid" in err


def test_lost_write_exits_1(tmp_path, capsys):
    p = ledger(tmp_path, [1, 2, 4, 5])
    assert main(["check", str(p), "--compact", "-q"]) == 1
    out, err = capsys.readouterr()
    assert err == "" and len(out.strip().splitlines()) == 1
    v = json.loads(out)
    assert v["valid"] is False and v["checks"]["durability"]["lost"] == 1


def test_unknown_exits_1(tmp_path, capsys):
    h = History("ledger", {})
    h.add(1, "insert", 1, "ok", 0.0, 0.1, "a")
    p = tmp_path / "h.jsonl"
    h.write_jsonl(p)
    assert main(["check", str(p)]) == 1
    assert json.loads(capsys.readouterr().out)["valid"] == "unknown"


def test_indeterminate_write_passes(tmp_path, capsys):
    p = ledger(tmp_path, [1, 2, 3, 4, 5, 6], extra=[(3, "insert", 6, "info", 0.5, 0.9, "sql1", E_UNK)])
    assert main(["check", str(p)]) == 0
    assert json.loads(capsys.readouterr().out)["checks"]["durability"]["indeterminate"] == 1


def test_windows_bucket_and_gcp_options(tmp_path, capsys):
    p = ledger(tmp_path, [1, 2, 3, 4])  # id 5 acked at 0.51 is lost
    w = tmp_path / "w.json"
    w.write_text(json.dumps([{"kind": "kill", "start": 0.3, "end": 0.6, "targets": ["ndbd-1"],
                              "effective_at": 0.31, "params": {}}]))
    assert main(["check", str(p), "--windows", str(w), "--bucket-ms", "50", "--gcp-loss-window", "2",
                 "--cluster-crash-at", "0.7"]) == 0
    v = json.loads(capsys.readouterr().out)
    d = v["checks"]["durability"]
    assert (d["lost"], d["explained_by_gcp"], d["unexplained"]) == (1, 1, 0)
    assert v["windows"][0]["kind"] == "kill"
    assert v["checks"]["availability"]["details"]["series"]["bucket_s"] == 0.05


HEADER = '{"history": 1, "workload": "ledger", "params": {}}\n'
GOOD = '{"process": 1, "f": "insert", "value": 1, "type": "ok", "start": 0.1, "end": 0.2, "node": "a", "error": null}\n'


@pytest.mark.parametrize("text, gz, where, what", [
    ('{"history": 1}\n', False, ":1:", "header must be"),
    (HEADER + GOOD + "{bad json\n", False, ":3:", "not JSON"),
    (HEADER + GOOD + GOOD.replace('"ok"', '"okay"'), False, ":3:", "type must be"),
    (HEADER + GOOD + GOOD.replace('"end": 0.2', '"end": 0.0'), False, ":3:", "before start"),
    (HEADER + GOOD * 5000, True, ":", "truncated"),
])
def test_malformed_input_exits_2_naming_file_and_line(tmp_path, capsys, text, gz, where, what):
    p = tmp_path / ("h.jsonl.gz" if gz else "h.jsonl")
    if gz:
        data = gzip.compress(text.encode())
        p.write_bytes(data[: len(data) * 2 // 3])
    else:
        p.write_text(text)
    assert main(["check", str(p)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"ndbchaos check: {p}{where}"), err
    assert what in lines[0] or "not JSON" in lines[0], err
    if gz:
        assert int(lines[0].split(f"{p}:")[1].split(":")[0]) >= 2


def test_bad_windows_file_and_missing_history_exit_2(tmp_path, capsys):
    p = ledger(tmp_path, [1, 2, 3, 4, 5])
    w = tmp_path / "w.json"
    w.write_text('[{"kind": "kill", "start": 2, "end": 1}]')
    assert main(["check", str(p), "--windows", str(w)]) == 2
    assert "w.json: window 0: end 1 is before start 2" in capsys.readouterr().err
    w.write_text("[{")
    assert main(["check", str(p), "--windows", str(w)]) == 2
    assert "w.json:1: not JSON" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl: cannot open" in capsys.readouterr().err
    assert main(["check", str(p), "--gcp-loss-window", "2"]) == 2
    assert "go together" in capsys.readouterr().err
