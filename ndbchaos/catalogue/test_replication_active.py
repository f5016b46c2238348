"""Active-active NDB Cluster Replication with conflict detection (NDB$EPOCH2), on the real engine
(issue 42). A pair of its own (``PairLayout(active_active=True)``): both clusters' SQL nodes are
binlog servers, the source is the primary and the replica the secondary, the way back is a
second channel (``ndbchaos.replication.conflict``). Torn down at the end; nothing labelled with
either project may be left.

    pytest -m replication --engine ndb -k active_active
"""

import time

import pytest

from ndbchaos.replication.conflict import ActiveActive, counter_changes, judge
from ndbchaos.report.allure import attach_json, attach_text
from ndbchaos.replication.faults import CHANNEL_BACK_BOUND_S
from ndbchaos.replication.layout import PairLayout

from ndbchaos.catalogue.helpers import replication_pair

#: slow: a pair of clusters of its own and scenarios of 25-95 s each (out of "not slow" runs, as the first run)
pytestmark = [pytest.mark.replication, pytest.mark.docker, pytest.mark.slow]

#: how long the clusters are apart, each taking writes
APART_S = 10.0
#: both ways caught up after the heal: each channel back (CHANNEL_BACK_BOUND_S), each backlog
#: applied (as long as it took to write, doubled: the bound of test_replication._applies_within),
#: the primary's refreshes of what it rejected one more way across
SAME_BOUND_S = 2 * CHANNEL_BACK_BOUND_S + 2 * (2 * APART_S) + 30


@pytest.fixture(scope="module")
def active(request):
    for p in replication_pair(request.config, PairLayout(active_active=True)):
        aa = ActiveActive(p)
        t0 = time.monotonic()
        aa.setup()
        print(f"active-active: conflict detection set up, both ways verified in {time.monotonic() - t0:.1f}s")
        yield aa


def test_both_clusters_written_while_apart_the_primary_wins_every_conflict_and_they_converge(active):
    """The link cut, both sides updating overlapping keys for APART_S, the link healed: every key
    both wrote is a conflict the primary finds, records in its exceptions table and wins; every
    other key keeps its own side's last write; both clusters end the same."""
    aa, pair = active, active.pair
    before = {s: aa.counters(s) for s in ("A", "B")}
    pair.unlink()
    try:
        writes = aa.write_apart(APART_S, seed=42)
    finally:
        pair.link()
    t0 = time.monotonic()
    took = aa.wait_same(SAME_BOUND_S)
    after = {s: aa.counters(s) for s in ("A", "B")}
    counters = {s: counter_changes(before[s], after[s]) for s in ("A", "B")}
    rep = judge(aa.keys, writes, aa.rows("A"), aa.rows("B"), aa.exceptions("A"), aa.exceptions("B"), counters)
    print(f"\nactive-active: {rep.summary()}\n  both ways caught up and equal {took:.1f}s after the heal "
          f"({time.monotonic() - t0:.1f}s)\n  counters: {counters}")
    attach_text(rep.summary(), "active-active run")
    attach_json({"took_s": round(took, 1), "writes": rep.writes, "both": len(rep.both),
                 "exceptions_primary": len(rep.exceptions), "exceptions_secondary": len(rep.exceptions_secondary),
                 "counters": counters, "why": list(rep.why)}, "active-active figures")
    assert rep.writes["A"] > 50 and rep.writes["B"] > 50, "the writers wrote almost nothing: nothing was proven"
    assert len(rep.both) > 10, "too few keys were written on both sides for conflicts to show"
    assert rep.ok, rep.summary()
