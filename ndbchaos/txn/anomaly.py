"""What a checker found: an anomaly with the transactions it involves, and for a cycle each of
its steps with the reason the edge exists, in plain words (Elle's explanations: PAPER Fig. 2)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from .history import TxnHistory


@dataclass
class Step:
    """One edge of a cycle: ``a`` precedes ``b`` because of ``rel`` on ``key``."""

    a: int  # Txn.id
    b: int
    rel: str  # ww | wr | rw | process | realtime
    key: Any = None
    value: Any = None  # the version a wrote / read / ... (see ``text``)
    value2: Any = None  # the version b wrote, where there is one
    text: str = ""  # why, in words, with T-names filled in by ``Anomaly.explain``
    via: int | None = None  # a third transaction the reason names ({c}: the reader an axiom is about)

    def to_json(self, names: dict[int, str]) -> dict:
        d: dict = {"type": self.rel, "from": names.get(self.a, self.a), "to": names.get(self.b, self.b)}
        if self.key is not None:
            d["key"] = self.key
        if self.value is not None:
            d["value"] = _plain(self.value)
        if self.value2 is not None:
            d["value'"] = _plain(self.value2)
        if self.via is not None:
            d["via"] = names.get(self.via, self.via)
        return d


@dataclass
class Anomaly:
    type: str
    txns: list[int]  # the transactions involved (a cycle's, in cycle order, then any its steps name)
    steps: list[Step] = field(default_factory=list)  # a cycle's edges, the last closes it
    key: Any = None
    values: list | None = None
    why: str = ""  # plain words for anomalies that are not cycles: {a}, {b} name txns[0], txns[1]

    def names(self) -> dict[int, str]:
        return {t: f"T{i + 1}" for i, t in enumerate(dict.fromkeys(self.txns))}

    def explain(self, h: TxnHistory) -> str:
        """The anomaly in words: the transactions, then why each step holds."""
        names = self.names()
        lines = ["Let:"]
        for t, name in names.items():
            lines.append(f"  {name} = {describe(h.txns[t])}")
        if self.steps:
            lines.append("Then:")
            for i, s in enumerate(self.steps):
                last = i == len(self.steps) - 1 and len(self.steps) > 1
                text = s.text.format(a=names.get(s.a, "?"), b=names.get(s.b, "?"), c=names.get(s.via, "?"))
                lead = "However, " if last else ""
                tail = ": a contradiction!" if last else "."
                lines.append(f"  - {lead}{names.get(s.a)} < {names.get(s.b)}, because {text}{tail}")
        if self.why:
            who = list(names.values()) + ["?", "?"]
            lines.append("Then " + self.why.format(a=who[0], b=who[1]) + ".")
        return "\n".join(lines)

    def to_json(self, h: TxnHistory) -> dict:
        names = self.names()
        d: dict = {"type": self.type, "ops": [h.txns[t].index for t in self.txns],
                   "txns": {names[t]: h.txns[t].to_json() for t in names}}
        if self.steps:
            d["steps"] = [s.to_json(names) for s in self.steps]
        if self.key is not None:
            d["key"] = self.key
        if self.values is not None:
            d["values"] = [_plain(v) for v in self.values]
        d["explanation"] = self.explain(h)
        return d


@dataclass
class Analysis:
    """What a model's inference gives the checker: the anomalies found without a cycle search,
    the dependency graph, and how to explain any of its edges. ``stopped`` is set when the
    history cannot be analysed as this model (duplicate appends, foreign micro-ops): the verdict
    is then unknown."""

    anomalies: dict[str, list[Anomaly]]
    graph: Any  # graph.DepGraph
    explain: Callable[[int, int, int], Step]  # (a, b, rel bit) -> Step
    stopped: Anomaly | None = None


def describe(t) -> str:
    """A transaction in one line: index, process, outcome, node, micro-ops."""
    mops = json.dumps([[f, k, _plain(v)] for f, k, v in t.mops], separators=(",", ":"))
    where = f", node {t.node}" if t.node else ""
    when = f", {t.start:.6f}-{t.end:.6f} s" if t.end >= 0 and t.start >= 0 else ""
    return f"op {t.index} (process {t.process}, {t.type_name}{where}{when}): {mops}"


def esc(x) -> str:
    """A value for a ``why``/``text`` template: printed as JSON, braces kept literal."""
    if type(x) is int:  # (JSON's integer is Python's repr: the keys and values of most histories)
        return repr(x)
    if type(x) in (list, tuple) and all(type(e) is int for e in x):
        return "[" + ",".join(map(repr, x)) + "]"
    return json.dumps(_plain(x), separators=(",", ":")).replace("{", "{{").replace("}", "}}")


def _plain(v):
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


__all__ = ["Analysis", "Anomaly", "Step", "describe", "esc"]
