"""The fault catalogue end to end on a Galera cluster (3 data nodes + garbd = 4 votes, plus
toxiproxy in front of the SQL nodes), one cluster for the module, torn down at the end.

For each fault kind: it took effect (probed by the fault itself), the engine reacted as its rules
say (``cluster.status()`` sampled in the background from before the inject), and after heal the
cluster is healthy again. The time from inject to the engine's first reaction is measured and
written to ``reports/fault-reactions.json`` (printed with ``-s``):

    .venv/bin/pytest tests/integration/test_faults_galera.py -s

A decoy container (the same galera image, not labelled) sits on the cluster's network for the
whole module: every fault aimed at it is refused, and at the end it is still running, was never
paused/killed/stopped (docker events) and has no rule or qdisc in its namespace. The last test
kills (SIGKILL) a process that holds a partition and shows ``ndbchaos reap`` leaves nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ndbchaos.runtimes import docker
from ndbchaos import settings
from ndbchaos import topology as TP
from ndbchaos.runtimes.compose.cluster import Cluster
from ndbchaos.engines import get_engine
from ndbchaos.errors import BlastRadiusError
from ndbchaos.faults import netem as NE
from ndbchaos.runtimes import netns
from ndbchaos.faults import network as N
from ndbchaos.faults import node as ND
from ndbchaos.faults import skip_if_unsupported
from ndbchaos.faults import targets as TG
from ndbchaos.faults import toxiproxy as TX

from .helpers import ctrl_c_reaches_it

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
REACTIONS: dict[str, dict] = {}


# -- fixtures -------------------------------------------------------------------------------------

def _need_docker():
    ok, why = docker.docker_available()
    if not ok:
        if settings.current().ci:
            pytest.fail(f"Docker is required under CI=true: {why}")
        pytest.skip(why)


@pytest.fixture(scope="module")
def cluster():
    _need_docker()
    c = Cluster(get_engine("galera"), TX.with_toxiproxy({"galera_data_nodes": 3}))
    try:
        c.up()
        yield c
    finally:
        c.down()
        _write_reactions()


@pytest.fixture(scope="module")
def decoy(cluster):
    """Same image, no ndbchaos label, on the cluster's network (so it is a plausible victim)."""
    client = docker.docker_client()
    img = cluster.engine.image(cluster.options)
    c = client.containers.run(img, ["sleep", "900"], detach=True, auto_remove=True,
                              name=f"decoy-{cluster.project}", labels={"purpose": "ndbchaos-test-decoy"})
    since = int(time.time()) - 1
    net = docker.project_networks(cluster.project)[0]
    net.connect(c)
    c.reload()
    node = TP.Node("decoy", TP.DATA, c.name, c.id, nodegroup=0, nodeid=99,
                   ip=docker.container_ip(c))
    yield {"container": c, "node": node, "since": since, "network": net}
    try:
        c.remove(force=True)
    except Exception:
        pass


BROKEN: list[str] = []  # why the module's cluster could not be brought back, once it could not


@pytest.fixture
def healthy(cluster):
    """Every test starts from (and the next one finds) a healthy cluster. A test that leaves it
    unhealthy gets one repair (``cluster.reset``: heal, thaw, restart dead nodes, wait); if that
    fails too, every later test fails at once with the reason instead of waiting out its own
    timeout on a cluster that will not come back."""
    if BROKEN:
        pytest.fail(f"the module's cluster is broken since an earlier test: {BROKEN[0]}")
    try:
        cluster.wait_healthy(120)
    except Exception as first:
        try:
            cluster.reset(timeout=240)
        except Exception as e:
            BROKEN.append(f"{type(first).__name__}: {first}; reset: {type(e).__name__}: {e}"[:600])
            pytest.fail(f"the cluster did not come back: {BROKEN[0]}")
    yield cluster
    problems = cluster.heal_all()
    assert not problems, problems


class Sampler:
    """``cluster.status()`` in a background thread, every ``period`` seconds, on the run clock."""

    def __init__(self, cluster, period: float = 0.2):
        self.cluster = cluster
        self.period = period
        self.samples = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.samples.append(self.cluster.status())
            except Exception:
                pass
            self._stop.wait(self.period)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join(10)

    def wait(self, pred, after: float, timeout: float):
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for st in self.samples[seen:]:
                if st.t >= after and pred(st):
                    return st
            seen = max(0, len(self.samples) - 1)
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)


def _state(st, name):
    return st.node(name).state


def _primary(st, name, size=None):
    d = st.node(name).details
    ok = d.get("wsrep_cluster_status", "").lower() == "primary"
    return ok and (size is None or int(d.get("wsrep_cluster_size") or 0) == size)


def _non_primary(st, name):
    d = st.node(name).details
    return bool(d) and d.get("wsrep_cluster_status", "").lower() != "primary"


def _outcome_predicate(cluster, components):
    """From the engine's rule: serving components' data nodes Primary with their size, the
    others' data nodes non-Primary (or unreadable when they are unplugged)."""
    out = cluster.engine.partition_outcome(cluster, components)
    data = {n.name for n in cluster.topology.data_nodes}

    def pred(st):
        for comp in out["serving"]:
            for n in comp:
                if n in data and not _primary(st, n, size=len(comp)):
                    return False
        for comp in out["stopped"]:
            for n in comp:
                if n in data and not _non_primary(st, n):
                    return False
        return True

    return pred, out


def _view_changed(st):
    return st.summary.get("component_size") != st.summary.get("expected_members") or any(
        not n.healthy for n in st.nodes if n.role == TP.DATA)


def run_fault(cluster, fault, reacted, what: str, hold: float = 0.0, timeout: float = 30,
              rule: str = "", heal_timeout: float = 120):
    """Inject, wait for the engine's reaction, heal, wait healthy; record the timings."""
    with Sampler(cluster) as s:
        w = fault.inject()
        st = s.wait(reacted, w.start, timeout)
        react_t = st.t if st else None
        if hold:
            time.sleep(hold)
        observed = {n.node: n.state for n in (s.samples[-1].nodes if s.samples else [])}
    fault.heal()
    t_heal = cluster.clock.now()
    healthy, secs = cluster.wait_for(lambda x: x.healthy, heal_timeout, what=f"healthy after {fault.kind}")
    REACTIONS[what] = {
        "kind": fault.kind, "targets": w.targets,
        "inject_to_effective_s": round(w.effective_at - w.start, 2),
        "inject_to_reaction_s": round(react_t - w.start, 2) if react_t is not None else None,
        "heal_to_healthy_s": round(healthy.t - t_heal, 2),
        "reaction": what, "rule": rule, "states_during": observed,
        "evidence": w.verification[0] if w.verification else "",
    }
    assert st is not None, f"{what}: the engine did not react within {timeout}s (last: {observed})"
    return w, st


def _write_reactions():
    if not REACTIONS:
        return
    out = REPO / "reports" / "fault-reactions.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(REACTIONS, indent=2))
    print("\n\nfault kind -> engine reaction (seconds from inject on the run clock)")
    print(f"{'case':<44} {'effective':>9} {'reaction':>9} {'healthy':>9}")
    for k, v in REACTIONS.items():
        r = v["inject_to_reaction_s"]
        print(f"{k:<44} {v['inject_to_effective_s']:>9} {('-' if r is None else r):>9} {v['heal_to_healthy_s']:>9}")
    print(f"(written to {out})")


# -- node faults ------------------------------------------------------------------------------------

def _survivors_primary(names, size):
    return lambda st: all(_primary(st, n, size) for n in names)


def test_kill_sigkill(healthy):
    c = healthy
    exp = c.engine.expectation("datanode_loss", c, lost=1)
    assert exp.survivors_serve
    f = ND.Kill(c, TG.node("data2"))
    run_fault(c, f, _survivors_primary(["data1", "data3"], 3), "kill data2 (SIGKILL)", rule=exp.rule)
    assert "process gone" in f.window.verification[0]


def test_stop_graceful(healthy):
    c = healthy
    exp = c.engine.expectation("datanode_loss", c, lost=1, graceful=True)
    f = ND.Stop(c, TG.node("data3"), timeout=20)
    run_fault(c, f, _survivors_primary(["data1", "data2"], 3), "stop data3 (graceful)", rule=exp.rule)


def test_pause(healthy):
    c = healthy
    f = ND.Pause(c, TG.node("data1"))
    w, st = run_fault(c, f, _survivors_primary(["data2", "data3"], 3), "pause data1", rule="evs.suspect_timeout")
    assert st.node("data1").container == "paused"


def test_restart(healthy):
    c = healthy
    f = ND.Restart(c, TG.node("data2"), graceful=True, timeout=20)
    # The node leaves (graceful) and comes back; the reaction is the view without it.
    run_fault(c, f, lambda st: st.summary.get("component_size") == 3 or not st.node("data2").healthy,
              "restart data2 (graceful)", timeout=30)


def test_kill_again_during_recovery(healthy):
    c = healthy
    f = ND.KillDuringRecovery(c, TG.node("data3"))
    w, _ = run_fault(c, f, _survivors_primary(["data1", "data2"], 3), "kill data3, restart, kill while rejoining",
                     timeout=60, heal_timeout=180)
    assert w.params["loss_detected_s"] is not None  # restarted only after the engine saw the loss
    sk = w.params["second_kill"]["data3"]
    assert sk["after_restart_s"] < f.recover_window + 1
    assert "killed again" in w.verification[0]


# -- partitions ----------------------------------------------------------------------------------------

def test_isolate_one_node(healthy):
    c = healthy
    f = N.Isolate(c, TG.node("data2"))
    pred, out = _outcome_predicate(c, f.window.params["components"])
    assert out["serving"] == [["data1", "data3", "arb"]]
    w, st = run_fault(c, f, pred, "isolate data2", rule=out["rule"])
    assert w.targets == ["data2"]
    assert w.params["probes"]["data1->data2"] != "open" and w.params["probes"]["data1->data3"] == "open"


def test_partition_into_components(healthy):
    c = healthy
    f = N.Components(c, [["data1"], ["data2", "data3"], ["arb"]])
    pred, out = _outcome_predicate(c, f.window.params["components"])
    assert out["serving"] == []  # 2*2 <= 4: no component keeps a primary
    run_fault(c, f, pred, "partition {data1} {data2,data3} {arb}", rule=out["rule"])


def test_halves(healthy):
    c = healthy
    f = N.Halves(c)
    pred, out = _outcome_predicate(c, f.window.params["components"])
    assert out["serving"] == []  # {data1,data2} | {data3,arb}: split brain, both non-Primary
    run_fault(c, f, pred, "halves {data1,data2} | {data3,arb}", rule=out["rule"])


def test_nodegroup_split_arbitrator_with_majority(healthy):
    c = healthy
    f = N.NodeGroupSplit(c, arbitrator="b")
    comps = f.window.params["components"]
    assert comps == [["data1"], ["data2", "data3", "arb"]]
    pred, out = _outcome_predicate(c, comps)
    assert out["serving"] == [["data2", "data3", "arb"]]
    run_fault(c, f, pred, "nodegroup split, arbitrator on side b", rule=out["rule"])


def test_role_split_arbitrator_from_data(healthy):
    c = healthy
    f = N.MgmDataSplit(c)
    pred, out = _outcome_predicate(c, [["arb"], ["data1", "data2", "data3"]])
    run_fault(c, f, pred, "role split arbitrator <-> data", rule=out["rule"])
    with pytest.raises(Exception, match="no node with role"):
        N.SqlDataSplit(c)  # Galera: SQL and data are the same containers


def test_bridge(healthy):
    c = healthy
    f = N.Bridge(c)
    assert f.window.params["bridge"] == "data3"
    # Not a clean partition: the engine's reaction is a view change; gmcast may then relay
    # through the bridge and re-form the full component (recorded, not asserted).
    run_fault(c, f, _view_changed, "bridge (data3 in the middle)", hold=3,
              rule="non-transitive: evs suspicion, then gmcast relay through the bridge")


def test_majorities_ring(healthy):
    c = healthy
    f = N.MajoritiesRing(c)
    run_fault(c, f, _view_changed, "majorities ring", hold=2,
              rule="non-transitive: evs suspicion, then gmcast relay")


def test_one_way_packets(healthy):
    c = healthy
    f = N.OneWay(c, "data1", "data2", mode="packets")
    run_fault(c, f, _view_changed, "one-way data1 -/-> data2 (packets)", hold=2,
              rule="data2 hears nothing from data1: suspicion, view change")


def test_one_way_connections_is_tcp_visible(healthy):
    c = healthy
    f = N.OneWay(c, "data1", "data2")  # mode connections
    with f:
        p = f.window.params["probes"]
        assert p["data1->data2"] != "open" and p["data2->data1"] == "open"
        assert p["data1->data3"] == "open"
    REACTIONS["one-way data1 -/-> data2 (connections)"] = {
        "kind": f.kind, "inject_to_effective_s": round(f.window.effective_at - f.window.start, 2),
        "inject_to_reaction_s": None, "heal_to_healthy_s": 0.0,
        "rule": "existing gcomm connections opened by data2 keep working: no view change expected",
        "evidence": f.window.verification[0]}


def test_disconnect_from_network(healthy):
    c = healthy
    f = N.Disconnect(c, TG.node("data3"))
    run_fault(c, f, _survivors_primary(["data1", "data2"], 3), "disconnect data3 (unplug)")
    assert c.topology.node("data3").sql_port  # re-discovered after reconnect


# -- client path (toxiproxy) ------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda c: TX.Latency(c, latency_ms=300, jitter_ms=50),
    lambda c: TX.Bandwidth(c, TG.node("data1"), rate_kb=8),
    lambda c: TX.Timeout(c, TG.node("data2")),
    lambda c: TX.ResetPeer(c, TG.node("data3")),
    lambda c: TX.Slicer(c, TG.node("data1")),
    lambda c: TX.ProxyDown(c, TG.node("data2")),
], ids=["latency", "bandwidth", "timeout", "reset_peer", "slicer", "proxy_down"])
def test_client_path(healthy, make):
    c = healthy
    ports = TX.proxy_ports(c)
    assert set(ports) == {"data1", "data2", "data3"} and all(p > 0 for p in ports.values())
    f = make(c)
    w = f.inject()
    st = c.status()
    f.heal()
    # The engine is not involved: SQL nodes stay healthy; the client sees it at once.
    assert st.healthy, st.problems
    REACTIONS[f"client path: {f.kind}"] = {
        "kind": f.kind, "targets": w.targets,
        "inject_to_effective_s": round(w.effective_at - w.start, 2), "inject_to_reaction_s": None,
        "heal_to_healthy_s": 0.0, "rule": "client path only: engine unaffected, probe through the proxy",
        "evidence": w.verification[0]}


def test_workload_connects_through_the_proxy(healthy):
    import mysql.connector
    c = healthy
    port = TX.proxy_ports(c)["data2"]
    conn = mysql.connector.connect(host="127.0.0.1", port=port, user=c.engine.sql_user,
                                   password=c.engine.sql_password, connection_timeout=5)
    cur = conn.cursor()
    with TX.Latency(c, TG.node("data2"), latency_ms=200):
        t0 = time.monotonic()
        cur.execute("SELECT @@hostname")
        assert cur.fetchall() == [("data2",)]
        assert time.monotonic() - t0 >= 0.15
    conn.close()


# -- netem: must skip here (no sch_netem) ----------------------------------------------------------

@pytest.mark.parametrize("kw", [{"delay_ms": 100, "jitter_ms": 10}, {"loss_pct": 20},
                                {"duplicate_pct": 5}, {"corrupt_pct": 5}],
                         ids=["delay", "loss", "duplicate", "corrupt"])
def test_netem(healthy, kw):
    c = healthy
    supported, why = NE.probe_netem(c.project)
    if not supported:
        assert "sch_netem" in why
    with skip_if_unsupported():
        f = NE.Netem(c, TG.node("data1"), **kw)
        with f:
            assert "netem" in f.window.verification[0]


# -- CLI -----------------------------------------------------------------------------------------------

def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "ndbchaos.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def test_cli_fault_status_heal(healthy):
    c = healthy
    r = cli("fault", "isolate", "data2", "--project", c.project)
    assert r.returncode == 0, r.stderr
    assert "left in place" in r.stdout
    r2 = cli("fault", "pause", "arb", "--project", c.project)
    assert r2.returncode == 0, r2.stderr
    st = cli("status", "--project", c.project)
    assert st.returncode == 0, st.stderr
    assert "partition" in st.stdout and "NDBCHAOS-" in st.stdout and "pause" in st.stdout
    c.wait_for(lambda s: _non_primary(s, "data2"), 30, what="data2 non-Primary")
    h = cli("fault", "heal", "--project", c.project)
    assert h.returncode == 0, h.stderr
    assert "removed chain" in h.stdout and "thawed arb" in h.stdout, h.stdout  # holds.thaw: every frozen node first
    c.wait_healthy(120)
    st = cli("status", "--project", c.project)
    assert "active faults: none" in st.stdout, st.stdout


def test_cli_bad_input(cluster, decoy):
    r = cli("fault", "kill", "data9", "--project", cluster.project)
    assert r.returncode != 0 and r.stderr.count("\n") == 1 and "no node named 'data9'" in r.stderr
    r = cli("fault", "kill", "data1", "--project", "ndbchaos-doesnotexist")
    assert r.returncode != 0 and r.stderr.count("\n") == 1 and "no containers labelled" in r.stderr
    r = cli("fault", "kill", decoy["container"].name, "--project", cluster.project)
    assert r.returncode != 0 and r.stderr.count("\n") == 1 and "refusing" in r.stderr


# -- pumba: the real binary beside the native backend ------------------------------------------------
# Each fault runs once per backend on the same node, so the table printed at the end (and
# reports/fault-reactions.json) compares pumba's windows and the engine's reactions with ours.

def _backend(backend):
    from ndbchaos.faults import pumba
    if backend == "pumba" and not pumba.binary():
        pytest.skip("no pumba binary on PATH or in NDBCHAOS_PUMBA_BIN (.ci/run points it at shared/tools/pumba)")
    return backend


@pytest.mark.parametrize("backend", ["native", "pumba"])
@pytest.mark.parametrize("kind", ["kill", "pause"])
def test_node_fault_by_backend(healthy, kind, backend):
    c = healthy
    node, others = ("data2", ["data1", "data3"]) if kind == "kill" else ("data3", ["data1", "data2"])
    make = ND.Kill if kind == "kill" else ND.Pause
    f = make(c, TG.node(node), backend=_backend(backend))
    w, st = run_fault(c, f, _survivors_primary(others, 3), f"{kind} {node} ({backend})", rule="evs.suspect_timeout")
    assert w.params.get("backend", "native") == backend
    if kind == "kill":
        assert "process gone" in w.verification[0]
    else:
        assert st.node(node).container == "paused"
    if kind == "pause" and backend == "pumba":
        # pumba undoes its own pause when stopped (SIGTERM); our check afterwards found nothing to do
        assert w.params["pumba_restored"] is True, w.params


def test_pumba_label_filter_spares_a_container_named_outright(cluster, decoy):
    """Even given the decoy's exact name, pumba with our project's label filter touches nothing
    (our adapter refuses the name before that; this is the second fence, in the real binary)."""
    from ndbchaos.faults import pumba
    _backend("pumba")
    name = decoy["container"].name
    out = pumba.run(pumba.base_argv(cluster) + ["kill", "--signal", "SIGKILL", name])
    time.sleep(1)
    assert docker.container_state(decoy["container"]) == "running", out


# -- blast radius: the decoy ------------------------------------------------------------------------

def test_every_fault_refuses_the_decoy(cluster, decoy):
    c, d = cluster, decoy["node"]
    attempts = {
        "kill": lambda: ND.Kill(c, [d]),
        "stop": lambda: ND.Stop(c, [d]),
        "pause": lambda: ND.Pause(c, [d]),
        "restart": lambda: ND.Restart(c, [d]),
        "kill-during-recovery": lambda: ND.KillDuringRecovery(c, [d]),
        "isolate": lambda: N.Isolate(c, d),
        "partition by name": lambda: N.Components(c, [[d.container], ["data1"]]),
        "grudge by name": lambda: N.Partition(c, {"data1": {d.container}}),
        "one-way": lambda: N.OneWay(c, "data1", d),
        "halves over it": lambda: N.Halves(c, nodes=[d, "data1"]),
        "disconnect": lambda: N.Disconnect(c, [d]),
        "netem": lambda: NE.Netem(c, [d], delay_ms=10),
        "latency": lambda: TX.Latency(c, [d]),
        "proxy down": lambda: TX.ProxyDown(c, [d]),
        "helper in its namespace": lambda: netns.start_helper(c, d),
    }
    for what, make in attempts.items():
        with pytest.raises(BlastRadiusError, match="refusing"):
            make()
    assert not [h for h in docker.project_containers(c.project) if h.labels.get(TP.ROLE) == TP.HELPER]


def test_decoy_untouched_by_the_whole_sequence(cluster, decoy):
    """Runs after the fault tests above (module order): the decoy lived through all of them."""
    cont = decoy["container"]
    assert docker.container_state(cont) == "running"
    client = docker.docker_client()
    events = list(client.events(since=decoy["since"], until=int(time.time()) + 1,
                                filters={"container": cont.id}, decode=True))
    actions = [e.get("Action") or e.get("status") for e in events]
    bad = [a for a in actions if a and a.split(":")[0] in ("pause", "unpause", "kill", "die", "stop", "restart")]
    assert not bad, f"the decoy saw {bad}"
    # No rule and no qdisc in its namespace: look with a raw tools container (labelled as ours so
    # reap would remove it; not made by the code under test).
    out = client.containers.run(netns.ensure_tools_image(), ["sh", "-c", "iptables -S; tc qdisc show"],
                                network_mode=f"container:{cont.id}", cap_add=["NET_ADMIN"], remove=True,
                                labels={TP.PROJECT: cluster.project, TP.ROLE: TP.HELPER}).decode()
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert ([ln for ln in lines if ln.startswith("-")]
            == ["-P INPUT ACCEPT", "-P FORWARD ACCEPT", "-P OUTPUT ACCEPT"]), out
    assert all("noqueue" in ln for ln in lines if ln.startswith("qdisc")), out


# -- heal on the ways out: Ctrl-C (KeyboardInterrupt) and SIGTERM (safety net) ----------------------

HOLD_UNTIL_SIGNAL = """
import sys, time
from ndbchaos.faults.state import attach
from ndbchaos.faults import network as N
c = attach(sys.argv[1])
f = N.Isolate(c, "data1")
if sys.argv[2] == "with":
    with f:
        print("INJECTED", f.chain, flush=True)
        time.sleep(600)
else:
    f.inject()
    print("INJECTED", f.chain, flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("sig,style", [(signal.SIGINT, "with"), (signal.SIGTERM, "inject")],
                         ids=["ctrl-c-in-with-block", "sigterm-safety-net"])
def test_signal_heals(healthy, sig, style):
    c = healthy
    p = subprocess.Popen([sys.executable, "-c", HOLD_UNTIL_SIGNAL, c.project, style],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                         preexec_fn=ctrl_c_reaches_it)
    try:
        line = p.stdout.readline()
        assert line.startswith("INJECTED"), p.stderr.read() if p.poll() is not None else line
        chain = line.split()[1]
        p.send_signal(sig)
        rc = p.wait(60)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc != 0  # it died of the signal (after healing)
    assert not [h for h in docker.project_containers(c.project) if h.labels.get(TP.ROLE) == TP.HELPER]
    st = cli("status", "--project", c.project)
    assert chain not in st.stdout and "active faults: none" in st.stdout, st.stdout
    c.wait_healthy(60)


# -- reap after SIGKILL (last: it removes the module's cluster) ------------------------------------

HOLDER = """
import sys, time
from ndbchaos.faults.state import attach
from ndbchaos.faults import network as N
c = attach(sys.argv[1])
f = N.Isolate(c, "data2")
f.inject()
print("INJECTED", f.chain, flush=True)
time.sleep(600)
"""


def test_reap_after_sigkill_leaves_nothing(cluster, decoy):
    c = cluster
    decoy["network"].disconnect(decoy["container"], force=True)  # not ours: off our network first
    p = subprocess.Popen([sys.executable, "-c", HOLDER, c.project], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = p.stdout.readline()
        assert line.startswith("INJECTED"), p.stderr.read() if p.poll() is not None else line
        chain = line.split()[1]
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    # The partition outlives its holder: helpers and rules are still there.
    helpers = [h for h in docker.project_containers(c.project) if h.labels.get(TP.ROLE) == TP.HELPER]
    assert helpers
    st = cli("status", "--project", c.project)
    assert chain in st.stdout, st.stdout
    r = cli("reap", "--project", c.project)
    assert r.returncode == 0, r.stderr
    assert "removed container" in r.stdout and "removed network" in r.stdout
    assert "-helper-data2-" in r.stdout and "toxiproxy" in r.stdout  # helpers and proxy state too
    assert docker.project_containers(c.project) == []
    assert docker.project_networks(c.project) == []
    # Rules lived only in the removed containers' namespaces; the host never had any.
    host = subprocess.run(["iptables-save"], capture_output=True, text=True)
    if host.returncode == 0:
        assert "NDBCHAOS" not in host.stdout
    assert decoy["container"].status and docker.container_state(decoy["container"]) == "running"
