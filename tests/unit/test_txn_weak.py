"""Read committed, read atomic and causal consistency decided exactly (ndbchaos/txn/weak.py): the
fourteen anomaly patterns of Plume (OOPSLA'24) as register histories, each rejected at every
level it violates, under its name, and accepted at the levels it satisfies; histories a checker
too strict would reject; list-append's own cases; and the wiring into ``check`` and the CLI.

Shorthand as in test_txn_checker: ``wx1`` writes 1 to register x, ``rx1`` reads x = 1, ``rx``
reads x's initial (nil) value; ``ax1`` appends 1 to list x, ``rx12`` reads x = [1, 2]."""

from __future__ import annotations

import pytest

from ndbchaos.cli import main
from ndbchaos.txn import CheckOptions, TxnHistory, check
from ndbchaos.txn import weak

from .test_txn_checker import op

ALL = ("RC", "RA", "CC")


def T(s: str, process: int = 0, type_: str = "ok") -> dict:
    return op(s, process, type_, registers=True)


def L(s: str, process: int = 0, type_: str = "ok") -> dict:
    """The list-append form: reads hold lists, one digit per element."""
    return op(s, process, type_)


def history(*ops) -> TxnHistory:
    return TxnHistory.from_events(list(ops), "test")


def judge(*ops, model="rw-register"):
    return weak.check(history(*ops), model)


def failing(result) -> set[str]:
    return {lv for lv, ok in result.valid.items() if ok is False}


# -- Plume's fourteen patterns, as registers: (pattern, history, name, the levels it violates) ----

PATTERNS = [
    ("ThinAirRead", [T("rx5")], "garbage-read", ALL),
    ("AbortedRead", [T("wx1", 0, "fail"), T("rx1", 1)], "G1a", ALL),
    ("FutureRead", [T("rx1wx1")], "future-read", ALL),
    ("NotMyOwnWrite", [T("wx1"), T("wx2rx1", 1)], "not-my-own-write", ALL),
    ("NotMyLastWrite", [T("wx1wx2rx1")], "not-my-last-write", ALL),
    ("IntermediateRead", [T("wx1wx2"), T("rx1", 1)], "G1b", ALL),
    ("CyclicCO", [T("rx2wy1", 0), T("ry1wx2", 1)], "G1c", ALL),
    # T3 read y from T2, then x from T1, which T2 overwrote (T1 -> T2 in process order)
    ("NonMonoReadCO", [T("wx1", 0), T("wx2wy2", 0), T("ry2rx1", 1)], "non-monotonic-read", ALL),
    # the same, T1 before T2 only because T4's reads force it (an arbitration edge)
    ("NonMonoReadAO", [T("wx1wz1", 0), T("wx2wy2", 1), T("rz1rx2", 2), T("ry2rx1", 3)],
     "non-monotonic-read", ALL),
    ("NonRepeatableRead", [T("wx1", 0), T("wx2", 1), T("rx1rx2", 2)], "non-repeatable-read", ("RA", "CC")),
    # T3 read x from T0 and then y from T1, which overwrote T0's x (T0 -> T1: T1 read it)
    ("FracturedReadCO", [T("wx0", 0), T("rx0wx1wy1", 1), T("rx0ry1", 2)], "fractured-read", ("RA", "CC")),
    ("FracturedReadAO", [T("wx1wz1", 0), T("wx2wy2", 1), T("rz1rx2", 2), T("rx1ry2", 3)],
     "fractured-read", ("RA", "CC")),
    # T2 (which read T1's x) is in T4's causal past through T3 only
    ("COConflictAO", [T("wx1", 0), T("rx1wx2", 1), T("rx2wy1", 2), T("ry1rx1", 3)], "causality-violation", ("CC",)),
    ("ConflictAO", [T("wx1wz1", 0), T("wx2wu2", 1), T("rz1rx2", 2), T("ru2wv5", 3), T("rv5rx1", 4)],
     "causality-violation", ("CC",)),
]


@pytest.mark.parametrize("pattern,ops,name,violates", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_plume_patterns_are_rejected_exactly_where_they_violate(pattern, ops, name, violates):
    r = judge(*ops)
    assert failing(r) == set(violates), (pattern, r.valid, list(r.anomalies))
    assert name in r.anomalies, (pattern, list(r.anomalies))
    a = r.anomalies[name][0]
    text = a.explain(history(*ops))
    assert "T1" in text and "?" not in text.split("Let:")[0]
    if a.steps:  # a cycle: it closes, and every step has its reason
        assert a.steps[-1].b == a.steps[0].a and all(s.text for s in a.steps)
        assert "contradiction" in text


@pytest.mark.parametrize("pattern,ops,name,violates", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_each_level_alone_judges_as_the_prefix_of_levels_does(pattern, ops, name, violates):
    for i, lv in enumerate(ALL):
        r = weak.check(history(*ops), "rw-register", ALL[:i + 1])
        assert (r.valid[lv] is False) == (lv in violates), (pattern, lv)


def test_forced_edges_are_explained_with_the_reader_they_come_from():
    ops = [T("wx1wz1", 0), T("wx2wu2", 1), T("rz1rx2", 2), T("ru2wv5", 3), T("rv5rx1", 4)]
    (a,) = judge(*ops).anomalies["causality-violation"]
    text = a.explain(history(*ops))
    assert "causal past (via op 3)" in text  # op 1 -> op 3 (read u from it) -> the reader, op 4
    assert "causal consistency puts" in text
    names = a.names()
    assert len(names) == 4  # the cycle's three transactions and the reader the axiom is about
    step = next(s for s in a.steps if s.via is not None)
    assert step.to_json(names)["via"] == names[step.via]


# -- what a checker too strict would reject ---------------------------------------------------

VALID = [
    ("write skew", [T("rxwy1", 0), T("rywx1", 1)], ()),
    ("lost update", [T("wx0", 0), T("rx0wx1", 1), T("rx0wx2", 2)], ()),
    ("long fork", [T("wx1", 0), T("wy1", 1), T("rx1ry", 2), T("ry1rx", 3)], ()),
    # Biswas & Enea's read committed does not promise a process its own writes (their RA does)
    ("own write missed by the next transaction", [T("wx1", 0), T("rx", 0)], ("RA", "CC")),
    ("non-repeatable read", [T("wx1", 0), T("wx2", 1), T("rx1rx2", 2)], ("RA", "CC")),
    ("fractured read", [T("wx1wy1", 0), T("rxry1", 1)], ("RA", "CC")),
    ("causality violation", [T("wx1", 0), T("rx1wy1", 1), T("ry1rx", 2)], ("CC",)),
    # a read that saw the write a later one missed, in another key's order: fine at every level
    ("stale but monotonic", [T("wx1", 0), T("wx2", 1), T("rx2", 2), T("rx1", 3)], ()),
    ("a failed transaction's writes are nowhere", [T("wx1", 0, "fail"), T("rx", 1)], ()),
    ("an info transaction read from committed", [T("wx1wy1", 0, "info"), T("rx1ry1", 1)], ()),
    ("an info transaction nobody read is left out", [T("wx1", 0, "info"), T("rx", 0)], ()),
]


@pytest.mark.parametrize("what,ops,violates", VALID, ids=[v[0] for v in VALID])
def test_histories_the_definitions_allow_are_accepted(what, ops, violates):
    r = judge(*ops)
    assert failing(r) == set(violates), (what, r.valid, list(r.anomalies))


@pytest.mark.parametrize("ops,violates", [
    # (the examples dbcop, Biswas & Enea's own checker, tests its levels with)
    ([T("wx2wy1", 0), T("wx3ry1", 1), T("rx3rx2", 2)], ALL),  # read committed's cycle
    ([T("wx1wy1", 0), T("ry1wx2wz1", 1), T("rx1rz1", 2)], ("RA", "CC")),  # read committed, not atomic
    ([T("wx1", 0), T("wx2", 0), T("rx2", 1), T("rx1", 1)], ("CC",)),  # stale across transactions
])
def test_the_examples_of_an_independent_checker(ops, violates):
    assert failing(judge(*ops)) == set(violates)


def test_an_info_transaction_read_from_is_in_its_process_order():
    # T1 committed (T3 read it), so T2 followed it in process 0 and missed its write of x
    r = judge(T("wx1wy1", 0, "info"), T("rx", 0), T("ry1", 1))
    assert failing(r) == {"RA", "CC"} and "fractured-read" in r.anomalies


def test_causal_pasts_through_processes_that_finished():
    # process 0 ends; process 1 begins by reading its last write, so process 0's first
    # transaction, which wrote k, is in the causal past of process 1's second: its read of k's
    # initial value is a causality violation (read atomic sees no direct link)
    r = judge(T("wk1", 0), T("wz1", 0), T("rz1", 1), T("rkwk3", 1))
    assert failing(r) == {"CC"} and "causality-violation" in r.anomalies
    # two processes begin after process 0 ended, the second having seen the first's write; the
    # first's next transaction has not seen the second's write of k: valid at every level
    r = judge(T("wz1", 0), T("rz1wy1", 1), T("ry1wk5", 2), T("rk", 1))
    assert failing(r) == set() and r.stats["chains"] == 2


# -- list-append --------------------------------------------------------------------------------

LISTS = [
    # T2 appended to x after T1 (its append read T1's version), T3 saw T2's but not T1's y
    ("causality through the version order", [L("ax1ay1", 0), L("ax2", 1), L("rx12ry", 2)],
     "causality-violation", ("CC",)),
    ("fractured read", [L("ax1ay1", 0), L("ryrx1", 1)], "fractured-read", ("RA", "CC")),
    ("non-monotonic read", [L("ax1ay1", 0), L("rx1ry", 1)], "non-monotonic-read", ALL),
    ("incompatible orders", [L("ax1", 0), L("ax2", 1), L("ax3", 2), L("rx12", 3), L("rx13", 4)],
     "incompatible-order", ALL),
    ("duplicate elements", [L("ax1", 0), L("ax2", 1), L("rx121", 2)], "duplicate-elements", ALL),
    ("future read", [L("rx1ax1", 0)], "future-read", ALL),
    ("garbage read", [L("ax1", 0), L("rx17", 1)], "garbage-read", ALL),
    ("aborted read", [L("ax1", 0, "fail"), L("rx1", 1)], "G1a", ALL),
    ("dirty update", [L("ax1", 0, "fail"), L("ax2", 1), L("rx12", 2)], "dirty-update", ALL),
    ("intermediate read", [L("ax1ax2", 0), L("rx1", 1)], "G1b", ALL),
    ("not my own write", [L("ax1", 0), L("ax2rx1", 1), L("rx12", 2)], "not-my-own-write", ALL),
    ("appends of one transaction apart", [L("ax1ax3", 0), L("ax2", 1), L("rx123", 2)], "not-my-own-write", ALL),
    ("a cycle of appends (G0)", [L("ax1ay2", 0), L("ax2ay1", 1), L("rx12ry12", 2)], "G0", ALL),
    ("a cycle through process order", [L("ry1", 0), L("ay1", 0)], "G1c-process", ALL),
]


@pytest.mark.parametrize("what,ops,name,violates", LISTS, ids=[x[0] for x in LISTS])
def test_list_append_cases(what, ops, name, violates):
    r = judge(*ops, model="list-append")
    assert failing(r) == set(violates), (what, r.valid, list(r.anomalies))
    assert name in r.anomalies, (what, list(r.anomalies))


@pytest.mark.parametrize("what,ops", [
    ("write skew", [L("rxay1", 0), L("ryax1", 1)]),
    ("lost update", [L("ax1", 0), L("rx1ax2", 1), L("rx1ax3", 2)]),  # two appends on [1]: no read shows both
    ("reads of a growing list", [L("ax1", 0), L("rx1ax2", 1), L("rx12ax3", 2), L("rx1", 3), L("rx123", 4)]),
    ("own appends read back", [L("ax1rx1ax2rx12", 0), L("rx12", 1)]),
])
def test_list_histories_the_definitions_allow(what, ops):
    assert failing(judge(*ops, model="list-append")) == set(), what


# -- input the levels cannot be decided on ------------------------------------------------------

def test_duplicate_values_and_foreign_micro_ops_leave_the_levels_unknown():
    r = judge(T("wx1", 0), T("wx1", 1), T("rx1", 2))
    assert set(r.valid.values()) == {"unknown"} and "duplicate-writes" in r.anomalies
    nil = {"process": 0, "type": "ok", "value": [["w", "x", None]]}
    r = judge(nil, T("rx", 1))  # a read of nil: the initial value or that write?
    assert set(r.valid.values()) == {"unknown"} and "duplicate-writes" in r.anomalies
    r = judge(T("wx1", 0), model="list-append")
    assert set(r.valid.values()) == {"unknown"} and "unexpected-txn-micro-op-types" in r.anomalies


# -- wired into check and the CLI ---------------------------------------------------------------

def run(ops, models, model="rw-register"):
    return check(history(*ops), CheckOptions(model=model, consistency_models=tuple(models)))


def test_check_decides_the_weak_levels_it_is_asked_for_and_names_them():
    frac = [T("wx1wy1", 0), T("rxry1", 1)]
    v = run(frac, ["read-atomic"])
    assert v.valid is False and "fractured-read" in v.anomaly_types and "read-atomic" in v.not_
    levels = {x["model"]: x["valid"] for x in v.to_json()["weak"]["levels"]}
    assert levels == {"read-committed-biswas-enea": True, "read-atomic": False}
    # read committed: Adya's PL-2 (what engines promise under that name) allows the
    # non-monotonic read, Biswas & Enea's read committed, asked by its own name, does not
    nonmono = [T("wx1", 0), T("wx2wy2", 0), T("ry2rx1", 1)]
    v = run(nonmono, ["read-committed"])
    assert v.valid is True and "weak" not in v.to_json()
    v = run(nonmono, ["read-committed", "read-committed-biswas-enea"])
    assert v.valid is False and v.anomaly_types == ["non-monotonic-read"]
    assert v.not_ == ["read-committed-biswas-enea"]
    levels = {x["model"]: x["valid"] for x in v.to_json()["weak"]["levels"]}
    assert levels == {"read-committed": True, "read-committed-biswas-enea": False}
    # causal consistency by either name; serializability stays with the inference alone
    chain = [T("wx1", 0), T("rx1wy1", 1), T("ry1rx", 2)]
    for name in ("causal-consistency", "causal-cerone"):
        assert run(chain, [name]).anomaly_types == ["causality-violation"]
    assert run(chain, ["read-atomic"]).valid is True
    assert "weak" not in run(chain, ["serializable"]).to_json()


def test_the_weak_anomalies_can_be_asked_for_by_name():
    chain = [T("wx1", 0), T("rx1wy1", 1), T("ry1rx", 2)]
    v = check(history(*chain), CheckOptions(model="rw-register", consistency_models=(),
                                            anomalies=("causality-violation",)))
    assert v.valid is False and v.anomaly_types == ["causality-violation"]
    v = check(history(*chain), CheckOptions(model="rw-register", consistency_models=(), anomalies=("fractured-read",)))
    assert v.valid is True  # decided up to read atomic, where the chain is allowed
    assert [x["model"] for x in v.to_json()["weak"]["levels"]] == ["read-committed-biswas-enea", "read-atomic"]


def test_a_future_read_of_a_register_is_invalid_not_unknown():
    v = run([T("rx1wx1", 0)], ["read-committed-biswas-enea"])
    assert v.valid is False and "future-read" in v.anomaly_types


def test_findings_the_inference_already_implies_are_not_repeated():
    # the inference finds the G1c; the G1c-process cycle the weak check would add is implied by it
    v = run([L("ax1ry1"), L("ax2ay1"), L("rx12ry1", 1)], ["read-committed"], model="list-append")
    assert "G1c" in v.anomaly_types and "G1c-process" not in v.found


def test_cli_prints_each_weak_level(tmp_path, capsys):
    import json
    events = []
    for o in (T("wx1wy1", 0), T("rxry1", 1)):
        events += [{**o, "type": "invoke"}, o]
    p = tmp_path / "h.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main(["check", "--model", "rw-register", "--consistency-models", "read-atomic", str(p)]) == 1
    out = capsys.readouterr()
    assert json.loads(out.out)["anomaly_types"] == ["fractured-read"]
    assert "read-atomic: NOT held (fractured-read)" in out.err
    assert "read-committed-biswas-enea: held" in out.err
    assert main(["check", "--model", "rw-register", "-q", "--consistency-models", "read-committed", str(p)]) == 0
    # explained and drawn like every other anomaly
    d = tmp_path / "out"
    assert main(["check", "--model", "rw-register", "-q", "--consistency-models", "read-atomic",
                 "--directory", str(d), str(p)]) == 1
    assert "read atomic puts T1's write" in (d / "fractured-read.txt").read_text()
    assert (d / "fractured-read-0.svg").read_text().count("marker-end=") == 2  # its two steps
