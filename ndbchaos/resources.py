"""Where the package's own files are, and the per-user caches.

Everything the library needs besides its Python modules ships inside the package, under
``ndbchaos/data/``, and is found through ``importlib.resources``: the same lookup from a checkout
(an editable install) and from an installed wheel, never a path into a checkout.

    COMPOSE_DIR      compose files and the engines' configuration files (ndb/config.ini, galera/...)
    IMAGES_DIR       image recipes: build.sh and its per-image directories (ndb/, ndbhost/)
    BUILD            IMAGES_DIR / "build.sh" (run as ``bash BUILD ...``: installed files keep no exec bit)
    LAB_INVENTORY    the inventory lab's cluster (examples/inventory/hosts.yml in a checkout links to it)
    NATIVE_SOURCE    the native client driver's C source (ndbchaos/workload/native/ndc.c)

Caches (created on use, never inside the package): ``cache_dir()`` is ``NDBCHAOS_CACHE`` or
``~/.cache/ndbchaos``; ``tools_dir()`` is ``NDBCHAOS_TOOLS`` or ``cache_dir()/tools`` (Compose,
Allure, the native driver's builds); both from the process' settings (``ndbchaos.settings``).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from .errors import NdbChaosError
from .settings import current


def package_dir() -> Path:
    """The installed ``ndbchaos`` package's directory. Docker mounts and bash run its files, so it
    must be a real directory (a wheel installs unpacked; a zipped import is refused here)."""
    root = files("ndbchaos")
    if isinstance(root, Path):
        return root
    as_path = Path(str(root))
    if as_path.is_dir():
        return as_path
    raise NdbChaosError(f"ndbchaos is imported from {root}, not a directory: install it unpacked (pip install)")


PACKAGE_DIR = package_dir()
DATA_DIR = PACKAGE_DIR / "data"
COMPOSE_DIR = DATA_DIR / "compose"
IMAGES_DIR = DATA_DIR / "images"
BUILD = IMAGES_DIR / "build.sh"
LAB_INVENTORY = DATA_DIR / "inventory" / "hosts.yml"
NATIVE_SOURCE = PACKAGE_DIR / "workload" / "native" / "ndc.c"


def cache_dir() -> Path:
    """``NDBCHAOS_CACHE``, else ``~/.cache/ndbchaos`` (logs of setup, the NDB distribution digests)."""
    return current().cache


def tools_dir() -> Path:
    """``NDBCHAOS_TOOLS``, else ``cache_dir() / "tools"``: Compose v2, Allure, native driver builds."""
    return current().tools_dir


def missing() -> list[str]:
    """The shipped files that are not where they should be (empty: the package is complete)."""
    wanted = [COMPOSE_DIR / "galera.yml", COMPOSE_DIR / "ndb.yml", COMPOSE_DIR / "toxiproxy.yml",
              COMPOSE_DIR / "ndb" / "config.ini", COMPOSE_DIR / "galera" / "galera.cnf", BUILD,
              IMAGES_DIR / "ndb" / "entrypoint.sh", IMAGES_DIR / "ndbhost" / "init.sh", LAB_INVENTORY, NATIVE_SOURCE]
    return [str(p) for p in wanted if not p.is_file()]
