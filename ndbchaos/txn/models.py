"""Consistency models and anomalies: which anomaly implies which, which model forbids which, and
the verdict's boundary ("not read-committed", "also not ...").

The relations are facts from the literature, named as Elle names them so that our verdicts can
be compared with Elle's and other checkers' (docs/transactions.md): Adya's thesis and Adya,
Liskov & O'Neil (the G-classes and PL levels), Bailis et al. ("Highly Available Transactions":
monotonic atomic view, cursor stability, lost update), Cerone, Bernardi & Gotsman (read atomic,
INT/EXT: internal and future reads), Daudjee & Salem (strong session variants), and Elle's own
additions for list-append and registers (incompatible order, dirty update, duplicate elements,
cyclic versions). ``also_not`` lists every model stronger than one in ``not``.

    boundary(["G1c"])                 -> not {"read-committed"}, also_not {...}
    prohibited(["read-committed"])    -> {"G0", "G1a", "G1b", "G1c", ...}
"""

from __future__ import annotations

from functools import lru_cache

# -- anomalies: a -> b means observing a is also observing b -----------------------------------

IMPLIES: dict[str, tuple[str, ...]] = {
    "G0": ("G1c", "G0-process"),
    "G0-process": ("G1c-process", "G0-realtime"),
    "G0-realtime": ("G1c-realtime",),
    "G1a": ("G1",),
    "G1b": ("G1",),
    "G1c": ("G1", "G1c-process"),
    "G1c-process": ("G1c-realtime", "G1-process"),
    "G1c-realtime": ("G1-realtime",),
    "G1": ("G1-process",),
    "G1-process": ("G1-realtime",),
    "G-single-item": ("G-single", "G-single-item-process", "G-nonadjacent-item"),
    "G-single-item-process": ("G-single-process", "G-single-item-realtime", "G-nonadjacent-item-process"),
    "G-single-item-realtime": ("G-single-realtime", "G-nonadjacent-item-realtime"),
    "G-single": ("G-nonadjacent", "GSIb", "G-single-process"),
    "G-single-process": ("G-nonadjacent-process", "G-single-realtime"),
    "G-single-realtime": ("G-nonadjacent-realtime",),
    "G-nonadjacent-item": ("G-nonadjacent", "G2-item", "G-nonadjacent-item-process"),
    "G-nonadjacent-item-process": ("G-nonadjacent-process", "G2-item-process", "G-nonadjacent-item-realtime"),
    "G-nonadjacent-item-realtime": ("G2-item-realtime", "G-nonadjacent-realtime"),
    "G-nonadjacent": ("G2", "G-nonadjacent-process"),
    "G-nonadjacent-process": ("G2-process", "G-nonadjacent-realtime"),
    "G-nonadjacent-realtime": ("G2-realtime",),
    "G2": ("G2-process",),
    "G2-item": ("G2", "G2-item-process"),
    "G2-item-process": ("G2-process", "G2-item-realtime"),
    "G2-item-realtime": ("G2-realtime",),
    "G2-process": ("G2-realtime",),
    "GSIa": ("GSI",),
    "GSIb": ("GSI",),
    # two reads of a key that no single order of appends explains: someone read a state that
    # was never committed
    "incompatible-order": ("G1a",),
    # a transaction read what it appends later: a trivial cycle of information flow
    "future-read": ("G1c",),
    # a committed write built on an aborted one
    "dirty-update": ("G1a",),
    # a read of a value no transaction wrote (this project's detector; Elle defines it only)
    "garbage-read": ("G1a",),
    "lost-update": ("write-skew", "G2-item"),
    "write-skew": ("G2",),
    # the weak levels' own findings (weak.py, Plume's names): a read after the transaction's own
    # write that did not return its last one, and two reads of a key returning two versions,
    # are internal inconsistencies in Elle's sense
    "not-my-own-write": ("internal",),
    "not-my-last-write": ("internal",),
    "non-repeatable-read": ("internal",),
}

# -- models: a -> b means a history that satisfies a also satisfies b ---------------------------

#: friendly names to the canonical (Adya) names the relations below use
CANONICAL: dict[str, str] = {
    "causal-consistency": "causal-cerone",
    "consistent-view": "PL-2+",
    "conflict-serializable": "PL-3",
    "cursor-stability": "PL-CS",
    "forward-consistent-view": "PL-FCV",
    "monotonic-snapshot-read": "PL-MSR",
    "monotonic-view": "PL-2L",
    "read-committed": "PL-2",
    "read-uncommitted": "PL-1",
    "repeatable-read": "PL-2.99",
    "serializable": "PL-3",
    "snapshot-isolation": "PL-SI",
    "strict-serializable": "PL-SS",
    "strong-serializable": "PL-SS",
    "update-serializable": "PL-3U",
    "strong-session-read-uncommitted": "strong-session-PL-1",
    "strong-session-read-committed": "strong-session-PL-2",
    "strong-read-uncommitted": "strong-PL-1",
    "strong-read-committed": "strong-PL-2",
}
#: canonical names back to the names a verdict prints (PL-SS prints as Elle prints it)
FRIENDLY: dict[str, str] = {
    "PL-2+": "consistent-view", "PL-3": "serializable", "PL-CS": "cursor-stability",
    "PL-FCV": "forward-consistent-view", "PL-MSR": "monotonic-snapshot-read", "PL-2L": "monotonic-view",
    "PL-2": "read-committed", "PL-1": "read-uncommitted", "PL-2.99": "repeatable-read",
    "PL-SI": "snapshot-isolation", "PL-SS": "strong-serializable", "PL-3U": "update-serializable",
    "strong-session-PL-1": "strong-session-read-uncommitted", "strong-session-PL-2": "strong-session-read-committed",
    "strong-PL-1": "strong-read-uncommitted", "strong-PL-2": "strong-read-committed",
}

_MODEL_EDGES: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("read-atomic",),
    "consistent-view": ("cursor-stability", "monotonic-view"),
    "conflict-serializable": ("view-serializable",),
    "cursor-stability": ("read-committed", "PL-2"),
    "forward-consistent-view": ("consistent-view",),
    "PL-2": ("PL-1",),
    "PL-3": ("repeatable-read", "update-serializable"),
    "update-serializable": ("forward-consistent-view",),
    "monotonic-atomic-view": ("read-committed",),
    "monotonic-view": ("PL-2",),
    "monotonic-snapshot-read": ("PL-2",),
    "parallel-snapshot-isolation": ("causal-cerone", "update-atomic"),
    "prefix": ("causal-cerone",),
    # Biswas & Enea's read committed (weak.py), beside Adya's PL-2 ("read-committed"): it holds
    # process order and forbids non-monotonic reads within a transaction; read atomic is theirs too
    "read-atomic": ("monotonic-atomic-view", "read-committed-biswas-enea"),
    "read-committed": ("read-uncommitted",),
    "repeatable-read": ("cursor-stability", "monotonic-atomic-view"),
    "update-atomic": ("read-atomic",),
    "serializable": ("repeatable-read", "snapshot-isolation", "view-serializable"),
    "session-serializable": ("1SR",),
    "snapshot-isolation": ("forward-consistent-view", "monotonic-atomic-view", "monotonic-snapshot-read",
                           "parallel-snapshot-isolation", "prefix"),
    "strict-serializable": ("PL-3", "serializable", "linearizable", "snapshot-isolation",
                            "strong-snapshot-isolation", "strong-session-serializable"),
    "strong-session-PL-1": ("PL-1",),
    "strong-session-PL-2": ("PL-2", "strong-session-PL-1"),
    "strong-PL-1": ("strong-session-PL-1",),
    "strong-PL-2": ("strong-session-PL-2", "strong-PL-1"),
    "strong-session-serializable": ("serializable", "strong-session-snapshot-isolation"),
    "strong-session-snapshot-isolation": ("snapshot-isolation", "strong-session-PL-2"),
    "strong-serializable": ("session-serializable",),
    "strong-snapshot-isolation": ("strong-session-snapshot-isolation", "strong-PL-2"),
    # models of single objects
    "linearizable": ("sequential",),
    "sequential": ("causal",),
    "causal": ("writes-follow-reads", "PRAM"),
    "PRAM": ("monotonic-reads", "monotonic-writes", "read-your-writes"),
}

#: what each model forbids beyond the models it implies (canonical names after ``canonical``)
_FORBIDS: dict[str, tuple[str, ...]] = {
    "causal-cerone": ("internal", "G1a", "causality-violation"),
    "cursor-stability": ("G1", "G-cursor", "lost-update"),
    "monotonic-view": ("G1", "G-monotonic"),
    "monotonic-snapshot-read": ("G1", "G-MSR"),
    "consistent-view": ("G1", "G-single"),
    "forward-consistent-view": ("G1", "G-SIb"),
    "parallel-snapshot-isolation": ("internal", "G1a"),
    "PL-3": ("G1", "G2", "predicate-read-miss", "PL-3-cycle-exists"),
    "PL-2": ("G1", "PL-2-cycle-exists"),
    "PL-1": ("G0", "duplicate-elements", "cyclic-versions", "PL-1-cycle-exists"),
    "prefix": ("internal", "G1a"),
    "serializable": ("internal",),
    "snapshot-isolation": ("internal", "G1", "G-SI", "G-nonadjacent", "PL-SI-cycle-exists"),
    "read-atomic": ("internal", "G1a", "future-read", "fractured-read", "non-repeatable-read"),
    "read-committed-biswas-enea": ("non-monotonic-read", "not-my-own-write", "not-my-last-write"),
    "repeatable-read": ("G1", "G2-item", "PL-2.99-cycle-exists", "lost-update"),
    "update-atomic": ("lost-update",),
    "strict-serializable": ("G1", "G1c-realtime", "G2-realtime", "PL-SS-cycle-exists"),
    "strong-session-PL-1": ("strong-session-PL-1-cycle-exists", "G0-process"),
    "strong-session-PL-2": ("strong-session-PL-2-cycle-exists", "G1c-process"),
    "strong-PL-1": ("strong-PL-1-cycle-exists", "G0-realtime"),
    "strong-PL-2": ("strong-PL-2-cycle-exists", "G1c-realtime"),
    "strong-session-snapshot-isolation": ("internal", "G1-process", "G-nonadjacent-process",
                                          "strong-session-snapshot-isolation-cycle-exists"),
    "strong-snapshot-isolation": ("internal", "G1-realtime", "G-nonadjacent-realtime",
                                  "strong-snapshot-isolation-cycle-exists"),
    "strong-session-serializable": ("G1-process", "G2-process", "strong-session-serializable-cycle-exists"),
    "update-serializable": ("G1", "G-update"),
}

#: anomalies that make a verdict "unknown" rather than invalid: the search could not finish, or
#: the history cannot be analysed as the model says (Elle throws for the last four)
UNKNOWN_ANOMALIES = frozenset({"empty-transaction-graph", "cycle-search-timeout", "duplicate-appends",
                               "duplicate-writes", "unexpected-txn-micro-op-types", "unexpected-read-value"})


#: every anomaly name a check may be asked to fail on (``--anomalies``): the classes above, what
#: each model forbids, the unknown-making ones, and the analyses' own findings
KNOWN_ANOMALIES = frozenset(IMPLIES) | {b for bs in IMPLIES.values() for b in bs} | {
    a for bs in _FORBIDS.values() for a in bs} | UNKNOWN_ANOMALIES | {
    "G1a", "G1b", "internal", "duplicate-elements", "cyclic-versions"}


def _known(names, allowed, what: str, listed) -> list[str]:
    """The names, validated: one not in ``allowed`` raises ValueError naming it and the known ones."""
    bad = [x for x in names if x not in allowed]
    if bad:
        raise ValueError(f"unknown {what} {', '.join(bad)} (known: {', '.join(sorted(listed))})")
    return list(names)


def check_anomalies(anomalies) -> list[str]:
    """The anomaly names, validated: an unknown one raises ValueError naming it and the known ones."""
    return _known(anomalies, KNOWN_ANOMALIES, "anomaly name(s)", KNOWN_ANOMALIES)


def canonical(model: str) -> str:
    return CANONICAL.get(model, model)


def friendly(model: str) -> str:
    return FRIENDLY.get(model, model)


def _canonical_graph(edges: dict[str, tuple[str, ...]]) -> dict[str, frozenset[str]]:
    g: dict[str, set[str]] = {}
    for a, bs in edges.items():
        g.setdefault(canonical(a), set()).update(canonical(b) for b in bs)
        for b in bs:
            g.setdefault(canonical(b), set())
    return {k: frozenset(v) for k, v in g.items()}


MODELS = _canonical_graph(_MODEL_EDGES)  # model -> models it implies (canonical names)
FORBIDS = {canonical(m): frozenset(a) for m, a in _FORBIDS.items()}
for _m in FORBIDS:
    MODELS.setdefault(_m, frozenset())
ANOMALIES_IMPLIED = {a: frozenset(bs) for a, bs in IMPLIES.items()}


def _inverse(g: dict[str, frozenset[str]]) -> dict[str, set[str]]:
    inv: dict[str, set[str]] = {}
    for a, bs in g.items():
        for b in bs:
            inv.setdefault(b, set()).add(a)
    return inv


_MODELS_IN = _inverse(MODELS)
_IMPLIED_BY = _inverse(ANOMALIES_IMPLIED)
_FORBIDDEN_BY = _inverse(FORBIDS)

#: every model name a user may ask for (friendly and canonical)
ALL_MODELS = frozenset(MODELS) | frozenset(CANONICAL) | frozenset(FRIENDLY.values())


def _closure(start, step) -> set:
    todo = list(start)
    seen = set(todo)
    while todo:
        x = todo.pop()
        for y in step(x):
            if y not in seen:
                seen.add(y)
                todo.append(y)
    return seen


def check_models(models) -> list[str]:
    """The models, validated: an unknown name raises ValueError naming it and the known ones."""
    return _known(models, ALL_MODELS, "consistency model(s)", {FRIENDLY.get(m, m) for m in MODELS})


def implied_anomalies(anomalies) -> set[str]:
    """The anomalies and every anomaly they imply."""
    return _closure(anomalies, lambda a: ANOMALIES_IMPLIED.get(a, ()))


def anomalies_implying(anomalies) -> set[str]:
    """The anomalies and every anomaly that would imply one of them."""
    return _closure(anomalies, lambda a: _IMPLIED_BY.get(a, ()))


def implied_models(models) -> set[str]:
    """The models (canonical) and every model they imply."""
    return _closure([canonical(m) for m in check_models(models)], lambda m: MODELS.get(m, ()))


def stronger_models(models) -> set[str]:
    """The models (canonical) and every model that implies one of them."""
    return _closure([canonical(m) for m in check_models(models)], lambda m: _MODELS_IN.get(m, ()))


@lru_cache(maxsize=64)
def _prohibited(models: tuple[str, ...]) -> frozenset[str]:
    direct = {a for m in implied_models(models) for a in FORBIDS.get(m, ())}
    return frozenset(anomalies_implying(direct))


def prohibited(models, anomalies=()) -> frozenset[str]:
    """Anomalies that make a history fail when ``models`` must hold, plus ``anomalies`` (and
    whatever implies them)."""
    return _prohibited(tuple(sorted(models))) | frozenset(anomalies_implying(anomalies))


def impossible_models(anomalies) -> set[str]:
    """Every model (canonical) the anomalies rule out."""
    direct = {m for a in implied_anomalies(anomalies) for m in _FORBIDDEN_BY.get(a, ())}
    return _closure(direct, lambda m: _MODELS_IN.get(m, ()))


def _weakest(models: set[str]) -> set[str]:
    """The models of the set that imply no other model of the set."""
    out = set(models)
    for m in sorted(models):
        rest = out - {m}
        if rest & (_closure([m], lambda x: MODELS.get(x, ())) - {m}):
            out = rest
    return out


def boundary(anomalies) -> tuple[list[str], list[str]]:
    """``(not, also_not)``: the weakest models the anomalies rule out, and every stronger one
    (friendly names, sorted)."""
    impossible = impossible_models(anomalies)
    weakest = _weakest(impossible)
    return (sorted({friendly(m) for m in weakest}),
            sorted({friendly(m) for m in impossible - weakest}))


__all__ = ["ALL_MODELS", "IMPLIES", "KNOWN_ANOMALIES", "UNKNOWN_ANOMALIES", "anomalies_implying", "boundary",
           "canonical", "check_anomalies", "check_models", "friendly", "implied_anomalies", "implied_models",
           "impossible_models", "prohibited", "stronger_models"]
