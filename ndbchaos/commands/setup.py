"""ndbchaos setup: what a scenario run needs on this machine (ndbchaos.provision)."""

from __future__ import annotations

import sys

from ..provision import ALLURE_VERSION, COMPOSE_VERSION, setup
from . import HELP


def register(sub) -> None:
    p = sub.add_parser(
        "setup", help=HELP["setup"],
        description="Checks each step and does only what is missing (a second run does nothing): "
                    "the Docker engine (as root on Debian/Ubuntu: apt-get install docker.io, start dockerd); "
                    f"Compose v2 (docker compose, or built once from the Go module proxy, {COMPOSE_VERSION}); "
                    "the native client driver (optional: a C compiler and libmariadb-dev); the images, from "
                    "the package's recipes (ndb too when NDBCHAOS_NDB_DIST names a MySQL Cluster "
                    f"distribution); with --allure, Allure {ALLURE_VERSION} (npm) for the HTML report. "
                    "Tools go to NDBCHAOS_TOOLS or NDBCHAOS_CACHE/tools (default ~/.cache/ndbchaos/tools), "
                    "logs to NDBCHAOS_CACHE. A step that cannot be done here is one line and exit 1.")
    p.add_argument("--allure", action="store_true", help="also install Allure 3 (npm) for the HTML report")
    p.set_defaults(func=run)

    def one_line(message: str):  # bad input: one line, exit 2, as every other failure of setup
        sys.stderr.write(f"ndbchaos setup: {message}\n")
        sys.exit(2)

    p.error = one_line


def run(args) -> int:
    return setup(allure=args.allure)
