"""A real soak's fault judged from an excerpt of its record (issue 29).

``fixtures/galera-soak/seed1-fault4.jsonl.gz``: a ten-minute Galera soak, seed 1, whose load
connected to the SQL nodes directly while its fault #4, ``lose_one_sql_node``, took data1's
toxiproxy proxy down from 93.80 to 96.97 s: every operation that ended between 90 and 100 s on
the run clock, and the run record's parts for that step (its plan, marks, fault window, the
status samples and engine events of those seconds, the soak's entry for it), cut from the run's
``run.nch`` with ``History.between(90, 100)`` and written with ``History.write_jsonl``. The
record was written before the clients' route was: it has no ``via_proxy``.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from ndbchaos.checks import check_run
from ndbchaos.history import History

FIXTURE = Path(__file__).parent / "fixtures" / "galera-soak" / "seed1-fault4.jsonl.gz"
FAULT = (93.7982, 96.9677)  # the proxy_down window of data1


@pytest.fixture(scope="module")
def excerpt() -> History:
    return History.read(FIXTURE)


def faults_of(h: History, run: dict) -> dict:
    h = copy.copy(h)
    h.run = run
    return check_run(h).to_json()["checks"]["faults"]


def test_the_excerpt_is_small_and_is_the_step_of_fault_4(excerpt):
    assert FIXTURE.stat().st_size < 400_000
    (step,) = excerpt.run["steps"]
    assert (step["index"], step["scenario"], step["targets"]) == (4, "lose_one_sql_node", ["data1"])
    (w,) = step["windows"]
    assert (w["kind"], w["start"], w["end"]) == ("proxy_down", *FAULT)
    assert "via_proxy" not in excerpt.run and "client_path" not in w


def test_the_clients_of_data1_went_on_being_served_through_the_whole_fault(excerpt):
    c = excerpt.cols
    end = np.frombuffer(c.end, dtype=np.float64)
    node = np.frombuffer(c.node, dtype=np.int16)
    ok = np.frombuffer(c.type, dtype=np.uint8) == 0
    inside = (end >= FAULT[0]) & (end < FAULT[1]) & (node == c.node_names.index("data1"))
    assert inside.sum() == 3383 and ok[inside].all()


def test_judged_as_recorded_the_verdict_stands(excerpt):
    # without the route the checker cannot tell that the fault never reached the clients: it
    # says what they felt (served throughout), as the live run's verdict did
    f = faults_of(excerpt, excerpt.run)
    assert f["valid"] is False and f["failed"] == 1
    assert f["summary"] == (
        "1 of 1 faults missed: #4 lose_one_sql_node: expectation: INVALID: stops serving data1: 1139 > 0 "
        "(successes later than 2 s after the fault, before the heal); clients served again: None "
        "(clients of data1: none found in the history)")


def test_with_the_route_recorded_the_verdict_says_the_fault_never_reached_the_clients(excerpt):
    # what this version records of the same run: the clients went straight to the SQL nodes,
    # and the proxy_down window is a fault on the clients' path
    run = copy.deepcopy(excerpt.run)
    run["via_proxy"] = False
    run["steps"][0]["windows"][0]["client_path"] = True
    f = faults_of(excerpt, run)
    assert f["valid"] is False and f["failed"] == 1
    (step,) = f["details"]["steps"]
    missed = [o for o in step["objectives"] if o["valid"] is not True]
    assert [o["name"] for o in missed] == ["fault reached the clients"]
    assert f["summary"].startswith(
        "1 of 1 faults missed: #4 lose_one_sql_node: expectation: INVALID: fault reached the clients: never "
        "(proxy_down on data1: a fault on the clients' path through toxiproxy, but the clients of this run "
        "connected to the SQL nodes directly, so it never reached them: the run did not test what it declared)")
    assert "none found" not in f["summary"] and "stops serving" not in f["summary"]
    # data2 kept serving and every node was healthy again at once: those objectives still stand
    assert {o["name"] for o in step["objectives"] if o["valid"] is True} == {
        "outage on data2", "recovery", "served again data1", "served again data2"}
