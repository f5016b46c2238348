"""Soak runs without Docker: the seeded schedule, the player on an autospec of ScenarioRun, each
fault's span judged on its own, and the memory probe."""

from itertools import islice
from types import SimpleNamespace
from unittest import mock

import pytest

from ndbchaos import soak as S
from ndbchaos.checks import check_run, steps
from ndbchaos.driver import Scenario
from ndbchaos.vocabulary import ClusterStatus, Expectation
from ndbchaos.errors import UsageError
from ndbchaos.handle import ComposeProject
from ndbchaos.history import ErrorInfo, History
from ndbchaos.recording import Recorder
from ndbchaos.waiting import wait_until
from ndbchaos.scenario import ScenarioRun
from ndbchaos.topology import ARBITRATOR, DATA, PROXY, SQL, Node, Topology


def _sc(name, engines=()):
    return Scenario(name, "datanode_loss", name, fault=lambda c, rng: None, engines=engines)


MENU = (_sc("kill"), _sc("freeze"), _sc("stop"), _sc("ndb_only", engines=("ndb",)))
SOAK = S.Soak("mixed", "t", MENU, pause_s=(5, 12), hold_s=(3, 8))


def _topology(engine):
    """The default layouts' SQL endpoints: NDB's mysqld nodes are SQL nodes only; a Galera node
    is its own SQL endpoint (and the toxiproxy container is no SQL node)."""
    if engine == "ndb":
        nodes = [Node("data1", DATA, "p-data1-1", nodeid=11, nodegroup=0),
                 Node("data2", DATA, "p-data2-1", nodeid=12, nodegroup=0),
                 Node("sql1", SQL, "p-sql1-1", nodeid=21, sql_port=3306, serves_sql=True),
                 Node("sql2", SQL, "p-sql2-1", nodeid=22, sql_port=3307, serves_sql=True)]
    else:
        nodes = [Node(f"data{i}", DATA, f"p-data{i}-1", nodeid=i, nodegroup=0, sql_port=3305 + i, serves_sql=True)
                 for i in (1, 2)] + [Node("arb", ARBITRATOR, "p-arb-1", nodeid=9),
                                     Node("toxiproxy", PROXY, "p-toxiproxy-1")]
    return Topology("p", engine, nodes)


def _on(engine, backend="docker"):
    """A cluster as the soak's menu sees it: its engine, backend and layout; the container backend
    has the Compose project's ability (``ndbchaos.handle.ComposeProject``), an inventory has not."""
    cluster = SimpleNamespace(engine=SimpleNamespace(name=engine), backend=backend, topology=_topology(engine))
    if backend == "docker":
        cluster.compose = lambda *args, check=True, timeout=600: None
    assert isinstance(cluster, ComposeProject) == (backend == "docker")
    return cluster


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    a = list(islice(S.schedule(SOAK, 7, _on("ndb")), 40))
    assert a == list(islice(S.schedule(SOAK, 7, _on("ndb")), 40))
    assert a != list(islice(S.schedule(SOAK, 8, _on("ndb")), 40))
    assert [s.index for s in a] == list(range(1, 41))
    for s in a:
        assert 5 <= s.pause_s <= 12 and 3 <= s.hold_s <= 8


def test_every_kind_comes_once_before_any_comes_again_and_never_twice_in_a_row():
    a = [s.scenario for s in islice(S.schedule(SOAK, 3, _on("ndb")), 400)]
    for k in range(0, 400, 4):
        assert sorted(a[k:k + 4]) == ["freeze", "kill", "ndb_only", "stop"]
    assert all(x != y for x, y in zip(a, a[1:]))


def test_the_menu_follows_the_engine():
    kinds = {s.scenario for s in islice(S.schedule(SOAK, 1, _on("galera")), 30)}
    assert kinds == {"kill", "freeze", "stop"}
    assert S.menu_on(SOAK, _on("galera")).left_out == (
        S.LeftOut("ndb_only", "ndb_only is for ndb only: no such fault on galera"),)
    with pytest.raises(UsageError, match="no fault of its menu runs on this galera cluster .docker backend.: "
                                         "n is for ndb only"):
        next(S.schedule(S.Soak("x", "t", (_sc("n", engines=("ndb",)),)), 1, _on("galera")))


# -- the menu on each engine and backend: the catalogue's own soak --------------------------------

def _soak_mixed():
    from ndbchaos.catalogue.test_soak import SOAKS
    (sk,) = [x for x in SOAKS if x.name == "soak_mixed"]
    return sk


def test_on_galera_the_soak_clients_go_through_the_proxies_because_its_sql_node_loss_takes_a_proxy_down():
    # Galera's lose_one_sql_node is a ProxyDown: it reaches only clients that go through the
    # proxy, as its own scenario's do (issue 29: the soak's load connected directly, and the
    # fault never reached it)
    on = S.menu_on(_soak_mixed(), _on("galera"))
    assert "lose_one_sql_node" in on.names and on.left_out == ()
    assert on.via_proxy is True and on.route == "through toxiproxy"
    drawn = {s.scenario for s in islice(S.schedule(_soak_mixed(), 1, _on("galera")), 12)}
    assert drawn == set(on.names)


def test_on_ndb_the_soak_clients_connect_directly_since_its_sql_node_loss_kills_mysqld():
    on = S.menu_on(_soak_mixed(), _on("ndb"))
    assert "lose_one_sql_node" in on.names and on.left_out == ()
    assert on.via_proxy is False and on.route == "straight to the SQL nodes"


@pytest.mark.parametrize("engine", ["galera", "ndb"])
def test_on_an_inventory_a_fault_that_needs_the_proxy_is_left_out_of_the_menu_and_says_why(engine):
    sk = _soak_mixed()
    on = S.menu_on(sk, _on(engine, backend="inventory"))
    assert on.via_proxy is False  # no toxiproxy on an inventory's hosts
    if engine == "galera":
        (left,) = on.left_out
        assert left.scenario == "lose_one_sql_node" and "toxiproxy" in left.why and "inventory" in left.why
        assert "lose_one_sql_node" not in on.names
        assert "lose_one_sql_node" not in {s.scenario for s in islice(S.schedule(sk, 1, _on(engine, "inventory")),
                                                                         60)}
    else:  # NDB's SQL node loss kills mysqld: nothing needs the proxy
        assert on.left_out == () and "lose_one_sql_node" in on.names


@pytest.mark.parametrize("kw", [{"menu": ()}, {"pause_s": (5, 1)}, {"hold_s": (-1, 2)}])
def test_a_bad_declaration_is_refused(kw):
    with pytest.raises(ValueError):
        S.Soak("x", "t", **{"menu": MENU, **kw})


# -- the player ---------------------------------------------------------------------------------

class Clock:
    """Time advances with every reading and with every hold."""

    def __init__(self):
        self.t = 100.0

    def now(self):
        self.t += 0.1
        return self.t


def _run(duration_clock):
    topo = Topology("p", "ndb", [Node("data1", DATA, "p-data1-1", nodeid=11, nodegroup=0),
                                 Node("data2", DATA, "p-data2-1", nodeid=12, nodegroup=0),
                                 Node("sql1", SQL, "p-sql1-1", nodeid=51, sql_port=3306, serves_sql=True)])
    engine = mock.Mock()
    engine.name = "ndb"
    engine.expectation.return_value = Expectation("datanode_loss", True, True, "rule", 5.0, 30.0, "node_restart", {})
    engine.crash_loss_window_s.return_value = 4.0
    cluster = SimpleNamespace(topology=topo, engine=engine, options={}, journal=mock.Mock(), backend="docker",
                              compose=lambda *args, check=True, timeout=600: None)  # a Compose project's ability
    run = mock.create_autospec(ScenarioRun, instance=True)
    run.cluster, run.clock, run.seed, run.via_proxy = cluster, duration_clock, 11, False
    run.workload = SimpleNamespace(name="ledger")
    run.rec = Recorder(duration_clock)
    run.hold.side_effect = lambda s: setattr(duration_clock, "t", duration_clock.t + s)
    st = ClusterStatus(0.0, [], True, [])
    run.wait_status.return_value = (st, 1.0)
    run.wait_healthy.return_value = (st, 5.0)
    run.runner = mock.Mock()
    run.poll.side_effect = wait_until  # the player's wait, without its kill switch
    run.runner.worker_pids.return_value = []
    run.runner.last_ok.return_value = 102.0
    run.finish.return_value = "result"
    entered = run.rec.steps  # each fault's own record, as it was played
    return run, entered


def _fault(c, rng):
    t = rng.choice(c.topology.data_nodes)
    return SimpleNamespace(kind="kill", targets=[t], window=SimpleNamespace(start=c and 1.0, applied_at=None,
                                                                            targets=[t.name]))


def test_play_soak_plays_the_schedule_until_the_duration_is_used_up():
    menu = (Scenario("kill", "datanode_loss", "k", fault=_fault), Scenario("kill2", "datanode_loss", "k", fault=_fault))
    sk = S.Soak("m", "t", menu, pause_s=(5, 5), hold_s=(3, 3), after_s=1)
    run, entered = _run(Clock())
    assert S.play_soak(run, sk, 100.0) == "result"
    # every fault: 5 s pause + 3 s hold + 1 s after + the clock's own ticks; the next begins only
    # while its pause ends within the 100 s
    assert 8 <= len(entered) <= 11
    assert [e["scenario"] for e in entered] == [s.scenario for s in islice(S.schedule(sk, 11, run.cluster),
                                                                           len(entered))]
    assert [(x["index"], x["scenario"]) for x in run.rec.soak["schedule"]] == [(x["index"], x["scenario"])
                                                                            for x in entered]
    assert run.rec.soak["seed"] == 11 and run.rec.soak["duration_s"] == 100.0
    assert run.rec.soak["via_proxy"] is False and run.rec.soak["left_out"] == []
    assert all(e["targets"][0] in ("data1", "data2") for e in entered)
    assert run.inject.call_count == run.heal.call_count == len(entered)
    run.finish.assert_called_once()
    assert run.rec.memory and "controller_mb" in run.rec.memory[-1]


def test_the_same_seed_draws_the_same_targets():
    menu = (Scenario("kill", "datanode_loss", "k", fault=_fault),)
    sk = S.Soak("m", "t", menu, pause_s=(5, 5), hold_s=(3, 3), after_s=1)
    a, ea = _run(Clock())
    b, eb = _run(Clock())
    S.play_soak(a, sk, 60.0)
    S.play_soak(b, sk, 60.0)
    assert [e["targets"] for e in ea] == [e["targets"] for e in eb] and len(ea) > 2


def test_play_soak_refuses_a_run_whose_clients_do_not_take_the_route_its_menu_needs():
    # a fault on the clients' path in the menu: the run's clients must go through the proxies
    menu = (Scenario("kill", "datanode_loss", "k", fault=_fault),
            Scenario("lose", "sqlnode_loss", "l", fault=_fault, via_proxy=True),
            Scenario("galera_only", "datanode_loss", "g", fault=_fault, engines=("galera",), elsewhere="not here"))
    sk = S.Soak("m", "t", menu, pause_s=(5, 5), hold_s=(3, 3), after_s=1)
    run, entered = _run(Clock())
    with pytest.raises(UsageError, match="needs the clients through toxiproxy, the run has them straight"):
        S.play_soak(run, sk, 60.0)
    assert entered == [] and not run.start_load.called
    run.via_proxy = True
    S.play_soak(run, sk, 30.0)
    assert run.rec.soak["via_proxy"] is True and run.rec.soak["menu"] == ["kill", "lose"]
    assert run.rec.soak["left_out"] == [{"scenario": "galera_only", "why": "galera_only is for galera only: not here"}]
    measured = run.rec.measurements
    assert measured["clients"].value == "through toxiproxy"
    assert measured["left out of the menu"].value == 1


# -- each fault judged on its span ----------------------------------------------------------------

def _history():
    h = History("ledger", {})
    t, i = 0.0, 0
    while t < 60.0:
        for node in ("sql1", "sql2"):
            if node == "sql1" and 22.0 <= t < 30.0:  # the first fault takes sql1's service away
                h.add(1, "insert", i, "info", t, t + 0.01, node,
                      ErrorInfo(2013, None, "unknown", "Lost connection to MySQL server during query"))
            else:
                h.add(0 if node == "sql1" else 2, "insert", i, "ok", t, t + 0.01, node)
            i += 1
        t += 0.05
    ids = [k for k in range(i) if h.cols.type[k] == 0]
    h.add(-1, "read", ids, "ok", 61.0, 61.5, "sql2")
    return h


def _step(index, begin, end, fault, heal, healthy, serving, stopped):
    exp = {"family": "sqlnode_loss", "survivors_serve": True, "cluster_survives": True, "rule": "r",
           "detection_bound_s": 5.0, "recovery_bound_s": 30.0, "recovery": "restart", "details": {},
           "serving": serving, "stopped_sql": stopped, "sql_nodes": ["sql1", "sql2"], "affected": [],
           "engine_reacts": False}
    return {"index": index, "scenario": "lose_one_sql_node", "family": "sqlnode_loss", "targets": stopped,
            "begin": begin, "end": end, "expectation": exp, "check_options": {},
            "marks": {"fault": fault, "in_place": fault, "reacted": fault, "heal": heal, "healthy": healthy},
            "windows": [{"kind": "kill", "start": fault, "end": heal, "targets": stopped}]}


def _record(step_list):
    return {"version": 1, "engine": "ndb", "topology": {"nodes": []}, "expectation": None, "steps": step_list,
            "windows": [w for s in step_list for w in s["windows"]], "events": [], "cluster_samples": [],
            "marks": {}, "check_options": {}}


def test_between_keeps_the_operations_that_ended_in_the_span_with_their_values_and_errors():
    h = _history()
    sub = h.between(22.0, 30.0)
    ops = list(sub)
    assert ops and all(22.0 <= o.end < 30.0 for o in ops)
    assert len(ops) == sum(1 for o in h if 22.0 <= o.end < 30.0)
    bad = [o for o in ops if o.type == "info"]
    assert bad and bad[0].error.errno == 2013 and bad[0].node == "sql1"
    read = list(h.between(61.0, 62.0))
    assert len(read) == 1 and read[0].value == [k for k in range(len(h) - 1) if h.cols.type[k] == 0]
    assert len(h.between(100.0, 200.0)) == 0


def test_each_fault_is_judged_on_its_span_and_the_whole_run_at_the_end():
    h = _history()
    # the first fault stopped sql1 (its own node: no requirement to serve); sql2 served throughout
    h.run = _record([_step(1, 15.0, 40.0, 22.0, 30.0, 31.0, ["sql2"], ["sql1"]),
                     _step(2, 40.0, 60.5, 45.0, 50.0, 51.0, ["sql1", "sql2"], [])])
    v = check_run(h).to_json()
    faults = v["checks"]["faults"]
    assert faults["faults"] == 2 and faults["failed"] == 0 and faults["valid"] is True, faults["summary"]
    assert "durability" in v["checks"] and v["checks"]["durability"]["valid"] is True
    spans = faults["details"]["steps"]
    assert spans[0]["ops"] < len(h) and {o["name"] for o in spans[0]["objectives"]} >= {"outage on sql2", "recovery"}
    assert v["valid"] is True


def test_a_fault_whose_expectation_is_missed_fails_the_run_and_says_which():
    h = _history()
    # the second step claims sql1 must keep serving during the first fault's outage: it did not
    h.run = _record([_step(1, 15.0, 40.0, 22.0, 30.0, 31.0, ["sql2"], ["sql1"]),
                     _step(2, 15.0, 40.0, 22.0, 30.0, 31.0, ["sql1", "sql2"], [])])
    v = check_run(h).to_json()
    faults = v["checks"]["faults"]
    assert faults["valid"] is False and faults["failed"] == 1
    assert "#2 lose_one_sql_node" in faults["summary"] and "outage on sql1" in faults["summary"]
    assert v["valid"] is False
    assert any(s.startswith("faults: INVALID") for s in v["summary"])


def test_a_soak_that_played_no_fault_is_not_a_pass():
    h = _history()
    h.run = _record([])
    assert check_run(h).to_json()["checks"]["faults"]["valid"] == "unknown"


def test_crash_windows_and_allowed_classes_of_the_steps_apply_to_the_whole_history():
    a = {"check_options": {"gcp_loss_window_s": 2.0, "cluster_crash_at": 10.0}}
    b = {"check_options": {"gcp_loss_window_s": 4.0, "cluster_crash_at": [20.0],
                           "allowed_error_classes": ["temporary", "unknown", "permanent"]}}
    assert steps.whole_run_options({"steps": [a, b, {}]}) == {
        "cluster_crash_at": [10.0, 20.0], "gcp_loss_window_s": 4.0,
        "allowed_error_classes": ["permanent", "temporary", "unknown"]}
    assert steps.whole_run_options({"steps": [{}]}) == {}


# -- memory ----------------------------------------------------------------------------------------

def test_memory_growth_compares_the_end_with_the_first_minute():
    samples = [{"t": 10.0 + 5 * k, "controller_mb": 100.0 + (k >= 12) * 10, "workers_mb": 50.0} for k in range(40)]
    g = S.memory_growth(samples)
    assert g == {"at_s": 60.0, "first_mb": 110.0, "last_mb": 110.0, "growth_pct": 0.0}
    assert S.memory_growth(samples[:5]) is None


def test_the_probe_reads_this_process_and_its_workers():
    clock = SimpleNamespace(now=lambda: 1.0)
    import os
    p = S.MemoryProbe(clock, lambda: [os.getpid()], period=0.01).start()
    p.stop()
    assert len(p.samples) >= 2
    s = p.samples[-1]
    assert s["controller_mb"] > 1 and s["workers_mb"] == pytest.approx(s["controller_mb"], rel=0.5)
    assert S.rss_mb(2 ** 22 + 12345) is None
