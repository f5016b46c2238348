"""ndbchaos gate FILE RESULTS: judge a finished run against a gate file, offline.

RESULTS is the Allure results folder a run wrote (each scenario attaches its run record,
``run.jsonl``), a folder of run records, or one. The verdict is the one ``pytest --gate FILE``
gave on that run: both judge the same records with the same code (ndbchaos.gate). Prints the
table, writes the JSON with ``--json-out``. Exit 0: passed (warnings allowed); 6: an objective
of severity fail was missed, or a safety check failed; 4: the gate judged nothing (a file with no
objective, a pattern that names no scenario of the results or of the catalogue a ``pytest --gate``
session records in them, or no objective that could be evaluated on any scenario), as
``pytest --gate`` exits; 2: a bad gate file, results folder or
``--json-out``, one line naming the file and nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError, shown
from ..gate import GATE_FAILED, evaluate, load, table
from ..gate.results import load_baseline, load_runs, recorded_catalogue, skipped_scenarios
from ..gate.spec import GateJudgedNothing
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("gate", help=HELP["gate"],
                       description="Evaluates every objective of a gate file (TOML, docs/gate.md) on the run "
                                   "records a run left in its results folder, prints one table and exits 6 "
                                   "when the gate fails, 4 when it judged nothing (no objective, a pattern that "
                                   "names no scenario, nothing measurable), 2 on a bad file.")
    p.add_argument("gate", metavar="FILE", help="the gate file (TOML)")
    p.add_argument("results", nargs="?", default="reports/allure-results", metavar="RESULTS",
                   help="Allure results folder, folder of run records, or one run record "
                        "(default reports/allure-results)")
    p.add_argument("--baseline", default=None, metavar="PATH",
                   help="an earlier gate.json or results folder, for regression_pct (overrides the file's)")
    p.add_argument("--json-out", default=None, metavar="FILE", help="write the result as JSON here")
    p.set_defaults(func=run)


def run(args) -> int:
    out = Path(args.json_out) if args.json_out else None
    if out is not None and (out.is_dir() or (out.parent.exists() and not out.parent.is_dir())):
        why = "a folder" if out.is_dir() else f"{shown(out.parent)} is not a folder"
        raise UsageError(f"--json-out {shown(out)}: {why}, give a file path")
    gate = load(args.gate)
    runs = load_runs(args.results)
    ran = {r.test_id for r in runs}
    # the catalogue offline: what the session collected when it recorded it (pytest --gate), what
    # the results hold as skipped, and what ran (live: what was collected)
    skipped = list({x[0][0]: x for x in [*skipped_scenarios(args.results), *recorded_catalogue(args.results)]
                    if x[0][0] not in ran}.values())
    unknown = gate.unknown_patterns([r.ids for r in runs] + [ids for ids, _ in skipped],
                                    {m for r in runs for m in r.markers} | {m for _, ms in skipped for m in ms})
    if unknown:
        e = unknown[0]
        raise GateJudgedNothing(f"{shown(gate.path)}:{e.line}: match {e.patterns}: no scenario of "
                                f"{shown(args.results)} matches "
                                "(a typo; or a scenario the run deselected: a run with pytest --gate records what it "
                                "collected in its results)")
    baseline = load_baseline(args.baseline or gate.baseline)
    result = evaluate(gate, runs, expected=[*skipped, *((r.ids, r.markers) for r in runs)], baseline=baseline)
    print(table(result))
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result, indent=1))
        except OSError as e:
            raise UsageError(f"--json-out {shown(out)}: cannot write it ({e.strerror or e})") from None
    if result["result"] == "fail":
        return GATE_FAILED
    if result["result"] == "not evaluated" and not gate.states_objectives:
        raise GateJudgedNothing(f"{shown(gate.path)}: the gate states no objective (in [defaults] or a [[scenario]]): "
                                "it judged only the runs' safety, and that held")
    if result["result"] == "not evaluated":
        raise GateJudgedNothing(f"{shown(gate.path)}: no objective of the gate could be evaluated on any scenario of "
                                f"{shown(args.results)} ({len(runs)} run(s); every row NOT EVALUATED)")
    return 0

