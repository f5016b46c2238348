"""The benchmark beside adya (``python -m ndbchaos.bench.checker adya N``): both checkers run on
adya's simulated histories, timed as whole processes, with the same verdicts. Skipped without
adya (``cargo install adya``)."""

from __future__ import annotations

import shutil

import pytest

from ndbchaos.bench.checker import bench_adya, main

pytestmark = pytest.mark.skipif(shutil.which("adya") is None, reason="adya is not installed (`cargo install adya`)")


def test_both_checkers_are_timed_and_agree(tmp_path):
    res = bench_adya(300, ("serializable", "read-committed"), runs=1, directory=str(tmp_path))
    for level, valid in (("serializable", True), ("read-committed", False)):
        r = res[level]
        assert r["same_verdict"] is True and r["valid"] is valid
        assert r["ours"]["wall_s"] > 0 and r["adya"]["wall_s"] > 0 and r["wall_ratio"] > 0
        assert (tmp_path / f"adya-list-append-{level}-300.jsonl").exists()
    # ours ran from bytecode kept beside the histories, as an installed wheel runs
    assert res["bytecode"] is True and any((tmp_path / "ndbchaos-bench-pycache").rglob("scan*.pyc"))


def test_the_command_line(tmp_path, capsys):
    assert main(["adya"]) == 2
    assert main(["adya", "200", "serializable", "--runs"]) == 2
    assert main(["adya", "200", "serializable", "--runs", "1", "--dir", str(tmp_path)]) == 0
    assert '"same_verdict": true' in capsys.readouterr().out
    (tmp_path / "b").mkdir()
    assert main(["adya", "200", "serializable", "--runs", "1", "--dir", str(tmp_path / "b"), "--no-bytecode"]) == 0
    out = capsys.readouterr().out
    assert '"same_verdict": true' in out and '"bytecode": false' in out
    assert not (tmp_path / "b" / "ndbchaos-bench-pycache").exists()
