"""ndbchaos baseline: a layout's steady throughput, latency and resources, with no fault
(``ndbchaos.bench.steady``)."""

from __future__ import annotations

import json
import os
import signal
import time

from ..bench.steady import WORKLOADS, SteadyConfig, host_line, measure
from ..engines import get_engine
from ..engines.choose import resolve_engine
from ..engines.ndb.layout import TWIN_PREFIX
from ..engines.ndb.twin import MYCNF_SEP
from ..errors import UsageError
from ..faults.state import attach
from ..runtimes import factory
from . import HELP
from ..vocabulary import ClusterOptions


def register(sub) -> None:
    p = sub.add_parser(
        "baseline", help=HELP["baseline"],
        description="Starts a cluster (an NDB layout spec, the twin of your config.ini, or Galera), or reuses "
                    "--project ID, and measures each workload with no fault: the scenarios' load (processes x "
                    "connections over every SQL node) for a window after a warm-up. Prints per workload the ok "
                    "operations/s in all and per SQL node, failed operations, latency p50/p95/p99/max, and the "
                    "memory and CPU of each role's containers and of the clients. Workloads: fakebook (the "
                    "published read mix, no writes) and pk_update (the update by primary key). The cluster is "
                    "removed at the end unless --keep or --project.")
    p.add_argument("--engine", default="ndb", choices=("ndb", "galera"), help="engine to start (default ndb)")
    p.add_argument("--ndb-layout", metavar="SPEC", help="NDB layout: default, small or nodegroups=N,replicas=R,...")
    p.add_argument("--ndb-config", metavar="FILE", help="the config.ini of your cluster: measure its twin")
    p.add_argument("--ndb-mycnf", metavar="FILE", help="with --ndb-config: the my.cnf of your SQL nodes")
    p.add_argument("--project", help="measure this running cluster (kept afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the cluster it started")
    p.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma list of {', '.join(WORKLOADS)}")
    p.add_argument("--seconds", type=float, default=30.0, help="measured window per workload (default 30)")
    p.add_argument("--warmup", type=float, default=5.0, help="seconds of load before each window (default 5)")
    p.add_argument("--processes", type=int, default=2, help="client worker processes (default 2, as scenarios)")
    p.add_argument("--connections", type=int, default=2, help="connections per process (default 2, as scenarios)")
    p.add_argument("--driver", default="python", choices=("python", "native"),
                   help="client: python (the scenarios' default) or native (C loop; falls back to python)")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    p.set_defaults(func=run)


def _layout(args) -> str | None:
    if args.ndb_layout and args.ndb_config:
        raise UsageError("--ndb-layout and --ndb-config: give one of them")
    if args.ndb_mycnf and not args.ndb_config:
        raise UsageError("--ndb-mycnf needs --ndb-config (the my.cnf of the cluster that config.ini describes)")
    if (args.ndb_layout or args.ndb_config) and (args.engine != "ndb" or args.project):
        raise UsageError("a layout is for an NDB cluster this command starts (--engine ndb, no --project)")
    if args.ndb_config:
        return (TWIN_PREFIX + os.path.abspath(args.ndb_config)
                + (MYCNF_SEP + os.path.abspath(args.ndb_mycnf) if args.ndb_mycnf else ""))
    return args.ndb_layout


def _sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run(args) -> int:
    cfg = SteadyConfig(tuple(w.strip() for w in args.workloads.split(",") if w.strip()), args.seconds, args.warmup,
                       args.processes, args.connections, args.driver)
    layout = _layout(args)
    if args.project:
        cluster = attach(args.project)
        cluster.wait_healthy(60)  # every node up and serving before a window opens
        print(f"baseline: reusing {cluster.engine.name} cluster {cluster.project}", flush=True)
    else:
        options = ClusterOptions(keep=bool(args.keep), ndb_layout=layout or None)
        if layout:
            get_engine("ndb").layout_text(options, "config.ini")  # a bad spec or file: one line, nothing started
        name, reason = resolve_engine(args.engine, options)
        cluster = factory.compose(get_engine(name), options)
        print(f"baseline: starting {name} ({reason}), layout {layout or 'default'}, project {cluster.project}",
              flush=True)
    try:
        old = signal.signal(signal.SIGTERM, _sigterm)
    except ValueError:  # not the main thread
        old = None
    results = []
    try:
        if not args.project:
            t0 = time.monotonic()
            cluster.up()
            print(f"baseline: cluster ready in {time.monotonic() - t0:.1f} s", flush=True)
        nodes = cluster.topology.nodes
        print("baseline: " + ", ".join(f"{role} {sum(1 for n in nodes if n.role == role)}"
                                       for role in sorted({n.role for n in nodes})), flush=True)
        print(host_line(), flush=True)
        for w in cfg.workloads:
            s = measure(cluster, w, cfg)
            results.append(s)
            for line in s.lines():
                print(line, flush=True)
        print(host_line(), flush=True)
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
        if not args.project and not args.keep:
            cluster.down()
        elif not args.project:
            print(f"baseline: cluster kept: project {cluster.project}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"engine": cluster.engine.name, "layout": layout or "default",
                       "ready_s": getattr(cluster, "ready_seconds", None),
                       "results": [s.to_dict() for s in results]}, fh, indent=2)
    return 0
