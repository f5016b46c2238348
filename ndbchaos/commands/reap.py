"""ndbchaos reap: remove what a crashed or killed run left behind, by label only."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("reap", help="remove containers and networks a killed run left behind",
                       description="Removes every container and network labelled ndbchaos.project "
                                   "(or only those of --project ID) and says what it removed. "
                                   "Nothing without the label is touched.")
    p.add_argument("--project", help="only this run's project id")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..cluster import reap
    from ..runtime import docker_client
    docker_client()
    removed = reap(args.project)
    for r in removed:
        print(f"removed {r}")
    if not removed:
        print("nothing to remove" + (f" for project {args.project}" if args.project else ""))
    return 0
