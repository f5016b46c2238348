"""The ``ndbchaos`` command.

Subcommands live in ``ndbchaos/commands/<name>.py``; each module defines ``register(subparsers)``
which adds its parser and sets ``func`` (returning an exit code). Only the module of the command
being run is imported (each brings what its work needs, some of it heavy); the others are listed
by their line in ``ndbchaos.commands.HELP``. Errors of the framework (``NdbChaosError``) print one
line and exit non-zero; there is never a traceback for bad input.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import __version__, commands
from .errors import NdbChaosError


def command_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``ndbchaos``; the full parser of the command ``argv`` names (its module
    imported, by name, as the registry of commands), a line of help for each other one."""
    p = argparse.ArgumentParser(prog="ndbchaos", description="Chaos and availability tests for MySQL NDB Cluster")
    p.add_argument("--version", action="version", version=f"ndbchaos {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    names = command_names()
    args = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in args if not a.startswith("-")), None)
    for name in names:
        if name == chosen:
            importlib.import_module(f"{commands.__name__}.{name}").register(sub)
        else:
            sub.add_parser(name, help=commands.HELP[name])
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(argv)
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
