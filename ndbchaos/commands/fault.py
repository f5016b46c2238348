"""ndbchaos fault: apply a fault to a running cluster and leave it, for exploration.

    ndbchaos fault isolate data2 --project X     # iptables in data2's namespace; stays
    ndbchaos status --project X                  # node states and the faults in effect
    ndbchaos fault heal --project X              # remove every fault trace, restart dead nodes

Targets are node names or role selectors (see ``--help`` of a kind). The fault is verified
(probed) before the command returns; then it is left in place: nothing is remembered in a file,
``fault heal`` finds every trace (our iptables chains, paused or stopped containers, toxics, the
faults left in a data node's faultfs layer and a full disk's ballast).

    ndbchaos fault slow-disk data3 --ms 500 --project X   # each write and fsync of data3 0.5 s late
"""

from __future__ import annotations

import argparse
import json
import sys

from .. import holds
from ..errors import NdbChaosError, UsageError
from ..faults import disk as DK
from ..engines.ndb.faults import errorinsert as EI
from ..faults import netem as NE
from ..faults import network as N
from ..faults import node as ND
from ..faults import state
from ..faults import storage as ST
from ..faults import targets as TG
from ..faults import toxiproxy as TX
from ..faults.base import FaultUnsupported
from ..settings import current
from . import HELP

KINDS = {}


def _kind(name, help, **kw):
    def deco(fn):
        KINDS[name] = (help, fn, kw)
        return fn
    return deco


def register(sub) -> None:
    p = sub.add_parser("fault", help=HELP["fault"],
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--project", default=None,
                        help="the run's project id (label ndbchaos.project); default $NDBCHAOS_PROJECT")
    common.add_argument("--json", action="store_true", help="print the fault window as JSON")
    kinds = p.add_subparsers(dest="kind", metavar="KIND")
    tgt_help = "target: " + TG.SPEC_HELP

    def add(name, help):
        return kinds.add_parser(name, help=help, parents=[common], description=help)

    k = add("kill", "kill a node's process (SIGKILL unless --signal)")
    k.add_argument("target", help=tgt_help)
    k.add_argument("--signal", default="SIGKILL")
    k = add("stop", "graceful stop (SIGTERM, then wait)")
    k.add_argument("target", help=tgt_help)
    k.add_argument("--timeout", type=float, default=30)
    k = add("pause", "freeze a node (docker pause)")
    k.add_argument("target", help=tgt_help)
    k = add("restart", "restart a node (graceful; --crash: SIGKILL then start)")
    k.add_argument("target", help=tgt_help)
    k.add_argument("--crash", action="store_true")
    k = add("kill-recovering", "kill, restart, kill again while it rejoins")
    k.add_argument("target", help=tgt_help)
    k.add_argument("--delay", type=float, default=None, help="kill again this many seconds after the restart")
    k = add("isolate", "cut one node off from every other member")
    k.add_argument("target", help=tgt_help)
    k = add("partition", "partition into components: a,b c,d (unlisted members untouched)")
    k.add_argument("components", nargs="+", help="comma-separated node names, one argument per component")
    for name, help in (("halves", "first half of the members against the second"),
                       ("bridge", "two halves and a node in the middle that sees both"),
                       ("ring", "majorities ring: each node sees a different majority")):
        k = add(name, help)
        k.add_argument("--seed", type=int, default=None, help="shuffle the members with this seed first")
    k = add("one-way", "SRC cannot reach DST; DST still reaches SRC")
    k.add_argument("src")
    k.add_argument("dst")
    k.add_argument("--packets", action="store_true",
                   help="Jepsen one-sided grudge (drop every packet) instead of connections")
    k = add("role-split", "cut every link between two role sets, e.g. `arbitrator+mgm data` or `sql data`")
    k.add_argument("roles_a")
    k.add_argument("roles_b")
    k = add("nodegroup-split", "split every node group across two sides")
    k.add_argument("--arbitrator", choices=("a", "b", "none", "both"), default="a")
    k.add_argument("--others", choices=("split", "a", "b", "both"), default="split")
    k = add("disconnect", "unplug a node from its network (clients lose it too)")
    k.add_argument("target", help=tgt_help)
    k = add("netem", "tc netem on a node's egress (needs sch_netem)")
    k.add_argument("target", help=tgt_help)
    k.add_argument("--delay-ms", type=float)
    k.add_argument("--jitter-ms", type=float, default=0)
    k.add_argument("--loss-pct", type=float)
    k.add_argument("--duplicate-pct", type=float)
    k.add_argument("--corrupt-pct", type=float)
    for name, help, args in (
        ("latency", "client path: delay data through the proxy", (("--ms", int, 300), ("--jitter-ms", int, 0))),
        ("bandwidth", "client path: limit to KB/s", (("--rate-kb", int, 16),)),
        ("timeout", "client path: stop data (and close after --ms; 0 = never)", (("--ms", int, 0),)),
        ("reset-peer", "client path: TCP RST after --ms", (("--ms", int, 0),)),
        ("slicer", "client path: slice data into small pieces",
         (("--average-size", int, 8), ("--delay-us", int, 2000))),
        ("proxy-down", "client path: take the proxy down", ()),
    ):
        k = add(name, help)
        k.add_argument("target", nargs="?", default="sql", help=tgt_help + " (default: every SQL node)")
        k.add_argument("--upstream", action="store_true", help="toxic on the client->server stream")
        for flag, typ, dflt in args:
            k.add_argument(flag, type=typ, default=dflt)
    k = add("slow-disk", "delay a data node's file I/O in the faultfs layer over its disk (--data-disk)")
    k.add_argument("target", help=tgt_help)
    k.add_argument("--ms", type=float, required=True, help="the delay of each call (a long one is a stall)")
    k.add_argument("--calls", default="write,fsync", help="calls to delay: open,read,write,fsync (default write,fsync)")
    k = add("failing-io", "fail a data node's file I/O in the faultfs layer over its disk (--data-disk)")
    k.add_argument("target", help=tgt_help)
    k.add_argument("--call", default="write", choices=("open", "read", "write", "fsync"))
    k.add_argument("--errno", default="EIO", choices=("EIO", "ENOSPC", "EROFS", "EDQUOT"))
    k.add_argument("--p", type=float, default=1.0, help="probability each call fails (default 1)")
    k.add_argument("--seed", type=int, default=0)
    k = add("disk-full", "fill a data node's own disk (--data-disk), leaving --free-mb")
    k.add_argument("target", help=tgt_help)
    k.add_argument("--free-mb", type=int, default=0)
    k = add("error-insert", "NDB's own failure point: ndb_mgm '<id> ERROR CODE' on a data node, verified from its "
                            "log (needs data nodes built with error insertion)")
    k.add_argument("code", help="the error-insert code, e.g. 9999 (crash at once), 7003 (the master, in a global "
                                "checkpoint's save), 5048 (an update's commit)")
    k.add_argument("--node", required=True, help=tgt_help)
    k.add_argument("--extra", type=int, default=None, help="the code's extra value (e.g. a table id for 5048)")
    k.add_argument("--also", action="append", default=[], metavar="CODE[:EXTRA]",
                   help="another code armed first on the same node (repeatable), e.g. --also 8057")
    k.add_argument("--effect", choices=EI.EFFECTS, default=None,
                   help="what the code does (default: the catalogue's word for a known code, else crash): a "
                        "crash is verified by the node's error log, a stall or fail by its NDB_TAMPER line")
    how = k.add_mutually_exclusive_group()
    how.add_argument("--in-restart", action="store_true",
                     help="hold the node in 'not started' (RESTART -n -a), insert, START: it fires in the restart")
    how.add_argument("--during-backup", action="store_true", help="insert, then START BACKUP: it fires in the backup")
    how.add_argument("--trigger", choices=("lcp",), default=None, help="lcp: start a local checkpoint (DUMP 7099)")
    k.add_argument("--fire-timeout", type=float, default=None, help="seconds a crash code may take to fire (60)")
    add("heal", "remove every fault of the project and restart nodes that are down")
    p.set_defaults(func=run, _parser=p)


def _build(args, cluster):

    k = args.kind
    t = getattr(args, "target", None)
    if k == "kill":
        return ND.Kill(cluster, t, signal=args.signal, backend="native")
    if k == "stop":
        return ND.Stop(cluster, t, timeout=args.timeout)
    if k == "pause":
        return ND.Pause(cluster, t, backend="native")
    if k == "restart":
        return ND.Restart(cluster, t, graceful=not args.crash)
    if k == "kill-recovering":
        return ND.KillDuringRecovery(cluster, t, delay=args.delay)
    if k == "isolate":
        return N.Isolate(cluster, t)
    if k == "partition":
        return N.Components(cluster, [c.split(",") for c in args.components])
    if k == "halves":
        return N.Halves(cluster, seed=args.seed)
    if k == "bridge":
        return N.Bridge(cluster, seed=args.seed)
    if k == "ring":
        return N.MajoritiesRing(cluster, seed=args.seed)
    if k == "one-way":
        return N.OneWay(cluster, args.src, args.dst, mode="packets" if args.packets else "connections")
    if k == "role-split":
        return N.RoleSplit(cluster, tuple(args.roles_a.split("+")), tuple(args.roles_b.split("+")))
    if k == "nodegroup-split":
        return N.NodeGroupSplit(cluster, arbitrator=args.arbitrator, others=args.others)
    if k == "disconnect":
        return N.Disconnect(cluster, t)
    if k == "netem":
        return NE.Netem(cluster, t, delay_ms=args.delay_ms, jitter_ms=args.jitter_ms, loss_pct=args.loss_pct,
                        duplicate_pct=args.duplicate_pct, corrupt_pct=args.corrupt_pct, backend="native")
    if k == "slow-disk":
        return ST.SlowDisk(cluster, t, delay_ms=args.ms, calls=tuple(c for c in args.calls.split(",") if c))
    if k == "failing-io":
        return ST.FailingIO(cluster, t, call=args.call, errno=args.errno, p=args.p, seed=args.seed)
    if k == "disk-full":
        return DK.DiskFull(cluster, t, free_mb=args.free_mb)
    if k == "error-insert":
        return _error_insert(args, cluster)
    stream = "upstream" if getattr(args, "upstream", False) else "downstream"
    if k == "latency":
        return TX.Latency(cluster, t, latency_ms=args.ms, jitter_ms=args.jitter_ms, stream=stream)
    if k == "bandwidth":
        return TX.Bandwidth(cluster, t, rate_kb=args.rate_kb, stream=stream)
    if k == "timeout":
        return TX.Timeout(cluster, t, timeout_ms=args.ms, stream=stream)
    if k == "reset-peer":
        return TX.ResetPeer(cluster, t, timeout_ms=args.ms, stream=stream)
    if k == "slicer":
        return TX.Slicer(cluster, t, average_size=args.average_size, delay_us=args.delay_us, stream=stream)
    if k == "proxy-down":
        return TX.ProxyDown(cluster, t)
    raise AssertionError(k)  # pragma: no cover


def _error_insert(args, cluster):
    also = []
    for a in args.also:
        code, _, extra = a.partition(":")
        also.append((code, extra or None))
    kw = {"extra": args.extra, "also": also, "effect": args.effect, "fire_timeout": args.fire_timeout}
    if args.in_restart:
        return EI.ErrorInsertInRestart(cluster, args.node, args.code, **kw)
    if args.during_backup:
        return EI.ErrorInsertDuringBackup(cluster, args.node, args.code, **kw)
    return EI.ErrorInsert(cluster, args.node, args.code, trigger=args.trigger, **kw)


def _heal(project: str) -> int:
    """Heal in two steps: what holds a node is released from the host first (``holds``: no engine,
    no helper), then the cluster is attached to and every other trace removed. What could not be
    done is said in one line, exit 1."""
    done, problems = holds.release(project, remount=True)
    for line in done:
        print(line)
    try:
        cluster = state.attach(project)
    except UsageError:
        raise
    except NdbChaosError as e:
        if not done:
            raise
        problems.append(f"the rest ({e})")
        cluster = None
    lines = state.heal(cluster) if cluster is not None else []
    for line in lines:
        if line.startswith("failed: ") or " failed" in line:
            problems.append(line.removeprefix("failed: "))
        else:
            print(line)
    if problems:
        print(f"ndbchaos fault heal: could not heal {'; '.join(problems)}", file=sys.stderr)
        return 1
    if not done and not lines:
        print(f"nothing to heal in {project}")
    return 0


def run(args) -> int:
    args.project = args.project or current().project  # the option over NDBCHAOS_PROJECT
    if not args.kind:
        args._parser.print_help()
        return 2
    if not args.project:
        raise UsageError("--project ID is required (see `ndbchaos status` for the projects on this host)")
    if args.kind == "heal":
        return _heal(args.project)
    cluster = state.attach(args.project)
    try:
        fault = _build(args, cluster)
    except FaultUnsupported as e:
        print(f"ndbchaos fault {args.kind}: not possible here: {e.reason}", file=sys.stderr)
        return 3
    window = fault.inject()
    fault.detach()  # leave it in place: this command only applies
    if args.json:
        print(json.dumps(window.to_dict(), indent=2, default=str))
    else:
        print(f"{fault.kind} applied to {', '.join(window.targets)} in {args.project}")
        for ev in window.verification:
            print(f"  {ev}")
        print(f"  left in place; `ndbchaos fault heal --project {args.project}` removes it")
    return 0
