"""The run's figures as metrics (ndbchaos.metrics), no Docker: the client loop's counts in the
runner's shared arrays, the endpoint's exposition parsed back (OpenMetrics and Prometheus text),
the phase and the active fault of a run, the annotations file, bad options (one line, a usage
error, nothing left listening) and the endpoint closed at the session's end."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from types import SimpleNamespace

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text

from ndbchaos.clock import RunClock
from ndbchaos.errors import UsageError
from ndbchaos.faults.base import FaultWindow
from ndbchaos.history import History, Recorder as OpRecorder
from ndbchaos.journal import Journal
from ndbchaos.metrics import plugin as M
from ndbchaos.metrics.annotations import AnnotationFile, annotations
from ndbchaos.record import Measurement, ScenarioId
from ndbchaos.recording import Recorder
from ndbchaos.workload import figures as F
from ndbchaos.workload import runner as R
from ndbchaos.workload.ledger import Ledger

from .test_runner_loop import Script


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refused(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) != 0


class Kill:
    """A fault as the journal holds it (kind, targets, window)."""
    kind = "kill"

    def __init__(self, clock, targets):
        self.targets = [SimpleNamespace(name=t) for t in targets]
        self.window = FaultWindow(self.kind, list(targets), start=clock.now())


def loaded_runner(monkeypatch):
    """A runner whose two connections (slots 0 and 1) ran the real client loop against scripted
    endpoints, writing the runner's shared arrays; with the histories they recorded."""
    eps = [R.Endpoint("sql1", 1), R.Endpoint("sql2", 2)]
    runner = R.WorkloadRunner(Ledger(), eps, RunClock(), processes=1, connections=2)
    plans = [
        {1: [None, None, ("exec", 1047, "WSREP has not yet prepared node"), None], 2: []},
        {1: [], 2: [None, ("exec", 2013, "Lost connection to MySQL server during query"),
                    ("connect", 2003, "Can't connect"), None, None]},
    ]
    recs = []
    for slot, plan in enumerate(plans):
        stop = threading.Event()
        script = Script(plan, stop, limit=5)
        monkeypatch.setattr(R, "connect", script.connect)
        rec = OpRecorder()
        o = R.ClientOptions(engine="galera", backoff_min=0.0, backoff_max=0.0)
        R._connection_loop(Ledger(), slot, runner.n_slots, eps, o, time.monotonic(), stop, rec, runner.live,
                           runner._live_idx, runner.figures)
        recs.append(rec)
    return runner, list(History.merge("ledger", {}, recs))


def a_run(monkeypatch, runner=None):
    clock = RunClock()
    runner = runner or loaded_runner(monkeypatch)[0]
    cluster = SimpleNamespace(engine=SimpleNamespace(name="galera"), project="ndbchaos-test1",
                              journal=Journal(clock))
    return SimpleNamespace(scenario=ScenarioId("kill_whole_nodegroup", "nodegroup_loss",
                                               "test_nodegroup_loss[kill_whole_nodegroup]"),
                           title="t", clock=clock, t0=clock.now(), rec=Recorder(clock), cluster=cluster,
                           runner=runner, result=None)


def scrape(url: str, openmetrics: bool) -> dict:
    accept = "application/openmetrics-text; version=1.0.0" if openmetrics else "text/plain"
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": accept}), timeout=5) as r:
        body = r.read().decode()
    families = (parse_openmetrics if openmetrics else parse_text)(body)
    return {f.name: f for f in families}


def samples(fam, name=None) -> dict:
    return {tuple(sorted(s.labels.items())): s.value for s in fam.samples if name is None or s.name == name}


# -- the shared arrays ---------------------------------------------------------------------------

def test_the_loop_counts_every_operation_in_the_runners_shared_arrays_as_its_history_records_it(monkeypatch):
    runner, ops = loaded_runner(monkeypatch)
    snap = runner.figures.snapshot()
    for node in ("sql1", "sql2"):
        mine = [o for o in ops if o.node == node]
        assert snap[node]["ok"] == sum(o.type == "ok" for o in mine) > 0
        assert snap[node]["buckets"][-1] == snap[node]["ok"]  # +Inf holds every success
        assert snap[node]["buckets"] == sorted(snap[node]["buckets"])  # cumulative
        assert 0 < snap[node]["sum"] < 1.0
        for typ in F.TYPES:
            for cls in ("temporary", "unknown"):
                want = sum(1 for o in mine if o.type == typ and o.error is not None and o.error.cls == cls)
                assert snap[node]["errors"][(typ, cls)] == want
    assert snap["sql1"]["errors"][("fail", "temporary")] == 1  # 1047
    assert snap["sql2"]["errors"][("info", "unknown")] == 1  # 2013 during a write
    assert snap["sql2"]["errors"][("fail", "temporary")] == 1  # 2003, never sent


def test_latency_buckets_are_prometheus_le_and_failures_have_their_class():
    assert F.bucket(0.0) == 0 and F.bucket(F.BOUNDS[0]) == 0  # le: a bound counts in its own bucket
    assert F.bucket(F.BOUNDS[0] * 1.01) == 1
    assert F.bucket(1e9) == len(F.BOUNDS)  # +Inf
    k = F.N_TYPES * F.N_CLASSES
    assert F.failure_cell(3, "info", None, 2013) == 3 * k + F.N_CLASSES + F.CLASSES.index("unclassified")
    assert F.failure_cell(0, "fail", "permanent", 0) == F.CLASSES.index("application")  # declined by the workload


def test_the_native_loop_counts_a_batch_into_its_cell():
    from ndbchaos.workload.native import _count_batch
    import numpy as np
    fig = F.ClientFigures.local(2, 2)
    _count_batch(fig, 3, np.array([0.0001, 0.003, 0.003, 20.0]))
    row = fig.buckets[3 * F.N_BUCKETS:4 * F.N_BUCKETS]
    assert row[F.bucket(0.0001)] == 1 and row[F.bucket(0.003)] == 2 and row[-1] == 1 and sum(row) == 4
    assert fig.latency_sum[3] == pytest.approx(20.0061)
    assert sum(fig.buckets) == 4


# -- the endpoint --------------------------------------------------------------------------------

@pytest.mark.parametrize("openmetrics", [True, False])
def test_the_endpoint_shows_the_runs_figures_phase_and_active_fault(monkeypatch, openmetrics):
    runner, ops = loaded_runner(monkeypatch)
    run = a_run(monkeypatch, runner)
    plugin = M.start(free_port())
    try:
        plugin.watch(run)
        with run.rec.phase("baseline", "steady load"):
            fam = scrape(plugin.url, openmetrics)
            assert samples(fam["ndbchaos_phase"]) == {(("phase", "baseline"), ("scenario", "kill_whole_nodegroup")): 1}
            assert samples(fam["ndbchaos_faults_open"]) == {(("scenario", "kill_whole_nodegroup"),): 0}
        fault = Kill(run.clock, ["sql1", "sql2"])
        with run.rec.phase("fault", "kill sql1, sql2"):
            run.cluster.journal.opened(fault)
            fam = scrape(plugin.url, openmetrics)
        assert samples(fam["ndbchaos_phase"])[(("phase", "fault"), ("scenario", "kill_whole_nodegroup"))] == 1
        assert samples(fam["ndbchaos_fault_active"]) == {
            (("fault", "Kill"), ("kind", "kill"), ("scenario", "kill_whole_nodegroup"), ("target", "sql1,sql2")): 1}
        info = fam["ndbchaos_scenario" if openmetrics else "ndbchaos_scenario_info"]  # text: a gauge
        assert info.samples[0].labels["engine"] == "galera" and info.samples[0].labels["family"] == "nodegroup_loss"

        ok = samples(fam["ndbchaos_client_ops"], "ndbchaos_client_ops_total")
        assert fam["ndbchaos_client_ops"].type == "counter"
        for node in ("sql1", "sql2"):
            for typ in ("ok", "fail", "info"):
                key = (("node", node), ("scenario", "kill_whole_nodegroup"), ("type", typ))
                assert ok[key] == sum(1 for o in ops if o.node == node and o.type == typ)
        errs = samples(fam["ndbchaos_client_errors"], "ndbchaos_client_errors_total")
        assert errs[(("class", "unknown"), ("node", "sql2"), ("scenario", "kill_whole_nodegroup"),
                     ("type", "info"))] == 1
        assert sum(errs.values()) == sum(1 for o in ops if o.type != "ok")
        hist = fam["ndbchaos_client_latency_seconds"]
        assert hist.type == "histogram"
        inf = samples(hist, "ndbchaos_client_latency_seconds_bucket")
        assert inf[(("le", "+Inf"), ("node", "sql1"), ("scenario", "kill_whole_nodegroup"))] == \
            sum(1 for o in ops if o.node == "sql1" and o.type == "ok")
        assert len([k for k in inf if ("node", "sql1") in k]) == F.N_BUCKETS

        run.cluster.journal.closed(fault)
        run.result = SimpleNamespace(measurements={"outage (all SQL nodes)": Measurement("outage", 12.3, "s"),
                                                   "expectation": Measurement("expectation", "rule text")})
        fam = scrape(plugin.url, openmetrics)
        assert samples(fam["ndbchaos_phase"]) == {(("phase", "none"), ("scenario", "kill_whole_nodegroup")): 1}
        assert samples(fam["ndbchaos_fault_active"]) == {}
        assert samples(fam["ndbchaos_run_measurement"]) == {
            (("name", "outage (all SQL nodes)"), ("scenario", "kill_whole_nodegroup"), ("unit", "s")): 12.3}
    finally:
        plugin.close()
    assert refused(plugin.port)


def test_before_any_run_the_endpoint_answers_with_no_series_and_listens_on_loopback_only():
    plugin = M.start(free_port())
    try:
        assert plugin.server.server_address[0] == "127.0.0.1"
        assert scrape(plugin.url, True) == {}
    finally:
        plugin.close()
        plugin.close()  # the session's end may come twice: the second does nothing
    assert refused(plugin.port)


# -- annotations ---------------------------------------------------------------------------------

def test_annotations_are_grafana_bodies_appended_per_run_in_one_json_document(monkeypatch, tmp_path):
    run = a_run(monkeypatch)
    with run.rec.phase("baseline", "steady load"):
        time.sleep(0.01)
    fault = Kill(run.clock, ["sql1"])
    run.cluster.journal.opened(fault)
    time.sleep(0.02)
    fault.window.end = run.clock.now()
    run.cluster.journal.closed(fault)
    path = tmp_path / "annotations.json"
    file = AnnotationFile(path)
    file.append(annotations(run))
    file.append(annotations(run))  # the next scenario's
    got = json.loads(path.read_text())
    assert len(got) == 4 and got[:2] == got[2:]
    phase, window = got[0], got[1]
    assert set(phase) == set(window) == {"time", "timeEnd", "tags", "text"}
    assert phase["tags"] == ["ndbchaos", "phase", "baseline", "kill_whole_nodegroup", "galera"]
    assert window["tags"] == ["ndbchaos", "fault", "kill", "kill_whole_nodegroup", "galera", "sql1"]
    assert window["time"] == round(run.clock.wall(fault.window.start) * 1000)
    assert window["timeEnd"] - window["time"] == pytest.approx(1000 * (fault.window.end - fault.window.start), abs=1)
    assert abs(window["time"] / 1000 - time.time()) < 60  # epoch milliseconds
    assert AnnotationFile(path).items == got  # a later session appends to what is there


def test_an_annotations_file_that_is_not_a_json_list_is_refused(tmp_path):
    bad = tmp_path / "a.json"
    bad.write_text('{"time": 1}')
    with pytest.raises(UsageError, match="not a JSON list"):
        AnnotationFile(bad)
    bad.write_text("not json")
    with pytest.raises(UsageError, match="not a JSON list"):
        AnnotationFile(bad)
    with pytest.raises(UsageError, match="no folder"):
        AnnotationFile(tmp_path / "missing" / "a.json")


# -- bad input and the session's end -------------------------------------------------------------

def test_bad_values_are_refused_before_anything_listens():
    threads = set(threading.enumerate())
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        with pytest.raises(UsageError, match=rf"--metrics-port {port}: cannot listen on 127.0.0.1:{port} \(in use\)"):
            M.start(port)
    for bad in (0, 70000, -1):
        with pytest.raises(UsageError, match=r"not a port number \(1-65535\)"):
            M.start(bad)
    for url in ("ftp://host:9091", "127.0.0.1:9091", "http://", "http://host:99999", "not a url"):
        with pytest.raises(UsageError, match="not an http"):
            M.start(None, url)
    free = free_port()
    with pytest.raises(UsageError, match="not an http"):  # a bad URL with a good port: nothing started
        M.start(free, "ftp://x")
    assert refused(free)
    assert set(threading.enumerate()) == threads


def _pytest(args, cwd):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("how", ["in use", "out of range", "bad url"])
def test_a_session_with_a_bad_metrics_option_stops_with_one_line(tmp_path, how):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        args = {"in use": ["--metrics-port", str(port)], "out of range": ["--metrics-port", "70000"],
                "bad url": ["--pushgateway", "gopher://x"]}[how]
        r = _pytest([*args, "test_x.py"], tmp_path)
    assert r.returncode == 4, r.stdout + r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR: --"), r.stderr
    assert "passed" not in r.stdout


def test_the_endpoint_serves_during_the_session_and_is_closed_at_its_end(tmp_path):
    port = free_port()
    (tmp_path / "test_scrape.py").write_text(
        "import urllib.request\n"
        f"def test_scrape():\n"
        f"    with urllib.request.urlopen('http://127.0.0.1:{port}/metrics', timeout=5) as r:\n"
        "        assert r.status == 200\n")
    done = []

    def probe():  # while the child session runs: is the port taken by it?
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not done:
            if not refused(port):
                done.append(True)
            time.sleep(0.05)

    t = threading.Thread(target=probe)
    t.start()
    r = _pytest(["--metrics-port", str(port), "-q", "test_scrape.py"], tmp_path)
    done.append(False)
    t.join()
    assert r.returncode == 0, r.stdout + r.stderr
    assert done[0] is True
    assert refused(port)


def test_the_plugin_closes_the_endpoint_in_the_sessions_cleanup(tmp_path):
    """In process: the session's cleanup (pytest_unconfigure) shuts the server down and its
    thread ends, so nothing of it outlives the session."""
    port = free_port()
    (tmp_path / "test_y.py").write_text("def test_y():\n    pass\n")
    before = set(threading.enumerate())
    assert pytest.main([str(tmp_path / "test_y.py"), "-q", "-p", "no:cacheprovider", "--metrics-port", str(port),
                        "--annotations", str(tmp_path / "a.json")]) == 0
    assert refused(port)
    assert [t for t in threading.enumerate() if t not in before and t.is_alive()] == []


def test_the_example_dashboard_and_the_docs_name_only_the_series_the_endpoint_exposes(monkeypatch):
    import re
    from pathlib import Path
    from prometheus_client import CollectorRegistry, generate_latest
    from ndbchaos.metrics.exposition import RunCollector
    run = a_run(monkeypatch)
    run.result = SimpleNamespace(measurements={"recovery": Measurement("recovery", 1.0, "s")})
    fault = Kill(run.clock, ["sql1"])
    run.cluster.journal.opened(fault)
    reg = CollectorRegistry(auto_describe=False)
    reg.register(RunCollector(run))
    exposed = set(re.findall(r"^(ndbchaos_\w+)", generate_latest(reg).decode(), re.M))
    root = Path(__file__).resolve().parents[2]
    dashboard = (root / "examples" / "grafana" / "ndbchaos-dashboard.json").read_text()
    json.loads(dashboard)
    named = set(re.findall(r"ndbchaos_[a-z_]+", dashboard)) - {"ndbchaos_"}
    assert named and named <= exposed, named - exposed
    documented = set(re.findall(r"`(ndbchaos_[a-z_]+)`", (root / "docs" / "metrics.md").read_text()))
    families = {re.sub(r"_(bucket|sum|count)$", "", n) for n in exposed}  # a histogram by its family's name
    assert documented <= exposed | families, documented - exposed - families
    assert families <= documented  # every series has its row
