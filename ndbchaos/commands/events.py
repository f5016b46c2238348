"""ndbchaos events: print the recognised events of an engine log, one JSON object per line."""

from __future__ import annotations

import json
import sys

from .. import events
from ..errors import UsageError
from . import HELP


def register(sub) -> None:
    p = sub.add_parser(
        "events", help=HELP["events"],
        description="Reads a log file and prints one JSON object per recognised event: "
                    '{"time", "reporter", "node", "kind", ...}. --engine ndb reads the ndb_mgmd cluster '
                    "log (ndb_<id>_cluster.log), a data node log (ndb_<id>_out.log or the container "
                    "output) or error log; --engine galera reads a mariadbd error log. Unrecognised "
                    "lines are skipped; with --all, lines the reader deliberately ignores come as kind 'ignored' "
                    "(with their group) and unknown ones as kind 'other'. FILE '-' reads standard input.")
    p.add_argument("file", metavar="FILE", help="the log file ('-' for standard input)")
    p.add_argument("--engine", default="ndb", help="ndb (default) or galera")
    p.add_argument("--all", action="store_true",
                   help="also print ignored lines (kind 'ignored', with their group) and unknown ones (kind 'other')")
    p.add_argument("--reporter", type=int, default=None,
                   help="NDB node id whose own log this is (data node logs carry no 'Node N:' prefix)")
    p.set_defaults(func=run)


def run(args) -> int:

    engine = (args.engine or "").strip().lower()
    if engine not in events.ENGINES:
        raise UsageError(f"unknown engine {args.engine!r} (expected ndb or galera)")
    if args.file == "-":
        stream = events.parse_lines(sys.stdin, engine, reporter=args.reporter, keep_other=args.all)
    else:
        stream = events.parse_file(args.file, engine, reporter=args.reporter, keep_other=args.all)
    out = sys.stdout
    for ev in stream:
        out.write(json.dumps(ev, ensure_ascii=False) + "\n")
    out.flush()
    return 0
