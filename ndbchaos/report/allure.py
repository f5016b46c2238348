"""Everything ndbchaos writes into the Allure report of a run: its steps, attachments, the
description table, labels, and the results folder's environment, categories and executor files.

A scenario's report is rendered from its ``Result`` (``ndbchaos.outcome``: the history, the run
record and the verdict) and nothing else, through a ``Sink``: the live one (``LIVE``) writes with
``allure`` into the running test, ``ndbchaos.report.rebuild`` writes a results folder from a saved
run. So the rebuilt report is the live one. The live steps come from ``AllureSteps``, a listener
on the run's recorder.

Nothing else imports ``allure``. When allure-pytest is absent every live call is a no-op.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..checks.verdict import RunVerdict, word
from ..families import FAMILIES
from .plot import memory_png, timeline_png

if TYPE_CHECKING:  # pragma: no cover
    from ..handle import ClusterHandle
    from ..outcome import Incomplete, Result
    from ..record import RunRecord

try:
    import allure
    from allure_commons.types import AttachmentType
except ImportError:  # pragma: no cover - allure-pytest is a dependency
    allure = None
    AttachmentType = None

#: the checkers whose names are the report's failure categories (``categories.json``)
CHECKERS = ("expectation", "durability", "invariant", "transactions", "availability", "errors", "latency")


class Sink(Protocol):
    """Where a report goes: the running test (``LIVE``) or a results folder (``report.rebuild``)."""

    def attach(self, body: str | bytes, name: str, kind, extension: str | None = None) -> None: ...

    def title(self, text: str) -> None: ...

    def label(self, name: str, value: str) -> None: ...

    def description(self, markdown: str) -> None: ...

    def parameter(self, name: str, value) -> None: ...


class _Live:
    """The running test's report, through ``allure`` (no-ops without allure-pytest)."""

    def attach(self, body, name, kind, extension=None):
        if allure:
            allure.attach(body, name=name, attachment_type=kind, extension=extension)

    def title(self, text):
        if allure and text:
            allure.dynamic.title(text)

    def label(self, name, value):
        if allure:
            allure.dynamic.label(name, value)

    def description(self, markdown):
        if allure:
            allure.dynamic.description(markdown)

    def parameter(self, name, value):
        if allure:
            # excluded from the history id: a measured figure differs every run, and the id must
            # not, or Allure could never link a scenario's runs into a history
            allure.dynamic.parameter(name, value, excluded=True)


LIVE: Sink = _Live()


class AllureSteps:
    """A listener on a run's recorder (``ndbchaos.recording``): each step an Allure step."""

    def step(self, title: str):
        return step(title)


def step(title: str):
    return allure.step(title) if allure else contextlib.nullcontext()


def _kind(name: str):
    return getattr(AttachmentType, name) if AttachmentType is not None else None


def attach_json(obj, name: str, sink: Sink = LIVE) -> None:
    sink.attach(json.dumps(obj, indent=2, default=str), name, _kind("JSON"))


def attach_text(text: str, name: str, sink: Sink = LIVE) -> None:
    sink.attach(text, name, _kind("TEXT"))


def attach_svg(text: str, name: str, sink: Sink = LIVE) -> None:
    sink.attach(text, name, _kind("SVG"))


def attach_png(data: bytes, name: str, sink: Sink = LIVE) -> None:
    sink.attach(data, name, _kind("PNG"))


#: the names of a run's saved history: JSON Lines, or the columnar file for a large run
RUN_ATTACHMENTS = ("run.jsonl", "run.nch")
#: a history of more operations than this (a soak: hundreds of thousands) is attached in the
#: columnar format (docs/history-format.md): a tenth of the size, read ten times faster
COLUMNAR_ABOVE = 200_000


def attach_history(history, name: str | None = None, sink: Sink = LIVE) -> None:
    """The history with its run record in the header: ``ndbchaos check`` on this file gives the
    run's verdict again (``run.jsonl``; ``run.nch``, columnar, above ``COLUMNAR_ABOVE`` ops)."""
    if sink is LIVE and not allure:
        return
    if len(history) > COLUMNAR_ABOVE:
        import tempfile
        with tempfile.TemporaryDirectory(prefix="ndbchaos-attach-") as d:
            path = Path(d) / "run.nch"
            history.write(str(path), format="columnar")
            sink.attach(path.read_bytes(), name or RUN_ATTACHMENTS[1], None, "nch")
        return
    buf = io.StringIO()
    history.dump(buf)
    sink.attach(buf.getvalue(), name or RUN_ATTACHMENTS[0], _kind("TEXT"), "jsonl")


def title(text: str) -> None:
    LIVE.title(text)


def families_of(record: RunRecord) -> list[str]:
    """The families a run belongs to: its scenario's, then its test's family markers."""
    sc = record.scenario
    if sc is None:
        return []
    return list(dict.fromkeys([f for f in (sc.family, *sc.markers) if f in FAMILIES]))


def labels(record: RunRecord, sink: Sink = LIVE) -> None:
    """The engine as the epic, each family a feature."""
    sink.label("epic", f"engine: {record.engine}")
    for fam in families_of(record):
        sink.label("feature", fam)


def _md(text) -> str:
    """Text safe inside a Markdown table cell."""
    s = str(text)
    for ch in "\\*_`|<>[]":
        s = s.replace(ch, "\\" + ch)
    return s


def describe(heading: str, measurements: dict, verdict: RunVerdict | None, sink: Sink = LIVE) -> None:
    """The test's description: the heading, the measurement table and the verdict's lines; every
    numeric measurement also becomes a parameter "<name> [<unit>]" (what the trend graphs use)."""
    rows = "\n".join(
        f"| {m.name} | {_md(f'{m.value} {m.unit}')} | "
        f"{'' if m.bound is None else f'{m.bound:g} {m.unit}'} | {_md(m.note)} |"
        for m in measurements.values())
    lines = "\n".join(f"* {_md(x)}" for x in (verdict.summary if verdict is not None else []))
    sink.description(f"{heading}\n\n| measurement | value | bound | note |\n|---|---|---|---|\n{rows}\n\n"
                     f"**verdict**\n\n{lines}\n")
    for m in measurements.values():
        if isinstance(m.value, (int, float)) and not isinstance(m.value, bool):
            sink.parameter(f"{m.name} [{m.unit}]" if m.unit else m.name, m.value)


def _heading(record: RunRecord, ops: int | None) -> str:
    return (f"{(record.title + chr(10) * 2) if record.title else ''}engine **{record.engine}**, project "
            f"`{record.project}`, seed {record.seed}" + (f", {ops} operations" if ops is not None else ""))


def _states(record: RunRecord) -> list[dict]:
    """The node states as they changed (the timeline's lanes), oldest first."""
    return sorted(({"t": t, "node": node, "state": state, "healthy": healthy}
                   for node, lane in record.node_states.items() for t, state, healthy in lane),
                  key=lambda x: (x["t"], x["node"]))


def attach_result(result: Result, sink: Sink = LIVE) -> None:
    """A finished scenario run, from its result alone: title, labels, description, timeline,
    verdict and the evidence (``ndbchaos report`` renders a saved run the same way)."""
    if sink is LIVE and not allure:
        return
    record = result.record
    sink.title(record.title)
    labels(record, sink)
    describe(_heading(record, len(result.history)), result.measurements, result.verdict, sink)
    attach_json(record.status_before, "node states before", sink)
    attach_json(record.topology, "topology", sink)
    attach_json(record.status_after, "node states after", sink)
    try:
        attach_png(timeline_png(result.verdict, result.history, record.windows,
                                {k: [tuple(x) for x in v] for k, v in record.node_states.items()},
                                title=record.title or record.workload, events=record.events or [],
                                phases=record.phases), "timeline", sink)
    except Exception as e:  # a plot failure must not hide the verdict
        attach_text(f"timeline plot failed: {e}", "timeline error", sink)
    if record.soak is not None:
        attach_soak(result, sink)
    attach_transactions(result.verdict, sink)
    attach_json(result.verdict.to_json(), "verdict", sink)
    attach_json(record.windows, "fault windows", sink)
    attach_json([p.to_json() for p in record.phases], "phases", sink)
    attach_json({k: m.to_json() for k, m in result.measurements.items()}, "measurements", sink)
    attach_json(_states(record), "node states", sink)
    attach_json(record.cluster_samples, "status samples", sink)
    attach_json(record.framework_events, "framework events", sink)
    attach_json(record.events or [], f"{record.engine} log events", sink)
    attach_history(result.history, sink=sink)


def attach_transactions(verdict: RunVerdict, sink: Sink = LIVE) -> None:
    """A transactional run: every anomaly type found, allowed by the engine's promise or not, in
    words (which transactions, which edge, which key and value, why) and its cycle as a picture."""
    tv = verdict.transactions
    if tv is None:
        return
    if not tv.decided:  # a checker that could not decide: its summary says why
        check = verdict.checks["transactions"]
        attach_text(f"{check.valid}: {check.summary}\n", "transactions: anomalies", sink)
        return
    head = (f"model {tv.model}; promised {', '.join(tv.consistency_models)}"
            f"{' (' + tv.promise + ')' if tv.promise else ''}\n"
            f"found: {tv.found_text()}\n"
            f"not: {', '.join(tv.not_) or '-'}; also not: {', '.join(tv.also_not) or '-'}\n")
    attach_text(head + "".join(f"\n{e['type']}\n{e['explanation']}\n" for e in tv.examples),
                "transactions: anomalies", sink)
    for e in tv.examples:
        if e.get("svg"):
            attach_svg(e["svg"], f"transactions: {e['type']} cycle", sink)


def faults_table(verdict: RunVerdict) -> str:
    """A soak's faults, one row each: what, on which nodes, when, and its own verdict."""
    fv = verdict.faults
    rows = [f"{'#':>3}  {'fault':<30} {'targets':<16} {'from':>8} {'to':>8} {'ops':>7}  verdict"]
    for s in fv.steps if fv is not None else []:
        missed = [o for o in s.objectives if o.valid is not True]
        why = "; ".join(f"{o.name}: {o.measured} (bound {o.bound})" for o in missed)
        rows.append(f"{s.index:>3}  {s.scenario:<30} {','.join(s.targets):<16} "
                    f"{s.begin:>8.1f} {s.end:>8.1f} {s.ops:>7}  {word(s.valid)}{': ' + why if why else ''}")
    return "\n".join(rows) + "\n"


def attach_soak(result: Result, sink: Sink = LIVE) -> None:
    """A soak's own evidence: the schedule as played, each fault's verdict, resident memory."""
    record = result.record
    attach_text(faults_table(result.verdict), "faults", sink)
    attach_json(record.soak, "soak schedule", sink)
    attach_json(record.memory, "memory samples", sink)
    try:
        attach_png(memory_png(record.memory, record.windows, f"{record.title or 'soak'}: resident memory"),
                   "memory", sink)
    except Exception as e:  # a plot failure must not hide the verdict
        attach_text(f"memory plot failed: {e}", "memory error", sink)


def attach_incomplete(incomplete: Incomplete, sink: Sink = LIVE) -> None:
    """A run that did not reach its verdict (an error, a timeout): the evidence so far."""
    if sink is LIVE and not allure:
        return
    record = incomplete.record
    sink.title(record.title)
    labels(record, sink)
    attach_json(record.status_before, "node states before (incomplete run)", sink)
    attach_json(record.windows, "fault windows (incomplete run)", sink)
    attach_json([p.to_json() for p in record.phases], "phases (incomplete run)", sink)
    attach_json(dict(record.marks), "marks (incomplete run)", sink)
    attach_json({k: m.to_json() for k, m in record.measurements.items()}, "measurements (incomplete run)", sink)
    attach_json(_states(record), "node states (incomplete run)", sink)
    attach_json(record.cluster_samples, "status samples (incomplete run)", sink)
    attach_json(record.framework_events, "framework events (incomplete run)", sink)
    attach_json(record.events or [], f"{record.engine} log events (incomplete run)", sink)
    if incomplete.history is not None:
        attach_history(incomplete.history, "run (incomplete run)", sink)


def write_results_metadata(alluredir: Path, engine_choice: str = "", cluster: ClusterHandle | None = None,
                           ci: bool = False) -> None:
    """environment.properties, categories.json and executor.json of a results folder. Failure
    categories are the checkers' names: a scenario fails with its verdict's lines, one per
    checker, so the category says which judgement failed."""
    alluredir.mkdir(parents=True, exist_ok=True)
    env = {"engine_choice": engine_choice}
    if cluster is not None:
        env.update({"engine": cluster.engine.name, "project": cluster.project})
        env.update(cluster.describe())  # its runtime: the backend, and its images or its inventory and hosts
    env.update({"python": platform.python_version(), "kernel": platform.release(), "ci": str(ci).lower()})
    (alluredir / "environment.properties").write_text(
        "".join(f"{k}={str(v).replace(chr(10), ' ')}\n" for k, v in env.items()))
    categories = [{"name": f"{name} verdict invalid", "matchedStatuses": ["failed"],
                   "messageRegex": f"(?s).*\\b{name}: INVALID\\b.*"} for name in CHECKERS]
    categories += [
        {"name": "verdict unknown (the run could not be judged)", "matchedStatuses": ["failed"],
         "messageRegex": "(?s).*: unknown: .*"},
        {"name": "Fault injection or infrastructure error", "matchedStatuses": ["broken"]},
        {"name": "Engine not available", "matchedStatuses": ["skipped"], "messageRegex": ".*(image|NDB|Docker).*"},
    ]
    (alluredir / "categories.json").write_text(json.dumps(categories, indent=2))
    (alluredir / "executor.json").write_text(json.dumps({
        "name": "CI" if ci else "local", "type": "ndbchaos",
        "buildName": os.environ.get("CI_PIPELINE_ID") or os.environ.get("GITHUB_RUN_ID") or "local run"}))
