"""ndbchaos reap: remove what a crashed or killed run left behind, by label only."""

from __future__ import annotations

from ..cluster import reap
from ..inventory import load_inventory, reap_inventory
from ..runtime import docker_client
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("reap", help=HELP["reap"],
                       description="Removes every container and network labelled ndbchaos.project "
                                   "(or only those of --project ID), and the bounded data disks of projects "
                                   "with no container left (--data-disk), and says what it removed. "
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
    removed = reap(args.project)
    for r in removed:
        print(f"removed {r}")
    if not removed:
        print("nothing to remove" + (f" for project {args.project}" if args.project else ""))
    return 0
