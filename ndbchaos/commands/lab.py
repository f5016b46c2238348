"""ndbchaos lab: the inventory lab (hosts running sshd, a MySQL Cluster started on them over ssh)."""

from __future__ import annotations

from ..runtimes.inventory import lab
from . import HELP


def register(sub) -> None:
    p = sub.add_parser("lab", help=HELP["lab"],
                       description="up: build the ndbhost image if missing, start eight hosts running sshd on "
                                   "10.213.78.0/24 and start the cluster of the inventory on them over ssh "
                                   "(needs NDBCHAOS_NDB_DIST). down: remove the hosts. See docs/inventory.md.")
    p.add_argument("action", choices=("up", "down"))
    p.add_argument("--inventory", default=None, metavar="FILE",
                   help="the inventory whose start commands start the cluster (default: the lab's, shipped in the "
                        "package: ndbchaos/data/inventory/hosts.yml; examples/inventory/hosts.yml in a checkout)")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.action == "down":
        removed = lab.down()
        print("\n".join(f"removed {r}" for r in removed) or "nothing to remove")
        return 0
    try:
        lab.up(args.inventory or lab.EXAMPLE)
    except BaseException:
        print("ndbchaos lab: start failed; the hosts are left up for a look (`ndbchaos lab down` removes them)")
        raise
    return 0
