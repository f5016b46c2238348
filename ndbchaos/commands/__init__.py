"""Subcommands of ``ndbchaos``: one module each, with ``register(subparsers)``."""
