"""The scenario catalogue is an installed module: ``pytest --pyargs ndbchaos.catalogue`` collects it
from any directory, and the checkout's ``scenarios/`` collects the same declarations under its own
test ids (no Docker: collection only)."""

import importlib
import subprocess
import sys
from pathlib import Path

import ndbchaos.catalogue as catalogue

REPO = Path(__file__).resolve().parents[2]


def _collect(args, cwd) -> list[str]:
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                       cwd=cwd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return [line for line in r.stdout.splitlines() if "::" in line]


def test_scenarios_in_the_checkout_are_the_catalogues_declarations():
    for name in catalogue.MODULES:
        here = importlib.import_module(f"scenarios.{name}")
        shipped = importlib.import_module(f"ndbchaos.catalogue.{name}")
        test = getattr(shipped, name)
        assert getattr(here, name) is test  # the same test function, collected under scenarios/
        assert here.pytestmark == shipped.pytestmark
        for attr in ("SCENARIOS", "SOAKS"):
            assert getattr(here, attr, None) is getattr(shipped, attr, None)
    for name in catalogue.PAIR_MODULES:  # plain scenarios: every test and fixture the same objects
        here = importlib.import_module(f"scenarios.{name}")
        shipped = importlib.import_module(f"ndbchaos.catalogue.{name}")
        tests = [n for n in dir(shipped) if n.startswith("test_")]
        assert tests and all(getattr(here, n) is getattr(shipped, n) for n in tests), name
        assert here.pytestmark == shipped.pytestmark and not hasattr(shipped, "SCENARIOS")
    modules = {p.stem for p in (REPO / "scenarios").glob("test_*.py")}
    assert modules == set(catalogue.MODULES) | set(catalogue.PAIR_MODULES) == {
        p.stem for p in Path(catalogue.__file__).parent.glob("test_*.py")}


def test_declarations_are_unique_and_named():
    names = [d.name for _, d in catalogue.declarations()]
    assert len(names) == len(set(names)) and "kill_one_data_node" in names and "soak_mixed" in names


def test_pyargs_collects_the_catalogue_from_any_directory(tmp_path):
    ids = _collect(["--pyargs", "ndbchaos.catalogue", "-m", "nodegroup_loss"], tmp_path)
    assert "test_nodegroup_loss.py::test_nodegroup_loss[kill_whole_nodegroup]" in ids
    assert all("nodegroup_loss" in i or "txn_kill_whole_nodegroup" in i for i in ids)
    every = _collect(["--pyargs", "ndbchaos.catalogue"], tmp_path)
    pair = [i for i in every if i.split("::")[0].rsplit("/", 1)[-1] in {f"{m}.py" for m in catalogue.PAIR_MODULES}]
    assert len(every) - len(pair) == len(catalogue.declarations())
    assert pair and all("::test_" in i for i in pair)
    replication = _collect(["--pyargs", "ndbchaos.catalogue", "-m", "replication"], tmp_path)
    assert replication == pair  # what -m replication runs: the pair modules, nothing else


def test_checkout_test_ids_stay(tmp_path):
    ids = _collect(["-m", "datanode_loss"], REPO)
    assert "scenarios/test_datanode_loss.py::test_datanode_loss[kill_one_data_node]" in ids
    assert not [i for i in ids if not i.startswith("scenarios/")]
