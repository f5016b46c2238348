"""What each kind of change touches (README, "What each change touches"), checked by adding
a toy engine, fault and checker here: an engine is its package plus one line of the registry,
a checker one ``register`` line, a fault one class. Nothing of this is shipped."""

from __future__ import annotations

import pytest

from ndbchaos import classify, events
from ndbchaos.checks import GENERIC, check_history, register
from ndbchaos.checks import Verdict
from ndbchaos.engines import ENGINES, EngineEntry, error_rules, get_engine
from ndbchaos.faults import base
from ndbchaos.history import History

from .test_faults_unit import FakeCluster


@pytest.fixture
def toy_engine(monkeypatch):
    monkeypatch.setitem(ENGINES, "toy", EngineEntry("toy", "tests.unit.toy_engine", "ToyEngine"))  # the one line
    error_rules.cache_clear()
    yield
    error_rules.cache_clear()


def test_an_engine_is_its_package_and_one_registry_line(toy_engine):
    eng = get_engine("toy")
    assert eng.name == "toy" and eng.consistency_models("list_append", {}).models == ("serializable",)
    assert events.parse_line("12.5 node 3 died", engine="toy") == {"time": 12.5, "reporter": None, "node": 3,
                                                                   "kind": "node_died"}
    assert list(events.parse_lines(["x", "1 node 2 died"], engine="toy"))[0]["node"] == 2
    assert events.kinds("toy") == ("node_died",)
    assert classify.classify("toy", 7777, "") == ("temporary", None)  # its error rules, found by the registry
    assert classify.classify("ndb", 1297, "Got temporary error 4010 'Node failure'")[0] == "unknown"


def test_a_checker_is_one_register_line():
    def quiet(fr, opts):
        return Verdict("quiet", True if fr.n < 10 else False, f"{fr.n} ops", {"n": fr.n}, lift=("n",))

    saved = list(GENERIC)
    try:
        register("quiet", quiet)
        h = History("ledger", {})
        h.add(0, "insert", 1, "ok", 0.0, 0.1, "sql1")
        v = check_history(h).to_json()
    finally:
        GENERIC[:] = saved
    assert v["checks"]["quiet"] == {"name": "quiet", "valid": True, "summary": "1 ops", "n": 1, "details": {"n": 1}}


def test_a_fault_is_one_class_with_inject_verify_heal():
    class Flip(base.Fault):
        kind = "flip"

        def _apply(self):
            self.flipped = True

        def _verify_applied(self):
            return "flipped"

        def _revert(self):
            self.flipped = False

        def _verify_healed(self):
            return "flipped back"

    c = FakeCluster()
    with Flip(c, "data1") as f:
        assert f.flipped and f.window.verification == ["flipped"]
    assert not f.flipped and f.window.verification == ["flipped", "flipped back"] and not c.journal.open_faults()
