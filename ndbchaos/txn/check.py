"""The transactional checker: a model's inference, the dependency graph with process or real-time
order when the models asked for need them, a cycle search per strongly connected component, and
the verdict (Elle's ``result-map``: PAPER section 6, docs/transactions.md).

    verdict = check(TxnHistory.read("history.jsonl"), CheckOptions(model="list-append"))
    verdict.valid            # True, False or "unknown"
    verdict.anomaly_types    # the anomalies the models forbid (and unknown-making ones) found
    verdict.not_, verdict.also_not

Validity: False when an anomaly the consistency models (default strict-serializable) or the
extra ``anomalies`` forbid was found; "unknown" when only a search timeout, an empty graph or a
history that is not of the model was; True otherwise. ``found`` lists every anomaly type seen,
allowed or not, and ``not``/``also_not`` are the models all of them rule out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache

from .anomaly import Analysis, Anomaly, Step
from .graph import PROCESS, REALTIME, SEARCH_ORDER, SHAPES, SearchTimeout, classify
from .search import Component, components
from ..history.interchange import without_gc
from .history import NO_TIME, TxnHistory
from .list_append import analyze as analyze_list_append
from .weak import DEFINITION as WEAK_DEFINITION
from .weak import FORBIDDEN as WEAK_FORBIDDEN
from .weak import MODEL as WEAK_MODEL
from .weak import WeakResult, levels_asked
from .weak import check as check_weak
from .weak import forbidden as weak_forbidden
from .models import UNKNOWN_ANOMALIES, boundary, canonical, check_anomalies, check_models, implied_anomalies
from .models import prohibited as prohibited_by

MODELS = ("list-append", "rw-register")


@dataclass(frozen=True)
class CheckOptions:
    model: str = "list-append"
    consistency_models: tuple[str, ...] = ("strict-serializable",)
    anomalies: tuple[str, ...] = ()  # anomalies that fail the check whatever the models say
    wfr_keys: bool = False  # rw-register version orders (see rw_register)
    sequential_keys: bool = False
    linearizable_keys: bool = False
    cycle_search_timeout_ms: float = 1000.0  # per strongly connected component, as Elle's
    max_cases: int = 8  # cases of each anomaly type kept with explanations

    def __post_init__(self):
        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r} (known: {', '.join(MODELS)})")
        for what, names in (("consistency_models", self.consistency_models), ("anomalies", self.anomalies)):
            if isinstance(names, str) or not all(isinstance(x, str) for x in names):
                raise ValueError(f"{what} must be a list of names, not {names!r}")
        check_models(self.consistency_models)
        check_anomalies(self.anomalies)
        if not self.consistency_models and not self.anomalies:
            raise ValueError("no consistency model and no anomaly to check: nothing would be judged "
                             "(name a model, e.g. strict-serializable, or the anomalies that must not occur)")
        if self.model != "rw-register" and (self.wfr_keys or self.sequential_keys or self.linearizable_keys):
            raise ValueError("--wfr-keys, --sequential-keys and --linearizable-keys are for rw-register histories")
        if not self.cycle_search_timeout_ms > 0:
            raise ValueError("the cycle search timeout must be positive")


@dataclass
class TxnVerdict:
    valid: bool | str
    options: CheckOptions
    anomaly_types: list[str]  # reportable anomalies found (forbidden ones, and unknown-making ones)
    anomalies: dict[str, list[Anomaly]]  # their cases (at most max_cases each)
    found: dict[str, int]  # every anomaly type found -> how many cases
    cases: dict[str, list[Anomaly]]  # every type found, allowed or not: its first cases, most severe first
    not_: list[str]
    also_not: list[str]
    txns: dict[str, int]
    graph: dict
    seconds: float
    history: TxnHistory = field(repr=False)
    #: read committed (Adya's and Biswas & Enea's), read atomic and causal consistency decided
    #: exactly, when the models asked for name them (``weak_section``); None otherwise
    weak: dict | None = None

    def to_json(self) -> dict:
        return {
            "valid": self.valid,
            "model": self.options.model,
            "consistency_models": list(self.options.consistency_models),
            "anomaly_types": self.anomaly_types,
            "anomalies": {k: [a.to_json(self.history) for a in v] for k, v in self.anomalies.items()},
            "not": self.not_,
            "also_not": self.also_not,
            "found": self.found,
            "txns": self.txns,
            "graph": self.graph,
            "seconds": round(self.seconds, 3),
            **({"weak": self.weak} if self.weak is not None else {}),
        }

    def summary(self) -> str:
        c = self.txns
        head = f"{c['ok']} ok, {c['fail']} fail, {c['info']} info transactions"
        if not self.found:
            return f"{head}; no anomaly"
        found = ", ".join(f"{k} x{n}" for k, n in self.found.items())
        nots = f"; not {', '.join(self.not_)}" if self.not_ else ""
        return f"{head}; found {found}{nots}"


def analyze(h: TxnHistory, opts: CheckOptions) -> Analysis:
    if opts.model == "list-append":
        return analyze_list_append(h)
    from .rw_register import analyze as analyze_rw_register  # imported by the model that uses it
    return analyze_rw_register(h, opts.wfr_keys, opts.sequential_keys, opts.linearizable_keys)


def extra_order(reportable: set[str]) -> int:
    """Which order the graph needs: real time if any real-time anomaly must be found (it holds
    process order too), else process order if any process anomaly must, else none."""
    if any(a.endswith("-realtime") for a in reportable):
        return REALTIME
    if any(a.endswith("-process") for a in reportable):
        return PROCESS
    return 0


def check(h: TxnHistory, opts: CheckOptions | None = None) -> TxnVerdict:
    with without_gc():
        return _check(h, opts or CheckOptions())


def _check(h: TxnHistory, opts: CheckOptions) -> TxnVerdict:
    t0 = time.monotonic()
    prohibited = prohibited_by(opts.consistency_models, opts.anomalies)
    reportable = set(prohibited) | set(UNKNOWN_ANOMALIES)
    analysis = analyze(h, opts)
    found: dict[str, list[Anomaly]] = {k: list(v) for k, v in analysis.anomalies.items()}
    graph_info: dict = {}
    if analysis.stopped is None:
        order = extra_order(reportable)
        g = analysis.graph
        if order == REALTIME:
            g.add_realtime_order(h.txns)
        elif order == PROCESS:
            g.add_process_order(h.txns)
        src, dst, rels = g.edges()
        comps = components(g.total, g.n, src, dst, rels, g.ranks(h.txns))
        graph_info = {"edges": g.counts(), "order": {0: "none", PROCESS: "process", REALTIME: "realtime"}[order],
                      "sccs": len(comps), "largest_scc": max((c.txn_count for c in comps), default=0)}
        if not (dst < g.n).any():  # no edge into a transaction (real-time order's own nodes aside)
            found["empty-transaction-graph"] = [Anomaly("empty-transaction-graph", [],
                                                        why="no transaction depends on another: nothing to check")]
        seen: dict[bytes, list] = {}  # a component's cycles by its signature, in its nodes' places
        for comp in comps:
            for kind, cyc in _cycles_of(comp, order, opts, seen):
                cases = found.setdefault(kind, [])
                # every cycle is counted; the first few are explained
                cases.append(_cycle_anomaly(cyc, analysis, h) if len(cases) < opts.max_cases or isinstance(cyc, str)
                             else Anomaly(kind, [n for n, _ in cyc]))
    weak_json = None
    asked = {canonical(m) for m in opts.consistency_models}
    levels = levels_asked(asked, opts.anomalies)
    if levels and analysis.stopped is None:
        # the weak levels, decided completely: their findings join the inference's, except those
        # a finding of the inference already implies (a G1c found makes a G1c-process redundant)
        adya = {k for k in found if k not in UNKNOWN_ANOMALIES}
        wr = check_weak(h, opts.model, levels, opts.max_cases)
        already = implied_anomalies(found)
        for kind, cases in wr.anomalies.items():
            if kind not in already:
                found[kind] = cases
        prohibited = prohibited | weak_forbidden(asked)
        reportable |= weak_forbidden(asked)
        weak_json = weak_section(wr, opts.consistency_models, adya)
    counts = {k: len(v) for k, v in sorted(found.items(), key=lambda kv: _severity(kv[0]))}
    cases = {k: found[k][:opts.max_cases] for k in counts}
    shown = {k: v for k, v in cases.items() if k in reportable}
    bad = [k for k in shown if k in prohibited]
    valid: bool | str = False if bad else ("unknown" if shown else True)
    not_, also_not = boundary(k for k in found if k not in UNKNOWN_ANOMALIES)
    # anomaly types sorted by name, as Elle sorts them; their cases most severe first
    return TxnVerdict(valid, opts, sorted(shown), {k: shown[k] for k in sorted(shown, key=_severity)},
                      counts, cases, not_, also_not, h.counts(), graph_info, time.monotonic() - t0, h, weak_json)


def weak_section(wr: WeakResult, models, adya_found) -> dict:
    """The weak levels in the verdict: each one decided, with its definition and what broke it;
    read committed as Adya's PL-2 (from the inference's findings) beside Biswas & Enea's."""
    levels = []
    if "PL-2" in {canonical(m) for m in models}:
        levels.append({"model": "read-committed", "definition": "Adya's PL-2: no G0, G1a, G1b or G1c "
                       "(Elle-class inference)", "valid": holds(adya_found, ["read-committed"])})
    for lv, ok in wr.valid.items():
        levels.append({"model": WEAK_MODEL[lv], "definition": WEAK_DEFINITION[lv], "valid": ok,
                       "anomalies": sorted(k for k in wr.anomalies if k in WEAK_FORBIDDEN[lv])})
    return {"levels": levels, "found": {k: len(v) for k, v in wr.anomalies.items()}, "stats": wr.stats,
            "seconds": round(wr.seconds, 3)}


def holds(found, consistency_models, anomalies=()) -> bool | str:
    """Whether a history in which these anomaly types were found satisfies the models: False
    when one of them is forbidden, "unknown" when only the search's or the input's limits were
    met, else True. (A check made for stronger models finds every anomaly a weaker promise is
    judged by, so one search serves both.)"""
    forbidden = prohibited_by(consistency_models, anomalies)
    if any(k in forbidden for k in found):
        return False
    if any(k in UNKNOWN_ANOMALIES for k in found):
        return "unknown"
    return True


def _severity(kind: str):
    order = {k: i for i, k in enumerate(("G0", "G1a", "G1b", "G1c", "dirty-update", "incompatible-order",
                                         "duplicate-elements", "garbage-read", "cyclic-versions", "future-read",
                                         "internal", "lost-update") + SEARCH_ORDER)}
    return order.get(kind, len(order)), kind


def _cycles_of(comp: Component, order: int, opts: CheckOptions, seen: dict) -> list[tuple[str, list | str]]:
    """``_cycles``, searched once per signature (``Component.signature``): a component like one
    searched before has its cycles, renamed. A search that ran out of time is not kept."""
    sig = comp.signature()
    local = seen.get(sig)
    nodes = comp.nodes
    if local is None:
        out = _cycles(comp, order, opts)
        if not any(kind == "cycle-search-timeout" for kind, _c in out):
            place = {n: i for i, n in enumerate(nodes.tolist())}
            seen[sig] = [(kind, [(place[n], r) for n, r in cyc]) for kind, cyc in out]
        return out
    names = nodes.tolist()
    return [(kind, [(names[i], r) for i, r in cyc]) for kind, cyc in local]


def _cycles(comp: Component, order: int, opts: CheckOptions) -> list[tuple[str, list | str]]:
    """One cycle of each anomaly type the component holds, most severe first, skipping types
    implied by one already found: ``(type, cycle)``; on timeout, what was found, a timeout
    marker ``("cycle-search-timeout", why)`` and some cycle."""
    out: list[tuple[str, list | str]] = []
    implied: set[str] = set()
    deadline = time.monotonic() + opts.cycle_search_timeout_ms / 1000.0
    searching = None
    try:
        for name in SEARCH_ORDER:
            shape = SHAPES[name]
            needs = shape.rels & (PROCESS | REALTIME)  # a variant searches only the order it is of
            if name in implied or (needs and needs != order):
                continue
            searching = name
            cyc = comp.find(shape, deadline)
            if cyc is not None:
                kind = classify([r for _, r in cyc])
                out.append((kind, cyc))
                implied |= _implied(kind)
    except SearchTimeout:
        out.append(("cycle-search-timeout", f"the search for {searching} in a strongly connected component of "
                                            f"{comp.txn_count} transactions ran out of its "
                                            f"{opts.cycle_search_timeout_ms:.0f} ms (--cycle-search-timeout)"))
        cyc = comp.any_cycle(time.monotonic() + 1.0)
        if cyc is not None:
            out.append((classify([r for _, r in cyc]), cyc))
    return out


@lru_cache(maxsize=None)
def _implied(kind: str) -> frozenset:
    return frozenset(implied_anomalies([kind]))


def _cycle_anomaly(cyc: list[tuple[int, int]] | str, analysis: Analysis, h: TxnHistory) -> Anomaly:
    if isinstance(cyc, str):  # a search that ran out of time: why
        return Anomaly("cycle-search-timeout", [], why=cyc)
    nodes = [n for n, _ in cyc]
    steps = []
    for i, (a, rel) in enumerate(cyc):
        b = nodes[(i + 1) % len(nodes)]
        steps.append(_explain(a, b, rel, analysis, h))
    return Anomaly(classify([r for _, r in cyc]), nodes, steps)


def _explain(a: int, b: int, rel: int, analysis: Analysis, h: TxnHistory) -> Step:
    ta, tb = h.txns[a], h.txns[b]
    if rel == PROCESS:
        return Step(a, b, "process", text=f"process {ta.process} executed {{a}} before {{b}}")
    if rel == REALTIME:
        if ta.end != NO_TIME and tb.start != NO_TIME:
            when = f"{{a}} completed at {ta.end:.6f} s, {tb.start - ta.end:.6f} s before {{b}} began"
        else:
            when = f"{{a}} completed (event {ta.cmp}) before {{b}} was invoked (event {tb.inv})"
        return Step(a, b, "realtime", text=when)
    return analysis.explain(a, b, rel)


__all__ = ["MODELS", "CheckOptions", "TxnVerdict", "check", "holds"]
