"""The NDB image: which one a run uses (explicit, official, built from a distribution) and the
recipe's one-line refusals of a distribution it cannot use. No Docker: image presence is faked,
and the recipe's checks run on small fake distributions (ELF headers only)."""

import os
import platform
import subprocess
import tarfile

import pytest

from ndbchaos import resources, settings
from ndbchaos.runtimes import docker
from ndbchaos.engines.choose import resolve_engine
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.engines.ndb import image as ndb_image
from ndbchaos.errors import NdbChaosError
from ndbchaos.vocabulary import ClusterOptions

BUILD = resources.BUILD
REQUIRED = ("ndb_mgmd", "ndbmtd", "ndb_mgm", "mysqld", "mysql")
MACHINE = {"x86_64": b"\x3e\x00", "aarch64": b"\xb7\x00"}


@pytest.fixture
def images(monkeypatch, tmp_path):
    present: set[str] = set()
    monkeypatch.setattr(docker, "image_present", lambda name: name in present)
    monkeypatch.setattr(docker, "docker_available", lambda: (True, ""))
    monkeypatch.delenv("NDBCHAOS_NDB_IMAGE", raising=False)
    monkeypatch.delenv(ndb_image.DIST_ENV, raising=False)
    monkeypatch.setenv("NDBCHAOS_CACHE", str(tmp_path / "cache"))
    return present


def fake_dist(root, machine: bytes | None = None, skip=(), top="mysql-cluster-9.7.2-linux-glibc2.36-x86_64"):
    """A folder laid out like the generic tarball, whose programs are 64-byte ELF headers."""
    machine = machine or MACHINE.get(platform.machine(), b"\x3e\x00")
    d = root / top
    (d / "bin").mkdir(parents=True)
    (d / "share").mkdir()
    (d / "share" / "errmsg.sys").write_bytes(b"x")
    for b in REQUIRED:
        if b in skip:
            continue
        head = bytearray(64)
        head[0:4] = b"\x7fELF"
        head[4] = 2  # 64-bit
        head[18:20] = machine
        (d / "bin" / b).write_bytes(bytes(head))
    return d


def tarball(src, path):
    with tarfile.open(path, "w:gz") as t:
        t.add(src, arcname=src.name)
    return path


def check(dist) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(BUILD), "--check-dist"], capture_output=True, text=True,
                          env={**os.environ, ndb_image.DIST_ENV: str(dist)}, timeout=60)


def one_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    return lines[0]


# -- the recipe's checks ------------------------------------------------------------------------

def test_a_good_distribution_passes_as_folder_and_tarball(tmp_path):
    d = fake_dist(tmp_path / "x")
    assert check(d).returncode == 0
    r = check(tarball(d, tmp_path / "mysql-cluster-9.7.2.tar.gz"))
    assert r.returncode == 0, r.stderr
    assert "a MySQL Cluster distribution" in r.stdout


def test_bad_path_kind_and_missing_ndbmtd_each_give_one_line(tmp_path):
    assert "no such file or directory" in one_line(check(tmp_path / "nope.tar.xz"))
    (tmp_path / "notes.txt").write_text("x")
    assert "expected a .tar.xz or .tar.gz" in one_line(check(tmp_path / "notes.txt"))
    (tmp_path / "broken.tar.gz").write_bytes(b"not a tar archive at all")
    assert "not a readable tar archive" in one_line(check(tmp_path / "broken.tar.gz"))
    no_ndbmtd = fake_dist(tmp_path / "y", skip=("ndbmtd",))
    assert "no bin/ndbmtd" in one_line(check(tarball(no_ndbmtd, tmp_path / "no-ndbmtd.tar.gz")))
    assert "no bin/ndbmtd" in one_line(check(no_ndbmtd))
    no_mysqld = fake_dist(tmp_path / "z", skip=("mysqld",))
    assert "no bin/mysqld" in one_line(check(no_mysqld))


def test_wrong_architecture_is_refused_in_one_line(tmp_path):
    other = b"\xb7\x00" if platform.machine() == "x86_64" else b"\x3e\x00"
    line = one_line(check(fake_dist(tmp_path / "a", machine=other)))
    assert "built for" in line and f"this host is {platform.machine()}" in line


def test_tag_hashes_the_distribution_content(tmp_path, images):
    d1 = fake_dist(tmp_path / "a")
    d2 = fake_dist(tmp_path / "b")
    (d2 / "bin" / "ndbmtd").write_bytes((d2 / "bin" / "ndbmtd").read_bytes() + b"other build")
    t1, t1again, t2 = ndb_image.dist_tag(str(d1)), ndb_image.dist_tag(str(d1)), ndb_image.dist_tag(str(d2))
    assert t1.startswith("ndbchaos/ndb:") and t1 == t1again and t1 != t2
    with pytest.raises(NdbChaosError) as ei:
        ndb_image.dist_tag(str(tmp_path / "missing"))
    assert "no such file or directory" in str(ei.value) and "\n" not in str(ei.value)


# -- which image a run uses ---------------------------------------------------------------------

def test_precedence_explicit_official_dist(images, monkeypatch, tmp_path):
    d = fake_dist(tmp_path / "d")
    monkeypatch.setenv(ndb_image.DIST_ENV, str(d))
    tag = ndb_image.dist_tag(str(d))
    c = ndb_image.choose(ClusterOptions())
    assert (c.image, c.source, c.buildable) == (tag, "dist", True) and "to be built" in c.reason
    images.add(tag)
    assert "built from" in ndb_image.choose(ClusterOptions()).reason
    images.add("mysql/mysql-cluster:8.4")  # an official image present locally wins
    assert ndb_image.choose(ClusterOptions()).image == "mysql/mysql-cluster:8.4"
    images.add(ndb_image.DEFAULT_IMAGE)
    assert ndb_image.choose(ClusterOptions()).image == ndb_image.DEFAULT_IMAGE
    monkeypatch.setenv("NDBCHAOS_NDB_IMAGE", "mine:1")  # explicit wins over everything
    settings.use(None)  # the settings are read once: read them again
    assert ndb_image.choose(ClusterOptions()).source == "explicit" and NdbEngine().image(ClusterOptions()) == "mine:1"


def test_auto_and_ndb_with_a_distribution(images, monkeypatch, tmp_path):
    d = fake_dist(tmp_path / "d")
    monkeypatch.setenv(ndb_image.DIST_ENV, str(d))
    name, why = resolve_engine("auto")
    assert name == "ndb" and "NDBCHAOS_NDB_DIST" in why and "to be built" in why
    assert resolve_engine("ndb")[0] == "ndb"
    monkeypatch.setenv(ndb_image.DIST_ENV, str(tmp_path / "gone.tar.xz"))
    settings.use(None)  # the settings are read once: read them again
    for choice in ("auto", "ndb"):  # asked for NDB through the variable: never a silent fallback
        with pytest.raises(NdbChaosError) as ei:
            resolve_engine(choice)
        assert "no such file or directory" in str(ei.value)


def test_without_anything_ndb_is_unavailable(images):
    name, why = resolve_engine("auto")
    assert name == "galera" and ndb_image.DIST_ENV in why
    with pytest.raises(NdbChaosError) as ei:
        resolve_engine("ndb")
    assert ndb_image.DIST_ENV in str(ei.value) and "docker pull" in str(ei.value)


def test_ensure_builds_only_a_distribution_image(images, monkeypatch):
    calls = []

    def fake_run(argv, **kw):
        calls.append(argv)
        images.add("ndbchaos/ndb:abc")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(ndb_image.subprocess, "run", fake_run)
    with pytest.raises(NdbChaosError):
        ndb_image.ensure(ndb_image.ImageChoice("mine:1", "explicit", ""))
    assert calls == []
    ndb_image.ensure(ndb_image.ImageChoice("ndbchaos/ndb:abc", "dist", ""))
    assert calls and calls[0][-1] == "ndb"


def test_ensure_reports_the_recipes_error_line(images, monkeypatch):
    monkeypatch.setattr(ndb_image.subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(
        argv, 1, "",
        "building...\nNDBCHAOS_NDB_DIST=/x.tar.xz: bin/ndbmtd is built for aarch64, this host is x86_64\n"))
    with pytest.raises(NdbChaosError) as ei:
        ndb_image.ensure(ndb_image.ImageChoice("ndbchaos/ndb:abc", "dist", ""))
    assert str(ei.value) == "NDBCHAOS_NDB_DIST=/x.tar.xz: bin/ndbmtd is built for aarch64, this host is x86_64"
