"""A soak end to end (``pytest -m soak``): ten minutes of load on each real engine (Galera always,
NDB when its image or distribution is available here) under the seeded fault schedule; every fault
judged on its own, the whole history at the end, the controller's memory flat, the saved run
judged again offline, nothing left behind. On Galera the soak's clients go through the toxiproxy
proxies (its SQL node loss takes a proxy down); on NDB straight to the SQL nodes. Galera plays
``soak_mixed`` (the ledger: lost writes); NDB ``soak_txn``, the same schedule under transactions
judged by the anomaly checker against NDB's promise (the txn scenarios' checks over a long run)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from ndbchaos.history import History
from ndbchaos.report.results import attachments
from ndbchaos.soak import memory_growth

from .helpers import REPO, allure_results, labelled, project_of, run_pytest, skip_without_ndb

SEED = 1  # the same seed, the same schedule: CI plays the same faults in the same order every run
SOAK_OF = {"galera": "soak_mixed", "ndb": "soak_txn"}


def soak_s(engine: str) -> float:
    """CI's soak: ten minutes (the issue's figure). NDBCHAOS_SOAK_S_<ENGINE> (e.g.
    NDBCHAOS_SOAK_S_GALERA), else NDBCHAOS_SOAK_S, shortens it for one engine or both; 0 leaves
    that engine's soak out of the run (said as its skip reason)."""
    return float(os.environ.get(f"NDBCHAOS_SOAK_S_{engine.upper()}") or os.environ.get("NDBCHAOS_SOAK_S") or "600")


def least_faults(duration_s: float) -> tuple[int, int]:
    """The fewest faults, and of how many kinds, a soak of ``duration_s`` must play. A fault's
    cycle (a pause of 5-12 s, the engine's reaction, a hold of 3-8 s, the recovery, 2 s after)
    takes about a minute at most on NDB's slowest kinds (a node restart), half a minute on
    Galera; each kind comes once before any comes again. So ten minutes allow at least 8 faults
    of 3 kinds (the issue's bar), three minutes 3 of 2 kinds, a minute and a half (CI's: the
    first fault over by 72 s, a second begun before the end runs to its heal) 2 of 2 kinds, and
    any soak longer than the longest first pause (12 s) one."""
    if duration_s >= 600:
        return 8, 3
    if duration_s >= 180:
        return 3, 2
    if duration_s >= 90:
        return 2, 2
    if duration_s > 12:
        return 1, 1
    return 0, 0


# ten minutes of soak, the cluster's start and stop, the final check: 20 min on a quiet 2-core
# machine at most; allow for a loaded one
@pytest.mark.timeout(3000)
# NDB first: right after the Galera soak, the NDB soak's cluster took 155 s to start (twice here;
# the cause not found: its data nodes' initial start writes 1 GB of redo files while the Galera
# cluster's volumes are being removed); played first, it started in 31 s
@pytest.mark.parametrize("engine", ["ndb", "galera"])
def test_a_ten_minute_soak_plays_its_schedule_and_passes(engine):
    if engine == "ndb":
        skip_without_ndb()  # fails when NDB was asked for (CI's distribution) and cannot be had
    duration = soak_s(engine)
    if duration == 0:
        pytest.skip(f"NDBCHAOS_SOAK_S_{engine.upper()}=0: the {engine} soak is left out of this run")
    # kept after the run (reports/ is output only): a failed soak's evidence is worth reading
    results = REPO / "reports" / f"soak-allure-results-{engine}"
    shutil.rmtree(results, ignore_errors=True)
    r = run_pytest(["scenarios", "-m", "soak", "-k", SOAK_OF[engine], "-p", "no:cacheprovider", "-q",
                    "--engine", engine, "--alluredir", str(results), "--soak-duration", str(duration),
                    "--seed", str(SEED)], timeout=2800)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    project = project_of(out)
    assert project and labelled("ps", project) == [] and labelled("network", project) == [], "cluster left behind"
    check_soak_results(results, duration, engine)


def check_soak_results(results, duration_s: float = 600.0, engine: str | None = None):
    """What a passed soak's Allure results must hold (also usable on a kept folder)."""
    # the soak's result, found by its parameter (its name is the report's title)
    (res,) = [x for x in allure_results(results) if any(p["name"] == "sk" for p in x.get("parameters", []))]
    assert res["status"] == "passed", res.get("statusDetails")
    files = {a["name"]: results / a["source"] for a in attachments(res)}
    assert {"faults", "memory", "memory samples", "soak schedule", "timeline"} <= set(files), sorted(files)
    # a soak's history is large: saved in the columnar format (a short local try may stay JSONL)
    saved = files.get("run.nch") or files["run.jsonl"]
    h = History.read(saved)
    run = h.run
    steps = run["steps"]
    kinds = {s["scenario"] for s in steps}
    # as many faults as the duration allows (least_faults: 8 of 3 kinds in ten minutes)
    faults, of_kinds = least_faults(duration_s)
    assert len(steps) >= faults and len(kinds) >= of_kinds, [s["scenario"] for s in steps]
    # the clients' route the menu needs: through the proxies on Galera (its SQL node loss takes
    # a proxy down), straight to the SQL nodes on NDB (its SQL node loss kills mysqld)
    if engine is not None:
        assert run["via_proxy"] is (engine == "galera") and run["soak"]["via_proxy"] is run["via_proxy"]
        assert run["soak"]["left_out"] == []
    assert [s["scenario"] for s in steps] == [s["scenario"] for s in run["soak"]["schedule"]]
    for s in steps:  # each healed, and the cluster healthy again, before the next began
        assert s["marks"].get("healthy") is not None, s
    assert all(a["end"] <= b["begin"] + 1e-6 for a, b in zip(steps, steps[1:]))

    # the controller's resident memory at the end within 20 % of its value after the first minute
    growth = memory_growth(run["memory"])
    assert growth is not None, run["memory"][:3]
    assert abs(growth["growth_pct"]) <= 20.0, growth

    # the saved run judged again from its file alone: the live verdict, fault by fault
    live = json.loads((results / [a["source"] for a in attachments(res) if a["name"] == "verdict"][0]).read_text())
    c = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "check", "--compact", "--quiet", str(saved)],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    again = json.loads(c.stdout)
    assert c.returncode == 0 and again["valid"] is True, c.stdout[-2000:] + c.stderr[-2000:]
    assert again["checks"]["faults"]["faults"] == len(steps) == live["checks"]["faults"]["faults"]
    assert ([x["valid"] for x in again["checks"]["faults"]["details"]["steps"]]
            == [x["valid"] for x in live["checks"]["faults"]["details"]["steps"]])
    if "transactions" in again["checks"]:  # soak_txn: the anomaly checker held NDB's promise
        tx = again["checks"]["transactions"]
        assert tx["valid"] is True and tx["lost"] == 0, tx["summary"]
        assert tx["details"]["txns"]["ok"] > 1000 and tx["details"]["final_read"] is True, tx["summary"]
        assert live["checks"]["transactions"]["details"]["found"] == tx["details"]["found"]
    else:
        assert again["checks"]["durability"]["valid"] is True
