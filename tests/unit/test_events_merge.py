"""events.merge_streams: one list from logs that report the same events (a data node's own log,
the cluster logs of every ndb_mgmd), the original kept, late copies recognised."""

from ndbchaos.events import merge_streams


def ev(t, log, kind="forced_shutdown", reporter=12, node=12, text="Forced node shutdown completed."):
    return {"t": t, "log": log, "kind": kind, "reporter": reporter, "node": node, "text": text}


def test_copies_in_other_logs_are_merged_into_the_first_streams_event():
    node = [ev(10.0, "data2")]
    mgm1 = [ev(10.05, "mgm1")]
    mgm2 = [ev(9.9, "mgm2")]
    out = merge_streams([node, mgm1, mgm2])
    assert len(out) == 1 and out[0]["log"] == "data2" and out[0]["also_in"] == ["mgm1", "mgm2"]


def test_a_late_copy_is_merged_only_with_lateness_allowed_and_never_an_early_one():
    node = [ev(10.5, "data2")]
    late = [ev(15.6, "mgm1")]  # ndb_mgmd got the report when the partition healed
    assert len(merge_streams([node, late])) == 2
    out = merge_streams([node, late], late=60)
    assert len(out) == 1 and out[0]["t"] == 10.5 and out[0]["also_in"] == ["mgm1"]
    early = [ev(4.0, "mgm1")]  # a report cannot reach ndb_mgmd before it happened
    assert len(merge_streams([node, early], late=60)) == 2


def test_repeats_in_one_log_stay_and_each_copy_finds_its_nearest_original():
    node = [ev(10.0, "data3", kind="node_disconnected", reporter=13, node=11, text="Node 11 Disconnected"),
            ev(22.0, "data3", kind="node_disconnected", reporter=13, node=11, text="Node 11 Disconnected")]
    mgm = [ev(10.1, "mgm1", kind="node_disconnected", reporter=13, node=11, text="Node 11 Disconnected"),
           ev(22.2, "mgm1", kind="node_disconnected", reporter=13, node=11, text="Node 11 Disconnected")]
    out = merge_streams([node, mgm], late=60)
    assert [e["t"] for e in out] == [10.0, 22.0] and all(e["also_in"] == ["mgm1"] for e in out)


def test_different_events_and_untimed_ones_are_kept_in_time_order():
    a = [ev(3.0, "data1", reporter=11, node=11), {"t": None, "log": "data1", "kind": "error_report",
                                                   "reporter": 11, "node": 11, "text": "x"}]
    b = [ev(1.0, "mgm1", reporter=12, node=12)]
    out = merge_streams([a, b], late=60)
    assert [e["t"] for e in out] == [1.0, 3.0, None]
