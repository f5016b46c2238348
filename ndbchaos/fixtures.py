"""What the pytest plugin's fixtures and hooks do (``ndbchaos.pytest_plugin`` holds only the
options, the markers and thin fixtures that call here): the session cluster on either runtime,
its reset before each test and its teardown, scenario runs, playing a scenario or a soak and
asserting its verdict, the gate, the trend and the Allure metadata.

The plugin imports this module the first time a session needs it (a fixture, a Docker-marked
test, a gate file, an Allure results folder), never while pytest loads the plugin: a project that
installs ndbchaos loads the plugin in every pytest session, and this module brings numpy, the
MySQL connector, Allure and Docker's client. ``state`` is the session's state (``ndbchaos.session``: the
cluster, the engine's reason, each scenario's terminal line).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from .runtimes.compose.disks import parse_size_mb
from .driver import play as drive
from .engines import get_engine
from .engines.choose import resolve_engine
from .errors import NdbChaosError, UsageError
from .faults.toxiproxy import with_toxiproxy
from .gate import load as load_gate
from .gate.evaluate import Run, measure
from .gate.pytest_gate import NAME as GATE_PLUGIN, GatePlugin
from .handle import ClusterHandle, ComposeProject
from .metrics import NAME as METRICS
from .runtimes import factory
from .runtimes.inventory import InventoryCluster, load_inventory
from .report import allure as report
from .report import trend
from .report.allure import write_results_metadata
from .report.terminal import scenario_line
from .runtimes.docker import docker_available
from .operations.driver import Operation, play as operate
from .record import ScenarioId
from .dryrun import scenario_plan, soak_plan
from .killswitch import Guard, RunAborted
from .scenario import ScenarioRun
from .session import Session
from .settings import Settings, current
from .soak import SOAK_S, menu_on, play_soak
from .workload.contract import ClientOptions
from .vocabulary import ClusterOptions


def in_ci() -> bool:
    return current().ci


def say(config, line: str) -> None:
    """A line for the person running the tests, shown at once even while output is captured."""
    capman = config.pluginmanager.getplugin("capturemanager")
    ctx = capman.global_and_fixture_disabled() if capman else None
    if ctx is None:
        sys.stderr.write(line + "\n")
        return
    with ctx:
        sys.stderr.write("\n" + line + "\n")
        sys.stderr.flush()


def require_docker() -> None:
    ok, why = docker_available()
    if ok:
        return
    if in_ci():
        pytest.fail(f"Docker is required under CI=true: {why}", pytrace=False)
    pytest.skip(why)


def gate_plugin(config, gate_file: str) -> None:
    """Register the gate of ``--gate FILE``; a bad gate file stops the session here, before any
    cluster starts."""
    try:
        plugin = GatePlugin(load_gate(gate_file), Path(config.getoption("--gate-out")),
                            config.getoption("--gate-baseline"))
    except NdbChaosError as e:
        raise pytest.UsageError(str(e)) from None
    config.pluginmanager.register(plugin, GATE_PLUGIN)


def _inventory_cluster(request, state: Session) -> InventoryCluster:
    """The session cluster of ``--inventory FILE``: verified against its hosts, never started."""
    opt = request.config.getoption
    try:
        inv = load_inventory(opt("--inventory"))
        engine_name = inv.engine if opt("--engine") == "auto" else opt("--engine")
        cluster = factory.inventory(get_engine(engine_name), inv, ClusterOptions(keep=True, seed=opt("--seed")))
    except NdbChaosError as e:
        pytest.exit(f"ndbchaos: {e}", returncode=2)
    reason = f"inventory {inv.path}: {len(inv.nodes)} nodes on {len(inv.hosts)} hosts"
    state.hold(cluster, reason)
    say(request.config, f"ndbchaos: engine {engine_name} ({reason}); run label {cluster.project}")
    try:
        if state.dry_run:  # read-only: the hosts answer, the nodes are found; no client account, no wait
            cluster.verify()
            cluster.discover()
            return cluster
        cluster.up()
    except UsageError as e:  # a bad inventory: one line, before any fault, and nothing else runs
        state.release()
        pytest.exit(f"ndbchaos: {e}", returncode=2)
    except NdbChaosError as e:
        pytest.fail(f"cluster is not healthy: {e}", pytrace=False)
    return cluster


def chaos_cluster(request, state: Session, settings: Settings):
    """The session cluster (the ``chaos_cluster`` fixture): an inventory's, verified and attached, or a
    Compose project started here (or found with ``--project``); torn down after the session."""
    if request.config.getoption("--inventory"):
        yield _inventory_cluster(request, state)
        teardown_cluster(request.config, state)
        return
    require_docker()
    opt = request.config.getoption
    if state.dry_run and not opt("--project"):
        pytest.exit("ndbchaos: --dry-run resolves targets against a running cluster: give --project ID (one you "
                    "kept with --keep-cluster) or --inventory FILE", returncode=2)
    try:
        engine_name, reason = resolve_engine(opt("--engine"))
    except NdbChaosError as e:
        # The engine asked for is not available: nothing in this session can run, say it once.
        pytest.exit(f"ndbchaos: {e}", returncode=2)
    gate = request.config.pluginmanager.get_plugin("ndbchaos-gate")
    if gate is not None:
        gate.engine = engine_name  # scenarios for other engines only are not expected of this session
    # the session's layout (--ndb-layout, --ndb-config or the environment's), when given
    options = ClusterOptions(galera_data_nodes=opt("--galera-data-nodes"), keep=bool(opt("--keep-cluster")),
                             seed=state.seed, ndb_layout=settings.ndb_layout or None)
    if opt("--data-disk"):
        try:
            options = options.with_(data_disk_mb=parse_size_mb(opt("--data-disk")))
        except NdbChaosError as e:
            pytest.exit(f"ndbchaos: --data-disk: {e}", returncode=2)
    if not opt("--no-toxiproxy") and not state.dry_run:
        try:
            options = with_toxiproxy(options)  # client-path faults in the same session
        except NdbChaosError as e:
            pytest.fail(str(e), pytrace=False)
    engine = get_engine(engine_name)
    if not opt("--project"):
        try:
            # Images first (NDB: built from NDBCHAOS_NDB_DIST when needed): a distribution that
            # cannot be used ends the session with one line, before any container starts.
            engine.ensure_images(options)
        except NdbChaosError as e:
            pytest.exit(f"ndbchaos: {e}", returncode=2)
    cluster = factory.compose(engine, options, project=opt("--project"))
    state.hold(cluster, reason)
    say(request.config, f"ndbchaos: engine {engine_name} ({reason}); project {cluster.project}")
    try:
        if state.dry_run:  # read-only: the containers found, nothing waited for
            cluster.discover()
        elif opt("--project"):
            cluster.discover()
            cluster.wait_healthy(60)
        else:
            cluster.up()
    except NdbChaosError as e:
        pytest.fail(f"cluster did not start: {e}", pytrace=False)
    yield cluster
    teardown_cluster(request.config, state)


def teardown_cluster(config, state: Session) -> None:
    cluster: ClusterHandle | None = state.release()
    if cluster is None or state.dry_run:  # a dry run leaves the cluster exactly as it found it
        return
    if not isinstance(cluster, ComposeProject):  # an inventory's: healed and left running, as healthy as found
        try:
            cluster.down()
            say(config, f"ndbchaos: cluster left running and healthy: {cluster.project}")
        except Exception as e:
            say(config, f"ndbchaos: the cluster {cluster.project} is NOT back to healthy at session end: {e}")
        return
    problems = cluster.heal_all()
    if problems:
        say(config, f"ndbchaos: heal problems at session end: {problems}")
    if config.getoption("--keep-cluster") or config.getoption("--project"):
        say(config, f"ndbchaos: cluster kept: project {cluster.project}")
        return
    cluster.down()


def reset_for_test(chaos_cluster: ClusterHandle, state: Session) -> ClusterHandle:
    """The session cluster, healthy at the start of the test (the ``cluster`` fixture); as it is,
    in a dry run."""
    if state.dry_run:
        return chaos_cluster
    try:
        st = chaos_cluster.status()
        if not st.healthy or chaos_cluster.journal.open_faults():
            chaos_cluster.reset()
    except NdbChaosError as e:
        pytest.fail(f"cluster could not be reset to healthy: {e}", pytrace=False)
    return chaos_cluster


def scenario_run(cluster: ClusterHandle, request, state: Session):
    """Factory of ScenarioRun bound to the session cluster; every run is closed on every path out."""
    opt = request.config.getoption
    runs = []
    metrics = request.config.pluginmanager.get_plugin(METRICS)  # --metrics-port, --pushgateway, --annotations

    def make(workload: str = "ledger", **kw) -> ScenarioRun:
        if state.dry_run:
            raise UsageError("a dry run makes no run: its plans come from the declarations (ndbchaos.dryrun)")
        kw.setdefault("processes", opt("--load-processes"))
        kw.setdefault("connections", opt("--load-connections"))
        kw.setdefault("seed", opt("--seed"))
        kw.setdefault("listeners", (report.AllureSteps(),))  # the run's steps as Allure steps
        kw.setdefault("guard", Guard(state.abort_when) if state.kill_switch else None)  # the kill switch
        run = ScenarioRun(cluster, workload, **kw)
        report.title(run.title)
        runs.append(run)
        if metrics is not None:
            metrics.watch(run)
        return run

    yield make
    for run in runs:
        _close(request, run)
        for problem in metrics.done(run) if metrics is not None else ():
            say(request.config, f"ndbchaos: {problem}")


def play(cluster: ClusterHandle, scenario_run, request, state: Session):
    """Play a scenario declaration (``ndbchaos.driver.Scenario``) and assert its verdict: every
    judgement of the run (durability, availability, errors, the engine's expectation) is in it,
    one line per checker in the failure message."""

    def _play(sc):
        why_not = sc.why_not_on(cluster)
        if why_not:
            pytest.skip(why_not)
        if state.dry_run:
            shape = f"{sc.clients} processes x 1 connection" if sc.clients is not None else \
                f"{request.config.getoption('--load-processes')} processes x " \
                f"{request.config.getoption('--load-connections')} connections"
            _dry(request, lambda seed: scenario_plan(sc, cluster, seed, f" ({shape})", state.abort_when), state)
        client = None
        if sc.failover:
            client = ClientOptions(failover=True)
        shape = {} if sc.clients is None else {"processes": sc.clients, "connections": 1}
        run = scenario_run(sc.workload, workload_params=dict(sc.workload_params), title=sc.title,
                           via_proxy=sc.route(cluster), client=client,
                           scenario=_scenario_id(request, sc.name, sc.family), **shape)
        try:
            res = operate(run, sc) if isinstance(sc, Operation) else drive(run, sc)
        except UsageError as e:  # bad input to a declaration: one line, nothing was started
            pytest.fail(f"{sc.name}: {e}", pytrace=False)
        except RunAborted as e:
            _aborted(request, cluster, run, sc.name, e)
        return _judged(request, cluster, res, run, state)
    return _play


def soak(cluster: ClusterHandle, scenario_run, request, state: Session):
    """Play a soak declaration (``ndbchaos.soak.Soak``) for ``--soak-duration`` seconds and assert
    its verdict: the whole history and every fault of the schedule on its own span."""

    def _soak(sk):
        try:
            menu = menu_on(sk, cluster)
        except UsageError as e:  # no fault of its menu here: under CI=true a soak that plays nothing fails
            if in_ci():
                pytest.fail(f"{sk.name}: a soak under CI=true must play: {e}", pytrace=False)
            pytest.skip(str(e))
        duration = request.config.getoption("--soak-duration") or SOAK_S
        if state.dry_run:
            _dry(request, lambda seed: soak_plan(sk, cluster, seed, duration, "", state.abort_when), state)
        # the clients' route as the menu needs it here (a client-path fault reaches only clients
        # that go through the proxies): the same decision play_soak checks and schedules from
        run = scenario_run(sk.workload, title=sk.title, via_proxy=menu.via_proxy,
                           scenario=_scenario_id(request, sk.name, "soak"))
        try:
            res = play_soak(run, sk, duration)
        except RunAborted as e:  # a soak stops at its first abort
            _aborted(request, cluster, run, sk.name, e)
        return _judged(request, cluster, res, run, state)
    return _soak


def _dry(request, plan, state: Session) -> None:
    """A dry run's scenario: its plan printed (``plan(seed)``: its lines), then skipped."""
    lines = plan(state.seed)
    say(request.config, "\n".join(["ndbchaos dry run: " + lines[0], *lines[1:]]))
    pytest.skip(f"dry run: nothing was done ({lines[0].split(':')[0]}; --seed {state.seed} plays this plan)")


def _close(request, run) -> None:
    """Close a run (a second close does nothing); one that never reached its verdict leaves its
    evidence so far in the report."""
    incomplete = run.close()
    if incomplete is not None:
        try:
            report.attach_incomplete(incomplete)
        except Exception as e:  # evidence is best effort on a failed run
            say(request.config, f"ndbchaos: attaching the evidence of the incomplete run failed: {e}")


def _aborted(request, cluster: ClusterHandle, run, name: str, e: RunAborted) -> None:
    """The kill switch stopped the run: its faults healed and its evidence attached, the cluster
    reset (every node healthy), then the scenario failed in one line with why and how long the
    heal took."""
    t0 = time.monotonic()
    _close(request, run)
    try:
        cluster.reset()
        healed = f"healed in {time.monotonic() - t0:.1f} s"
    except NdbChaosError as x:
        healed = f"NOT healed after {time.monotonic() - t0:.1f} s: {x}"
    pytest.fail(f"{name}: kill switch: {e}; {healed}", pytrace=False)


def _scenario_id(request, name: str, family: str) -> ScenarioId:
    return ScenarioId(name, family, request.node.name, request.node.nodeid,
                      tuple(m.name for m in request.node.iter_markers()))


def _judged(request, cluster: ClusterHandle, res, run, state: Session):
    """A finished run: its report (from the result alone), its gate rows and trend, its line for
    the terminal, then its verdict asserted."""
    report.attach_result(res)
    name = run.scenario.name if run.scenario else request.node.name
    state.lines[request.node.nodeid] = scenario_line(name, res.measurements, res.verdict)
    gate = request.config.pluginmanager.get_plugin("ndbchaos-gate")
    if gate is not None:
        rows, text = gate.add(request.node, res.history, res.verdict)
        report.attach_text(text, "gate")
        report.attach_json(rows, "gate rows")
    _trend(request, cluster.engine.name, res)
    assert res.verdict.valid is True, "\n".join(res.verdict.summary)
    return res


def _trend(request, engine: str, res) -> None:
    """This run's headline figures appended to the trend file; the scenario's last runs drawn."""
    path = Path(request.config.getoption("--trends"))
    if not path.is_absolute():
        path = Path(request.config.rootpath) / path
    test = request.node.name
    try:
        figures = measure(Run(test, [], res.history), res.verdict)
        entries = trend.previous(path, test, engine) + [trend.append(path, test, engine, figures)]
        png = trend.trend_png(entries, f"{test} on {engine}: the last {len(entries)} runs")
        if png:
            report.attach_png(png, "trend")
    except OSError as e:  # the trend is a convenience: a read-only folder must not fail a scenario
        say(request.config, f"ndbchaos: trend not recorded ({e})")


def session_finish(session, state: Session) -> None:
    """Heal anything still open; write the Allure environment, categories and executor."""
    teardown_cluster(session.config, state)
    alluredir = getattr(session.config.option, "allure_report_dir", None)
    if alluredir:
        write_results_metadata(Path(alluredir), state.engine_reason, state.last_cluster, in_ci())
