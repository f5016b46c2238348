"""Everything ndbchaos writes into the Allure report: phases as steps, attachments, the
description table, labels, and the results folder's environment, categories and executor files.

Nothing else imports ``allure``. When allure-pytest is absent every call is a no-op.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING

from ..checks.verdict import RunVerdict, word
from .plot import memory_png, timeline_png

if TYPE_CHECKING:  # pragma: no cover
    from ..handle import ClusterHandle

try:
    import allure
except ImportError:  # pragma: no cover - allure-pytest is a dependency
    allure = None

#: the checkers whose names are the report's failure categories (``categories.json``)
CHECKERS = ("expectation", "durability", "invariant", "transactions", "availability", "errors", "latency")


def step(title: str):
    return allure.step(title) if allure else contextlib.nullcontext()


def attach_json(obj, name: str) -> None:
    if allure:
        allure.attach(json.dumps(obj, indent=2, default=str), name=name, attachment_type=allure.attachment_type.JSON)


def attach_text(text: str, name: str) -> None:
    if allure:
        allure.attach(text, name=name, attachment_type=allure.attachment_type.TEXT)


def attach_svg(text: str, name: str) -> None:
    if allure:
        allure.attach(text, name=name, attachment_type=allure.attachment_type.SVG)


def attach_png(data: bytes, name: str) -> None:
    if allure:
        allure.attach(data, name=name, attachment_type=allure.attachment_type.PNG)


#: the names of a run's saved history: JSON Lines, or the columnar file for a large run
RUN_ATTACHMENTS = ("run.jsonl", "run.nch")
#: a history of more operations than this (a soak: hundreds of thousands) is attached in the
#: columnar format (docs/history-format.md): a tenth of the size, read ten times faster
COLUMNAR_ABOVE = 200_000


def attach_history(history, name: str | None = None) -> None:
    """The history with its run record in the header: ``ndbchaos check`` on this file gives the
    run's verdict again (``run.jsonl``; ``run.nch``, columnar, above ``COLUMNAR_ABOVE`` ops)."""
    if not allure:
        return
    if len(history) > COLUMNAR_ABOVE:
        import tempfile
        with tempfile.TemporaryDirectory(prefix="ndbchaos-attach-") as d:
            path = f"{d}/run.nch"
            history.write(path, format="columnar")
            allure.attach.file(path, name=name or RUN_ATTACHMENTS[1], extension="nch")
        return
    buf = io.StringIO()
    history.dump(buf)
    allure.attach(buf.getvalue(), name=name or RUN_ATTACHMENTS[0], attachment_type=allure.attachment_type.TEXT,
                  extension="jsonl")


def title(text: str) -> None:
    if allure and text:
        allure.dynamic.title(text)


def labels(engine: str, families: list[str]) -> None:
    if allure:
        allure.dynamic.epic(f"engine: {engine}")
        for fam in families:
            allure.dynamic.feature(fam)


def _md(text) -> str:
    """Text safe inside a Markdown table cell."""
    s = str(text)
    for ch in "\\*_`|<>[]":
        s = s.replace(ch, "\\" + ch)
    return s


def describe(heading: str, measurements: dict, verdict: RunVerdict | None) -> None:
    """The test's description: the heading, the measurement table and the verdict's lines; every
    numeric measurement also becomes a parameter "<name> [<unit>]" (what the trend graphs use)."""
    if not allure:
        return
    rows = "\n".join(
        f"| {m.name} | {_md(f'{m.value} {m.unit}')} | "
        f"{'' if m.bound is None else f'{m.bound:g} {m.unit}'} | {_md(m.note)} |"
        for m in measurements.values())
    lines = "\n".join(f"* {_md(x)}" for x in (verdict.summary if verdict is not None else []))
    allure.dynamic.description(f"{heading}\n\n| measurement | value | bound | note |\n|---|---|---|---|\n{rows}\n\n"
                               f"**verdict**\n\n{lines}\n")
    for m in measurements.values():
        if isinstance(m.value, (int, float)) and not isinstance(m.value, bool):
            # excluded from the history id: a measured figure differs every run, and the id must
            # not, or Allure could never link a scenario's runs into a history
            allure.dynamic.parameter(f"{m.name} [{m.unit}]" if m.unit else m.name, m.value, excluded=True)


def attach_result(run, result) -> None:
    """A finished scenario run: description, timeline, verdict and the evidence."""
    if not allure:
        return
    describe(f"{(run.title + chr(10) * 2) if run.title else ''}engine **{run.cluster.engine.name}**, project "
             f"`{run.cluster.project}`, seed {run.seed}, {len(result.history)} operations",
             run.measurements, result.verdict)
    attach_json(result.status_after, "node states after")
    try:
        attach_png(timeline_png(result.verdict, result.history, result.windows, run.observer.lanes(),
                                title=run.title or run.workload.name, events=result.events, phases=result.phases),
                   "timeline")
    except Exception as e:  # a plot failure must not hide the verdict
        attach_text(f"timeline plot failed: {e}", "timeline error")
    if run.soak is not None:
        attach_soak(run, result)
    attach_transactions(result.verdict)
    attach_json(result.verdict.to_json(), "verdict")
    attach_json([p.to_json() for p in result.phases], "phases")
    attach_json({k: m.__dict__ for k, m in run.measurements.items()}, "measurements")
    attach_json(run.observer.to_json(), "status samples")
    attach_json(run.cluster.journal.events(since=run.t0), "framework events")
    attach_json(result.events, f"{run.cluster.engine.name} log events")
    attach_history(result.history)


def attach_transactions(verdict: RunVerdict) -> None:
    """A transactional run: every anomaly type found, allowed by the engine's promise or not, in
    words (which transactions, which edge, which key and value, why) and its cycle as a picture."""
    tv = verdict.transactions
    if tv is None:
        return
    if not tv.decided:  # a checker that could not decide: its summary says why
        check = verdict.checks["transactions"]
        attach_text(f"{check.valid}: {check.summary}\n", "transactions: anomalies")
        return
    head = (f"model {tv.model}; promised {', '.join(tv.consistency_models)}"
            f"{' (' + tv.promise + ')' if tv.promise else ''}\n"
            f"found: {tv.found_text()}\n"
            f"not: {', '.join(tv.not_) or '-'}; also not: {', '.join(tv.also_not) or '-'}\n")
    attach_text(head + "".join(f"\n{e['type']}\n{e['explanation']}\n" for e in tv.examples),
                "transactions: anomalies")
    for e in tv.examples:
        if e.get("svg"):
            attach_svg(e["svg"], f"transactions: {e['type']} cycle")


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


def attach_soak(run, result) -> None:
    """A soak's own evidence: the schedule as played, each fault's verdict, resident memory."""
    attach_text(faults_table(result.verdict), "faults")
    attach_json(run.soak, "soak schedule")
    attach_json(run.memory, "memory samples")
    try:
        attach_png(memory_png(run.memory, result.windows, f"{run.title or 'soak'}: resident memory"), "memory")
    except Exception as e:  # a plot failure must not hide the verdict
        attach_text(f"memory plot failed: {e}", "memory error")


def attach_incomplete(run, history, events) -> None:
    """A run that did not reach its verdict (an error, a timeout): the evidence so far."""
    if not allure:
        return
    windows = [w.to_dict() for w in run.cluster.journal.windows(since=run.t0)]
    attach_json(windows, "fault windows (incomplete run)")
    attach_json([p.to_json() for p in run.phases], "phases (incomplete run)")
    attach_json(dict(run.marks), "marks (incomplete run)")
    attach_json({k: m.__dict__ for k, m in run.measurements.items()}, "measurements (incomplete run)")
    attach_json(run.observer.to_json(), "status samples (incomplete run)")
    attach_json(run.cluster.journal.events(since=run.t0), "framework events (incomplete run)")
    attach_json(events, f"{run.cluster.engine.name} log events (incomplete run)")
    if history is not None:
        attach_history(history, "run (incomplete run)")


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
