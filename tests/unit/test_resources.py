"""The package's own files are found inside the package (importlib.resources), wherever it is
installed, and the image tags do not depend on where the recipes are."""

import shutil
import subprocess
from pathlib import Path

import pytest

import ndbchaos
from ndbchaos import resources


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
    from ndbchaos.faults import netns, toxiproxy_server
    from ndbchaos.inventory import lab
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
    assert resources.tools_dir() == tmp_path / "t"
    monkeypatch.delenv("NDBCHAOS_CACHE")
    monkeypatch.delenv("NDBCHAOS_TOOLS")
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
