"""``ndbchaos bench`` pieces that need no database: thread split, the sysbench command line, the
summary arithmetic, the missing-sysbench error and the CLI's usage errors."""

from __future__ import annotations

import os

import pytest

from ndbchaos.bench import config as B
from ndbchaos.bench import load as L
from ndbchaos.bench import meter as M
from ndbchaos.bench import sysbench as S
from ndbchaos.cli import main
from ndbchaos.errors import NdbChaosError, UsageError
from ndbchaos.workload.runner import Endpoint


def test_split_threads():
    assert B.split_threads(4, cores=2) == (2, 2)
    assert B.split_threads(8, cores=2) == (2, 4)
    assert B.split_threads(3, cores=2) == (1, 3)
    assert B.split_threads(1, cores=8) == (1, 1)
    assert B.split_threads(6, cores=4) == (3, 2)
    assert B.split_threads(4, processes=4) == (4, 1)
    with pytest.raises(UsageError):
        B.split_threads(4, processes=3)
    with pytest.raises(UsageError):
        B.split_threads(0)


def test_sysbench_command_matches_our_side():
    cfg = B.BenchConfig(threads=6, table_size=5000)
    cmd = S.sysbench_cmd("/usr/bin/sysbench", "update_pk", Endpoint("data1", 32001), cfg, 11.2)
    assert cmd[:2] == ["/usr/bin/sysbench", "oltp_update_non_index"] and cmd[-1] == "run"
    for opt in ("--mysql-port=32001", "--mysql-host=127.0.0.1", "--threads=6", "--table-size=5000",
                "--tables=1", "--time=12", "--rand-type=uniform", "--mysql-db=ndbchaos"):
        assert opt in cmd
    assert S.sysbench_cmd("sb", "point_select", Endpoint("a", 1), cfg, 3)[1] == "oltp_point_select"
    # our workloads for the same tests run the same statements
    from ndbchaos.workload import get_workload
    for test, (script, ours, counter) in B.TESTS.items():
        assert script == ours and counter in M.COUNTERS
        assert get_workload(ours).params["ps"] is True  # prepared statements, as sysbench's default


def test_summary_arithmetic():
    S = B.Sample
    samples = [
        S("ours", "point_select", 900.0, 10, 899.0, 0, {"client": 50.0, "server": 80.0}),
        S("sysbench", "point_select", 1000.0, 10, 1001.0, 0, {"client": 25.0, "server": 75.0}),
        S("ours-norec", "point_select", 950.0, 10, None, 0, {"client": 48.0, "server": 80.0}),
        S("ours", "point_select", 1100.0, 10, 1100.0, 0, {"client": 52.0, "server": 82.0}),
        S("sysbench", "point_select", 1000.0, 10, 1000.0, 0, {"client": 27.0, "server": 77.0}),
        S("ours-norec", "point_select", 1050.0, 10, None, 0, {"client": 50.0, "server": 80.0}),
    ]
    s = L.summarize(samples, ("point_select",))["point_select"]
    assert s["ours"] == 1000 and s["sysbench"] == 1000 and s["ours-norec"] == 1000
    assert s["ratios"] == [pytest.approx(0.9), pytest.approx(1.1)] and s["ratio"] == pytest.approx(1.0)
    assert s["recording_overhead"] == pytest.approx(((1 - 900 / 950) + (1 - 1100 / 1050)) / 2)
    assert s["recording_cpu_us"] == pytest.approx(2.0)  # 51 - 49 us client CPU per statement
    assert s["recording_overhead_cpu"] == pytest.approx(2.0 / (51 + 81))
    assert s["cpu_ours"] == pytest.approx(51.0) and s["cpu_sysbench"] == pytest.approx(26.0)
    assert s["cpu_server_ours"] == pytest.approx(81.0)
    assert "cpu_proxy_ours" not in s


def test_summary_with_ab_runs_and_split():
    S = B.Sample
    samples = [
        S("ab", "update_pk", 1000.0, 10, 980.0, 0, {"client": 60.0, "client_rec": 62.0}),
        S("ours", "update_pk", 990.0, 10, 990.0, 0, {"client": 61.0, "server": 700.0, "proxy": 90.0}),
        S("sysbench", "update_pk", 1000.0, 10, 1000.0, 0, {"client": 30.0, "server": 700.0, "proxy": 85.0}),
        S("sysbench", "update_pk", 1100.0, 10, 1100.0, 0, {"client": 30.0, "server": 700.0, "proxy": 85.0}),
        S("ours", "update_pk", 1100.0, 10, 1100.0, 0, {"client": 61.0, "server": 700.0, "proxy": 90.0}),
        S("ab", "update_pk", 1000.0, 10, 1000.0, 0, {"client": 60.0, "client_rec": 62.0}),
    ]
    s = L.summarize(samples, ("update_pk",))["update_pk"]
    assert s["overhead_method"] == "A/B"
    assert s["overheads"] == [pytest.approx(0.02), pytest.approx(0.0)]
    assert s["recording_overhead"] == pytest.approx(0.01)
    assert s["ratios"] == [pytest.approx(0.99), pytest.approx(1.0)] and s["ratio"] == pytest.approx(0.995)
    assert s["recording_cpu_us"] == pytest.approx(2.0)
    assert s["recording_overhead_cpu"] == pytest.approx(2.0 / (61 + 700 + 90))
    assert B.ab_split(4) == (1, 2)  # 2 processes x 2 (2+ cores) or 1 x 4 (one core): halves of 1 x 2
    assert B.ab_split(4, processes=4) == (2, 1)
    assert B.ab_split(6, processes=3) is None
    assert B.ab_split(3, processes=1) is None


def test_missing_sysbench_is_one_line_error(monkeypatch):
    monkeypatch.setattr(S.shutil, "which", lambda name: None)
    monkeypatch.setattr(S.os, "geteuid", lambda: 1000)
    with pytest.raises(NdbChaosError) as e:
        S.ensure_sysbench()
    assert "sysbench is not installed" in str(e.value) and "\n" not in str(e.value)


def test_missing_sysbench_installed_as_root(monkeypatch):
    calls = []
    found = iter([None, "/usr/bin/sysbench"])
    monkeypatch.setattr(S.shutil, "which", lambda name: "/usr/bin/apt-get" if name == "apt-get" else next(found))
    monkeypatch.setattr(S.os, "geteuid", lambda: 0)

    class R:
        returncode, stdout, stderr = 0, "", ""

    monkeypatch.setattr(S.subprocess, "run", lambda cmd, **kw: calls.append(cmd) or R())
    assert S.ensure_sysbench() == "/usr/bin/sysbench"
    assert calls == [["apt-get", "install", "-y", "-q", "sysbench"]]


def test_proc_cpu_and_proxy_lookup():
    assert M.proc_cpu([os.getpid()]) >= 0
    assert M.proc_cpu([2**30]) == 0  # a pid that does not exist counts nothing
    assert isinstance(M.docker_proxy_pids(1), list)


def test_cli_usage_errors(capsys):
    assert main(["bench", "--tests", "bogus"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ndbchaos bench: --tests: unknown test(s) bogus") and "\n" not in err
    assert main(["bench", "--threads", "0"]) == 2
    assert main(["bench", "--threads", "4", "--processes", "3", "--tests", "point_select"]) == 2
