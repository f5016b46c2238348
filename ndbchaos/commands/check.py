"""ndbchaos check: judge a recorded history offline and print the verdict as JSON.

    ndbchaos check run.jsonl                                  # a run of ours: every checker
    ndbchaos check --model list-append history.edn            # a transactional history, Elle's way

Exit status: 0 valid; 1 invalid or unknown (a checker could not decide, e.g. no successful read:
a gate must not pass on that); 2 the history or windows file is unreadable or malformed (one line
on stderr naming the file and line).
"""

from __future__ import annotations

import json
import sys

from ..checks import check_history, check_run
from ..checks.frame import WindowError, parse_windows
from ..errors import UsageError
from ..history import History, HistoryFormatError
from . import HELP
from ._output import pretty
from ._txncheck import run_txn


def register(sub) -> None:
    p = sub.add_parser(
        "check", help=HELP["check"],
        description="Reads a history (JSON Lines, plain or gzip, or the columnar format, detected by "
                    "its first bytes; docs/history-format.md), runs every "
                    "checker relevant to its workload and prints the composed verdict as JSON on stdout "
                    "and a one-line summary per checker on stderr. A scenario's saved run (run.jsonl: "
                    "the history with its run record) is judged with its recorded fault windows, "
                    "options and expectation, which gives the run's own verdict again. Exit 0 valid, "
                    "1 invalid or unknown, 2 unreadable or malformed input.")
    p.add_argument("history", metavar="HISTORY", help="history file (.jsonl, .jsonl.gz or columnar .nch)")
    p.add_argument("--windows", metavar="FILE.json",
                   help='fault windows: [{"kind": str, "start": s, "end": s|null, "targets": [node]}] '
                        '(or {"windows": [...]}), seconds on the history clock')
    p.add_argument("--bucket-ms", type=float, default=100.0, metavar="N",
                   help="availability series bucket width in ms (default 100)")
    p.add_argument("--max-outage", type=float, metavar="S",
                   help="availability is invalid when the longest global outage exceeds S seconds")
    p.add_argument("--gcp-loss-window", type=float, metavar="S",
                   help="NDB: lost writes acknowledged within S seconds before --cluster-crash-at are "
                        "reported as explained_by_gcp (the engine's promise, e.g. 2.0)")
    p.add_argument("--cluster-crash-at", type=float, action="append", metavar="T",
                   help="run time of a whole-cluster crash (repeatable)")
    t = p.add_argument_group(
        "transactional histories (Jepsen/Elle's format: a JSON array, JSON lines or EDN of "
        "{index, process, type, f, value} ops; docs/transactions.md)")
    t.add_argument("--model", choices=("list-append", "rw-register"),
                   help="judge HISTORY as transactions of this model with the anomaly checker")
    t.add_argument("--consistency-models", metavar="M,...", default="strict-serializable",
                   help="models the history must satisfy (default strict-serializable)")
    t.add_argument("--anomalies", metavar="A,...", default="",
                   help="anomalies that fail the check whatever the models allow, e.g. G1a,internal")
    t.add_argument("--linearizable-keys", action="store_true",
                   help="rw-register: a key's version order follows real time")
    t.add_argument("--sequential-keys", action="store_true",
                   help="rw-register: a key's version order follows each process's order")
    t.add_argument("--wfr-keys", action="store_true",
                   help="rw-register: within a transaction, a write follows its read of the key")
    t.add_argument("--cycle-search-timeout", type=float, default=1000.0, metavar="MS",
                   help="cycle search budget per strongly connected component (default 1000 ms)")
    t.add_argument("--directory", metavar="DIR",
                   help="write each anomaly's explanation (<type>.txt) and cycle picture (<type>-N.svg) here")
    p.add_argument("--compact", action="store_true", help="print the JSON on one line")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary on stderr")
    p.set_defaults(func=run)


def load_windows(path: str):
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as e:
        raise UsageError(f"{path}: cannot open: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        line = getattr(e, "lineno", None)
        raise UsageError(f"{path}:{line or 1}: not JSON: {e}") from None
    try:
        return [w.to_json() for w in parse_windows(data)]
    except WindowError as e:
        raise UsageError(f"{path}: {e}") from None


def run(args) -> int:
    if args.model:
        return run_txn(args)

    if not args.bucket_ms > 0:
        raise UsageError("--bucket-ms must be positive")
    if (args.gcp_loss_window is None) != (args.cluster_crash_at is None):
        raise UsageError("--gcp-loss-window and --cluster-crash-at go together")
    windows = load_windows(args.windows) if args.windows else None
    options = {"bucket_ms": args.bucket_ms}
    if args.max_outage is not None:
        options["max_outage_s"] = args.max_outage
    if args.gcp_loss_window is not None:
        options["gcp_loss_window_s"] = args.gcp_loss_window
        options["cluster_crash_at"] = args.cluster_crash_at
    try:
        history = History.read(args.history)
        if history.run is not None and windows is None:
            # a scenario's saved run: its recorded windows, options and expectation, as live
            verdict = check_run(history, options)
        else:
            verdict = check_history(history, windows, options)
    except HistoryFormatError as e:
        raise UsageError(str(e)) from None
    except ValueError as e:  # options or windows the checkers cannot use
        raise UsageError(f"{args.history}: {e}") from None
    out = json.dumps(verdict, separators=(",", ":")) if args.compact else pretty(verdict)
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
    if not args.quiet:
        word = {True: "VALID", False: "INVALID"}.get(verdict["valid"], "UNKNOWN")
        print(f"ndbchaos check: {args.history}: {word} ({verdict['ops']} ops, workload {verdict['workload']})",
              file=sys.stderr)
        for line in verdict["summary"]:
            print(f"  {line}", file=sys.stderr)
    return 0 if verdict["valid"] is True else 1
