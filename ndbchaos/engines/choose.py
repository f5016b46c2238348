"""Which engine a session runs (``--engine ndb|galera|auto``): NDB when its image is there or can
be built, else Galera. Its own module: it looks for NDB's image, so it imports the NDB engine,
which the registry (``ndbchaos.engines``) never does by itself.
"""

from __future__ import annotations

from ..runtimes import docker
from ..errors import DockerUnavailable, NdbChaosError, UsageError
from ..vocabulary import ClusterOptions
from . import ENGINE_NAMES
from .ndb import image as ndb_image


def resolve_engine(name: str, options: ClusterOptions | None = None) -> tuple[str, str]:
    """(engine name, human reason) for ``--engine ndb|galera|auto``.

    NDB is available when its image is present locally (an explicit NDBCHAOS_NDB_IMAGE, or an
    official image) or can be built from NDBCHAOS_NDB_DIST (``ndbchaos.engines.ndb.image.choose``).
    ``auto`` picks ndb then and galera otherwise, and says why. ``ndb`` without an image raises
    NdbChaosError with one line on how to get one; a distribution that cannot be used raises
    with the reason under ``ndb`` and ``auto`` alike (it was asked for). Nothing is pulled here.
    """
    choice = (name or "auto").strip().lower()
    if choice not in ENGINE_NAMES:
        raise UsageError(f"unknown engine {name!r} (expected ndb, galera or auto)")
    if choice == "galera":
        return "galera", "galera requested (--engine galera)"
    ok, why = docker.docker_available()
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
