"""Every way out of a run heals what it opened: one test per exit of docs/safety.md's table (the
exits a real cluster is needed for are proven by the integration tests it names).

The faults here are real ``Fault`` objects (test_faults_unit.Recorder) on a cluster without
Docker; the child processes are real interpreters, exited or signalled as a CI job would be."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest

from ndbchaos import driver, fixtures, pytest_plugin
from ndbchaos.clock import RunClock
from ndbchaos.vocabulary import ClusterStatus, Expectation
from ndbchaos.handle import ClusterHandle
from ndbchaos.recording import Recorder as RunRecorder
from ndbchaos.scenario import ScenarioRun
from ndbchaos.session import Session
from ndbchaos.topology import SQL, Node

from .test_faults_unit import FakeCluster, Recorder

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Breaks(Recorder):
    """A fault whose heal fails: the other faults must still be healed."""

    def _revert(self):
        raise RuntimeError("the heal itself failed")


# -- 1. the scenario's own recovery phase -------------------------------------------------------

def test_a_scenario_heals_its_fault_in_the_recovery_phase():
    from unittest import mock
    c = FakeCluster()
    fault = Recorder(c, "data1")
    run = mock.create_autospec(ScenarioRun, instance=True)
    run.cluster, run.clock, run.rng = c, RunClock(), mock.Mock()
    run.rec = RunRecorder(run.clock)
    run.workload = SimpleNamespace(name="ledger")
    c.engine.crash_loss_window_s = lambda options: 0.0
    c.engine.loss_detected = lambda st, lost: True
    st = ClusterStatus(run.clock.now(), [], True, [])
    run.wait_status.return_value = run.wait_healthy.return_value = (st, 0.1)
    run.inject.side_effect = lambda f: f.inject() and f
    run.heal.side_effect = lambda f: f.heal()
    exp = Expectation("datanode_loss", True, True, "rule", 5.0, 30.0, "node_restart", {})
    plan = SimpleNamespace(exp=exp, engine_reacts=False, lost=["data1"], sql_nodes=[])
    driver.cycle(run, fault, plan, 0, 0)
    run.heal.assert_called_once_with(fault)
    assert "revert" in fault.log and c.journal.open_faults() == []


# -- 2. an exception, a failed assertion, Ctrl-C inside a scenario: the run's close ----------------

def _run_on(c) -> ScenarioRun:
    c.topology.nodes.append(Node("sql1", SQL, "proj-sql1-1", nodeid=51, sql_port=3306, serves_sql=True))
    c.engine.name, c.engine.sql_user, c.engine.sql_password, c.engine.sql_database = "galera", "u", "p", "d"
    c.engine.workload_params = lambda name: {}
    c.engine.collect_events = lambda cluster, t0: []
    c.status = lambda: ClusterStatus(c.clock.now(), [], True, [])
    c.topology.to_dict = lambda: {"nodes": []}
    return ScenarioRun(c, "ledger", processes=1, connections=1, seed=1)


def test_a_run_that_fails_half_way_heals_every_fault_it_injected_even_when_one_heal_fails(caplog):
    c = FakeCluster()
    run = _run_on(c)
    first, broken, last = Recorder(c, "data1"), Breaks(c, "data2"), Recorder(c, "data3")
    for f in (first, broken, last):
        run.inject(f)
    incomplete = run.close()  # the scenario_run fixture's teardown, on every path out
    assert "revert" in first.log and "revert" in last.log
    assert "heal of recorder failed: the heal itself failed" in caplog.text  # said, not silent
    assert c.journal.open_faults() == []  # a heal is tried once: what failed is said, and reap is the way out
    assert incomplete is not None and len(incomplete.record.windows) == 3  # the evidence, for the report


def test_a_run_that_finished_leaves_nothing_to_close():
    c = FakeCluster()
    run = _run_on(c)
    assert run.close() is None and c.journal.open_faults() == []


# -- 3. between scenarios, and at the end of the session: the handle's heal_all -------------------

def _handle(c: FakeCluster) -> ClusterHandle:
    cls = type("Handle", (ClusterHandle,), {m: lambda *a, **k: None for m in ClusterHandle.__abstractmethods__})
    h = cls(c.engine, {}, "proj", c.clock)
    h.journal = c.journal
    return h


def test_heal_all_heals_newest_first_and_keeps_going_past_a_failed_heal():
    c = FakeCluster()
    order = []

    class Ordered(Recorder):
        def _revert(self):
            order.append(self.targets[0].name)

    a, b = Ordered(c, "data1"), Breaks(c, "data2")
    z = Ordered(c, "data3")
    for f in (a, b, z):
        f.inject()
    problems = _handle(c).heal_all()
    assert order == ["data3", "data1"] and len(problems) == 1 and "the heal itself failed" in problems[0]


def test_the_session_end_heals_then_removes_its_cluster_unless_it_is_kept(monkeypatch):
    from ndbchaos import handle
    said, calls = [], []
    monkeypatch.setattr(fixtures, "say", lambda config, line: said.append(line))

    class Project(handle.ComposeProject):
        pass

    for kept in (False, True):
        cluster = SimpleNamespace(project="proj", heal_all=lambda: calls.append("heal") or [],
                                  down=lambda: calls.append("down"))
        monkeypatch.setattr(fixtures, "ComposeProject", type(cluster))  # this cluster is a Compose project
        state = Session()
        state.hold(cluster, "test")
        config = SimpleNamespace(getoption=lambda name: kept if name == "--keep-cluster" else None)
        fixtures.teardown_cluster(config, state)
        assert state.cluster is None and state.last_cluster is cluster
    assert calls == ["heal", "down", "heal"]  # kept: healed, not removed
    assert said == ["ndbchaos: cluster kept: project proj"]


# -- 4. SIGTERM to a pytest session: unwound as Ctrl-C, through the fixtures -----------------------

def test_sigterm_in_a_pytest_session_unwinds_like_ctrl_c():
    old = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(KeyboardInterrupt, match="signal 15"):
            pytest_plugin._sigterm(signal.SIGTERM, None)
        assert signal.getsignal(signal.SIGTERM) is pytest_plugin._sigterm_again
    finally:
        signal.signal(signal.SIGTERM, old)


SESSION = textwrap.dedent("""
    import time
    import pytest

    @pytest.fixture
    def held(tmp_path_factory):
        yield
        open({tearing!r}, "w").close()
        time.sleep(3)
        open({done!r}, "w").write("torn down")

    def test_waits(held):
        open({ready!r}, "w").close()
        time.sleep(60)
""")


def test_a_second_sigterm_does_not_cut_the_teardown_short(tmp_path):
    """A supervisor that repeats SIGTERM (or a user who sends it twice) must not stop the heal
    half way: the first unwinds like Ctrl-C, the next ones are ignored while fixtures tear down."""
    marks = {k: str(tmp_path / k) for k in ("ready", "tearing", "done")}
    (tmp_path / "test_child.py").write_text(SESSION.format(**marks))
    p = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_child.py"],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_default_signals)
    try:
        _wait_for(marks["ready"], p)
        p.send_signal(signal.SIGTERM)
        _wait_for(marks["tearing"], p)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert open(marks["done"]).read() == "torn down", out[-2000:] + err[-2000:]
    assert "SIGTERM again while tearing down: ignored" in err, err[-2000:]
    assert p.returncode != 0


def _wait_for(path: str, p: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


# -- 5. outside pytest (a script, the fault command's process): exit and signals -------------------

CHILD = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {repo!r})
    from tests.unit.test_faults_unit import FakeCluster, Recorder

    class Marks(Recorder):
        def _revert(self):
            open({mark!r}, "a").write("healed\\n")

    c = FakeCluster()
    Marks(c, "data1").inject()
    print("injected", flush=True)
    if sys.argv[1] == "wait":
        time.sleep(60)
""")


def _default_signals() -> None:
    """The child as a script started from a terminal has it: SIGTERM and SIGHUP at their default
    disposition. A suite run under nohup (CI's runner) ignores SIGHUP, the child would inherit
    the ignore, and the safety net rightly installs nothing over a disposition someone set."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _child(tmp_path, how: str) -> tuple[subprocess.Popen, str]:
    mark = str(tmp_path / "mark")
    p = subprocess.Popen([sys.executable, "-c", CHILD.format(repo=REPO, mark=mark), how],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals)
    assert p.stdout.readline().strip() == "injected"
    return p, mark


def test_a_script_that_exits_with_a_fault_open_heals_it_at_exit(tmp_path):
    p, mark = _child(tmp_path, "exit")
    assert p.wait(timeout=60) == 0, p.stderr.read()
    assert open(mark).read() == "healed\n"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_script_terminated_with_a_fault_open_heals_it_and_dies_of_the_signal(tmp_path, sig):
    p, mark = _child(tmp_path, "wait")
    p.send_signal(sig)
    assert p.wait(timeout=60) == -sig, p.stderr.read()  # the exit status the sender expects
    assert open(mark).read() == "healed\n"
