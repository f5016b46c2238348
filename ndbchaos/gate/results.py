"""Runs and baselines from what an earlier session left: an Allure results directory (each
scenario's ``run.jsonl`` or, for a large run, ``run.nch`` attachment), a directory of ``*.jsonl``
run records, or one run record; a baseline is an earlier ``gate.json`` (its ``figures``) or any of those."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..errors import UsageError, shown
from ..history import History, HistoryFormatError
from ..record import ScenarioId
from ..report.allure import RUN_ATTACHMENTS
from ..report.results import attachments, read_results
from .evaluate import Run, judge
from .spec import Entry, Gate


def run_of(history: History, name: str, source: str = "") -> Run:
    """A Run from a run record; the scenario's ids and markers come from its header. UsageError
    naming ``source`` when the header's ``scenario`` is not what a run writes."""
    sc = (history.run or {}).get("scenario")
    strings = ("name", "family", "test", "nodeid")
    if sc is not None and not (isinstance(sc, dict) and all(isinstance(sc.get(k) or "", str) for k in strings)
                               and isinstance(sc.get("markers") or [], list)
                               and all(isinstance(m, str) for m in sc.get("markers") or [])):
        raise UsageError(f"{shown(source or name)}: run.scenario must be an object of strings "
                         f"({', '.join(strings)}) and a list of markers")
    sc = ScenarioId.of(sc)
    if sc is None:
        return Run(name, [], history, [], source)
    test_id = sc.test or sc.name or name
    names = [x for x in (sc.name, sc.nodeid) if x and x != test_id]
    return Run(test_id, list(sc.markers or ([sc.family] if sc.family else [])), history, names, source)


def _allure_run_files(d: Path) -> list[tuple[Path, str]]:
    """(run record, result name) of every scenario result that ran, oldest first."""
    return [(d / a["source"], r.get("name", "")) for r in read_results(d) if r.get("status") != "skipped"
            for a in attachments(r) if a["name"] in RUN_ATTACHMENTS]


#: what a ``pytest --gate`` session collected, written to its Allure results folder: the
#: scenarios it could have run, so that offline a pattern naming a deselected one is NOT
#: EVALUATED (as it is live), not a pattern that names nothing
CATALOGUE = "ndbchaos-gate.catalogue"  # JSON; not *.json, which Allure's readers may take for theirs


def recorded_catalogue(path: str | Path) -> list[tuple[list[str], list[str]]]:
    """(ids, markers) of every scenario the session that wrote the results folder collected
    (``CATALOGUE``); none when it ran without ``--gate``."""
    p = _results_folder(Path(path))
    f = p / CATALOGUE if p.is_dir() else None
    if f is None or not f.exists():
        return []
    data = _json(f, f"{shown(f)}: not a scenario catalogue")
    strings = lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)  # noqa: E731
    if not isinstance(data, list) or not all(isinstance(x, dict) and strings(x.get("ids")) and x["ids"]
                                             and strings(x.get("markers")) for x in data):
        raise UsageError(f'{shown(f)}: not a scenario catalogue: must be a list of {{"ids": [...], "markers": [...]}}')
    return [(x["ids"], x["markers"]) for x in data]


def skipped_scenarios(path: str | Path) -> list[tuple[list[str], list[str]]]:
    """(ids, markers) of the scenarios an Allure results folder holds as skipped: the offline
    counterpart of the collected catalogue, so an entry naming only them is NOT EVALUATED, not a
    pattern that names nothing. Ids: the result's name and its scenario parameter; markers: its tags."""
    p = _results_folder(Path(path))
    if not p.is_dir():
        return []
    out = []
    for r in read_results(p):
        if r.get("status") != "skipped":
            continue
        ids = [x for x in (r.get("name"), *(q.get("value") for q in r.get("parameters", [])
                                               if q.get("name") in ("sc", "sk"))) if x]
        if ids:
            out.append((ids, [lb.get("value", "") for lb in r.get("labels", []) if lb.get("name") == "tag"]))
    return out


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
        raise UsageError(f"results {shown(p)}: holds several Allure results folders, pass one: "
                         f"{', '.join(str(d) for d in inside)}")
    return p


def load_runs(path: str | Path) -> list[Run]:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"results {shown(p)}: not found")
    p = _results_folder(p)
    single = p.is_file()
    named = [] if single else _allure_run_files(p)  # the run records Allure results name
    files = [(p, p.name)] if single else (
        named or [(f, f.name) for f in sorted(p.glob("*.jsonl*")) + sorted(p.glob("*.nch"))])
    runs, skipped = [], []
    for f, name in files:
        try:
            h = History.read(f)
        except RecursionError:
            raise UsageError(f"{shown(f)}: not a run record: a value nested too deep") from None
        except (OSError, ValueError, HistoryFormatError) as e:
            if single or named:  # the one file given, or a run record a result names
                raise UsageError(f"{shown(f)}: not a run record: {_one_line(e)}") from None
            skipped.append(f.name)  # in a folder: another file of the run (e.g. Allure's history.jsonl)
            continue
        if h.run is None:
            continue  # a bare history: no scenario to judge
        runs.append(run_of(h, name, str(f)))
    if not runs:
        why = f" (not run records: {', '.join(skipped)})" if skipped else ""
        raise UsageError(f"results {shown(p)}: no scenario run record (run.jsonl) in it{why}; pass the Allure results "
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
        data = _json(p, f"baseline {shown(p)}: not a gate.json")
        if not isinstance(data, dict) or not isinstance(data.get("figures"), dict):
            raise UsageError(f"baseline {shown(p)}: not a gate.json (no 'figures')")
        for sid, fig in data["figures"].items():
            if not isinstance(fig, dict) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in fig.values()):
                raise UsageError(f"baseline {shown(p)}: figures {sid!r}: must map objectives to numbers")
        return data["figures"]
    empty = Gate(str(p), Entry([], {}), [])  # no objectives: the figures only
    return {r.test_id: judge(r, empty)[1] for r in load_runs(p)}


def _json(f: Path, not_one: str):
    """The JSON value of a file; UsageError ``not_one: why`` in one line when it cannot be read,
    is not UTF-8 JSON or nests too deep."""
    try:
        return json.loads(f.read_bytes().decode("utf-8"))
    except RecursionError:
        raise UsageError(f"{not_one}: a value nested too deep") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"{not_one}: {_one_line(e)}") from None


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


__all__ = ["CATALOGUE", "load_baseline", "load_runs", "recorded_catalogue", "run_of", "skipped_scenarios"]
