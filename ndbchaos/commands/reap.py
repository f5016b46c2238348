"""ndbchaos reap: remove what a crashed or killed run left behind, by label only."""

from __future__ import annotations

import sys

from ..runtimes.compose.cluster import sweep
from ..runtimes.inventory import load_inventory, reap_inventory
from ..runtimes.docker import docker_client
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("reap", help=HELP["reap"],
                       description="Removes every container and network labelled ndbchaos.project "
                                   "(or only those of --project ID), and the bounded data disks of projects "
                                   "with no container left (--data-disk: their faultfs layers, loop devices "
                                   "and ballasts), and says what it removed. What holds a node is released "
                                   "first: faultfs layers cleared (or stopped when they do not answer), frozen "
                                   "containers thawed. What it could not remove is said in one line, exit 1. "
                                   "Nothing without the label is touched.")
    p.add_argument("--project", help="only this run's project id")
    p.add_argument("--inventory", metavar="FILE",
                   help="clean the hosts of this inventory instead: our iptables chains, guards still "
                        "waiting, frozen nodes (thawed), start scripts; nothing else on them is touched")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.inventory:
        inv = load_inventory(args.inventory)
        lines = reap_inventory(inv)
        for ln in lines:
            print(ln)
        if not lines:
            print(f"nothing left on the hosts of {args.inventory}")
        return 1 if any("unreachable" in ln for ln in lines) else 0
    docker_client()
    done, problems = sweep(args.project)
    for r in done:
        print(f"removed {r}" if r.split(" ", 1)[0] in ("container", "network", "disk") else r)
    if not done and not problems:
        print("nothing to remove" + (f" for project {args.project}" if args.project else ""))
    if problems:
        print("ndbchaos reap: could not remove " + "; ".join(problems), file=sys.stderr)
        return 1
    return 0
