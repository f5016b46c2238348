"""ndbchaos layout: print the config.ini (or compose file, or my.cnf) of an NDB layout, or of the
twin of a user's cluster (--ndb-config), starting nothing."""

from __future__ import annotations

import sys

from ..engines.ndb import NdbEngine
from ..engines.ndb.layout import TWIN_PREFIX
from ..engines.ndb.twin import MYCNF_SEP
from ..errors import UsageError
from ..vocabulary import ClusterOptions
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("layout", help=HELP["layout"],
                       description="Prints the config.ini of an NDB layout: a named one (default, small) or a "
                                   "spec such as nodegroups=3,replicas=2,sql=2,mgm=2,spare=0 (keys optional: "
                                   "nodegroups 1, replicas 2, sql 2, mgm 2, spare 0). The files are those "
                                   "`pytest --ndb-layout SPEC` starts, for NDBCHAOS_NDB_SUBNET or the layout's "
                                   "own subnet. With --ndb-config FILE, the twin of the cluster that config.ini "
                                   "describes: its node ids, node groups, replicas, arbitration and failure "
                                   "detection settings on containers, what was changed and why in its header. "
                                   "Nothing is started or written. An impossible spec or file: one line, exit 2.")
    p.add_argument("spec", nargs="?", help="default, small, or nodegroups=N,replicas=R,sql=S,mgm=M,spare=K")
    p.add_argument("--ndb-config", metavar="FILE", help="the config.ini of your cluster: print its twin's files")
    p.add_argument("--ndb-mycnf", metavar="FILE", help="with --ndb-config: the my.cnf of your SQL nodes (the twin's "
                                                        "my.cnf keeps the options that decide what clients see)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--compose", action="store_true", help="print the compose file instead")
    g.add_argument("--mycnf", action="store_true", help="print my.cnf instead")
    p.set_defaults(func=run)


def run(args) -> int:
    if bool(args.spec) == bool(args.ndb_config):
        raise UsageError("give a layout (SPEC) or --ndb-config FILE, one of them")
    if args.ndb_mycnf and not args.ndb_config:
        raise UsageError("--ndb-mycnf needs --ndb-config (the my.cnf of the cluster that config.ini describes)")
    which = "compose" if args.compose else "my.cnf" if args.mycnf else "config.ini"
    layout = args.spec or f"{TWIN_PREFIX}{args.ndb_config}" + (f"{MYCNF_SEP}{args.ndb_mycnf}" if args.ndb_mycnf else "")
    sys.stdout.write(NdbEngine().layout_text(ClusterOptions(ndb_layout=layout), which))
    return 0
