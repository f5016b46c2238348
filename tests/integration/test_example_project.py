"""A user's project in CI: ndbchaos built as a wheel and installed into a fresh virtual environment
with nothing of this checkout, then the example project (``examples/app``: a shop's schema and
transactions as its own workload, one scenario, its gate file) installed beside it and run against
a real cluster from its own directory; and the shipped catalogue collected with ``--pyargs`` from
an empty one. If the packaging drops a file the library needs, this fails.

The cluster is Galera (built from Debian packages, so this runs wherever the README's Quickstart
does); the shop's workload on NDB is the same code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO, labelled, project_of

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1500)]


def _run(cmd, cwd, env=None, timeout=600):
    e = {**os.environ, **(env or {})}
    e.pop("PYTEST_ADDOPTS", None)
    e.pop("VIRTUAL_ENV", None)
    return subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory):
    """The wheel of this source, installed into a new virtual environment (pip from PyPI for its
    dependencies, as a user's CI does)."""
    root = tmp_path_factory.mktemp("user")
    dist = root / "dist"
    r = _run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(dist), str(REPO)], REPO)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (wheel,) = dist.glob("ndbchaos-*.whl")
    venv = root / "venv"
    r = _run([sys.executable, "-m", "venv", str(venv)], root)
    assert r.returncode == 0, r.stderr
    pip = venv / "bin" / "pip"
    r = _run([str(pip), "install", "-q", "--disable-pip-version-check", str(wheel)], root, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return venv


def test_the_installed_package_needs_no_checkout(user_venv, tmp_path):
    env = {"PATH": f"{user_venv / 'bin'}:{os.environ['PATH']}"}
    r = _run([str(user_venv / "bin" / "python"), "-c",
              "import ndbchaos, ndbchaos.resources as R; print(ndbchaos.__file__); "
              "print(all(p.exists() for p in (R.BUILD, R.COMPOSE_DIR / 'galera.yml', R.NATIVE_SOURCE)))"],
             tmp_path, env)
    assert r.returncode == 0, r.stderr
    where, ok = r.stdout.split()
    assert str(user_venv) in where and str(REPO) not in where and ok == "True"
    r = _run([str(user_venv / "bin" / "pytest"), "--pyargs", "ndbchaos.catalogue", "--collect-only", "-q",
              "-m", "nodegroup_loss", "-p", "no:cacheprovider"], tmp_path, env)
    assert r.returncode == 0 and "test_nodegroup_loss[kill_whole_nodegroup]" in r.stdout, r.stdout[-2000:]


def test_the_example_project_runs_its_own_workload_from_the_wheel(user_venv, tmp_path):
    app = tmp_path / "app"
    shutil.copytree(REPO / "examples" / "app", app)
    pip = user_venv / "bin" / "pip"
    r = _run([str(pip), "install", "-q", "--disable-pip-version-check", "--no-deps", "-e", str(app)], app)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    env = {"PATH": f"{user_venv / 'bin'}:{os.environ['PATH']}"}
    results = tmp_path / "results"
    r = _run([str(user_venv / "bin" / "pytest"), "chaos", "--engine", "galera", "--gate", "gate.toml",
              "--gate-out", str(tmp_path / "gate.json"), "--alluredir", str(results), "-p", "no:cacheprovider",
              "-q"], app, env, timeout=1200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-5000:]
    assert "orders_through_a_data_node_kill PASS" in out and "gate PASS" in out, out[-3000:]
    project = project_of(out)
    assert project and labelled("ps", project) == [] and labelled("network", project) == [], "cluster left behind"
    # the run's record judged again by the installed command, from the file alone
    from ndbchaos.report.results import attachments, read_results
    (res,) = [x for x in read_results(results) if x.get("status") == "passed"]
    run_file = next(results / a["source"] for a in attachments(res) if a["name"] in ("run.jsonl", "run.nch"))
    c = _run([str(user_venv / "bin" / "ndbchaos"), "check", "--quiet", "--compact", str(run_file)], app, env)
    assert c.returncode == 0, c.stdout[-2000:] + c.stderr[-2000:]
    assert Path(run_file).exists()
