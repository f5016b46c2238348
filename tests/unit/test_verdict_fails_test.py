"""The one line that turns a bad verdict into a failed scenario (``fixtures._judged``: ``assert
res.verdict.valid is True``), shown to fail. A scenario is played through the plugin's ``play``
fixture body and the real driver on a run that cannot touch Docker (an autospec of ScenarioRun,
as test_driver.py plays one), whose ``finish`` hands back a verdict doctored to be invalid, or
unknown: the test fails, with each checker's line in its message; a valid one passes."""

from types import SimpleNamespace

import pytest

from ndbchaos import driver, fixtures
from ndbchaos.checks.verdict import RunVerdict, Verdict
from ndbchaos.vocabulary import Expectation
from ndbchaos.history.core import History
from ndbchaos.outcome import Result
from ndbchaos.record import RunRecord
from ndbchaos.session import Session

from .test_driver import _fault, _run


def _request(tmp_path):
    opts = {"--trends": str(tmp_path / "trends.jsonl")}
    node = SimpleNamespace(name="test_datanode_loss[kill_one]", nodeid="scenarios/x.py::test[kill_one]",
                           iter_markers=lambda: iter(()), get_closest_marker=lambda name: object())
    config = SimpleNamespace(getoption=opts.get, pluginmanager=SimpleNamespace(get_plugin=lambda name: None),
                             rootpath=tmp_path)
    return SimpleNamespace(node=node, config=config)


def _play(tmp_path, *verdicts: Verdict):
    """Play one data node's kill whose run's verdict is ``verdicts``; what the fixture returns."""
    exp = Expectation("datanode_loss", True, True, "rule", 5.0, 30.0, "node_restart", {})
    run = _run(exp)
    run.cluster.engine.name = "ndb"
    run.scenario = None
    history = History("ledger")
    record = RunRecord(engine="ndb", project="p", title="kill one data node", seed=1, scenario=None, topology={},
                       via_proxy=False, expectation=None, windows=[], phases=[], marks={}, check_options={},
                       cluster_samples=[], status_before=None, status_after=None, events=None, framework_events=[])
    run.finish.return_value = Result(history, RunVerdict.of(list(verdicts), "ledger", 0, {}, []), record)
    sc = driver.Scenario("kill_one", "datanode_loss", "kill one data node",
                         fault=lambda c, rng: _fault([c.topology.node("data1")]), baseline_s=0, hold_s=0, after_s=0)
    play = fixtures.play(run.cluster, lambda *a, **kw: run, _request(tmp_path), Session())
    return play(sc)


VALID = Verdict("durability", True, "every acknowledged write read back")


def test_a_valid_verdict_passes(tmp_path):
    assert _play(tmp_path, VALID, Verdict("availability", True, "no outage")).verdict.valid is True


def test_a_failing_verdict_fails_the_test(tmp_path):
    with pytest.raises(AssertionError) as ei:
        _play(tmp_path, VALID, Verdict("durability", False, "2 acknowledged writes lost"))
    assert ei.traceback[-1].name == "_judged"  # the verdict's assertion, nothing before it
    assert "durability: INVALID: 2 acknowledged writes lost" in str(ei.value)


def test_an_unknown_verdict_fails_the_test(tmp_path):
    """"unknown" (a checker that could not judge) is truthy: only ``is True`` fails it."""
    with pytest.raises(AssertionError) as ei:
        _play(tmp_path, VALID, Verdict("expectation", "unknown", "no cluster log to judge the arbitration by"))
    assert ei.traceback[-1].name == "_judged"
    assert "expectation: unknown: no cluster log" in str(ei.value)
