"""ndbchaos gate FILE RESULTS: judge a finished run against a gate file, offline.

RESULTS is the Allure results folder a run wrote (each scenario attaches its run record,
``run.jsonl``), a folder of run records, or one. The verdict is the one ``pytest --gate FILE``
gave on that run: both judge the same records with the same code (ndbchaos.gate). Prints the
table, writes the JSON with ``--json-out``. Exit 0: passed (warnings allowed); 6: an objective
of severity fail was missed, or a safety check failed; 2: a bad gate file or results folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..gate import GATE_FAILED, evaluate, load, table
from ..gate.results import load_baseline, load_runs
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("gate", help=HELP["gate"],
                       description="Evaluates every objective of a gate file (TOML, docs/gate.md) on the run "
                                   "records a run left in its results folder, prints one table and exits 6 "
                                   "when the gate fails.")
    p.add_argument("gate", metavar="FILE", help="the gate file (TOML)")
    p.add_argument("results", nargs="?", default="reports/allure-results", metavar="RESULTS",
                   help="Allure results folder, folder of run records, or one run record "
                        "(default reports/allure-results)")
    p.add_argument("--baseline", default=None, metavar="PATH",
                   help="an earlier gate.json or results folder, for regression_pct (overrides the file's)")
    p.add_argument("--json-out", default=None, metavar="FILE", help="write the result as JSON here")
    p.set_defaults(func=run)


def run(args) -> int:

    gate = load(args.gate)
    runs = load_runs(args.results)
    baseline = load_baseline(args.baseline or gate.baseline)
    result = evaluate(gate, runs, baseline=baseline)  # entries matching no result: NOT EVALUATED
    print(table(result))
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(json.dumps(result, indent=1))
    return GATE_FAILED if result["result"] == "fail" else 0

