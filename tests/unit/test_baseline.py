"""ndbchaos baseline: its figures from a history's columns and Docker's stats, and its bad input
(one line, exit 2, nothing started)."""

import pytest

from ndbchaos.bench.steady import Steady, SteadyConfig, role_usage, window_figures
from ndbchaos.cli import main
from ndbchaos.errors import UsageError
from ndbchaos.history.columns import Columns


def cols_of(ops):
    c = Columns()
    for i, (kind, start, end, node) in enumerate(ops):
        c.append(i % 3, "read", i, kind, start, end, node, None)
    c.flush()
    return c


def test_window_counts_only_operations_that_ended_inside_it():
    ops = [("ok", 0.5, 0.9, "sql1"),      # ended before the window
           ("ok", 1.0, 1.002, "sql1"),    # 2 ms
           ("ok", 1.5, 1.504, "sql2"),    # 4 ms
           ("ok", 2.0, 2.010, "sql2"),    # 10 ms
           ("fail", 2.5, 2.6, "sql1"),    # failed inside
           ("info", 2.7, 2.8, "sql1"),    # unknown outcome: not ok either
           ("ok", 2.9, 3.2, "sql1")]      # ended after the window
    ok, failed, per_node, pct = window_figures(cols_of(ops), 1.0, 3.0)
    assert (ok, failed) == (3, 2)
    assert per_node == {"sql1": 1, "sql2": 2}
    assert pct["p50"] == pytest.approx(4.0, abs=0.01)
    assert pct["max"] == pytest.approx(10.0, abs=0.01)
    assert pct["p99"] == pytest.approx(10.0, abs=0.01)


def test_an_empty_window_has_no_percentiles():
    ok, failed, per_node, pct = window_figures(cols_of([("ok", 0.0, 0.1, "sql1")]), 5.0, 6.0)
    assert (ok, failed, per_node) == (0, 0, {})
    assert pct == {"p50": None, "p95": None, "p99": None, "max": None}


def stats(cpu_ns, usage, inactive, read="2026-11-27T15:00:00Z"):
    return {"read": read, "cpu_stats": {"cpu_usage": {"total_usage": cpu_ns}},
            "memory_stats": {"usage": usage, "stats": {"total_inactive_file": inactive}}}


def test_role_usage_divides_each_containers_cpu_by_its_own_sampling_span_and_drops_the_cache():
    mib = 1 << 20
    t0, t10, t11 = "2026-11-27T15:00:00.5Z", "2026-11-27T15:00:10.5Z", "2026-11-27T15:00:11.500000000Z"
    before = {"d1": stats(1_000_000_000, 0, 0, t0), "d2": stats(0, 0, 0, t0), "s1": stats(5, 0, 0, t0),
              "gone": stats(0, 0, 0, t0), "unstamped": stats(0, 0, 0, "")}
    after = {"d1": stats(6_000_000_000, 500 * mib, 10 * mib, t10),  # 5 s of CPU in 10 s
             "d2": stats(5_500_000_000, 490 * mib, 0, t11),          # 5.5 s in 11 s (sampled a second later)
             "s1": stats(1_000_000_005, 455 * mib, 0, t10), "new": stats(9, 9, 0, t10),
             "unstamped": stats(9, 9, 0, "")}
    roles = {"d1": "data", "d2": "data", "s1": "sql", "gone": "mgm", "new": "mgm", "unstamped": "mgm"}
    u = role_usage(before, after, roles)
    assert set(u) == {"data", "sql"}  # missing from one sample, or no time between them: left out
    assert u["data"].containers == 2 and u["data"].cores == pytest.approx(1.0)
    assert u["data"].memory_mib == pytest.approx(980)
    assert u["sql"].memory_mib == pytest.approx(455) and u["sql"].cores == pytest.approx(0.1)


def test_steady_rate_and_lines():
    t0, t10 = "2026-11-27T15:00:00+00:00", "2026-11-27T15:00:10.000000001+00:00"
    s = Steady("pk_update", "python", 4, 10.0, 12_000, 3, {"sql1": 600.0, "sql2": 600.0}, 2.5, 4.0, 7.0, 30.0,
               role_usage({"d": stats(0, 0, 0, t0)}, {"d": stats(5_000_000_000, 490 << 20, 0, t10)}, {"d": "data"}),
               8.0)
    assert s.rate == 1200.0
    text = "\n".join(s.lines())
    assert "1,200 ok ops/s" in text and "p99 7.00 ms" in text and "data x1 490 MiB, 0.50 cores" in text
    assert "clients 0.80 cores" in text
    assert s.to_dict()["roles"]["data"]["cpu_cores"] == 0.5


@pytest.mark.parametrize("kw, word", [({"workloads": ("nope",)}, "--workloads"), ({"workloads": ()}, "--workloads"),
                                      ({"seconds": 0}, "--seconds"), ({"processes": 0}, "--processes"),
                                      ({"driver": "jdbc"}, "--driver")])
def test_bad_config_is_a_usage_error(kw, word):
    with pytest.raises(UsageError, match=word):
        SteadyConfig(**kw)


@pytest.mark.parametrize("argv, words", [
    (["--workloads", "fakebook,nope"], "unknown nope"),
    (["--ndb-layout", "replicas=5"], "replicas must be 1-4"),
    (["--ndb-layout", "default", "--ndb-config", "x.ini"], "give one of them"),
    (["--ndb-mycnf", "my.cnf"], "needs --ndb-config"),
    (["--engine", "galera", "--ndb-layout", "nodegroups=2"], "NDB cluster this command starts"),
    (["--ndb-config", "/nonexistent/config.ini"], "config.ini"),
])
def test_bad_input_is_one_line_and_exit_2_before_anything_starts(argv, words, capsys, monkeypatch):
    def no_docker(*a, **k):
        raise AssertionError("nothing may start on bad input")
    monkeypatch.setattr("ndbchaos.runtimes.factory.ComposeCluster", no_docker)
    monkeypatch.setattr("ndbchaos.commands.baseline.resolve_engine", no_docker)
    assert main(["baseline", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
