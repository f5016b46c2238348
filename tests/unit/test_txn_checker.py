"""The transactional checker on small histories whose verdicts Elle publishes (its README and its
own tests: the anomaly types, validity and weakest models ruled out), written here in a
shorthand: ``ax1`` appends 1 to x, ``rx12`` reads x = [1, 2], ``ry`` reads y = [], ``wx1`` writes
1 to register x, ``rx1`` (registers) reads x = 1."""

from __future__ import annotations

import re

import pytest

from ndbchaos.txn import CheckOptions, TxnHistory, check
from ndbchaos.txn.graph import classify, RW, WR, WW, PROCESS, REALTIME


def op(s: str, process: int = 0, type_: str = "ok", registers: bool = False) -> dict:
    mops = []
    for f, k, digits in re.findall(r"([arw])([a-z])(\d*)", s):
        if f == "a":
            mops.append(["append", k, int(digits)])
        elif f == "w":
            mops.append(["w", k, int(digits)])
        elif registers:
            mops.append(["r", k, int(digits) if digits else None])
        else:
            mops.append(["r", k, [int(d) for d in digits]])
    return {"process": process, "type": type_, "value": mops}


def pair(completion: dict) -> list[dict]:
    inv = {**completion, "type": "invoke",
           "value": [[f, k, None] if f == "r" else [f, k, v] for f, k, v in completion["value"]]}
    return [inv, completion]


def pairs(*ops) -> list[dict]:
    return [e for o in ops for e in pair(o)]


def run(events, models=("strict-serializable",), anomalies=(), **kw):
    return check(TxnHistory.from_events(events, "test"),
                 CheckOptions(consistency_models=tuple(models), anomalies=tuple(anomalies), **kw))


def result(v) -> dict:
    """The fields Elle's tests compare: validity, anomaly types, and (when invalid or unknown)
    the weakest models ruled out."""
    out = {"valid": v.valid, "anomaly_types": v.anomaly_types}
    if v.valid is not True:
        out["not"] = set(v.not_)
    return out


# -- Elle's README -----------------------------------------------------------------------------

def test_the_readme_example_is_g1c_and_not_read_committed():
    h = [{"process": 0, "type": "ok", "value": [["append", "x", 1], ["r", "y", [1]]]},
         {"process": 1, "type": "ok", "value": [["append", "x", 2], ["append", "y", 1]]},
         {"process": 2, "type": "ok", "value": [["r", "x", [1, 2]]]}]
    v = run(h, ["serializable"])
    assert result(v) == {"valid": False, "anomaly_types": ["G1c"], "not": {"read-committed"}}
    (cyc,) = v.anomalies["G1c"]
    assert [(s.rel, s.key) for s in cyc.steps] == [("wr", "y"), ("ww", "x")]
    text = cyc.explain(v.history)
    assert "T2 observed T1's append of 1 to key \"y\"" in text
    assert "T1 appended 2 after T2 appended 1 to key \"x\": a contradiction!" in text
    assert {"serializable", "snapshot-isolation", "repeatable-read", "strong-serializable"} <= set(v.also_not)


# -- G0, G1a, G1b, G1c, G-single, G2 (Elle's checker test) ------------------------------------

def test_g0_a_pure_write_cycle():
    h = [op("ax1ay1"), op("ax2ay2"), op("rx12ry21")]
    for asked in (["G0"], ["G1"]):  # G0 implies G1c, so asking for G1 finds it too
        v = run(h, [], asked)
        assert result(v) == {"valid": False, "anomaly_types": ["G0"], "not": {"read-uncommitted"}}
    assert run(h, [], ["G2"]).valid is True  # G2 does not include G0
    (cyc,) = run(h, [], ["G0"]).anomalies["G0"]
    assert [s.rel for s in cyc.steps] == ["ww", "ww"]


def test_g1a_an_aborted_read():
    h = [{"process": 0, "type": "fail", "value": [["append", "x", 1]]}, op("rx1")]
    # read uncommitted allows it; the graph is empty, so the verdict is unknown and says why
    assert result(run(h, ["read-uncommitted"])) == {
        "valid": "unknown", "anomaly_types": ["empty-transaction-graph"], "not": {"read-committed"}}
    for models in (["read-committed"], ["repeatable-read"]):
        assert result(run(h, models)) == {"valid": False, "anomaly_types": ["G1a", "empty-transaction-graph"],
                                          "not": {"read-committed"}}
    (g1a,) = run(h, ["read-committed"]).anomalies["G1a"]
    assert g1a.key == "x" and g1a.values == [1]


def test_g1b_an_intermediate_read_is_also_g_single():
    h = pairs(op("ax1ax2"), op("rx1"))
    assert run(h, [], ["G0"]).valid is True
    assert result(run(h, [], ["G1"])) == {"valid": False, "anomaly_types": ["G1b"], "not": {"read-committed"}}
    assert result(run(h, [], ["G2"])) == {"valid": False, "anomaly_types": ["G-single-item"],
                                          "not": {"read-committed"}}
    v = run(h)
    assert result(v) == {"valid": False, "anomaly_types": ["G-single-item", "G1b"], "not": {"read-committed"}}
    (cyc,) = v.anomalies["G-single-item"]
    assert [(s.rel, s.value, s.value2) for s in cyc.steps] in ([("rw", 1, 2), ("wr", 1, None)],
                                                               [("wr", 1, None), ("rw", 1, 2)])


def test_g1c_circular_information_flow():
    h = [op("ax1ry1"), op("ax2ay1"), op("rx12ry1")]
    assert run(h, [], ["G0"]).valid is True
    assert result(run(h, [], ["G1"])) == {"valid": False, "anomaly_types": ["G1c"], "not": {"read-committed"}}
    assert run(h, [], ["G2"]).valid is True


def test_g_single_an_anti_dependency_and_a_write_dependency():
    h = [op("ax1ay1"), op("ax2ry"), op("rx12")]
    assert run(h, [], ["G0"]).valid is True
    assert run(h, [], ["G1"]).valid is True
    for asked in (["G-single"], ["G2"]):
        v = run(h, [], asked)
        assert result(v) == {"valid": False, "anomaly_types": ["G-single-item"],
                             "not": {"consistent-view", "repeatable-read"}}
    (cyc,) = run(h, [], ["G2"]).anomalies["G-single-item"]
    steps = {(s.rel, s.key) for s in cyc.steps}
    assert steps == {("rw", "y"), ("ww", "x")}
    assert "observed the initial (empty) state of key \"y\"" in cyc.explain(run(h, [], ["G2"]).history)


def test_g2_item_two_anti_dependencies():
    h = [op("ax1ry"), op("ay1rx")]
    assert run(h, [], ["G0"]).valid is True
    assert run(h, [], ["G1"]).valid is True
    assert run(h, ["read-committed"]).valid is True
    for models, asked in (([], ["G2"]), (["serializable"], []), (["repeatable-read"], [])):
        assert result(run(h, models, asked)) == {"valid": False, "anomaly_types": ["G2-item"],
                                                 "not": {"repeatable-read"}}


def test_strong_si_violation_needs_real_time():
    h = [{"process": 0, "index": 0, "type": "invoke", "value": [["append", "x", 1]]},
         {"process": 0, "index": 1, "type": "ok", "value": [["append", "x", 1]]},
         {"process": 1, "index": 2, "type": "invoke", "value": [["append", "x", 2]]},
         {"process": 1, "index": 3, "type": "ok", "value": [["append", "x", 2]]},
         {"process": 2, "index": 4, "type": "invoke", "value": [["r", "x", None]]},
         {"process": 2, "index": 5, "type": "ok", "value": [["r", "x", [1]]]},
         {"process": 3, "index": 6, "type": "invoke", "value": [["r", "x", None]]},
         {"process": 3, "index": 7, "type": "ok", "value": [["r", "x", [1, 2]]]}]
    assert run(h, [], ["G2"]).valid is True
    assert run(h, ["serializable"]).valid is True
    v = run(h, ["strict-serializable"])
    assert result(v) == {"valid": False, "anomaly_types": ["G-single-item-realtime"],
                         "not": {"strong-snapshot-isolation"}}
    (cyc,) = v.anomalies["G-single-item-realtime"]
    assert sorted(s.rel for s in cyc.steps) == ["realtime", "rw"]
    assert [v.history.txns[t].index for t in cyc.txns] in ([5, 3], [3, 5])


def test_strong_session_si_violation_needs_process_order():
    h = [{"process": 0, "index": 0, "type": "invoke", "value": [["append", "x", 1]]},
         {"process": 0, "index": 1, "type": "ok", "value": [["append", "x", 1]]},
         {"process": 1, "index": 2, "type": "invoke", "value": [["append", "x", 2]]},
         {"process": 1, "index": 3, "type": "ok", "value": [["append", "x", 2]]},
         {"process": 1, "index": 4, "type": "invoke", "value": [["r", "x", None]]},
         {"process": 1, "index": 5, "type": "ok", "value": [["r", "x", [1]]]},
         {"process": 2, "index": 6, "type": "invoke", "value": [["r", "x", None]]},
         {"process": 2, "index": 7, "type": "ok", "value": [["r", "x", [1, 2]]]}]
    assert run(h, ["serializable"]).valid is True
    v = run(h, ["strong-session-snapshot-isolation"])
    assert result(v) == {"valid": False, "anomaly_types": ["G-single-item-process"],
                         "not": {"strong-session-snapshot-isolation"}}
    assert "process 1 executed" in v.anomalies["G-single-item-process"][0].explain(v.history)


def test_g_nonadjacent_process():
    h = [{"process": 0, "index": 0, "type": "invoke", "value": [["r", "x", None], ["r", "z", None]]},
         {"process": 0, "index": 1, "type": "ok", "value": [["r", "x", None], ["r", "z", [1]]]},
         {"process": 1, "index": 2, "type": "invoke", "value": [["append", "x", 1]]},
         {"process": 1, "index": 3, "type": "ok", "value": [["append", "x", 1]]},
         {"process": 1, "index": 4, "type": "invoke", "value": [["r", "z", None]]},
         {"process": 1, "index": 5, "type": "ok", "value": [["r", "z", None]]},
         {"process": 2, "index": 6, "type": "invoke", "value": [["append", "z", 1]]},
         {"process": 2, "index": 7, "type": "ok", "value": [["append", "z", 1]]}]
    assert run(h, ["serializable"]).valid is True
    v = run(h, ["strong-session-snapshot-isolation"])
    assert result(v) == {"valid": False, "anomaly_types": ["G-nonadjacent-item-process"],
                         "not": {"strong-session-snapshot-isolation"}}
    (cyc,) = v.anomalies["G-nonadjacent-item-process"]
    rels = [s.rel for s in cyc.steps]
    assert sorted(rels) == ["process", "rw", "rw", "wr"]
    n = len(rels)
    assert not any(rels[i] == "rw" and rels[(i + 1) % n] == "rw" for i in range(n))


def test_contradictory_read_orders():
    h = [op("ax1ry1"), op("ax2"), op("ax3ay1"), op("rx13"), op("rx123")]
    v = run(h, [], ["G1"])
    assert result(v) == {"valid": False, "anomaly_types": ["G1c", "incompatible-order"], "not": {"read-committed"}}
    (inc,) = v.anomalies["incompatible-order"]
    assert inc.key == "x" and inc.values == [(1, 3), (1, 2, 3)]


def test_dirty_updates():
    assert result(run([op("ax1", 0, "fail")], [], ["dirty-update"])) == {
        "valid": "unknown", "anomaly_types": ["empty-transaction-graph"], "not": set()}
    direct = run([op("ax1", 0, "fail"), op("ax2", 1), op("rx12", 2)], [], ["dirty-update"])
    assert result(direct) == {"valid": False, "anomaly_types": ["dirty-update"], "not": {"read-committed"}}
    assert direct.anomalies["dirty-update"][0].values == [1, 2]
    indirect = run([op("ax1", 0, "fail"), op("ax2", 1, "info"), op("ax3", 2), op("rx123", 3)], [], ["dirty-update"])
    assert result(indirect) == {"valid": False, "anomaly_types": ["dirty-update"], "not": {"read-committed"}}
    assert indirect.anomalies["dirty-update"][0].values == [1, 2, 3]


def test_duplicate_elements():
    v = run([op("ax1ry1"), op("ax2ay1"), op("rx121")], ["read-committed"])
    assert result(v) == {"valid": False, "anomaly_types": ["G1c", "duplicate-elements"],
                         "not": {"read-uncommitted"}}


def test_internal_inconsistency():
    v = run([op("ax1ax2ax4"), op("ax3rx1234")], [], ["internal"])
    # a G0 is there too (not asked for, but it rules out read uncommitted)
    assert result(v) == {"valid": False, "anomaly_types": ["internal"], "not": {"read-uncommitted"}}
    (a,) = v.anomalies["internal"]
    assert a.values == [(3,), (1, 2, 3, 4)]
    assert "[..., 3]" in a.explain(v.history)


def test_unobserved_writes_follow_the_highest_observed_element():
    w1, w2, w3, rx, ry = (pair(op(s, p)) for p, s in enumerate(("ax1ay1", "ax2ay2", "ax3ay3", "rx12", "ry2")))
    h = [w1[0], w2[0], w3[0], rx[0], ry[0], w1[1], w2[1], w3[1], rx[1], ry[1]]
    v = run(h, ["serializable"])
    assert result(v) == {"valid": False, "anomaly_types": ["G-single-item", "G0"], "not": {"read-uncommitted"}}


def test_repeatable_read_forbids_g2_item_read_committed_does_not():
    h = [op("rxay1"), op("ryax1")]
    assert run(h, ["read-committed"]).valid is True
    assert result(run(h, ["repeatable-read"])) == {"valid": False, "anomaly_types": ["G2-item"],
                                                   "not": {"repeatable-read"}}


def test_g_nonadjacent_and_adjacent_anti_dependencies():
    h = pairs(op("ax1"), op("rx1ry"), op("ay1"), op("ry1rx"))
    v = run(h)
    # Elle reports G-nonadjacent-item alone. The last transaction also began after the first had
    # committed and missed its append to x: a stale read, G-single-item-realtime. Elle explains
    # each pair of a cycle by a data dependency first, and its real-time order is a transitive
    # reduction, so it never sees that two-transaction cycle; we search real time as a relation
    # of its own (docs/transactions.md, "Where we differ from Elle"). Same validity, same "not".
    assert result(v) == {"valid": False, "anomaly_types": ["G-nonadjacent-item", "G-single-item-realtime"],
                         "not": {"snapshot-isolation", "repeatable-read"}}
    (stale,) = v.anomalies["G-single-item-realtime"]
    assert [v.history.txns[t].index for t in stale.txns] in ([7, 1], [1, 7])
    assert sorted(s.rel for s in stale.steps) == ["realtime", "rw"]
    assert result(run(h, ["serializable"])) == {"valid": False, "anomaly_types": ["G-nonadjacent-item"],
                                                "not": {"snapshot-isolation", "repeatable-read"}}
    # rw rw wr rw wr: two rw edges adjacent, so snapshot isolation allows it
    h2 = pairs(op("rx5ay1"), op("ryaz2"), op("rzat3"), op("rt3au4"), op("ruax5"))
    assert run(h2, ["snapshot-isolation"]).valid is True


def test_lost_update():
    h = pairs(op("ax0"), op("rx0ax1"), op("rx0ax2"))
    # Elle: G2-item and lost-update; the third transaction also began after the second committed
    # and missed its append (G-single-item-realtime, as in the test above)
    v = run(h)
    assert result(v) == {"valid": False, "anomaly_types": ["G-single-item-realtime", "G2-item", "lost-update"],
                         "not": {"update-atomic", "cursor-stability"}}
    v = run(h, ["serializable"])
    assert result(v) == {"valid": False, "anomaly_types": ["G2-item", "lost-update"],
                         "not": {"update-atomic", "cursor-stability"}}
    (lu,) = v.anomalies["lost-update"]
    assert lu.key == "x" and lu.values == [(0,)] and len(lu.txns) == 2
    # one transaction writing over its own read twice is no lost update
    assert run(pairs(op("rxax1ax2"), op("rx12"))).valid is True


def test_g1c_process():
    h = [{"process": 1, "type": "invoke", "value": [["r", "x", None], ["append", "y", 1]], "index": 0},
         {"process": 1, "type": "ok", "value": [["r", "x", [1]], ["append", "y", 1]], "index": 1},
         {"process": 2, "type": "invoke", "value": [["r", "y", None]], "index": 2},
         {"process": 2, "type": "ok", "value": [["r", "y", [1]]], "index": 3},
         {"process": 2, "type": "invoke", "value": [["append", "x", 1]], "index": 4},
         {"process": 2, "type": "ok", "value": [["append", "x", 1]], "index": 5}]
    assert result(run(h, ["strong-session-snapshot-isolation"])) == {
        "valid": False, "anomaly_types": ["G1c-process"], "not": {"strong-session-read-committed"}}


def test_repeatable_read_g_single_item_and_g_nonadjacent_item():
    assert result(run(pairs(op("ax1ay1"), op("rx1ry")), ["repeatable-read"])) == {
        "valid": False, "anomaly_types": ["G-single-item"], "not": {"consistent-view", "repeatable-read"}}
    h = pairs(op("ax1at1"), op("rx1ry"), op("ay1az2"), op("rz2rt"))
    assert result(run(h, ["repeatable-read"])) == {
        "valid": False, "anomaly_types": ["G-nonadjacent-item"], "not": {"repeatable-read", "snapshot-isolation"}}


def test_future_read():
    h = [{"process": 0, "type": "invoke", "value": [["r", "x", [1]], ["append", "x", 1]]},
         {"process": 0, "type": "ok", "value": [["r", "x", [1]], ["append", "x", 1]]}]
    assert result(run(h, ["read-committed"])) == {
        "valid": False, "anomaly_types": ["empty-transaction-graph", "future-read"], "not": {"read-committed"}}


def test_garbage_reads_and_duplicate_appends():
    v = run([op("ax1"), op("rx17")], ["read-committed"])
    assert "garbage-read" in v.anomaly_types and v.valid is False
    dup = run([op("ax1"), op("ax1", 1), op("rx1")])
    assert dup.valid == "unknown" and dup.anomaly_types == ["duplicate-appends"]
    foreign = run([{"process": 0, "type": "ok", "value": [["w", "x", 1]]}])
    assert foreign.valid == "unknown" and foreign.anomaly_types == ["unexpected-txn-micro-op-types"]


# -- rw-register ---------------------------------------------------------------------------------

def reg(s, process=0, type_="ok"):
    return op(s, process, type_, registers=True)


def rw(events, models=("strict-serializable",), **kw):
    return check(TxnHistory.from_events(events, "test"),
                 CheckOptions(model="rw-register", consistency_models=tuple(models), **kw))


def test_registers_g1a_g1b_internal_and_lost_update():
    assert "G1a" in rw([reg("wx1", 0, "fail"), reg("rx1", 1)], ["read-committed"]).anomaly_types
    assert "G1b" in rw([reg("wx1wx2", 0), reg("rx1", 1)], ["read-committed"]).anomaly_types
    assert "internal" in rw([reg("wx1rx2", 0), reg("wx2", 1)], ["serializable"]).anomaly_types
    lu = rw(pairs(reg("wx0"), reg("rx0wx1", 1), reg("rx0wx2", 2)), ["serializable"], wfr_keys=True)
    assert "lost-update" in lu.anomaly_types and lu.valid is False


def test_registers_version_orders_need_their_sources():
    # T2 reads x = 1 and y = 1 (T1's); T1 read x = 1 too and then wrote x = 2: T2 -rw-> T1 only
    # once writes follow reads (1 < 2 on x), and T1 -wr-> T2 on y: G-single
    h = pairs(reg("wx1"), reg("rx1wx2wy1", 2), reg("rx1ry1", 1))
    assert rw(h, ["serializable"]).valid is True
    v = rw(h, ["serializable"], wfr_keys=True)
    assert v.anomaly_types == ["G-single-item"]
    assert "came later in the version order" in v.anomalies["G-single-item"][0].explain(v.history)


def test_registers_sequential_keys_see_a_process_go_back_to_nil():
    h = pairs(reg("wx1"), reg("rx1", 1), reg("rx", 1))
    v = rw(h, ["read-uncommitted"], sequential_keys=True)
    assert v.anomaly_types == ["cyclic-versions"] and v.valid is False


# -- the cycle classification -------------------------------------------------------------------

@pytest.mark.parametrize("rels,kind", [
    ([WW, WW], "G0"), ([WW, WR], "G1c"), ([RW, WR], "G-single-item"), ([RW, WR, RW, WR], "G-nonadjacent-item"),
    ([RW, RW], "G2-item"), ([RW, RW, WR], "G2-item"), ([WW, PROCESS], "G0-process"),
    ([RW, REALTIME], "G-single-item-realtime"), ([WR, PROCESS, REALTIME], "G1c-realtime"),
])
def test_classify(rels, kind):
    assert classify(rels) == kind


def test_a_history_with_nothing_wrong_is_valid_under_strict_serializability():
    h = pairs(op("ax1", 0), op("rx1ax2", 1), op("rx12ay1", 0), op("rx12ry1", 2))
    v = run(h)
    assert v.valid is True and v.anomaly_types == [] and v.found == {}
    assert v.graph["order"] == "realtime" and v.graph["sccs"] == 0


# -- the acyclic shortcut of the component search ------------------------------------------------

@pytest.mark.parametrize("seed", range(20))
def test_components_with_ranks_agree_with_the_search(seed):
    """Given ranks, a graph whose edges all rise in them has no component; any other graph gets
    the components the search finds without them."""
    import numpy as np
    from ndbchaos.txn.search import components
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    rank = rng.permutation(n).astype(np.int64)
    m = int(rng.integers(1, 4 * n))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    if seed % 2 == 0:  # only rising edges: acyclic
        up = rank[src] < rank[dst]
        src, dst = np.where(up, src, dst), np.where(up, dst, src)
    rels = rng.integers(1, 8, len(src)).astype(np.uint8)

    def shape(comps):
        return [(c.nodes.tolist(), c.edges) for c in comps]
    plain = components(n, n, src, dst, rels)
    assert shape(components(n, n, src, dst, rels, rank)) == shape(plain)
    if seed % 2 == 0:
        assert plain == []


def check_in_a_process(h: TxnHistory, tmp_path) -> list[str]:
    """h checked (list-append, strict serializable) in an interpreter of its own: its validity, how
    many strongly connected components were searched, and whether scipy was imported."""
    import subprocess
    import sys
    path = tmp_path / "h.jsonl"
    h.write(path)
    code = ("import sys; from ndbchaos.txn import TxnHistory, CheckOptions, check; "
            f"v = check(TxnHistory.read({str(path)!r}), CheckOptions(model='list-append')); "
            "print(v.valid, v.graph['sccs'], 'scipy' in sys.modules)")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def test_a_serializable_history_is_checked_without_the_component_search(tmp_path):
    """Completion order orders every edge of a serial execution: no component search, no scipy."""
    h = TxnHistory.from_events([
        {"process": 0, "type": "invoke", "value": [["append", 1, 1]]},
        {"process": 0, "type": "ok", "value": [["append", 1, 1]]},
        {"process": 1, "type": "invoke", "value": [["r", 1, None], ["append", 2, 1]]},
        {"process": 1, "type": "ok", "value": [["r", 1, [1]], ["append", 2, 1]]},
        {"process": 0, "type": "invoke", "value": [["r", 2, None], ["r", 1, None]]},
        {"process": 0, "type": "ok", "value": [["r", 2, [1]], ["r", 1, [1]]]},
    ])
    assert check_in_a_process(h, tmp_path) == ["True", "0", "False"]


def test_values_in_explanations_are_written_as_json_writes_them():
    """``esc``'s short cut for integers and lists of them writes what json.dumps writes."""
    import json as json_mod

    from ndbchaos.txn.anomaly import _plain, esc

    def ref(x):
        return json_mod.dumps(_plain(x), separators=(",", ":")).replace("{", "{{").replace("}", "}}")
    values = [0, 7, -3, 10 ** 30, -(10 ** 18), True, False, None, 1.5, "k{1}", "a\"b", [], (), [1, 2, 3],
              (4, -5), [1, True], [1, "x"], (1, (2, 3)), [[1], [2]], [None], ["{", "}"], [10 ** 20, 0]]
    for x in values:
        assert esc(x) == ref(x), x
