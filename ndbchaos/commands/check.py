"""ndbchaos check: judge a recorded history offline and print the verdict as JSON.

    ndbchaos check run.jsonl                                  # a run of ours: every checker
    ndbchaos check --model list-append history.edn            # a transactional history, Elle's way

Exit status: 0 valid; 1 invalid or unknown (a checker could not decide, e.g. no successful read,
or the history holds nothing to judge: no operation succeeded, a ledger without an insert of
known outcome, a single transaction; a gate must not pass on that); 2 the history or windows file
is unreadable or malformed, or names an unknown workload, model or anomaly (one line on stderr
naming the file and its line, op or offset).
"""

from __future__ import annotations

from . import HELP
from ._txncheck import run_txn


def register(sub) -> None:
    p = sub.add_parser(
        "check", help=HELP["check"],
        description="Reads a history (JSON Lines, plain or gzip, or the columnar format, detected by "
                    "its first bytes; docs/history-format.md), runs every "
                    "checker relevant to its workload and prints the composed verdict as JSON on stdout "
                    "and a one-line summary per checker on stderr. A scenario's saved run (run.jsonl: "
                    "the history with its run record) is judged with its recorded fault windows, "
                    "options and expectation, which gives the run's own verdict again. A history in which "
                    "nothing could be judged is unknown, never valid. Exit 0 valid, 1 invalid or unknown, "
                    "2 unreadable or malformed input (an unknown workload, model or anomaly name included).")
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
    t.add_argument("--consistency-models", metavar="M,...", default=None,
                   help="models the history must satisfy (default strict-serializable)")
    t.add_argument("--anomalies", metavar="A,...", default=None,
                   help="anomalies that fail the check whatever the models allow, e.g. G1a,internal "
                        "(with --consistency-models \"\": only these are checked)")
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


def run(args) -> int:
    if args.model:
        return run_txn(args)
    # the checkers of our runs (a third of a second to import) only when one is judged: a
    # transactional history's check needs none of them
    from . import _runcheck
    return _runcheck.run(args)
