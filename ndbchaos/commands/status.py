"""ndbchaos status: node states and the faults in effect in a running cluster (or, without
--project, the projects on this host)."""

from __future__ import annotations

import json
import sys

from ..runtimes import docker
from ..errors import NdbChaosError, UsageError
from ..faults import state
from ..runtimes.docker import docker_client
from ..settings import current
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("status", help=HELP["status"],
                       description="Shows each node's container and engine state and every fault "
                                   "in effect (our iptables chains, netem qdiscs, paused or stopped "
                                   "containers, toxics, leftover helpers). Without --project: the "
                                   "projects present on this host.")
    p.add_argument("--project", default=None,
                   help="the run's project id; default $NDBCHAOS_PROJECT")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-netns", action="store_true",
                   help="skip looking inside network namespaces (no helper containers; faster)")
    p.set_defaults(func=run)


def run(args) -> int:
    args.project = args.project or current().project  # the option over NDBCHAOS_PROJECT
    docker_client()
    if not args.project:
        ps = state.projects()
        if args.json:
            print(json.dumps(ps, indent=2))
        elif not ps:
            print("no ndbchaos projects on this host")
        else:
            print(f"{'PROJECT':<26} {'ENGINE':<8} {'CONTAINERS':>10} {'RUNNING':>8} {'HELPERS':>8}")
            for name, p in sorted(ps.items()):
                print(f"{name:<26} {p['engine']:<8} {p['containers']:>10} {p['running']:>8} {p['helpers']:>8}")
        return 0
    try:
        cluster = state.attach(args.project)
        st = cluster.status()
    except UsageError:
        raise
    except NdbChaosError as e:
        return _traces_only(args, str(e))
    faults = state.inspect(cluster, netns_rules=not args.no_netns)
    if args.json:
        print(json.dumps({"project": args.project, "engine": cluster.engine.name, "status": st.to_dict(),
                          "faults": faults}, indent=2, default=str))
        return 0
    print(f"project {args.project} (engine {cluster.engine.name}): {'healthy' if st.healthy else 'NOT healthy'}")
    print(f"  {'NODE':<10} {'ROLE':<11} {'CONTAINER':<10} {'STATE':<34} HEALTHY")
    for n in st.nodes:
        print(f"  {n.node:<10} {n.role:<11} {n.container:<10} {n.state:<34} {'yes' if n.healthy else 'no'}")
    if st.summary:
        print("  " + ", ".join(f"{k}={v}" for k, v in st.summary.items()))
    for pr in st.problems:
        print(f"  problem: {pr}")
    if faults:
        print("active faults:")
        for f in faults:
            print(f"  {f['kind']:<11} {f['node']:<10} {f['detail']}")
    else:
        print("active faults: none")
    return 0


def _traces_only(args, why: str) -> int:
    """A project whose cluster cannot be attached to or asked (a run killed midway, part of it
    gone or stuck): what its containers and disks show by themselves; exit 1 with the reason."""
    faults, _ = state.traces(args.project)
    containers = docker.project_containers(args.project)
    if not containers and not faults:
        raise NdbChaosError(why)
    if args.json:
        print(json.dumps({"project": args.project, "status": None, "error": why,
                          "containers": {c.name: c.status for c in containers}, "faults": faults}, indent=2))
    else:
        print(f"project {args.project}: its cluster state cannot be read; what its containers and disks show")
        for c in containers:
            print(f"  {c.name:<40} {c.status}")
        print("active faults:" + ("" if faults else " none found"))
        for f in faults:
            print(f"  {f['kind']:<11} {f['node']:<10} {f['detail']}")
    print(f"ndbchaos status: {why}", file=sys.stderr)
    return 1
