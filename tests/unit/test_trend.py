"""Trends across runs: the figures file keeps each scenario's runs per engine, unreadable lines
are skipped, and the drawing needs at least two runs."""

from ndbchaos.report import trend


def test_entries_are_kept_per_scenario_and_engine(tmp_path):
    f = tmp_path / "reports" / "trends.jsonl"
    assert trend.previous(f, "t[a]", "ndb") == []
    for k in range(3):
        trend.append(f, "t[a]", "ndb", {"outage_s": 0.5 + k, "recovery_s": 20.0, "other": 1})
    trend.append(f, "t[a]", "galera", {"outage_s": 4.0})
    trend.append(f, "t[b]", "ndb", {"outage_s": 9.0})
    with f.open("a") as fh:
        fh.write("not json\n")
    got = trend.previous(f, "t[a]", "ndb")
    assert [e["figures"]["outage_s"] for e in got] == [0.5, 1.5, 2.5]
    assert set(got[0]["figures"]) == set(trend.FIGURES)  # only the headline figures are kept


def test_a_trend_needs_two_runs(tmp_path):
    f = tmp_path / "trends.jsonl"
    one = [trend.append(f, "t", "ndb", {"outage_s": 1.0})]
    assert trend.trend_png(one, "t") is None
    two = one + [trend.append(f, "t", "ndb", {"outage_s": 2.0, "recovery_s": None})]
    png = trend.trend_png(two, "t")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
