"""ndbchaos plan RUN...: what a saved run did, in order, and the seed that plays it again.

    ndbchaos plan reports/allure-results          # every run a session left
    ndbchaos plan soak-run.jsonl                  # a soak's schedule as it was played

For a soak: its menu and every fault of its schedule (when it began, its targets, pause, hold and
seed); for an operation: its steps and their outcomes; for any run: its phases and fault windows.
The plan of a run still to come is ``pytest --dry-run`` (docs/staging.md). Exit 0; 2 on a RUN that
cannot be read, one line naming it.
"""

from __future__ import annotations

from ..errors import UsageError, shown
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("plan", help=HELP["plan"],
                       description="Prints what each saved run did, in order (a soak's schedule as played, an "
                                   "operation's steps, the phases and fault windows) and the seed that plays it "
                                   "again. Exit 0, 2 unreadable input.")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="run.jsonl / run.nch, a folder of them, or an Allure results folder")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..dryrun import record_plan  # the declarations' modules: imported when the command runs
    from ..gate.results import load_runs
    from ..record import RunRecord

    runs = [r for path in args.runs for r in load_runs(path)]
    for r in runs:
        try:
            record = RunRecord.from_json(r.history.run)
        except ValueError as e:
            raise UsageError(f"{shown(r.source or r.test_id)}: not a run record: {e}") from None
        print("\n".join(record_plan(record)) + "\n")
    return 0
