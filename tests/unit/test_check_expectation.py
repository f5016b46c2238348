"""The expectation checker: a run record judged against the engine's expectation. Every objective
is shown met and missed; a saved run judged again from its file gives the same verdict."""

from __future__ import annotations

import copy
import io

import pytest

from ndbchaos.checks import check_run
from ndbchaos.history import ErrorInfo, History

NODES = ("sql1", "sql2")


def history(gap_on=None, gap=(10.0, 10.0), late_on=None, until=30.0, errors=()):
    """Ledger inserts on both SQL nodes every 0.1 s from 0 to ``until``, except a gap on
    ``gap_on``; ``late_on`` keeps succeeding through the fault; a final read of everything."""
    h = History("ledger", {})
    k = 0
    for i in range(int(until * 10)):
        t = i / 10
        for p, node in enumerate(NODES):
            if gap_on in (node, "*") and gap[0] <= t < gap[1]:
                continue
            k += 1
            h.add(p, "insert", k, "ok", t, t + 0.01, node)
    for j, (t, node, err) in enumerate(errors):
        h.add(5, "insert", 10_000 + j, "fail", t, t + 0.01, node, err)
    h.add(1_000_000, "read", list(range(1, k + 1)), "ok", until + 1, until + 1.1, "sql1")
    return h


def record(**over):
    exp = {"family": "datanode_loss", "rule": "r", "survivors_serve": True, "cluster_survives": True,
           "detection_bound_s": 7.0, "recovery_bound_s": 130.0, "recovery": "node_restart",
           "details": {"expected_events": ["node_disconnected", "arbitration_check_won|arbitration_required",
                                           "node_failure_completed"]},
           "serving": list(NODES), "stopped_sql": [], "sql_nodes": list(NODES), "affected": [],
           "engine_reacts": True}
    exp.update(over.pop("exp", {}))
    exp["details"].update(over.pop("details", {}))
    run = {"version": 1, "engine": "ndb", "expectation": exp,
           "windows": [{"kind": "kill", "start": 10.0, "end": 18.0, "targets": ["data1"]}],
           "marks": {"fault": 10.0, "in_place": 10.0, "reacted": 10.8, "heal": 18.0, "healthy": 21.0},
           "events": [{"t": 10.3, "kind": "node_disconnected", "node": 11},
                      {"t": 10.3, "kind": "arbitration_check_won"},
                      {"t": 10.4, "kind": "node_failure_completed", "node": 11}],
           "topology": {"nodes": [{"name": "data1", "nodeid": 11}, {"name": "data2", "nodeid": 12}]},
           "cluster_samples": [{"t": 12.0, "healthy": False, "arbitrator": 1}], "check_options": {}}
    for k, v in over.items():
        if k == "marks":
            run["marks"].update(v)
        else:
            run[k] = v
    return run


def judge(h, run):
    h.run = run
    v = check_run(h).to_json()
    return v, {o["name"]: o for o in v["checks"]["expectation"]["details"]["objectives"]}


def test_a_survived_node_kill_meets_every_objective():
    v, objs = judge(history(), record())
    assert v["valid"] is True and v["checks"]["expectation"]["valid"] is True
    assert set(objs) == {"detection", "outage on sql1", "outage on sql2", "events", "recovery",
                         "served again sql1", "served again sql2"}
    assert objs["detection"]["measured"] == pytest.approx(0.8)


@pytest.mark.parametrize("change,objective", [
    (dict(marks={"reacted": 18.5}), "detection"),            # later than the 7 s bound
    (dict(marks={"reacted": None}), "detection"),            # never reached
    (dict(marks={"healthy": 200.0}), "recovery"),            # 182 s > 130 s
    (dict(events=[{"t": 10.3, "kind": "node_disconnected"}]), "events"),
])
def test_each_objective_fails_when_the_record_breaks_it(change, objective):
    v, objs = judge(history(), record(**change))
    assert v["valid"] is False and objs[objective]["valid"] is False
    assert f"{objective}:" in v["checks"]["expectation"]["summary"]


def test_an_outage_on_a_node_expected_to_serve():
    v, objs = judge(history(gap_on="sql2", gap=(10.0, 19.0)), record())
    assert objs["outage on sql2"]["valid"] is False and objs["outage on sql2"]["measured"] > 7.0
    assert objs["outage on sql1"]["valid"] is True


def test_served_again_after_recovery():
    # sql2 silent from the heal to the end: never served again after "healthy" at 21 s
    v, objs = judge(history(gap_on="sql2", gap=(18.0, 31.0)), record(exp={"serving": ["sql1"]}))
    assert objs["served again sql2"]["valid"] is False and objs["served again sql1"]["valid"] is True


def test_a_cluster_that_must_stop():
    exp = {"cluster_survives": False, "survivors_serve": False, "serving": [], "stopped_sql": list(NODES)}
    details = {"shut_down": ["data2"], "decision_bound_s": 10.0, "exit_codes": {"data2": 2305}, "expected_events": []}
    stop = history(gap_on="*", gap=(10.0, 21.5))  # no success from the fault until after the recovery
    run = record(exp=exp, details=details, marks={"reacted": None, "stopped_serving": 10.0, "shut_down": 12.0},
                 events=[{"t": 12.0, "kind": "forced_shutdown", "node": 12, "exit_code": 2305}])
    v, objs = judge(stop, copy.deepcopy(run))
    assert v["checks"]["expectation"]["valid"] is True, v["checks"]["expectation"]["summary"]
    assert {"stopped serving", "stops serving sql1", "shut down", "exit codes"} <= set(objs)
    # clients still served 7.5 s into the fault (the bound is 7 s): the rules say no SQL node serves
    v, objs = judge(history(gap_on="*", gap=(17.5, 21.5)), copy.deepcopy(run))
    assert objs["stops serving sql1"]["valid"] is False and objs["stops serving sql1"]["measured"] > 0
    # a forced shutdown with another code than the rules give
    wrong = copy.deepcopy(run)
    wrong["events"] = [{"t": 12.0, "kind": "forced_shutdown", "node": 12, "exit_code": 2315}]
    v, objs = judge(stop, wrong)
    assert objs["exit codes"]["valid"] is False and objs["exit codes"]["measured"] == {"data2": [2315]}
    # codes any of which the rules allow (a full disk: 2813 measured, 2810 documented)
    either = copy.deepcopy(run)
    either["expectation"]["details"]["exit_codes"] = {"data2": [2813, 2810]}
    either["events"] = [{"t": 12.0, "kind": "forced_shutdown", "node": 12, "exit_code": 2813}]
    assert judge(stop, copy.deepcopy(either))[1]["exit codes"]["valid"] is True
    either["events"][0]["exit_code"] = 2305
    assert judge(stop, either)[1]["exit codes"]["valid"] is False
    # the nodes never stopped
    v, objs = judge(stop, record(exp=exp, details=details, marks={"stopped_serving": 10.0, "shut_down": None},
                                 events=run["events"]))
    assert objs["shut down"]["valid"] is False


def test_arbitrator_afterwards_and_unknown_without_samples():
    v, objs = judge(history(), record(details={"arbitrator_after": 2}))
    assert objs["arbitrator"]["valid"] is False and objs["arbitrator"]["measured"] == 1
    v, objs = judge(history(), record(details={"arbitrator_after": 1}))
    assert objs["arbitrator"]["valid"] is True
    v, objs = judge(history(), record(details={"arbitrator_after": 1}, cluster_samples=[]))
    assert objs["arbitrator"]["valid"] == "unknown" and v["valid"] == "unknown"


def test_master_afterwards():
    samples = [{"t": 11.0, "healthy": False, "arbitrator": 1, "master": 11},
               {"t": 12.0, "healthy": False, "arbitrator": 1, "master": 14}]
    v, objs = judge(history(), record(details={"master_after": 14, "succession": [11, 14, 12, 13]},
                                      cluster_samples=samples))
    assert objs["master"]["valid"] is True and objs["master"]["measured"] == 14
    # the lowest surviving node id took over instead of the next in succession: missed
    v, objs = judge(history(), record(details={"master_after": 14}, cluster_samples=[{**samples[1], "master": 12}]))
    assert objs["master"]["valid"] is False and "master:" in v["checks"]["expectation"]["summary"]
    # samples of a record without masters (an older run): unknown, not passed
    v, objs = judge(history(), record(details={"master_after": 14}))
    assert objs["master"]["valid"] == "unknown"


def test_held_down_until_the_heal():
    held = {"held_down": {"nodes": ["data2"], "why": "waits for a management node"}}
    down = [{"t": t, "healthy": False, "arbitrator": None, "unhealthy": ["data2", "mgm1", "mgm2"]}
            for t in (11.0, 14.0, 17.5)]
    v, objs = judge(history(), record(details=held, cluster_samples=down))
    assert objs["held down"]["valid"] is True
    up = down[:2] + [{**down[2], "unhealthy": ["mgm1", "mgm2"]}]  # data2 started with no mgm running
    v, objs = judge(history(), record(details=held, cluster_samples=up))
    assert objs["held down"]["valid"] is False and objs["held down"]["measured"] == ["data2"]
    # samples after the heal do not count: it may start then
    v, objs = judge(history(), record(details=held, cluster_samples=down + [{**down[0], "t": 19.0, "unhealthy": []}]))
    assert objs["held down"]["valid"] is True
    # unhealthy over 6.5 s of samples, but a restart takes longer than that anyway: cannot tell
    v, objs = judge(history(), record(details={"held_down": {**held["held_down"], "min_s": 30.0}},
                                      cluster_samples=down))
    assert objs["held down"]["valid"] == "unknown"


def test_no_other_rule():
    v, objs = judge(history(), record(details={"unexpected_events": ["arbitration_required"]}))
    assert objs["no other rule"]["valid"] is True
    ev = record()["events"] + [{"t": 10.5, "kind": "arbitration_required"}]
    v, objs = judge(history(), record(details={"unexpected_events": ["arbitration_required"]}, events=ev))
    assert objs["no other rule"]["valid"] is False and objs["no other rule"]["measured"] == ["arbitration_required"]


def test_exit_on_heal():
    frozen = {"exit_on_heal": {"data1": 2315}}
    thaw = record()["events"] + [{"t": 18.3, "kind": "forced_shutdown", "node": 11, "exit_code": 2315}]
    v, objs = judge(history(), record(details=frozen, events=thaw))
    assert objs["exit on heal"]["valid"] is True
    # the shutdown came before the heal (another cause), or with another code: missed
    early = record()["events"] + [{"t": 12.0, "kind": "forced_shutdown", "node": 11, "exit_code": 2315}]
    v, objs = judge(history(), record(details=frozen, events=early))
    assert objs["exit on heal"]["valid"] is False and objs["exit on heal"]["measured"] == {"data1": []}
    other = record()["events"] + [{"t": 18.3, "kind": "forced_shutdown", "node": 11, "exit_code": 2305}]
    v, objs = judge(history(), record(details=frozen, events=other))
    assert objs["exit on heal"]["valid"] is False and objs["exit on heal"]["measured"] == {"data1": [2305]}
    # a list: any of those codes (the engine's rule could not tell which in advance)
    either = {"exit_on_heal": {"data1": [2315, 2305]}}
    v, objs = judge(history(), record(details=either, events=other))
    assert objs["exit on heal"]["valid"] is True
    v, objs = judge(history(), record(details=either, events=early))
    assert objs["exit on heal"]["valid"] is False


def test_zero_outage_means_no_outage_at_all():
    # a 1 s gap on sql1 is within the 7 s detection bound, but not within a zero-outage promise
    v, objs = judge(history(gap_on="sql1", gap=(12.0, 13.0)), record())
    assert objs["outage on sql1"]["valid"] is True
    v, objs = judge(history(gap_on="sql1", gap=(12.0, 13.0)), record(details={"max_outage_s": 0.0}))
    assert objs["outage on sql1"]["valid"] is False and objs["outage on sql1"]["bound"] == 0.0
    v, objs = judge(history(), record(details={"max_outage_s": 0.0}))
    assert objs["outage on sql1"]["valid"] is True and objs["outage on sql1"]["measured"] == 0.0


def _failover_history(moves_after=None):
    """Two clients: process 0 on sql1 until the fault at 10 s, then (``moves_after`` s later) on
    sql2; process 1 on sql2 throughout."""
    h = History("ledger", {"concurrency": 2})
    k = 0
    for i in range(300):
        t = i / 10
        k += 1
        h.add(1, "insert", k, "ok", t, t + 0.01, "sql2")
        if t < 10.0:
            k += 1
            h.add(0, "insert", k, "ok", t, t + 0.01, "sql1")
        elif t == 10.0:
            h.add(0, "insert", 99_999, "info", t, t + 0.01, "sql1", ErrorInfo(2013, None, "unknown", "Lost connection"))
        elif moves_after is not None and t >= 10.0 + moves_after:
            k += 1
            h.add(2, "insert", k, "ok", t, t + 0.01, "sql2")  # retired process 0 continues as 0 + 2
    h.add(1_000_000, "read", list(range(1, k + 1)), "ok", 31, 31.1, "sql2")
    return h


def test_clients_fail_over_to_another_sql_node():
    fo = {"failover": {"nodes": ["sql1"], "clients_fail_over": True, "bound_s": 4.1}}
    run = record(exp={**fo, "serving": ["sql2"], "stopped_sql": ["sql1"]})
    v, objs = judge(_failover_history(moves_after=0.5), copy.deepcopy(run))
    assert objs["clients served again"]["valid"] is True
    assert "served again sql1" not in objs  # its clients stay on sql2
    # from the client's error at 10.01 to its next success at 10.51
    assert objs["clients served again"]["measured"] == pytest.approx(0.5, abs=0.02)
    # moved, but too late; never moved
    v, objs = judge(_failover_history(moves_after=4.5), copy.deepcopy(run))
    assert objs["clients served again"]["valid"] is False
    v, objs = judge(_failover_history(), copy.deepcopy(run))
    assert objs["clients served again"]["valid"] is False and "never" in objs["clients served again"]["measured"]
    # without failover the clients wait for their node: a figure, not a bound
    run = record(exp={"failover": {**fo["failover"], "clients_fail_over": False, "bound_s": None},
                      "serving": ["sql2"], "stopped_sql": ["sql1"]})
    v, objs = judge(_failover_history(moves_after=9.5), run)
    assert objs["clients served again"]["valid"] is True and objs["clients served again"]["bound"] is None


def test_latency_objectives_of_a_client_path_fault():
    h = History("pk_update", {})
    for i in range(300):
        t = i / 10
        slow = 0.2 if 10 <= t < 18 else 0.002
        h.add(0, "update", 1, "ok", t, t + slow, "sql1")
        h.add(1, "update", 1, "ok", t, t + 0.002, "sql2")
    run = record(exp={"family": "client_path", "engine_reacts": False, "affected": [],
                      "latency": {"node": "sql1", "min_p50_ms": 142.5, "others_max_p50_ms": 75.0}},
                 details={"expected_events": []})
    v, objs = judge(h, run)
    assert objs["latency on sql1"]["valid"] is True and objs["latency elsewhere"]["valid"] is True
    run["expectation"]["latency"]["min_p50_ms"] = 300.0
    v, objs = judge(h, run)
    assert objs["latency on sql1"]["valid"] is False


def test_a_saved_run_gives_the_same_verdict_again():
    h = history(gap_on="sql2", gap=(10.0, 12.0),
                errors=[(10.5, "sql2", ErrorInfo(1297, 4010, "temporary", "Got temporary error 4010"))])
    h.run = record(check_options={"allowed_error_classes": ["temporary"]})
    live = check_run(h).to_json()
    buf = io.StringIO()
    h.dump(buf)
    again = check_run(History.load(io.StringIO(buf.getvalue()))).to_json()
    assert again == live and again["valid"] is True
    assert again["checks"]["errors"]["details"]["allowed_classes"] == ["temporary"]


def _lost_sql_node(via_proxy, client_path=True):
    """Galera's SQL node loss: sql1's proxy taken down from 10 to 18 s; ``via_proxy``: what the
    record says of the clients' route (None: a record written before it said)."""
    run = record(exp={"family": "sqlnode_loss", "engine_reacts": False, "serving": ["sql2"], "stopped_sql": ["sql1"],
                      "failover": {"nodes": ["sql1"], "clients_fail_over": False, "bound_s": None}},
                 details={"expected_events": []},
                 windows=[{"kind": "proxy_down", "start": 10.0, "end": 18.0, "targets": ["sql1"],
                           "client_path": client_path}])
    if via_proxy is not None:
        run["via_proxy"] = via_proxy
    return run


def test_a_client_path_fault_on_clients_that_did_not_go_through_the_proxy_never_reached_them():
    # sql1's clients connected directly: they went on being served through the whole fault
    v, objs = judge(history(), _lost_sql_node(via_proxy=False))
    exp = v["checks"]["expectation"]
    assert exp["valid"] is False
    assert objs["fault reached the clients"]["valid"] is False
    assert exp["summary"].startswith("fault reached the clients: never (proxy_down on sql1: ")
    assert "never reached them: the run did not test what it declared" in exp["summary"]
    # what those clients must have seen is not judged on clients the fault never reached
    assert "stops serving sql1" not in objs and "clients served again" not in objs
    assert "none found" not in exp["summary"]
    assert objs["outage on sql2"]["valid"] is True and objs["recovery"]["valid"] is True


def test_the_same_fault_on_clients_through_the_proxy_is_judged_on_what_they_saw():
    # through the proxy, yet served during the fault: the SQL node did not stop serving its clients
    v, objs = judge(history(), _lost_sql_node(via_proxy=True))
    assert "fault reached the clients" not in objs
    assert objs["stops serving sql1"]["valid"] is False
    # through the proxy and cut off from 10 to 18 s: met
    v, objs = judge(history(gap_on="sql1", gap=(10.0, 18.0)), _lost_sql_node(via_proxy=True))
    assert objs["stops serving sql1"]["valid"] is True and "fault reached the clients" not in objs


@pytest.mark.parametrize("via_proxy,client_path", [(None, True), (False, False)])
def test_a_record_that_does_not_say_the_route_or_a_fault_on_the_engine_is_judged_as_before(via_proxy, client_path):
    v, objs = judge(history(), _lost_sql_node(via_proxy=via_proxy, client_path=client_path))
    assert "fault reached the clients" not in objs
    assert objs["stops serving sql1"]["valid"] is False
    assert "clients of sql1: none found in the history" in objs["clients served again"]["note"]


def _paced_history(gap: float):
    """sql1 succeeds every 0.1 s; sql2's clients every 0.8 s (a contended or slow workload), with
    one gap of ``gap`` s between two of its successes that holds the fault at 10 s."""
    h = History("ledger", {})
    k = 0
    for i in range(300):
        k += 1
        h.add(0, "insert", k, "ok", i / 10, i / 10 + 0.01, "sql1")
    t = 0.0
    while t < 30.0:
        k += 1
        h.add(1, "insert", k, "ok", t - 0.01, t, "sql2")
        t = round(t + (gap if 9.2 <= t < 10.0 else 0.8), 6)
    h.add(1_000_000, "read", list(range(1, k + 1)), "ok", 31, 31.1, "sql1")
    return h


def test_a_nodes_outage_bound_adds_its_own_pace_before_the_fault():
    # sql2's gap began at its last success (9.6 s), up to one of its 0.8 s gaps before the fault:
    # detection (7 s) + that pace is the bound; one gap longer than that is still an outage
    v, objs = judge(_paced_history(7.7), record())
    o = objs["outage on sql2"]
    assert o["measured"] == pytest.approx(7.7) and o["bound"] == pytest.approx(7.8, abs=0.01)
    assert o["valid"] is True and "longest pause before the fault, 0.800 s" in o["note"]
    assert objs["outage on sql1"]["bound"] == pytest.approx(7.1, abs=0.01)  # its own pace: 0.1 s
    v, objs = judge(_paced_history(8.5), record())
    assert objs["outage on sql2"]["valid"] is False and objs["outage on sql2"]["bound"] == pytest.approx(7.8, abs=0.01)
    # a promise (max_outage_s) is the bound as given: no pace added
    v, objs = judge(_paced_history(7.7), record(details={"max_outage_s": 7.0}))
    assert objs["outage on sql2"]["valid"] is False and objs["outage on sql2"]["bound"] == 7.0
