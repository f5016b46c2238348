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
