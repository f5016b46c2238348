"""The package's own files are found inside the package (importlib.resources), wherever it is
installed, and the image tags do not depend on where the recipes are."""

import shutil
import subprocess
from pathlib import Path

import pytest

import ndbchaos
from ndbchaos import resources, settings


def test_every_shipped_file_is_inside_the_package():
    pkg = Path(ndbchaos.__file__).resolve().parent
    assert resources.missing() == []
    for p in (resources.COMPOSE_DIR, resources.IMAGES_DIR, resources.BUILD, resources.LAB_INVENTORY,
              resources.NATIVE_SOURCE):
        assert Path(p).resolve().is_relative_to(pkg), p
    assert (resources.COMPOSE_DIR / "galera.yml").is_file()
    assert resources.BUILD.name == "build.sh"


def test_the_modules_use_the_one_lookup():
    from ndbchaos.engines.galera import lifecycle
    from ndbchaos.engines.ndb import image, layout
    from ndbchaos.runtimes import netns
    from ndbchaos.faults import toxiproxy_server
    from ndbchaos.runtimes.inventory import lab
    from ndbchaos.workload import native
    assert lifecycle.BUILD == image.BUILD == netns.BUILD == toxiproxy_server.BUILD == lab.BUILD == resources.BUILD
    assert layout.COMPOSE_DIR == lifecycle.COMPOSE_DIR == resources.COMPOSE_DIR
    assert toxiproxy_server.OVERLAY == resources.COMPOSE_DIR / "toxiproxy.yml"
    assert lab.EXAMPLE == resources.LAB_INVENTORY
    assert native.SOURCE == str(resources.NATIVE_SOURCE)
    import ndbchaos.engines.base as base
    assert not hasattr(base, "REPO") and not hasattr(base, "COMPOSE_DIR")


def test_caches(monkeypatch, tmp_path):
    monkeypatch.delenv("NDBCHAOS_TOOLS", raising=False)
    monkeypatch.setenv("NDBCHAOS_CACHE", str(tmp_path / "c"))
    assert resources.cache_dir() == tmp_path / "c"
    assert resources.tools_dir() == tmp_path / "c" / "tools"
    monkeypatch.setenv("NDBCHAOS_TOOLS", str(tmp_path / "t"))
    settings.use(None)  # the settings are read once: read them again
    assert resources.tools_dir() == tmp_path / "t"
    monkeypatch.delenv("NDBCHAOS_CACHE")
    monkeypatch.delenv("NDBCHAOS_TOOLS")
    settings.use(None)  # the settings are read once: read them again
    assert resources.tools_dir() == Path.home() / ".cache" / "ndbchaos" / "tools"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is needed to run build.sh")
def test_image_tags_do_not_depend_on_where_the_recipes_are(tmp_path):
    """A tag hashes the recipe's content: a copy of the recipes elsewhere (as in site-packages,
    where files also lose their exec bit) gives every image the same tag."""
    copy = tmp_path / "site-packages" / "ndbchaos" / "data" / "images"
    shutil.copytree(resources.IMAGES_DIR, copy)
    for f in copy.rglob("*.sh"):
        f.chmod(0o644)
    for name in ("galera", "tools", "toxiproxy"):
        here = subprocess.run(["bash", str(resources.BUILD), "--tag", name], capture_output=True, text=True, check=True)
        there = subprocess.run(["bash", str(copy / "build.sh"), "--tag", name], capture_output=True, text=True,
                               check=True, cwd=tmp_path)
        assert here.stdout == there.stdout and here.stdout.startswith(f"ndbchaos/{name}:")


def test_the_wheel_ships_what_the_library_runs(tmp_path):
    """A wheel built from this tree holds the package data, the license and the entry points."""
    import importlib.metadata
    import sys
    import zipfile
    try:
        if int(importlib.metadata.version("setuptools").split(".")[0]) < 77:
            pytest.skip("setuptools >= 77 is needed to build the wheel")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("setuptools is not installed")
    root = resources.PACKAGE_DIR.parent
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(root / name, src / name)
    shutil.copytree(resources.PACKAGE_DIR, src / "ndbchaos", ignore=shutil.ignore_patterns("__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(src),
                        "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("ndbchaos-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    pkg = resources.PACKAGE_DIR
    for p in (resources.BUILD, resources.LAB_INVENTORY, resources.NATIVE_SOURCE, *resources.COMPOSE_DIR.rglob("*"),
              *resources.IMAGES_DIR.rglob("*"), pkg / "catalogue" / "test_datanode_loss.py", pkg / "py.typed"):
        if p.is_file():
            assert "ndbchaos/" + str(p.relative_to(pkg)) in names, p
    meta = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    entry = zipfile.ZipFile(wheel).read(meta).decode()
    assert "ndbchaos = ndbchaos.cli:main" in entry and "ndbchaos = ndbchaos.pytest_plugin" in entry
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    info = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in info and f"Version: {ndbchaos.__version__}" in info
