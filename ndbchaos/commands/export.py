"""ndbchaos export: a transactional run of ours in Jepsen/Elle's history format, so that Elle,
elle-cli, adya and other checkers can judge it too.

    ndbchaos export --format elle reports/.../run.jsonl -o history.edn    # EDN for Elle
    ndbchaos export --format elle run.nch -o history.json                 # one JSON array (elle-cli)
    ndbchaos export --format elle run.jsonl                               # JSON lines on stdout

Each transaction becomes an invocation (reads without values) and its completion (ok / fail /
info), ordered by the run's clock; times in ns; processes as recorded (a process that got info
never invokes again). Exit 2 for a file that is not a transactional run.
"""

from __future__ import annotations

import sys

from ..errors import UsageError
from ..history import History, HistoryFormatError
from ..txn import TxnFormatError, TxnHistory
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("export", help=HELP["export"],
                       description=__doc__.split("\n\n")[0])
    p.add_argument("run", metavar="RUN", help="a run of a transactional workload (.jsonl, .jsonl.gz or .nch)")
    p.add_argument("--format", choices=("elle",), default="elle", help="the history format (Jepsen/Elle's)")
    p.add_argument("-o", "--output", default="-", metavar="FILE",
                   help="where to write: .edn (EDN), .json (one JSON array), anything else JSON lines; "
                        "- for standard output (the default)")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        history = History.read(args.run)
        txns = TxnHistory.from_history(history, args.run)
    except (HistoryFormatError, TxnFormatError) as e:
        raise UsageError(str(e)) from None
    if not len(txns):
        raise UsageError(f"{args.run}: no transactions in it (workload {history.workload}): "
                         "export --format elle is for the list_append and rw_register workloads")
    try:
        txns.write(args.output)
    except OSError as e:
        raise UsageError(f"{args.output}: cannot write: {e.strerror or e}") from None
    if args.output != "-":
        c = txns.counts()
        print(f"ndbchaos export: {len(txns)} transactions ({c['ok']} ok, {c['fail']} fail, {c['info']} info) "
              f"-> {args.output}", file=sys.stderr)
    return 0
