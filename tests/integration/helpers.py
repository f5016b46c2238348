import json
import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTEST = [sys.executable, "-m", "pytest"]


def ctrl_c_reaches_it() -> None:
    """``preexec_fn`` of a child a test interrupts with SIGINT: the signal's default disposition,
    so Python in the child turns it into KeyboardInterrupt as in a user's terminal. Where this
    suite runs with SIGINT ignored (a background job of a non-interactive shell), the child would
    inherit the ignore across exec, install no handler, and the Ctrl-C would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_pytest(args, env=None, timeout=600, cwd=REPO):
    """Run pytest in a child process. On any way out of here (timeout, our own test timing out,
    Ctrl-C) the child gets SIGTERM first, which the plugin turns into a normal teardown, so its
    cluster is removed; SIGKILL only if it does not finish that within two minutes."""
    e = {**os.environ, **(env or {})}
    e.pop("PYTEST_ADDOPTS", None)
    p = subprocess.Popen(PYTEST + args, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except BaseException:
        p.terminate()
        try:
            p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
        raise
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def labelled(kind="ps", project=None):
    flt = f"label=ndbchaos.project={project}" if project else "label=ndbchaos.project"
    cmd = ["docker", kind, "--filter", flt, "--format", "{{.Name}}" if kind == "network" else "{{.Names}}"]
    if kind == "ps":
        cmd.insert(2, "-a")
    r = subprocess.run(cmd, capture_output=True, text=True)
    return [x for x in r.stdout.split() if x]


def allure_results(path: Path):
    out = []
    for f in path.glob("*-result.json"):
        out.append(json.loads(f.read_text()))
    return out


def project_of(output: str) -> str | None:
    for line in output.splitlines():
        if "ndbchaos: engine" in line and "project" in line:
            return line.rsplit("project", 1)[1].strip()
    return None


def catalogue():
    """(test id, Scenario) of every declaration in scenarios/: test_datanode_loss[kill_one_data_node]."""
    import importlib
    out = []
    for f in sorted((REPO / "scenarios").glob("test_*.py")):
        for sc in getattr(importlib.import_module(f"scenarios.{f.stem}"), "SCENARIOS", []):
            out.append((f"{f.stem}[{sc.name}]", sc))
    return out


def module_markers(test_id: str) -> list[str]:
    """The markers pytest gives every scenario of ``test_id``'s module (its ``pytestmark``), the
    ones ``-m`` and a gate's ``match`` select by: test_txn's are ``txn``, not its scenarios'
    families."""
    import importlib
    marks = getattr(importlib.import_module(f"scenarios.{test_id.split('[')[0]}"), "pytestmark", [])
    return [m.name for m in (marks if isinstance(marks, list) else [marks])]


def skip_without_ndb() -> None:
    """Skip the test, saying what this host lacks, when no NDB image can be had here and nothing
    asks for one; fail it when NDB was asked for and cannot be had: a missing or broken
    ``NDBCHAOS_NDB_DIST``, or under CI=true whatever CI provides (``image.missing_for_tests``)."""
    import pytest
    from ndbchaos.engines.ndb.image import missing_for_tests
    verdict = missing_for_tests()
    if verdict is None:
        return
    fail, why = verdict
    if fail:
        pytest.fail(why, pytrace=False)
    pytest.skip(f"NDB not available: {why}")


def only_elsewhere(engine: str) -> set[str]:
    """The catalogue's declarations that do not run on ``engine`` (``Scenario.engines``)."""
    return {sc.name for _, sc in catalogue() if sc.skip_reason(engine)}


#: what a live report holds besides its run's: the session's gate rows and the trend file's history
SESSION_ATTACHMENTS = ("gate", "gate rows", "trend")


def report_of(folder: Path, result: dict) -> dict:
    """What a scenario's Allure result shows of its run: title, our labels, description,
    parameters, and every attachment (the result's and its steps') by name with its bytes."""
    from ndbchaos.report.results import attachments
    ours = {"epic", "feature"}
    return {"title": result.get("name"), "description": result.get("description"),
            "labels": sorted((x["name"], x["value"]) for x in result.get("labels", []) if x["name"] in ours),
            "parameters": sorted((p["name"], p["value"]) for p in result.get("parameters", [])
                                 if p["name"] not in ("sc", "sk")),
            "attachments": {a["name"]: _judged((folder / a["source"]).read_bytes()) if a["name"] == "verdict"
                            else (folder / a["source"]).read_bytes()
                            for a in attachments(result) if a["name"] not in SESSION_ATTACHMENTS}}


def _judged(verdict: bytes) -> bytes:
    """A verdict without what differs between two judgings of the same run: how long the
    transactional checker took (its details' ``seconds``)."""
    v = json.loads(verdict)
    for check in (v.get("checks") or {}).values():
        (check.get("details") or {}).pop("seconds", None)
    return json.dumps(v, sort_keys=True).encode()


def assert_rebuilt_like_live(results: Path, out: Path, limit: int | None = None) -> int:
    """``ndbchaos report`` on a session's results folder rebuilds each scenario's report as the
    live one: the same title, labels, description, parameters and attachments, byte for byte.
    Returns how many reports were compared (at most ``limit`` runs, the first ones)."""
    from ndbchaos.report.results import attachments, read_results
    live = [r for r in read_results(results) if r.get("status") != "skipped"
            and any(a["name"] in ("run.jsonl", "run.nch") for a in attachments(r))][:limit]
    runs = [str(results / a["source"]) for r in live for a in attachments(r) if a["name"] in ("run.jsonl", "run.nch")]
    assert runs, f"no run record in {results}"
    r = subprocess.run([str(REPO / ".venv/bin/ndbchaos"), "report", *runs, "-o", str(out)], capture_output=True,
                       text=True, timeout=60 + 30 * len(runs))
    assert r.returncode == 0, r.stderr
    rebuilt = {x["description"]: x for x in read_results(out)}
    for res in live:
        want = report_of(results, res)
        got = rebuilt.get(want["description"])
        assert got is not None, f"{res['name']}: no rebuilt report with its description"
        got = report_of(out, got)
        assert got["attachments"].keys() == want["attachments"].keys(), (res["name"], sorted(got["attachments"]),
                                                                         sorted(want["attachments"]))
        for name, body in want["attachments"].items():
            assert got["attachments"][name] == body, f"{res['name']}: attachment {name!r} differs"
        assert got == want, res["name"]
    return len(live)
