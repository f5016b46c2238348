"""The fault catalogue without Docker: protocol, scripts, parsers, pumba command lines, the
toxiproxy client (against a fake server), the safety net and the CLI's errors."""

import http.server
import json
import os
import stat
import subprocess
import threading

import pytest

from ndbchaos import settings
from ndbchaos import topology as TP
from ndbchaos.clock import RunClock
from ndbchaos.journal import Journal
from ndbchaos.errors import BlastRadiusError, NdbChaosError, UsageError
from ndbchaos.faults import base, netem, pumba, safety, skip_if_unsupported
from ndbchaos.runtimes import netns
from ndbchaos.faults import toxiproxy as TX
from ndbchaos.topology import Node, Topology
from ndbchaos.vocabulary import ClusterOptions


class FakeContainer:
    def __init__(self, name):
        self.name = name
        self.id = name + "-id"


class FakeEngine:
    name = "galera"
    recovered = []

    def recover_nodes(self, cluster, nodes):
        self.recovered += [n.name for n in nodes]


class FakeCluster:
    def __init__(self):
        self.project = "proj"
        nodes = [Node(f"data{i}", TP.DATA, f"proj-data{i}-1", nodegroup=0, nodeid=i) for i in (1, 2, 3)]
        nodes.append(Node("arb", TP.ARBITRATOR, "proj-arb-1", nodeid=9))
        self.topology = Topology("proj", "galera", nodes)
        self.engine = FakeEngine()
        self.options = ClusterOptions()
        self.clock = RunClock()
        self.journal = Journal(self.clock)

    def container(self, node):
        name = node.container if isinstance(node, Node) else node
        if not name.startswith("proj-"):
            raise BlastRadiusError(f"refusing to touch container {name!r}: it does not carry ndbchaos.project=proj")
        return FakeContainer(name)

    def note(self, kind, **f):
        return self.journal.note(kind, **f)

    def heal_all(self):
        problems = []
        for f in reversed(self.journal.open_faults()):
            try:
                f.heal()
            except Exception as e:
                problems.append(str(e))
        return problems


class Recorder(base.Fault):
    kind = "recorder"

    def __init__(self, cluster, targets, fail_verify=False, **kw):
        super().__init__(cluster, targets, **kw)
        self.log = []
        self.fail_verify = fail_verify

    def _apply(self):
        self.log.append("apply")

    def _verify_applied(self):
        self.log.append("verify")
        if self.fail_verify:
            raise base.FaultNotEffective("no effect")
        return "ok"

    def _revert(self):
        self.log.append("revert")

    def _verify_healed(self):
        self.log.append("verify_healed")
        return "healed"


# -- protocol -----------------------------------------------------------------------------------

def test_fault_window_protocol_and_registration():
    c = FakeCluster()
    f = Recorder(c, "data2")
    with f:
        assert f in c.journal.open_faults() and f.window.start is not None and f.window.effective_at is not None
    assert f.log == ["apply", "verify", "revert", "verify_healed"]
    assert c.journal.open_faults() == [] and f.window.end >= f.window.start
    assert f.window.verification == ["ok", "healed"]
    assert c.journal.windows() == [f.window]


def test_fault_heals_when_verification_fails():
    c = FakeCluster()
    f = Recorder(c, "data1", fail_verify=True)
    with pytest.raises(base.FaultNotEffective):
        f.inject()
    assert f.log == ["apply", "verify", "revert"] and not f.active and c.journal.open_faults() == []


def test_fault_refuses_targets_outside_the_project():
    c = FakeCluster()
    foreign = Node("decoy", TP.DATA, "someone-elses-db")
    with pytest.raises(BlastRadiusError, match="does not carry"):
        Recorder(c, [foreign])


def test_detach_leaves_the_fault_and_forgets_it():
    c = FakeCluster()
    f = Recorder(c, "data1")
    f.inject()
    f.detach()
    assert c.journal.open_faults() == [] and not f.active
    c.heal_all()
    assert "revert" not in f.log


def test_selector_params_go_into_the_window():
    from ndbchaos.faults import targets as TG
    f = Recorder(FakeCluster(), TG.one_data(seed=11))
    assert f.window.params["selection"]["seed"] == 11
    assert f.window.params["selection"]["picked"] == f.window.targets


def test_safety_net_heals_registered_clusters():
    c = FakeCluster()
    f = Recorder(c, "data3")
    f.inject()
    assert safety.open_fault_count() >= 1
    safety.heal_everything("test")
    assert "revert" in f.log and c.journal.open_faults() == []


def test_skip_if_unsupported_turns_into_a_skip():
    with pytest.raises(pytest.skip.Exception, match="no sch_netem"):
        with skip_if_unsupported():
            raise netem.NetemUnsupported("netem", reason="no sch_netem here")


# -- iptables / probe scripts -----------------------------------------------------------------------

def sh_syntax_ok(script):
    return subprocess.run(["sh", "-n", "-c", script], capture_output=True).returncode == 0


def test_drop_rules_script():
    s = netns.drop_rules_script("NDBCHAOS-AB12CD34", ["172.18.0.2", "172.18.0.3"], "packets", 'isolate "x" $(rm)')
    assert "-N NDBCHAOS-AB12CD34" in s
    assert "-A NDBCHAOS-AB12CD34 -s 172.18.0.2/32 -j DROP" in s
    assert "-I INPUT 1 -m comment --comment 'isolate _x_ __rm_' -j NDBCHAOS-AB12CD34" in s
    assert sh_syntax_ok(s)
    c = netns.drop_rules_script("NDBCHAOS-AB12CD34", ["10.0.0.1"], "connections", "c")
    assert "-s 10.0.0.1/32 -m conntrack --ctdir ORIGINAL -j DROP" in c
    with pytest.raises(ValueError):
        netns.drop_rules_script("DOCKER", ["10.0.0.1"], "packets", "c")
    with pytest.raises(ValueError):
        netns.drop_rules_script("NDBCHAOS-AB", ["10.0.0.1; reboot"], "packets", "c")


def test_remove_chains_script_is_valid_shell_and_scoped():
    s = netns.remove_chains_script(["NDBCHAOS-AB12CD34"])
    assert sh_syntax_ok(s) and "NDBCHAOS-AB12CD34" in s
    s_all = netns.remove_chains_script(None)
    assert sh_syntax_ok(s_all) and "NDBCHAOS-[A-Z0-9]*" in s_all
    with pytest.raises(ValueError):
        netns.remove_chains_script(["INPUT"])


def test_probe_script_and_parse():
    s = netns.probe_script([("data2", "172.18.0.3", 4567)], 1)
    assert "nc -v -z -w 1" in s and sh_syntax_ok(s)
    out = ("data2 0 Connection to 172.18.0.3 4567 port [tcp/*] succeeded!\n"
           "data3 1 nc: connect to 172.18.0.4 port 4567 (tcp) timed out: Operation now in progress\n"
           "arb 1 nc: connect to 172.18.0.5 port 4567 (tcp) failed: Connection refused\n"
           "garbage line\n")
    assert netns.parse_probes(out) == {"data2": (True, "open"), "data3": (False, "timed out"),
                                        "arb": (True, "refused")}


def test_parse_our_rules_reads_back_what_we_write():
    out = """-P INPUT ACCEPT
-N NDBCHAOS-1C364B88
-N OTHER
-A INPUT -m comment --comment "ndbchaos one-way data2 x{data1}" -j NDBCHAOS-1C364B88
-A NDBCHAOS-1C364B88 -s 172.27.0.2/32 -m conntrack --ctdir ORIGINAL -j DROP
-A NDBCHAOS-1C364B88 -s 172.27.0.9/32 -j DROP
-A OTHER -s 1.2.3.4/32 -j DROP"""
    assert netns.parse_our_rules(out) == [{
        "chain": "NDBCHAOS-1C364B88", "comment": "ndbchaos one-way data2 x{data1}",
        "drops": [("172.27.0.2", "connections"), ("172.27.0.9", "packets")]}]


# -- netem ---------------------------------------------------------------------------------------------

def test_netem_args():
    assert netem.netem_args(delay_ms=100, jitter_ms=10, correlation_pct=25) == ["delay", "100ms", "10ms", "25%"]
    assert (netem.netem_args(loss_pct=20, duplicate_pct=1, corrupt_pct=0.5)
            == ["loss", "20%", "duplicate", "1%", "corrupt", "0.5%"])
    assert netem.netem_args(rate="1mbit") == ["rate", "1mbit"]
    for bad in ({}, {"loss_pct": 101}, {"delay_ms": -1}, {"rate": "fast"}):
        with pytest.raises(NdbChaosError):
            netem.netem_args(**bad)


def test_netem_probe_parsing():
    ok, why = netem.parse_probe("Error: Specified qdisc kind is unknown.\nrc=0")
    assert not ok and "sch_netem" in why and "kind is unknown" in why
    assert (netem.parse_probe("qdisc netem 4e44: root refcnt 2 limit 1000 delay 1ms\nrc=0")
            == (True, "sch_netem available"))
    assert not netem.parse_probe("RTNETLINK answers: Operation not permitted")[0]


def test_netem_scripts_use_only_our_handle():
    s = netem.apply_script(["delay", "100ms"])
    assert "root handle 4e44: netem delay 100ms" in s and "foreign root qdisc" in s and sh_syntax_ok(s)
    s = netem.apply_script(["loss", "5%"], ["172.18.0.3"])
    assert "match ip dst 172.18.0.3/32 flowid 4e44:4" in s and "parent 4e44:4 handle 4e45: netem loss 5%" in s
    r = netem.remove_script()
    assert "del dev $i root handle 4e44:" in r and "504d" not in r and sh_syntax_ok(r)


def test_pumba_netem_command_translation():
    assert netem._pumba_command(["delay", "100ms", "10ms"]) == ["delay", "--time", "100", "--jitter", "10"]
    assert netem._pumba_command(["loss", "20%"]) == ["loss", "--percent", "20"]
    with pytest.raises(NdbChaosError):
        netem._pumba_command(["delay", "1ms", "loss", "2%"])


# -- pumba ---------------------------------------------------------------------------------------------

def test_pumba_argv_exact_names_and_label_filter(monkeypatch):
    monkeypatch.setattr(pumba, "binary", lambda: "/usr/bin/pumba")
    c = FakeCluster()
    nodes = [c.topology.node("data2")]
    argv = pumba.kill_argv(c, nodes, "SIGTERM")
    assert argv == ["/usr/bin/pumba", "--label", "ndbchaos.project=proj", "kill", "--signal", "SIGTERM", "proj-data2-1"]
    assert not any(a.startswith("re2:") for a in argv)
    assert pumba.pause_argv(c, nodes)[3:6] == ["pause", "--duration", pumba.HOLD]
    n = pumba.netem_argv(c, nodes, ["delay", "--time", "100"], "ndbchaos/tools:x", targets_ips=["172.18.0.2"])
    assert n[3:] == ["netem", "--duration", pumba.HOLD, "--interface", "eth0", "--tc-image", "ndbchaos/tools:x",
                     "--pull-image=false", "--target", "172.18.0.2", "delay", "--time", "100", "proj-data2-1"]
    with pytest.raises(BlastRadiusError):
        pumba.kill_argv(c, [Node("x", TP.DATA, "other-db")])


def test_pumba_backend_selection(monkeypatch):
    monkeypatch.setattr(pumba, "binary", lambda: None)
    monkeypatch.delenv("NDBCHAOS_PUMBA", raising=False)
    assert pumba.backend() == "native"
    with pytest.raises(NdbChaosError, match="no pumba binary"):
        pumba.backend("pumba")
    monkeypatch.setattr(pumba, "binary", lambda: "/x/pumba")
    assert pumba.backend() == "pumba"
    monkeypatch.setenv("NDBCHAOS_PUMBA", "0")
    settings.use(None)  # the settings are read once: read them again
    assert pumba.backend() == "native"


def test_pumba_runs_a_fake_binary(tmp_path, monkeypatch):
    log = tmp_path / "argv"
    exe = tmp_path / "pumba"
    exe.write_text(f"#!/bin/sh\necho \"$@\" > {log}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.delenv("NDBCHAOS_PUMBA_BIN", raising=False)  # CI points it at the real binary
    assert pumba.binary() == str(exe)
    c = FakeCluster()
    pumba.run(pumba.kill_argv(c, [c.topology.node("data1")]))
    assert (log.read_text().split()
            == ["--label", "ndbchaos.project=proj", "kill", "--signal", "SIGKILL", "proj-data1-1"])


# -- toxiproxy client against a fake server ---------------------------------------------------------

class FakeToxiproxy(http.server.BaseHTTPRequestHandler):
    state = {}

    def log_message(self, *a):
        pass

    def _send(self, code, body):
        raw = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n)) if n else None

    def do_GET(self):
        s = self.state
        if self.path == "/version":
            return self._send(200, {"version": "2.12.0"})
        if self.path == "/proxies":
            return self._send(200, s)
        parts = self.path.strip("/").split("/")
        if len(parts) == 3 and parts[2] == "toxics":
            return self._send(200, s[parts[1]]["toxics"])
        self._send(404, {"error": "not found"})

    def do_POST(self):
        s, b = self.state, self._body()
        if self.path == "/populate":
            for p in b:
                s[p["name"]] = {**p, "toxics": []}
            return self._send(201, {"proxies": list(s.values())})
        if self.path == "/reset":
            for p in s.values():
                p["toxics"], p["enabled"] = [], True
            return self._send(204, None)
        parts = self.path.strip("/").split("/")
        if len(parts) == 3 and parts[2] == "toxics":
            s[parts[1]]["toxics"].append(b)
            return self._send(200, b)
        self._send(405, {"error": "method"})

    def do_PATCH(self):
        parts = self.path.strip("/").split("/")
        self.state[parts[1]].update(self._body())
        self._send(200, self.state[parts[1]])

    def do_DELETE(self):
        parts = self.path.strip("/").split("/")
        ts = self.state[parts[1]]["toxics"]
        if not any(t["name"] == parts[3] for t in ts):
            return self._send(404, {"error": "toxic not found"})
        self.state[parts[1]]["toxics"] = [t for t in ts if t["name"] != parts[3]]
        self._send(204, None)


@pytest.fixture
def fake_toxiproxy():
    FakeToxiproxy.state = {}
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeToxiproxy)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield TX.ToxiproxyAPI(f"http://127.0.0.1:{srv.server_address[1]}")
    srv.shutdown()


def test_toxiproxy_client_roundtrip(fake_toxiproxy):
    a = fake_toxiproxy
    assert a.version() == "2.12.0"
    a.populate([{"name": "data1", "listen": "0.0.0.0:21001", "upstream": "c1:3306", "enabled": True}])
    assert a.proxies()["data1"]["upstream"] == "c1:3306"
    a.add_toxic("data1", "latency", {"latency": 100}, "ndbchaos-latency-abc")
    assert [t["name"] for t in a.toxics("data1")] == ["ndbchaos-latency-abc"]
    a.set_enabled("data1", False)
    assert a.proxies()["data1"]["enabled"] is False
    a.remove_toxic("data1", "ndbchaos-latency-abc")
    with pytest.raises(TX.ToxiproxyError, match="404"):
        a.remove_toxic("data1", "ndbchaos-latency-abc")
    a.reset()
    assert a.proxies()["data1"]["enabled"] is True


def test_toxiproxy_api_only_on_loopback():
    with pytest.raises(BlastRadiusError):
        TX.ToxiproxyAPI("http://10.1.2.3:8474")


def test_toxiproxy_unreachable_is_a_clear_error():
    a = TX.ToxiproxyAPI("http://127.0.0.1:9", timeout=0.5)
    with pytest.raises(TX.ToxiproxyError, match="unreachable"):
        a.version()


def test_greeting_probe_against_a_local_server():
    import socket
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def serve():
        conn, _ = srv.accept()
        conn.sendall(bytes([5, 0, 0, 0]) + b"hello")
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    g = TX.greeting(port, 2)
    srv.close()
    assert g["ok"] and g["bytes"] == 9
    assert TX.greeting(port, 1)["error"] in ("refused", "closed")


# -- engine facts ------------------------------------------------------------------------------------

def test_galera_partition_outcome_follows_the_quorum_formula():
    from ndbchaos.engines.galera import GaleraEngine
    c = FakeCluster()
    e = GaleraEngine()
    out = e.partition_outcome(c, [["data2"], ["data1", "data3", "arb"]])
    assert out["serving"] == [["data1", "data3", "arb"]] and out["stopped"] == [["data2"]]
    out = e.partition_outcome(c, [["data1", "data2"], ["data3", "arb"]])
    assert out["serving"] == [] and "2*2 <= 4" in out["rule"]
    assert e.probe_ports(c.topology.node("arb")) == [4567]
    assert e.probe_ports(c.topology.node("data1")) == [4567, 3306]
    assert e.options_from_topology(c.topology).given() == {"galera_data_nodes": 3}
    assert e.master_node(c) is None


# -- CLI errors (no Docker needed) -----------------------------------------------------------------

def run_cli(*args):
    import sys
    return subprocess.run([sys.executable, "-m", "ndbchaos.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "NDBCHAOS_PROJECT": ""}, timeout=60)


def test_cli_fault_without_project_is_one_line_and_nonzero():
    r = run_cli("fault", "isolate", "data2")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "--project" in r.stderr


def test_cli_fault_help_lists_the_catalogue():
    r = run_cli("fault", "--help")
    assert r.returncode == 0
    for k in ("isolate", "partition", "bridge", "ring", "one-way", "nodegroup-split", "latency", "heal"):
        assert k in r.stdout


def test_toxiproxy_setup_keeps_existing_proxies():
    spec = {"name": "data1", "listen": "0.0.0.0:21001", "upstream": "c1:3306", "enabled": True}
    assert TX._same({"listen": "[::]:21001", "upstream": "c1:3306"}, spec)
    assert not TX._same({"listen": "[::]:21002", "upstream": "c1:3306"}, spec)
    assert not TX._same({"listen": "[::]:21001", "upstream": "c9:3306"}, spec)
    assert not TX._same(None, spec)


def test_one_way_to_several_nodes_describes_its_components_in_packets_mode():
    from ndbchaos.faults.network import OneWay
    c = FakeCluster()
    f = OneWay(c, "data1", ["data2", "data3"], mode="packets")
    assert f.grudge == {"data2": frozenset({"data1"}), "data3": frozenset({"data1"})}
    assert f.window.params["components"] == [["data1"], ["data2", "data3"]]
    assert f.window.targets == ["data1", "data2", "data3"]
    # connections mode is one-way for TCP too: no components (dst still opens connections to src)
    assert "components" not in OneWay(c, "data1", "data2").window.params
    with pytest.raises(UsageError):
        OneWay(c, "data1", ["data1", "data2"])


def test_a_helper_asks_its_namespace_again_until_it_gets_one(monkeypatch):
    from ndbchaos.runtimes import netns
    answers = iter([(None, ""), (126, ""), (0, "net:[4026532301]\n")])
    calls = []
    monkeypatch.setattr(netns.docker, "exec_in", lambda c, cmd, timeout=30: calls.append(cmd) or next(answers))
    monkeypatch.setattr(netns.time, "sleep", lambda s: None)
    assert netns.read_netns(object()) == (0, "net:[4026532301]") and len(calls) == 3
    # never an answer: the last one, which the caller refuses (no rule in an unknown namespace)
    monkeypatch.setattr(netns.docker, "exec_in", lambda c, cmd, timeout=30: (1, "readlink: error"))
    assert netns.read_netns(object(), attempts=3) == (1, "readlink: error")
