"""Error-insert faults on real MySQL Cluster 9.7.2 data nodes built with error insertion (the
distribution in shared/ndb/error-insert/, ``NDBCHAOS_NDB_ERROR_INSERT_DIST``; .ci/run finds it
beside the plain one): a subset of the ``error_insert`` family played as a user plays it, each
scenario passing only after its code was seen to fire (the node's NDB_TAMPER line and its error
log's entry, recorded in the run record's fault window), then ``ndbchaos fault error-insert`` on
the same cluster from the command line, its refusals, and ``fault heal``. The whole family:
``NDBCHAOS_NDB_DIST=<that distribution> pytest scenarios -m error_insert --engine ndb`` (README).

Without the distribution the test skips with the reason; under CI=true it fails (CI provides it).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO, allure_results, labelled, project_of, run_pytest

#: CI's subset, within its budget (each about a minute on 2 cores): a crash as the code arrives,
#: one inside the commit protocol under transactions, one in the node's own restart, one in a backup
SUBSET = ("restart_random_node_error", "commit_protocol_crash_txn", "nf_during_nr_copy_fragment",
          "backup_nf_master")


def _dist() -> str | None:
    given = os.environ.get("NDBCHAOS_NDB_ERROR_INSERT_DIST")
    if given:
        return given
    for d in (REPO.parent / "shared" / "ndb" / "error-insert", Path("/work/shared/ndb/error-insert")):
        found = sorted(d.glob("mysql-cluster-*.tar.[gx]z")) if d.is_dir() else []
        if found:
            return str(found[0])
    return None


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "ndbchaos.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


@pytest.mark.timeout(1500)
def test_error_insert_family_on_an_error_insert_build(tmp_path):
    dist = _dist()
    if dist is None or not Path(dist).exists():
        why = f"no MySQL Cluster distribution with error insertion (NDBCHAOS_NDB_ERROR_INSERT_DIST={dist})"
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"under CI=true the error-insert distribution must be given: {why}", pytrace=False)
        pytest.skip(why)
    results = tmp_path / "allure-results"
    env = {"NDBCHAOS_NDB_DIST": dist}
    r = run_pytest(["scenarios", "-m", "error_insert", "-k", " or ".join(f"[{n}]" for n in SUBSET),
                    "-p", "no:cacheprovider", "-q", "--engine", "ndb", "--keep-cluster", "--alluredir", str(results)],
                   env=env, timeout=1300)
    out = r.stdout + r.stderr
    project = project_of(out)
    try:
        assert r.returncode == 0, out[-4000:]
        by_name = {next(p["value"] for p in x.get("parameters", []) if p["name"] == "sc"): x
                   for x in allure_results(results)}
        assert set(by_name) == set(SUBSET), sorted(by_name)
        for name, x in by_name.items():
            assert x["status"] == "passed", (name, x.get("statusDetails"))
            src = next(a["source"] for a in x["attachments"] if a["name"] == "run.jsonl")
            header = json.loads((results / src).read_text().splitlines()[0])
            (w,) = [w for w in header["run"]["windows"] if w["kind"].startswith("error-insert")]
            fired = w["params"]["fired"]
            # the code fired before anything was judged: each target's error log names the insert
            assert fired and all(v["exit_code"] == 2342 and v["message"].startswith("Error insert executed")
                                 for v in fired.values()), (name, fired)
            assert f"armed {w['params']['code']}" in w["verification"][0], (name, w["verification"])
            verdict = json.loads((results / next(a["source"] for a in x["attachments"]
                                                 if a["name"] == "verdict")).read_text())
            judged = {line.split(":")[0] for line in verdict["summary"]}
            # what was lost is judged by durability (the ledger) or the anomaly checker (transactions)
            lost_by = "transactions" if name.endswith("_txn") else "durability"
            assert verdict["valid"] is True and {lost_by, "expectation"} <= judged, (name, verdict["summary"])

        # -- the command line on the same cluster ----------------------------------------------
        assert project, out[-2000:]
        c = _cli("fault", "error-insert", "9999", "--node", "data2", "--project", project)
        assert c.returncode == 0, c.stdout + c.stderr
        assert "code 9999 fired: data2 crashed: error 2342" in c.stdout, c.stdout
        bad = _cli("fault", "error-insert", "39999", "--node", "data2", "--project", project)
        assert bad.returncode == 2 and "routes it to no block" in bad.stderr and "Traceback" not in bad.stderr, bad
        bad = _cli("fault", "error-insert", "9999", "--node", "mgm1", "--project", project)
        assert bad.returncode == 2 and "data nodes here, not mgm1" in bad.stderr, bad
        h = _cli("fault", "heal", "--project", project)
        assert h.returncode == 0, h.stdout + h.stderr
    finally:
        if project:
            _cli("reap", "--project", project)
    assert project is None or labelled("ps", project) == [], "cluster left behind"
