"""The run's figures as metrics, against a real Prometheus and a real Pushgateway (Debian 12's
``prometheus`` 2.42 and ``prometheus-pushgateway``, which .ci/run installs): Prometheus, started
here with its own configuration and storage in tmp_path on 127.0.0.1, scrapes the session's
endpoint every second while one real scenario plays (Galera's kill_whole_nodegroup: every data
node killed, a whole-cluster outage, the cheapest real one); afterwards a PromQL query of the
successful operations on all SQL nodes returns the outage the report shows, within the scrape
interval, and the Pushgateway holds the run's figures. Without the binaries the test skips with
the reason; under CI=true it fails (CI provides them)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from .helpers import allure_results, run_pytest

SCENARIO = "kill_whole_nodegroup"
SCRAPE_S = 1.0
BINARIES = ("prometheus", "prometheus-pushgateway")


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _binaries() -> dict[str, str]:
    found = {b: shutil.which(b) for b in BINARIES}
    missing = [b for b, p in found.items() if p is None]
    if missing:
        why = f"{', '.join(missing)} not installed (Debian: apt-get install prometheus prometheus-pushgateway)"
        if _ci():
            pytest.fail(f"under CI=true {why}", pytrace=False)
        pytest.skip(why)
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def _wait_ready(url: str, proc: subprocess.Popen, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}", pytrace=False)
        try:
            _get(url, 1.0)
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"{what} not ready within {timeout:.0f} s", pytrace=False)


@pytest.fixture
def servers(tmp_path):
    """Prometheus scraping the metrics port, and a Pushgateway, both on 127.0.0.1 and stopped after."""
    bins = _binaries()
    metrics, prom, gateway = _free_port(), _free_port(), _free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: ndbchaos\n    scrape_interval: 1s\n    scrape_timeout: 900ms\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{metrics}']\n")
    procs = []
    logs = []
    try:
        for name, args in (("prometheus", [bins["prometheus"], f"--config.file={tmp_path / 'prometheus.yml'}",
                                           f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                           f"--web.listen-address=127.0.0.1:{prom}"]),
                           # its state in tmp_path: Debian's build keeps what it was pushed in
                           # /var/lib/prometheus by default, and a run would read the runs before it
                           ("pushgateway", [bins["prometheus-pushgateway"],
                                            f"--persistence.file={tmp_path / 'pushgateway.data'}",
                                            f"--web.listen-address=127.0.0.1:{gateway}"])):
            log = open(tmp_path / f"{name}.log", "w")
            logs.append(log)
            procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT))
        _wait_ready(f"http://127.0.0.1:{prom}/-/ready", procs[0], "prometheus")
        _wait_ready(f"http://127.0.0.1:{gateway}/-/ready", procs[1], "prometheus-pushgateway")
        yield {"metrics": metrics, "prometheus": f"http://127.0.0.1:{prom}",
               "pushgateway": f"http://127.0.0.1:{gateway}"}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


def _query(prom: str, promql: str) -> list[dict]:
    body = json.loads(_get(f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": promql})))
    assert body["status"] == "success", body
    return body["data"]["result"]


def flat_runs(samples: list[tuple[float, float]]) -> tuple[float, float]:
    """The longest stretch in which a counter did not move, from its samples (time, value):
    (F, U) with F the time between the first and the last sample of equal value, U the time from
    the sample before it to the sample after it. No success ended in F; one ended in the first
    and one in the last interval of U, so the real gap is between F and U."""
    best = (0.0, 0.0)
    i = 0
    while i < len(samples):
        j = i
        while j + 1 < len(samples) and samples[j + 1][1] == samples[i][1]:
            j += 1
        if j > i and 0 < i and j + 1 < len(samples):
            f = samples[j][0] - samples[i][0]
            if f > best[0]:
                best = (f, samples[j + 1][0] - samples[i - 1][0])
        i = j + 1
    return best


@pytest.mark.timeout(400)
def test_prometheus_scrapes_a_scenario_and_promql_returns_the_reports_outage(tmp_path, servers):
    t0 = time.monotonic()
    results, annotations = tmp_path / "allure-results", tmp_path / "annotations.json"
    r = run_pytest(["scenarios/test_nodegroup_loss.py", "-k", SCENARIO, "--engine", "galera",
                    "-p", "no:cacheprovider", "-q", "--alluredir", str(results), "--trends",
                    str(tmp_path / "trends.jsonl"), "--metrics-port", str(servers["metrics"]),
                    "--pushgateway", servers["pushgateway"], "--annotations", str(annotations)], timeout=360)
    played = time.monotonic() - t0
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "ndbchaos: pushing" not in out and "ndbchaos: writing the annotations" not in out, out[-2000:]

    # the report's outage (the Allure result's parameter, from the run's verdict)
    res = [x for x in allure_results(results) if x["status"] == "passed"]
    assert len(res) == 1, [x.get("name") for x in allure_results(results)]
    params = {p["name"]: p["value"] for p in res[0].get("parameters", [])}
    outage = float(params["outage (all SQL nodes) [s]"])
    assert outage > 3 * SCRAPE_S, params  # a whole-cluster outage, several scrapes long

    prom = servers["prometheus"]
    sel = f'scenario="{SCENARIO}"'
    # the span of the run's phases, as Prometheus saw them (the load runs within it)
    phases = _query(prom, f'ndbchaos_phase{{{sel},phase=~"baseline|fault|recovery"}}[30m]')
    spans = {x["metric"]["phase"]: [float(t) for t, _v in x["values"]] for x in phases}
    assert set(spans) == {"baseline", "fault", "recovery"}, spans
    begin, end = min(spans["baseline"]), max(spans["recovery"])
    # successful operations on all SQL nodes: the raw samples of each node's counter, summed per
    # scrape (one scrape stamps every series of the target with the same time)
    series = _query(prom, f'ndbchaos_client_ops_total{{{sel},type="ok"}}[30m]')
    assert len({x["metric"]["node"] for x in series}) >= 2, series  # every SQL node (Galera: each data node)
    total: dict[float, float] = {}
    for x in series:
        for t, v in x["values"]:
            total[float(t)] = total.get(float(t), 0.0) + float(v)
    samples = sorted((t, v) for t, v in total.items() if begin <= t <= end and v > 0)
    assert len(samples) > 20, samples
    flat, upper = flat_runs(samples)
    print(f"\nmetrics live: {played:.0f} s for the scenario; report outage {outage:.3f} s; PromQL: no successful "
          f"operation on any SQL node for {flat:.3f} s between scrapes (at most {upper:.3f} s)")
    assert flat <= outage <= upper, (flat, outage, upper)
    assert upper - flat <= 2 * SCRAPE_S + 0.5, (flat, upper)  # within the scrape interval either side
    assert abs((flat + upper) / 2 - outage) <= SCRAPE_S, (flat, upper, outage)

    # the fault was active in Prometheus's view for the fault phase
    active = _query(prom, f'ndbchaos_fault_active{{{sel}}}[30m]')
    assert [x["metric"]["kind"] for x in active] == ["kill"], active

    # the Pushgateway holds the run's figures: the same final count of successes, the same outage
    pushed = {f.name: f for f in text_string_to_metric_families(_get(servers["pushgateway"] + "/metrics").decode())}
    ok = [s for s in pushed["ndbchaos_client_ops"].samples
          if s.name == "ndbchaos_client_ops_total" and s.labels.get("type") == "ok"]
    assert ok and all(s.labels["job"] == "ndbchaos" and s.labels["scenario"] == SCENARIO for s in ok), ok
    assert sum(s.value for s in ok) == max(v for _t, v in sorted(total.items())), (ok, max(total.values()))
    m = {s.labels["name"]: s.value for s in pushed["ndbchaos_run_measurement"].samples}
    assert m["outage (all SQL nodes)"] == pytest.approx(outage, abs=1e-3)

    # the annotations: one JSON list with the phases and the fault window, in epoch milliseconds
    notes = json.loads(Path(annotations).read_text())
    faults = [a for a in notes if a["tags"][1] == "fault"]
    assert len(faults) == 1 and "kill" in faults[0]["tags"] and SCENARIO in faults[0]["tags"], notes
    assert [a["tags"][2] for a in notes if a["tags"][1] == "phase"] == ["baseline", "fault", "recovery"]
    assert abs(faults[0]["time"] / 1000 - (time.time() - played)) < played + 60
    print(f"metrics live: the test took {time.monotonic() - t0:.0f} s")
