"""The ``ndbchaos`` command.

Subcommands live in ``ndbchaos/commands/<name>.py``; each module defines ``register(subparsers)``
which adds its parser and sets ``func`` (returning an exit code). Errors of the framework
(``NdbChaosError``) print one line and exit non-zero; there is never a traceback for bad input.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import __version__, commands
from .errors import NdbChaosError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ndbchaos", description="Chaos and availability tests for MySQL NDB Cluster")
    p.add_argument("--version", action="version", version=f"ndbchaos {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if mod.name.startswith("_"):
            continue
        importlib.import_module(f"{commands.__name__}.{mod.name}").register(sub)
    return p




def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # one line, as for any other bad input
        who = " ".join(filter(None, ("ndbchaos", getattr(args, "command", None))))
        print(f"{who}: unrecognized arguments: {' '.join(extra)}", file=sys.stderr)
        return 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except NdbChaosError as e:
        print(f"ndbchaos {args.command}: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"ndbchaos {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
