"""The operations driver plays a procedure on a ScenarioRun: one phase per step, each step's
outcome and span in the record, the rest skipped after a step the procedure cannot go on
without, the outcomes observed after it, a fault during a named step (and whether it hit the
step), and the cleanup on every path. The run is an autospec of ScenarioRun, so the driver can
only call what a real run has."""

import threading
import time
from types import SimpleNamespace
from unittest import mock

import pytest

from ndbchaos.vocabulary import ClusterStatus, Expectation
from ndbchaos.engines.ndb.procedures import NdbProcedures, parse_ndb_desc
from ndbchaos.errors import UsageError
from ndbchaos.operations import Outcome, Procedure, Step, StepFailed
from ndbchaos.operations import driver as ops
from ndbchaos.recording import Recorder
from ndbchaos.waiting import wait_until
from ndbchaos.scenario import ScenarioRun
from ndbchaos.topology import DATA, SQL, Node, Topology
from ndbchaos.vocabulary import ClusterOptions


class Clock:
    def __init__(self):
        self.t = 100.0
        self.lock = threading.Lock()

    def now(self):
        with self.lock:
            self.t += 0.5
            return self.t


def _run():
    topo = Topology("p", "ndb", [Node("data1", DATA, "p-data1-1", nodeid=11, nodegroup=0),
                                 Node("data2", DATA, "p-data2-1", nodeid=12, nodegroup=0),
                                 Node("sql1", SQL, "p-sql1-1", nodeid=51, sql_port=3306, serves_sql=True)])
    engine = mock.Mock()
    engine.name = "ndb"
    engine.expectation.return_value = Expectation("datanode_loss", True, True, "rule", 5.0, 30.0,
                                                  "node_restart", {})
    cluster = SimpleNamespace(topology=topo, engine=engine, options=ClusterOptions(), journal=mock.Mock(), project="p")
    run = mock.create_autospec(ScenarioRun, instance=True)
    run.cluster, run.clock, run.rng = cluster, Clock(), mock.Mock()
    run.workload = SimpleNamespace(name="ledger")
    run.rec = Recorder(run.clock)
    st = ClusterStatus(103.0, [], True, [])
    run.wait_status.return_value = (st, 1.0)
    run.wait_healthy.return_value = (st, 5.0)
    run.runner = mock.Mock()
    run.poll.side_effect = wait_until  # the player's wait, without its kill switch
    run.finish.return_value = "result"
    return run


def _phases(run) -> list[str]:
    return [p.name for p in run.rec.phases]


def _recorded(run) -> dict:
    assert run.rec.procedure is not None, "the operation recorded no procedure"
    return run.rec.procedure


def _op(procedure, **kw):
    return ops.Operation("op", "operations", "t", procedure=lambda c, rng: procedure, baseline_s=0, hold_s=0,
                         after_s=0, **kw)


def test_each_step_is_a_phase_and_the_record_holds_its_outcome_and_the_outcomes():
    cleaned = []
    proc = Procedure("p", (Step("one", lambda ctx: "did one"), Step("two", lambda ctx: "did two\nsecond line")),
                       outcomes=(Outcome("it worked", lambda ctx: (True, "yes")),),
                       cleanup=lambda ctx: cleaned.append(True))
    run = _run()
    assert ops.play(run, _op(proc)) == "result"
    assert _phases(run) == ["baseline", "step: one", "step: two", "after"]
    rec = _recorded(run)
    assert [(s["name"], s["outcome"], s["detail"]) for s in rec["steps"]] == [
        ("one", "done", "did one"), ("two", "done", "did two second line")]
    assert all(s["end"] >= s["start"] for s in rec["steps"])
    assert rec["outcomes"] == [{"name": "it worked", "holds": True, "detail": "yes"}]
    assert "backup" not in rec
    assert cleaned == [True]


def test_a_failed_step_skips_the_rest_unless_the_procedure_goes_on_without_it():
    def refuse(ctx):
        raise StepFailed("ERROR 1234: no")

    proc = Procedure("p", (Step("a", refuse, stop_if_not_done=False), Step("b", refuse), Step("c", lambda ctx: "c")))
    run = _run()
    ops.play(run, _op(proc))
    steps = _recorded(run)["steps"]
    assert [(s["name"], s["outcome"]) for s in steps] == [("a", "failed"), ("b", "failed"), ("c", "skipped")]
    assert steps[2]["detail"] == "not run: b failed"


def test_an_outcome_that_cannot_be_observed_is_unknown_not_false():
    def broken(ctx):
        raise RuntimeError("connection refused")

    proc = Procedure("p", (Step("a", lambda ctx: "a"),), outcomes=(Outcome("seen", broken),))
    run = _run()
    ops.play(run, _op(proc))
    (o,) = _recorded(run)["outcomes"]
    assert o["holds"] is None and "connection refused" in o["detail"]


def test_the_cleanup_runs_when_the_run_fails_half_way():
    cleaned = []
    proc = Procedure("p", (Step("a", lambda ctx: "a"),), cleanup=lambda ctx: cleaned.append(True))
    run = _run()
    run.start_load.side_effect = RuntimeError("no SQL node serves")
    with pytest.raises(RuntimeError):
        ops.play(run, _op(proc))
    assert cleaned == [True]


def test_a_declaration_naming_no_step_of_its_procedure_is_refused_before_the_load():
    proc = Procedure("p", (Step("a", lambda ctx: "a"),))
    run = _run()
    with pytest.raises(ValueError, match="has no step 'b'"):
        ops.play(run, _op(proc, fault=lambda c, rng: None, fault_step="b"))
    run.start_load.assert_not_called()


def _fault(run, target="data1"):
    node = run.cluster.topology.node(target)
    window = SimpleNamespace(start=None, applied_at=None, targets=[target])
    f = SimpleNamespace(kind="kill", targets=[node], window=window)
    return f


def test_a_fault_during_a_step_runs_its_cycle_beside_the_step_and_is_said_to_have_hit_it(monkeypatch):
    run = _run()
    fault = _fault(run)
    cycles = []

    def cycle(r, f, plan, hold_s, after_s):
        f.window.start = r.clock.now()
        cycles.append((f.kind, hold_s, after_s))

    monkeypatch.setattr(ops, "cycle", cycle)
    proc = Procedure("p", (Step("slow", lambda ctx: time.sleep(0.3) or "built", expected=("done", "failed")),))
    ops.play(run, _op(proc, fault=lambda c, rng: fault, fault_step="slow", fault_delay_s=0.05,
                      expectation="datanode_loss"))
    assert cycles == [("kill", 0, 0)]
    rec = _recorded(run)
    (step,) = rec["steps"]
    assert step["outcome"] == "done" and step["expected"] == ["done", "failed"]
    assert step["fault"].startswith("kill data1, begun")
    hit = rec["outcomes"][0]
    assert hit["name"] == "the fault hit step 'slow' while it ran" and hit["holds"] is True
    (info,) = run.rec.steps  # judged on its own span, as a soak's faults
    assert info["during"] == "slow" and info["targets"] == ["data1"]
    assert run.rec.plan is None  # the run's own expectation: none; the fault's is its step's


def test_a_step_over_before_its_fault_was_due_is_recorded_as_missed(monkeypatch):
    run = _run()
    fault = _fault(run)
    monkeypatch.setattr(ops, "cycle", lambda *a: pytest.fail("the fault must not be injected"))
    proc = Procedure("p", (Step("quick", lambda ctx: "done at once"),))
    ops.play(run, _op(proc, fault=lambda c, rng: fault, fault_step="quick", fault_delay_s=0.5,
                      expectation="datanode_loss"))
    rec = _recorded(run)
    assert rec["steps"][0]["fault"].startswith("none: the step ended")
    assert rec["outcomes"][0]["holds"] is False


def test_needs_says_why_a_cluster_cannot_play_the_operation():
    run = _run()
    op = ops.Operation("op", "operations", "t", procedure=lambda c, rng: None,
                       needs=lambda c: "this layout has 0 spare data nodes")
    assert op.why_not_on(run.cluster) == "this layout has 0 spare data nodes"
    assert ops.Operation("op", "operations", "t", procedure=lambda c, rng: None,
                         engines=("galera",), elsewhere="x").why_not_on(run.cluster).startswith("op is for galera")


def test_a_step_outcome_outside_the_known_ones_is_refused():
    with pytest.raises(ValueError, match="unknown step outcome"):
        StepFailed("x", outcome="exploded")


NDB_DESC = """-- ballast --
Version: 16777226
PartitionCount: 4
-- Attributes --
id Bigint PRIMARY KEY DISTRIBUTION KEY AT=FIXED ST=MEMORY
pad Varchar(4000;utf8mb4_0900_ai_ci) NOT NULL AT=SHORT_VAR ST=MEMORY
chaos_note Varchar(128;utf8mb4_0900_ai_ci) NULL AT=SHORT_VAR ST=MEMORY DYNAMIC
-- Indexes --\x20
PRIMARY KEY(id) - UniqueHashIndex
chaos_ix(id) - OrderedIndex
PRIMARY(id) - OrderedIndex
"""


def test_ndb_desc_gives_the_columns_and_indexes_of_ndbs_own_dictionary():
    cols, idx = parse_ndb_desc(NDB_DESC)
    assert cols == {"id", "pad", "chaos_note"}
    assert idx == {"PRIMARY KEY", "chaos_ix", "PRIMARY"}


def test_an_operation_shows_as_its_name_as_a_scenario_does():
    # the report's parameter and Allure's history id: stable from run to run
    op = ops.Operation("op_name", "operations", "t", procedure=lambda c, rng: None)
    assert repr(op) == "op_name"


def _ndb_cluster(spares: int):
    nodes = [Node("data1", DATA, "p-data1-1", nodeid=11, nodegroup=0),
             Node("data2", DATA, "p-data2-1", nodeid=12, nodegroup=0)]
    nodes += [Node(f"data{3 + i}", "spare", f"p-data{3 + i}-1", nodeid=13 + i) for i in range(spares)]
    engine = mock.Mock()
    engine.sql_database = "ndbchaos"
    engine.config.return_value = SimpleNamespace(replicas=2)
    return SimpleNamespace(topology=Topology("p", "ndb", nodes), engine=engine, options=ClusterOptions(), joined={})


def test_bad_input_to_a_procedure_is_one_line_before_anything_starts():
    lib = NdbProcedures()
    with pytest.raises(UsageError, match="needs 2 data nodes .* has 1 .*spare=2"):
        lib.add_nodegroup(_ndb_cluster(spares=1))
    proc = lib.add_nodegroup(_ndb_cluster(spares=2))
    assert [s.name for s in proc.steps] == ["create nodegroup", "reorganize ledger", "optimize ledger"]
    assert proc.steps[0].description == "CREATE NODEGROUP 13,14"
    assert lib.add_nodegroup(_ndb_cluster(spares=3), nodes=(15, 13)).steps[0].description == "CREATE NODEGROUP 15,13"
    with pytest.raises(UsageError, match=r"node 12 is no spare data node \(spares: 13, 14\)"):
        lib.add_nodegroup(_ndb_cluster(spares=2), nodes=(12, 13))
    with pytest.raises(UsageError, match="needs 2 different data nodes"):
        lib.add_nodegroup(_ndb_cluster(spares=2), nodes=(13, 13))
    with pytest.raises(UsageError, match="snapshot must be one of end, start"):
        lib.backup_restore(_ndb_cluster(0), snapshot="middle")
    with pytest.raises(UsageError, match="replicas must be 1-4"):
        lib.backup_restore(_ndb_cluster(0), into="nodegroups=1,replicas=5")
    # "same": the source's own layout option, refused as the source's would be
    bad = _ndb_cluster(0)
    bad.options = bad.options.with_(ndb_layout="nodegroups=1,replicas=5")
    with pytest.raises(UsageError, match="replicas must be 1-4"):
        lib.backup_restore(bad, into="same")
    with pytest.raises(UsageError, match="no parameter to change"):
        lib.rolling_config_change(_ndb_cluster(0), {})
    with pytest.raises(UsageError, match="NoOfReplicas cannot be changed by a rolling restart"):
        lib.rolling_config_change(_ndb_cluster(0), {"NoOfReplicas": "3"})
    proc = lib.rolling_config_change(_ndb_cluster(0), {"DataMemory": "80M"})
    assert [s.name for s in proc.steps] == ["reload configuration", "restart data1", "restart data2"]
    refused = lib.rolling_config_change(_ndb_cluster(0), {"DataMemory": "1K"}, refused=True)
    assert [(s.name, s.expected) for s in refused.steps] == [("reload configuration", ("failed",))]


def test_a_step_that_raises_anything_fails_and_the_run_goes_on():
    def boom(ctx):
        raise KeyError("id")

    proc = Procedure("p", (Step("a", boom, stop_if_not_done=False), Step("b", lambda ctx: "b")))
    run = _run()
    ops.play(run, _op(proc))
    steps = _recorded(run)["steps"]
    assert [(s["name"], s["outcome"]) for s in steps] == [("a", "failed"), ("b", "done")]
    assert steps[0]["detail"] == "KeyError: 'id'"


def test_a_fault_waits_for_its_moment_in_the_step(monkeypatch):
    """``fault_when``: the fault is injected only once the step says its moment has come (a
    restarted node has left the cluster), not after a fixed delay from the step's start."""
    run = _run()
    fault = _fault(run)
    seen = []

    def cycle(r, f, plan, hold_s, after_s):
        f.window.start = r.clock.now()
        seen.append(dict(state))

    monkeypatch.setattr(ops, "cycle", cycle)
    state: dict = {}

    def act(ctx):
        time.sleep(0.2)
        ctx.state["left"] = "data1"
        state["left"] = "data1"
        time.sleep(0.3)
        return "restarted"

    proc = Procedure("p", (Step("restart data1", act, expected=("done", "failed")),))
    ops.play(run, _op(proc, fault=lambda c, rng: fault, fault_step="restart data1", fault_delay_s=0.0,
                      fault_when=lambda ctx: ctx.state.get("left") == "data1", expectation="nodegroup_loss"))
    assert seen == [{"left": "data1"}]  # injected after the moment, not before
    assert _recorded(run)["outcomes"][0]["holds"] is True


def test_a_fault_whose_moment_never_comes_is_not_injected(monkeypatch):
    run = _run()
    fault = _fault(run)
    monkeypatch.setattr(ops, "cycle", lambda *a: pytest.fail("the fault must not be injected"))
    proc = Procedure("p", (Step("restart data1", lambda ctx: time.sleep(0.2) or "restarted"),))
    ops.play(run, _op(proc, fault=lambda c, rng: fault, fault_step="restart data1", fault_delay_s=0.0,
                      fault_when=lambda ctx: False, expectation="nodegroup_loss"))
    assert _recorded(run)["outcomes"][0]["holds"] is False
