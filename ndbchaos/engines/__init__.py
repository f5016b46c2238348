"""Engines map roles to containers and supply what is engine specific.

Each engine is a package (``ndb``, ``galera``) holding everything specific to it: the engine
class, its rules as pure functions, its log reader and its error classes. ``base.Engine`` is the
sum of the protocols the rest of the code calls (``protocols``: ``Lifecycle``, ``Status``,
``Recovery``, ``Rules``, ``Logs``; callers name the part they call). ``ENGINES`` is the one
registry: the rest of the code finds an engine, its log reader and its error rules here, never by
its name. Adding an engine is its package and one line of ``ENGINES``. ``choose.resolve_engine``
picks one for ``--engine auto``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache

from ..errors import UsageError


@dataclass(frozen=True)
class EngineEntry:
    name: str
    package: str  # its package: the engine class and the modules below live there
    cls: str  # the Engine class in the package
    logs: str = "logs"  # its log reader: parse_line(line, reporter, keep_other), parse_lines, KINDS
    errors: str = "errors"  # its error rules: classify(engine, errno, message) -> (class, code) | None


ENGINES: dict[str, EngineEntry] = {e.name: e for e in (
    EngineEntry("ndb", "ndbchaos.engines.ndb", "NdbEngine"),
    EngineEntry("galera", "ndbchaos.engines.galera", "GaleraEngine"),
)}
ENGINE_NAMES = (*ENGINES, "auto")


def _entry(name: str) -> EngineEntry:
    try:
        return ENGINES[name]
    except KeyError:
        raise UsageError(f"unknown engine {name!r} (expected {', '.join(ENGINE_NAMES[:-1])} or auto)") from None


def get_engine(name: str):
    e = _entry(name)
    return getattr(importlib.import_module(e.package), e.cls)()


def log_reader(name: str):
    """The engine's log reader module (``parse_line``, ``parse_lines``, ``KINDS``)."""
    e = _entry(name)
    return importlib.import_module(f"{e.package}.{e.logs}")


@lru_cache(maxsize=None)
def error_rules() -> tuple:
    """Every engine's ``classify`` (their error numbers do not overlap: asked in registry order)."""
    return tuple(importlib.import_module(f"{e.package}.{e.errors}").classify for e in ENGINES.values())


__all__ = ["ENGINES", "ENGINE_NAMES", "EngineEntry", "error_rules", "get_engine", "log_reader"]
