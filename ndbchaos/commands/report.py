"""ndbchaos report RUN...: rebuild the Allure report of saved scenario runs from their files alone.

    ndbchaos report reports/allure-results -o reports/rebuilt     # every run a session left
    ndbchaos report run.jsonl --gate gate.toml                     # one run, with its gate rows
    allure generate reports/rebuilt -o reports/html                # the HTML, as after a session

RUN is a saved run (``run.jsonl`` or ``run.nch``: the history with its run record), a folder of
them, or the Allure results folder a session wrote. Each run is judged again from its record
(``check_run``) and rendered by the live report's own code (``ndbchaos.report.allure``): title,
labels, description and measurements, timeline, verdict, anomaly pictures, soak evidence and
the history. The steps come from the record's outline. Exit 0: every report written; 2: a RUN
or gate file that cannot be read, one line naming it, nothing written.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError, shown
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("report", help=HELP["report"],
                       description="Rebuilds each saved run's Allure result (the live report's description, "
                                   "measurements, timeline, verdict, anomaly pictures and evidence) into an "
                                   "Allure results folder, from the run's file alone; `allure generate` makes "
                                   "the HTML. Exit 0 written, 2 unreadable input (nothing written).")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="run.jsonl / run.nch, a folder of them, or an Allure results folder")
    p.add_argument("-o", "--out", default="reports/rebuilt-results", metavar="DIR",
                   help="the results folder to write (default reports/rebuilt-results)")
    p.add_argument("--gate", default=None, metavar="FILE",
                   help="also judge each run against this gate file and attach its rows, as pytest --gate does")
    p.add_argument("--baseline", default=None, metavar="PATH",
                   help="with --gate: an earlier gate.json or results folder, for regression_pct")
    p.set_defaults(func=run)


def run(args) -> int:
    # what reading and judging needs, imported when the command runs (numpy, the checkers, Allure)
    from ..gate import judge, load, table
    from ..gate.evaluate import summarize
    from ..gate.results import load_baseline, load_runs
    from ..outcome import Result
    from ..report.allure import attach_json, attach_text
    from ..report.rebuild import rebuild

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {shown(out)}: not a folder")
    if args.baseline and not args.gate:
        raise UsageError("--baseline needs --gate")
    gate = load(args.gate) if args.gate else None
    baseline = load_baseline(args.baseline or (gate.baseline if gate else None)) if gate else None
    runs = [r for path in args.runs for r in load_runs(path)]  # every file read before anything is written
    results = []
    for r in runs:
        try:
            results.append((r, Result.judge(r.history)))
        except ValueError as e:
            raise UsageError(f"{shown(r.source or r.test_id)}: not a run record: {e}") from None
    for r, res in results:
        extra = None
        if gate is not None:
            rows, _ = judge(r, gate, baseline, res.verdict)
            one = summarize(gate, rows)

            def extra(sink, one=one):
                attach_text(table(one), "gate", sink)
                attach_json(one["rows"], "gate rows", sink)
        rebuild(res, out, extra)
        print(f"{r.test_id}: {res.verdict.valid} ({len(res.history)} operations)")
    print(f"{len(results)} report(s) in {out}: allure generate {out} -o <html folder>")
    return 0
