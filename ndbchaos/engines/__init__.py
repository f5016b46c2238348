"""Engines map roles to containers and supply what is engine specific.

Each engine is a package (``ndb``, ``galera``) holding everything specific to it: the engine
class, its rules as pure functions, its log reader and its error classes. ``base.Engine`` is the
protocol the rest of the code calls. ``ENGINES`` is the one registry: the rest of the code finds
an engine, its log reader and its error rules here, never by its name. Adding an engine is its
package and one line of ``ENGINES``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache

from ..errors import DockerUnavailable, NdbChaosError, UsageError


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


def resolve_engine(name: str, options: dict | None = None) -> tuple[str, str]:
    """(engine name, human reason) for ``--engine ndb|galera|auto``.

    NDB is available when its image is present locally (an explicit NDBCHAOS_NDB_IMAGE, or an
    official image) or can be built from NDBCHAOS_NDB_DIST (``ndbchaos.engines.ndb.image.choose``).
    ``auto`` picks ndb then and galera otherwise, and says why. ``ndb`` without an image raises
    NdbChaosError with one line on how to get one; a distribution that cannot be used raises
    with the reason under ``ndb`` and ``auto`` alike (it was asked for). Nothing is pulled here.
    """
    from .. import runtime
    from .ndb import image as ndb_image

    choice = (name or "auto").strip().lower()
    if choice not in ENGINE_NAMES:
        raise UsageError(f"unknown engine {name!r} (expected ndb, galera or auto)")
    if choice == "galera":
        return "galera", "galera requested (--engine galera)"
    ok, why = runtime.docker_available()
    if not ok:
        if choice == "ndb":
            raise DockerUnavailable(why)
        return "galera", f"auto: cannot look for the NDB image ({why}); using galera"
    img = ndb_image.choose(options)  # a distribution that cannot be used raises here, for both
    why = ndb_image.unavailable(options)
    if choice == "ndb":
        if why:
            raise NdbChaosError(why)
        return "ndb", f"ndb requested (--engine ndb); {img.reason}"
    if not why:
        return "ndb", f"auto: {img.reason}"
    return "galera", (f"auto: NDB image {img.image} not present locally (docker pull {img.image}, set "
                      f"NDBCHAOS_NDB_IMAGE, or set {ndb_image.DIST_ENV} to build one); using galera")


__all__ = ["ENGINES", "ENGINE_NAMES", "EngineEntry", "error_rules", "get_engine", "log_reader", "resolve_engine"]
