"""The weak levels' checker (ndbchaos/txn/weak.py) against the definitions themselves, on
generated histories:

- a brute-force reference: every commit order of a small register history tried against Biswas
  & Enea's axioms, written here from the paper, not from the checker: the same verdict at each
  level; list-append histories through the register history they mean (``as_registers``);
- histories recorded from a serial execution (failed transactions not applied, info ones either
  way) are valid at every level, registers and lists;
- the levels nest: invalid at read committed implies invalid at read atomic implies invalid at
  causal consistency.
"""

from __future__ import annotations

import itertools
import random

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ndbchaos.txn import TxnHistory, weak  # noqa: E402

LEVELS = ("RC", "RA", "CC")
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- the reference -------------------------------------------------------------------------------

def reference(txns: list[dict]) -> dict[str, bool]:
    """Each level by its definition: some total order of the committed transactions, after the
    initial one, that contains so and wr and meets the level's axiom for every read."""
    writes: dict = {}  # (k, v) -> (txn, is its last write of k)
    for i, t in enumerate(txns):
        last = {k: v for f, k, v in t["value"] if f == "w"}
        for f, k, v in t["value"]:
            if f == "w":
                writes[(k, v)] = (i, last[k] == v)
    read_from = {w for t in txns if t["type"] == "ok" for f, k, v in t["value"]
                 if f == "r" and (k, v) in writes for w in [writes[(k, v)][0]]}
    committed = [i for i, t in enumerate(txns) if t["type"] == "ok" or (t["type"] == "info" and i in read_from)]
    INIT = "init"
    reads = []  # (reader, position, key, writer)
    for i in committed:
        t = txns[i]
        if t["type"] != "ok":
            continue
        own: dict = {}
        for pos, (f, k, v) in enumerate(t["value"]):
            if f == "w":
                own[k] = v
            elif k in own:
                if v != own[k]:
                    return {lv: False for lv in LEVELS}  # a read after its own write must return it
            elif v is None:
                reads.append((i, pos, k, INIT))
            else:
                w = writes.get((k, v))
                if w is None or w[0] == i or txns[w[0]]["type"] == "fail" or not w[1]:
                    return {lv: False for lv in LEVELS}  # no transaction's committed final write
                reads.append((i, pos, k, w[0]))
    wkeys = {i: {k for f, k, _v in txns[i]["value"] if f == "w"} for i in committed}
    so = {(a, b) for a in committed for b in committed if a < b and txns[a]["process"] == txns[b]["process"]}
    wr = {(w, r) for r, _p, _k, w in reads if w != INIT}
    causal = set(so | wr)
    while True:  # transitive closure
        more = {(a, d) for a, b in causal for c, d in causal if b == c} - causal
        if not more:
            break
        causal |= more
    premise = {
        "RC": lambda t2, r, pos: any(w == t2 and r2 == r and p2 < pos for r2, p2, _k, w in reads),
        "RA": lambda t2, r, pos: (t2, r) in so or (t2, r) in wr,
        "CC": lambda t2, r, pos: (t2, r) in causal,
    }
    out = {}
    for lv in LEVELS:
        out[lv] = False
        for order in itertools.permutations(committed):
            at = {t: n for n, t in enumerate(order)}
            at[INIT] = -1
            if any(at[a] > at[b] for a, b in so | wr):
                continue
            if all(at[t2] < at[t1] for r, pos, k, t1 in reads for t2 in committed
                   if t2 != t1 and t2 != r and k in wkeys[t2] and premise[lv](t2, r, pos)):
                out[lv] = True
                break
    return out


def random_history(rnd: random.Random, n: int) -> list[dict]:
    """Transactions over keys x and y: writes of fresh values; reads mostly of some other
    transaction's last write of the key, sometimes the initial value, sometimes anything."""
    plans = []
    counter = itertools.count(1)
    for _ in range(n):
        ops = []
        for _ in range(rnd.randint(1, 3)):
            k = rnd.choice("xy")
            ops.append(["w", k, next(counter)] if rnd.random() < 0.45 else ["r", k, None])
        plans.append(ops)
    finals = [{k: v for f, k, v in ops if f == "w"} for ops in plans]
    anything = [(k, v) for ops in plans for f, k, v in ops if f == "w"]
    txns = []
    live = [0, 1, 2]  # processes; one that finishes gives way to a new one (Jepsen's info rule)
    for i, ops in enumerate(plans):
        out = []
        for f, k, v in ops:
            if f == "r":
                p = rnd.random()
                others = [fin[k] for j, fin in enumerate(finals) if j != i and k in fin]
                if p < 0.7 and others:
                    v = rnd.choice(others)
                elif p < 0.9 or not anything:
                    v = None
                else:
                    v = rnd.choice([x for kk, x in anything if kk == k] or [None])
            out.append([f, k, v])
        kind = rnd.choices(["ok", "fail", "info"], [0.85, 0.07, 0.08])[0]
        slot = rnd.randrange(len(live))
        txns.append({"process": live[slot], "type": kind, "value": out})
        if kind == "info" or rnd.random() < 0.25:
            live[slot] = max(live) + 1
    return txns


def ours(txns, model="rw-register") -> dict:
    return weak.check(TxnHistory.from_events(txns, "generated"), model).valid


@SETTINGS
@given(st.randoms(use_true_random=False), st.integers(2, 6))
def test_the_checker_agrees_with_the_brute_force_reference(rnd, n):
    txns = random_history(rnd, n)
    assert ours(txns) == reference(txns), txns


def test_the_generated_histories_reach_every_verdict():
    """The comparison above means something: its histories fall on both sides of each level."""
    every = {(True, True, True), (True, True, False), (True, False, False), (False, False, False)}
    rnd = random.Random(7)
    seen = set()
    for _ in range(400):
        seen.add(tuple(reference(random_history(rnd, rnd.randint(2, 5))).values()))
    assert every <= seen
    seen = set()
    for _ in range(600):
        regs = as_registers(stale_lists(rnd, rnd.randint(2, 6)))
        seen.add(tuple(reference(regs).values()) if regs is not None else (False, False, False))
    assert every <= seen


# -- serial executions ---------------------------------------------------------------------------

def serial(rnd: random.Random, n: int, lists: bool) -> list[dict]:
    """Transactions run one at a time, each by a random process, against one store; failed ones
    leave no trace, info ones are applied or not at random (and their reads are unknown)."""
    state: dict = {}
    counter = itertools.count(1)
    txns = []
    for _ in range(n):
        kind = rnd.choices(["ok", "fail", "info"], [0.8, 0.1, 0.1])[0]
        local = {k: (list(v) if lists else v) for k, v in state.items()}
        ops = []
        for _ in range(rnd.randint(1, 4)):
            k = rnd.choice("xyz")
            if rnd.random() < 0.5:
                v = next(counter)
                if lists:
                    local.setdefault(k, []).append(v)
                    ops.append(["append", k, v])
                else:
                    local[k] = v
                    ops.append(["w", k, v])
            else:
                cur = local.get(k)
                ops.append(["r", k, (list(cur) if cur else []) if lists else cur])
        if kind == "ok" or (kind == "info" and rnd.random() < 0.5):
            state = local
        if kind != "ok":
            ops = [[f, k, None] if f == "r" else [f, k, v] for f, k, v in ops]
        txns.append({"process": rnd.randrange(4), "type": kind, "value": ops})
    return txns


@SETTINGS
@given(st.randoms(use_true_random=False), st.integers(1, 30), st.booleans())
def test_serial_executions_are_valid_at_every_level(rnd, n, lists):
    txns = serial(rnd, n, lists)
    r = weak.check(TxnHistory.from_events(txns, "serial"), "list-append" if lists else "rw-register")
    assert r.valid == {lv: True for lv in LEVELS}, (list(r.anomalies), txns)


# -- the levels nest -----------------------------------------------------------------------------

def shuffled_lists(rnd: random.Random, n: int) -> list[dict]:
    """A serial list-append history whose reads are then swapped between transactions of a
    key: histories near valid, with every kind of weak anomaly."""
    txns = serial(rnd, n, True)
    reads = [m for t in txns if t["type"] == "ok" for m in t["value"] if m[0] == "r"]
    for m in reads:
        if rnd.random() < 0.3:
            other = rnd.choice(reads)
            if other[1] == m[1]:
                m[2], other[2] = other[2], m[2]
    return txns


def as_registers(txns: list[dict]) -> list[dict] | None:
    """A list-append history as the register history it means (None when no version order
    exists): a read of a list reads its last element (nil for []), and an append of v whose place
    the reads reveal first reads the element before v (nil for the first): our appends are
    read-modify-writes of the key's row. An info transaction whose append was read committed,
    with its appends' reads known; the reads of the others are unknown."""
    chains: dict = {}
    for t in txns:
        for f, k, v in t["value"]:
            if t["type"] == "ok" and f == "r" and v:
                chains.setdefault(k, set()).add(tuple(v))
    before: dict = {}
    appended = {(k, v): (i, t["type"]) for i, t in enumerate(txns) for f, k, v in t["value"] if f == "append"}
    for k, reads in chains.items():
        longest = max(reads, key=len)
        if len(set(longest)) < len(longest) or any(longest[:len(r)] != r for r in reads):
            return None
        if any(appended.get((k, v), (0, "fail"))[1] == "fail" for v in longest):
            return None  # an element no committed transaction appended
        before.update({(k, v): (longest[i - 1] if i else None) for i, v in enumerate(longest)})
    out = []
    for i, t in enumerate(txns):
        seen = t["type"] == "info" and any((k, v) in before for f, k, v in t["value"] if f == "append")
        ops = []
        for f, k, v in t["value"]:
            if f == "append":
                if (k, v) in before and t["type"] != "fail":
                    ops.append(["r", k, before[(k, v)]])
                ops.append(["w", k, v])
            elif t["type"] == "ok":
                if any(appended.get((k, e), (None,))[0] == i for e in v or ()) and not all(
                        any(m == ["append", k, e] for m in t["value"][:t["value"].index([f, k, v])])
                        for e in v if appended.get((k, e), (None,))[0] == i):
                    return None  # a read of its own append to come
                ops.append(["r", k, v[-1] if v else None])
        out.append({"process": t["process"], "type": "ok" if seen else t["type"], "value": ops})
    return out


def stale_lists(rnd: random.Random, n: int) -> list[dict]:
    """Transactions of a store that serializes appends but lets each read return any earlier
    version of the list (every read a prefix of the key's one order of appends): stale,
    fractured and non-monotonic reads, causality violations, and valid histories too."""
    state: dict = {}
    counter = itertools.count(1)
    txns = []
    live = [0, 1, 2]
    for _ in range(n):
        kind = rnd.choices(["ok", "fail", "info"], [0.85, 0.05, 0.1])[0]
        ops, mine = [], {}
        for _ in range(rnd.randint(1, 3)):
            k = rnd.choice("xy")
            if rnd.random() < 0.5:
                v = next(counter)
                mine.setdefault(k, []).append(v)
                ops.append(["append", k, v])
            elif k not in mine:  # (a read after its own append would see the store's list)
                cur = state.get(k, [])
                ops.append(["r", k, list(cur[:rnd.randint(max(0, len(cur) - 2), len(cur))])])
        if kind == "ok" or (kind == "info" and rnd.random() < 0.5):
            for k, vs in mine.items():
                state.setdefault(k, []).extend(vs)
        if kind != "ok":
            ops = [[f, k, None] if f == "r" else [f, k, v] for f, k, v in ops]
        slot = rnd.randrange(len(live))
        txns.append({"process": live[slot], "type": kind, "value": ops})
        if kind == "info" or rnd.random() < 0.2:
            live[slot] = max(live) + 1
    return txns


@SETTINGS
@given(st.randoms(use_true_random=False), st.integers(2, 6), st.booleans())
def test_list_histories_agree_with_the_reference_of_their_register_reading(rnd, n, stale):
    txns = stale_lists(rnd, n) if stale else shuffled_lists(rnd, n)
    regs = as_registers(txns)
    expected = reference(regs) if regs is not None else {lv: False for lv in LEVELS}
    assert ours(txns, "list-append") == expected, txns


@SETTINGS
@given(st.randoms(use_true_random=False), st.integers(2, 12), st.booleans())
def test_each_level_is_stronger_than_the_one_before(rnd, n, lists):
    txns = (stale_lists if rnd.random() < 0.5 else shuffled_lists)(rnd, n) if lists else random_history(rnd, n)
    v = ours(txns, "list-append" if lists else "rw-register")
    assert (v["RC"] is False) <= (v["RA"] is False) <= (v["CC"] is False), (v, txns)
