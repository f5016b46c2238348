"""Engines map roles to containers and supply what is engine specific."""

from __future__ import annotations

import os

from ..errors import DockerUnavailable, NdbChaosError, UsageError

ENGINE_NAMES = ("ndb", "galera", "auto")


def get_engine(name: str):
    if name == "galera":
        from .galera import GaleraEngine
        return GaleraEngine()
    if name == "ndb":
        from .ndb import NdbEngine
        return NdbEngine()
    raise UsageError(f"unknown engine {name!r} (expected ndb, galera or auto)")


def ndb_image(options: dict | None = None) -> str:
    from .ndb import DEFAULT_IMAGE
    return (options or {}).get("ndb_image") or os.environ.get("NDBCHAOS_NDB_IMAGE") or DEFAULT_IMAGE


def resolve_engine(name: str, options: dict | None = None) -> tuple[str, str]:
    """(engine name, human reason) for ``--engine ndb|galera|auto``.

    ``auto`` picks ndb when its image is present locally and galera otherwise, and says why.
    ``ndb`` without the image raises NdbChaosError with one line on how to get it. Nothing is
    pulled or built here.
    """
    from .. import runtime
    from .ndb import missing_image_message

    choice = (name or "auto").strip().lower()
    if choice not in ENGINE_NAMES:
        raise UsageError(f"unknown engine {name!r} (expected ndb, galera or auto)")
    if choice == "galera":
        return "galera", "galera requested (--engine galera)"
    image = ndb_image(options)
    present = runtime.image_present(image)
    if choice == "ndb":
        if not present:
            ok, why = runtime.docker_available()
            if not ok:
                raise DockerUnavailable(why)
            raise NdbChaosError(missing_image_message(image))
        return "ndb", f"ndb requested (--engine ndb); image {image} is present locally"
    if present:
        return "ndb", f"auto: NDB image {image} is present locally"
    ok, why = runtime.docker_available()
    if not ok:
        return "galera", f"auto: cannot look for the NDB image ({why}); using galera"
    return "galera", (f"auto: NDB image {image} not present locally (docker pull {image} or set "
                      f"NDBCHAOS_NDB_IMAGE to use NDB); using galera")


__all__ = ["ENGINE_NAMES", "get_engine", "ndb_image", "resolve_engine"]
