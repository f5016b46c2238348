"""ndbchaos layout: print the config.ini (or compose file, or my.cnf) of an NDB layout, starting nothing."""

from __future__ import annotations

import sys

from ..engines.ndb import NdbEngine
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("layout", help=HELP["layout"],
                       description="Prints the config.ini of an NDB layout: a named one (default, small) or a "
                                   "spec such as nodegroups=3,replicas=2,sql=2,mgm=2,spare=0 (keys optional: "
                                   "nodegroups 1, replicas 2, sql 2, mgm 2, spare 0). The files are those "
                                   "`pytest --ndb-layout SPEC` starts, for NDBCHAOS_NDB_SUBNET or the layout's "
                                   "own subnet. Nothing is started or written. An impossible spec: one line, exit 2.")
    p.add_argument("spec", help="default, small, or nodegroups=N,replicas=R,sql=S,mgm=M,spare=K")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--compose", action="store_true", help="print the compose file instead")
    g.add_argument("--mycnf", action="store_true", help="print my.cnf instead")
    p.set_defaults(func=run)


def run(args) -> int:
    which = "compose" if args.compose else "my.cnf" if args.mycnf else "config.ini"
    sys.stdout.write(NdbEngine().layout_text({"ndb_layout": args.spec}, which))
    return 0
