"""resolve_engine: ndb | galera | auto, with the reason, and the one-line refusal."""

import pytest

from ndbchaos.runtimes import docker
from ndbchaos.engines import get_engine
from ndbchaos.engines.choose import resolve_engine
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.engines.ndb.image import DEFAULT_IMAGE
from ndbchaos.errors import DockerUnavailable, NdbChaosError, UsageError
from ndbchaos.vocabulary import ClusterOptions


@pytest.fixture
def images(monkeypatch):
    present: set[str] = set()
    monkeypatch.setattr(docker, "image_present", lambda name: name in present)
    monkeypatch.setattr(docker, "docker_available", lambda: (True, ""))
    monkeypatch.delenv("NDBCHAOS_NDB_IMAGE", raising=False)
    monkeypatch.delenv("NDBCHAOS_NDB_DIST", raising=False)
    return present


def test_auto_picks_ndb_when_present(images):
    images.add(DEFAULT_IMAGE)
    name, why = resolve_engine("auto")
    assert name == "ndb" and DEFAULT_IMAGE in why and "present" in why


def test_auto_falls_back_to_galera_and_says_why(images):
    name, why = resolve_engine("auto")
    assert name == "galera" and "not present locally" in why and f"docker pull {DEFAULT_IMAGE}" in why


def test_auto_without_docker(monkeypatch):
    monkeypatch.delenv("NDBCHAOS_NDB_DIST", raising=False)
    monkeypatch.setattr(docker, "image_present", lambda name: False)
    monkeypatch.setattr(docker, "docker_available", lambda: (False, "no Docker engine answers"))
    name, why = resolve_engine("auto")
    assert name == "galera" and "no Docker engine answers" in why
    with pytest.raises(DockerUnavailable):
        resolve_engine("ndb")


def test_explicit_ndb_without_image_refuses_in_one_line(images):
    with pytest.raises(NdbChaosError) as ei:
        resolve_engine("ndb")
    msg = str(ei.value)
    assert "\n" not in msg and "docker pull" in msg and "docker load" in msg and "NDBCHAOS_NDB_IMAGE" in msg
    assert f"NDB image {DEFAULT_IMAGE} not present locally" in msg


def test_env_and_option_override_the_image(images, monkeypatch):
    images.add("mysql/mysql-cluster:8.4")
    monkeypatch.setenv("NDBCHAOS_NDB_IMAGE", "mysql/mysql-cluster:8.4")
    assert resolve_engine("ndb")[0] == "ndb"
    assert resolve_engine("auto", ClusterOptions(ndb_image="other:1"))[0] == "galera"
    assert NdbEngine().images(ClusterOptions()) == ["mysql/mysql-cluster:8.4"]


def test_galera_and_unknown(images):
    assert resolve_engine("galera")[0] == "galera"
    assert resolve_engine("GALERA")[0] == "galera"
    with pytest.raises(UsageError):
        resolve_engine("postgres")
    with pytest.raises(UsageError):
        get_engine("postgres")
    assert get_engine("ndb").name == "ndb"


def test_ensure_images_never_builds_without_a_distribution(images):
    with pytest.raises(NdbChaosError) as ei:
        NdbEngine().ensure_images(ClusterOptions())
    assert "not present locally" in str(ei.value)
    images.add(DEFAULT_IMAGE)
    NdbEngine().ensure_images(ClusterOptions())
