"""Which NDB image a run uses, and building one from a binary distribution.

In order of precedence:

1. ``ndb_image`` (option) or ``NDBCHAOS_NDB_IMAGE``: exactly that image, never built here;
2. an official MySQL Cluster image present locally (``OFFICIAL``, first found);
3. ``NDBCHAOS_NDB_DIST``: a MySQL Cluster binary distribution for Linux (the official generic
   tarball ``.tar.xz``/``.tar.gz``, or an unpacked one); ``ndbchaos/data/images/build.sh ndb`` builds
   ``ndbchaos/ndb:<hash>`` from Debian packages plus the distribution's programs, with an
   entrypoint that takes the official image's commands (``ndbchaos/data/images/ndb/entrypoint.sh``),
   so ``ndbchaos/data/compose/ndb.yml`` runs unchanged on either;
4. otherwise the default official name, which is missing: NDB is not available.

The recipe script validates the distribution (exists, is an archive or folder, has the programs,
is built for this host's architecture) and says what is wrong in one line; that line is what
``NdbChaosError`` carries here. The variables are the process' settings' (``ndbchaos.settings``);
the recipe is handed the distribution explicitly.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache

from ...runtimes import docker
from ...errors import NdbChaosError
from ...resources import BUILD
from ...settings import current
from ...vocabulary import ClusterOptions


#: official images, in the order they are looked for (the Oracle registry's, then Docker Hub's
#: build of the same recipe, mysql/mysql-docker mysql-cluster/8.4)
OFFICIAL = ("container-registry.oracle.com/mysql/community-cluster:8.4", "mysql/mysql-cluster:8.4")
DEFAULT_IMAGE = OFFICIAL[0]
DIST_ENV = "NDBCHAOS_NDB_DIST"
IMAGE_ENV = "NDBCHAOS_NDB_IMAGE"


@dataclass(frozen=True)
class ImageChoice:
    image: str
    source: str  # explicit | official | dist | none
    reason: str  # one line for the person running the tests

    @property
    def buildable(self) -> bool:
        return self.source == "dist"


def missing_image_message(image: str) -> str:
    return (f"NDB image {image} not present locally; docker pull {image} (or docker load -i <saved image>), "
            f"set NDBCHAOS_NDB_IMAGE to a local image, or set {DIST_ENV} to a MySQL Cluster binary "
            f"distribution (.tar.xz/.tar.gz or folder) to build one")


def dist_path() -> str | None:
    """The settings' NDBCHAOS_NDB_DIST."""
    return current().ndb_dist


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


@lru_cache(maxsize=8)
def _dist_tag(dist: str, stamp: tuple) -> str:
    r = subprocess.run(["bash", str(BUILD), "--tag", "ndb"], capture_output=True, text=True,
                       env={**os.environ, DIST_ENV: dist})
    if r.returncode != 0 or not r.stdout.strip():
        raise NdbChaosError(_last_line(r.stderr) or f"{DIST_ENV}={dist}: cannot compute the image tag")
    return r.stdout.strip()


def dist_tag(dist: str) -> str:
    """The tag the recipe gives the image of this distribution (hash of recipe + content)."""
    try:
        st = os.stat(dist)
        stamp = (st.st_size, st.st_mtime_ns, os.path.isdir(dist))
    except OSError:
        stamp = ()
    return _dist_tag(dist, stamp)


def choose(options: ClusterOptions | None = None) -> ImageChoice:
    """The image of this run (see the module docstring). Needs the Docker engine to look for
    official images; raises NdbChaosError (one line) for a distribution that cannot be used."""
    explicit = (options.ndb_image if options is not None else None) or current().ndb_image
    if explicit:
        return ImageChoice(explicit, "explicit", f"image {explicit} (NDBCHAOS_NDB_IMAGE)")
    for img in OFFICIAL:
        if docker.image_present(img):
            return ImageChoice(img, "official", f"official image {img} present locally")
    dist = dist_path()
    if dist:
        tag = dist_tag(dist)
        how = "built" if docker.image_present(tag) else "to be built"
        return ImageChoice(tag, "dist", f"image {tag} {how} from {DIST_ENV}={dist}")
    return ImageChoice(DEFAULT_IMAGE, "none", missing_image_message(DEFAULT_IMAGE))


def unavailable(options: ClusterOptions | None = None) -> str | None:
    """None when NDB can run here (the chosen image is present, or can be built from the
    distribution), else why not, in one line. A distribution named in ``NDBCHAOS_NDB_DIST`` that
    cannot be used (missing, not an archive, no programs, another architecture) is not "NDB
    unavailable" but a broken input: NdbChaosError with the recipe's line, as ``choose`` and
    ``resolve_engine`` raise it (it was asked for)."""
    c = choose(options)
    if c.buildable or docker.image_present(c.image):
        return None
    return missing_image_message(c.image)


def provided() -> list[str]:
    """The variables through which this environment asks for NDB (``NAME=value``): CI's
    ``.ci/run`` sets ``NDBCHAOS_NDB_DIST`` when it found a distribution."""
    s = current()
    return [f"{v}={value}" for v, value in ((DIST_ENV, s.ndb_dist), (IMAGE_ENV, s.ndb_image)) if value]


def missing_for_tests(options: ClusterOptions | None = None, ci: bool | None = None) -> tuple[bool, str] | None:
    """What a test that needs NDB does here: None when NDB can run, else (fail, one line).

    It fails where NDB was asked for and cannot be had: a distribution in ``NDBCHAOS_NDB_DIST``
    that is missing or broken (everywhere), or, under CI=true, any NDB provided through
    ``NDBCHAOS_NDB_DIST`` or ``NDBCHAOS_NDB_IMAGE`` that is not available (what CI provides must
    run, as Docker must). Only where nothing asks for NDB (a user's own CI without it) does the
    test skip, naming what this host lacks. ``ci``: default, the settings' (CI: 1, true, yes)."""
    if ci is None:
        ci = current().ci
    try:
        why = unavailable(options)
    except NdbChaosError as e:
        return True, f"the NDB distribution asked for cannot be used: {e}"
    if why is None:
        return None
    given = provided()
    if ci and given:
        return True, f"NDB is provided under CI=true ({', '.join(given)}) but not available: {why}"
    return False, f"this host has no NDB image and no distribution to build one: {why}"


def ensure(choice: ImageChoice) -> None:
    """The chosen image is present afterwards, or NdbChaosError says why in one line. Only an
    image of a distribution is built; any other is the user's to provide."""
    if docker.image_present(choice.image):
        return
    if not choice.buildable:
        raise NdbChaosError(missing_image_message(choice.image))
    # Progress to our stderr (the build takes a minute or two); the recipe's error line is kept.
    r = subprocess.run(["bash", str(BUILD), "ndb"], stdout=sys.stderr, stderr=subprocess.PIPE, text=True,
                       env={**os.environ, DIST_ENV: dist_path() or ""})
    if r.returncode != 0 or not docker.image_present(choice.image):
        raise NdbChaosError(_last_line(r.stderr) or f"building {choice.image} failed")
