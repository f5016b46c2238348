"""Runs and baselines from what an earlier session left: an Allure results directory (each
scenario's ``run.jsonl`` or, for a large run, ``run.nch`` attachment), a directory of ``*.jsonl``
run records, or one run record; a baseline is an earlier ``gate.json`` (its ``figures``) or any of those."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError
from ..history import History, HistoryFormatError
from ..record import ScenarioId
from ..report.allure import RUN_ATTACHMENTS
from ..report.results import attachments, read_results
from .evaluate import Run, judge
from .spec import Entry, Gate


def run_of(history: History, name: str) -> Run:
    """A Run from a run record; the scenario's ids and markers come from its header."""
    sc = ScenarioId.of((history.run or {}).get("scenario"))
    if sc is None:
        return Run(name, [], history, [])
    test_id = sc.test or sc.name or name
    names = [x for x in (sc.name, sc.nodeid) if x and x != test_id]
    return Run(test_id, list(sc.markers or ([sc.family] if sc.family else [])), history, names)


def _allure_run_files(d: Path) -> list[tuple[Path, str]]:
    """(run record, result name) of every scenario result that ran, oldest first."""
    return [(d / a["source"], r.get("name", "")) for r in read_results(d) if r.get("status") != "skipped"
            for a in attachments(r) if a.get("name") in RUN_ATTACHMENTS]


def _results_folder(p: Path) -> Path:
    """``p``, or the one Allure results folder inside it (``reports`` -> ``reports/allure-results``):
    a reports folder also holds Allure's own history.jsonl and the trends, which are no run
    records. Several such folders: one line naming them."""
    if not p.is_dir() or any(p.glob("*-result.json")):
        return p
    inside = sorted(d for d in p.iterdir() if d.is_dir() and any(d.glob("*-result.json")))
    if len(inside) == 1:
        return inside[0]
    if len(inside) > 1:
        raise UsageError(f"results {p}: holds several Allure results folders, pass one: "
                         f"{', '.join(str(d) for d in inside)}")
    return p


def load_runs(path: str | Path) -> list[Run]:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"results {p}: not found")
    p = _results_folder(p)
    single = p.is_file()
    files = [(p, p.name)] if single else (
        _allure_run_files(p) or [(f, f.name) for f in sorted(p.glob("*.jsonl*")) + sorted(p.glob("*.nch"))])
    runs, skipped = [], []
    for f, name in files:
        try:
            h = History.read(f)
        except (OSError, HistoryFormatError) as e:
            if single:
                raise UsageError(f"{f}: not a run record: {e}") from None
            skipped.append(f.name)  # in a folder: another file of the run (e.g. Allure's history.jsonl)
            continue
        if h.run is None:
            continue  # a bare history: no scenario to judge
        runs.append(run_of(h, name))
    if not runs:
        why = f" (not run records: {', '.join(skipped)})" if skipped else ""
        raise UsageError(f"results {p}: no scenario run record (run.jsonl) in it{why}; pass the Allure results "
                         "folder a run wrote (--alluredir), e.g. reports/allure-results")
    # one run per scenario: the latest (results of several sessions may share a folder)
    latest: dict[str, Run] = {}
    for r in runs:
        latest[r.test_id] = r
    return list(latest.values())


def load_baseline(path: str | Path | None) -> dict | None:
    """{test_id: {objective: figure}}."""
    if path is None:
        return None
    p = Path(path)
    if p.is_file() and p.suffix == ".json":
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise UsageError(f"baseline {p}: not JSON: {e}") from None
        if not isinstance(data, dict) or not isinstance(data.get("figures"), dict):
            raise UsageError(f"baseline {p}: not a gate.json (no 'figures')")
        return data["figures"]
    empty = Gate(str(p), Entry([], {}), [])  # no objectives: the figures only
    return {r.test_id: judge(r, empty)[1] for r in load_runs(p)}


__all__ = ["load_baseline", "load_runs", "run_of"]
