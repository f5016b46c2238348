"""The inventory backend without a cluster: the file's validation (one line per problem), the
process model of a node on a host, the guards' scripts, the check against a cluster's own
configuration, and a node handle driving real processes on this machine through ``local://``."""

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ndbchaos.engines.ndb import liveconfig
from ndbchaos.errors import NdbChaosError
from ndbchaos.runtimes.inventory import guard
from ndbchaos.settings import Settings
from ndbchaos.runtimes.inventory.remote import HostNode, Proc, Remote, parse_ps, proper, signal_name, state_of
from ndbchaos.runtimes.inventory.spec import HostSpec, InventoryError, load, parse

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "inventory" / "hosts.yml"


def base_doc(**over):
    doc = {
        "engine": "ndb",
        "hosts": {"h1": "ssh://root@10.0.0.1", "h2": "ssh://root@10.0.0.2", "h3": "ssh://root@10.0.0.3"},
        "nodes": [
            {"name": "mgm1", "role": "mgm", "host": "h1", "nodeid": 1, "process": "ndb_mgmd", "start": "ndb_mgmd"},
            {"name": "data1", "role": "data", "host": "h2", "nodeid": 11, "process": "ndbmtd.*=11", "start": "ndbmtd"},
            {"name": "sql1", "role": "sql", "host": "h3", "nodeid": 21, "process": "mysqld", "start": "mysqld",
             "sql": "10.0.0.3:3306"},
        ],
    }
    doc.update(over)
    return doc


def problem(doc, environ=None) -> str:
    with pytest.raises(InventoryError) as e:
        parse(doc, Path("inv.yml"), environ or {})
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("inventory inv.yml: ")
    return msg


def test_a_valid_inventory_reads_with_defaults():
    inv = parse(base_doc(), Path("staging.yml"), {})
    assert inv.name == "staging" and inv.project == "ndbchaos-inv-staging"
    assert [n.name for n in inv.nodes] == ["mgm1", "data1", "sql1"]
    assert inv.node("sql1").sql == ("10.0.0.3", 3306)
    assert inv.hosts["h2"].address == "10.0.0.2" and inv.ssh["connect_timeout"] == 10


def test_the_example_inventory_is_valid(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    key = tmp_path / ".cache" / "ndbchaos" / "lab" / "id_ed25519"
    key.parent.mkdir(parents=True)
    key.write_text("x")
    inv = load(EXAMPLE)
    assert len(inv.nodes) == 8 and {n.role for n in inv.nodes} == {"mgm", "data", "sql"}
    assert inv.env["MYSQL_ROOT_PASSWORD"] == ""


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["nodes"].append(dict(d["nodes"][1])), "duplicate node name 'data1'"),
    (lambda d: d["nodes"].append({**d["nodes"][1], "name": "data2"}), "duplicate node id 11 (also data1)"),
    (lambda d: d["nodes"][1].update(host="h9"), "host 'h9' is not in hosts"),
    (lambda d: d["nodes"][1].pop("nodeid"), "nodeid is required"),
    (lambda d: d["nodes"][1].pop("process"), "say how to find its process"),
    (lambda d: d["nodes"][1].update(pidfile="/run/x.pid"), "say how to find its process"),
    (lambda d: d["nodes"][1].pop("start"), "say how to start it again"),
    (lambda d: d["nodes"][1].update(process="ndbmtd(("), "is not a regular expression"),
    (lambda d: d["nodes"][2].pop("sql"), "sql (host:port clients connect to) is required"),
    (lambda d: d["nodes"][2].update(sql="10.0.0.3"), "must be host:port"),
    (lambda d: d["nodes"][1].update(sql="10.0.0.2:3306"), "a data node serves no SQL"),
    (lambda d: d["nodes"][0].update(nodegroup=0), "only data nodes have a node group"),
    (lambda d: d["nodes"][1].update(role="arbitrator"), "role 'arbitrator' is not one of ndb's"),
    (lambda d: d["nodes"][1].update(logs=["relative.log"]), "must be an absolute path"),
    (lambda d: d["nodes"][1].update(colour="red"), "unknown key 'colour'"),
    (lambda d: d["hosts"].update(h1="10.0.0.1"), "is not a URL"),
    (lambda d: d["hosts"].update(h1="telnet://10.0.0.1"), "scheme 'telnet'"),
    (lambda d: d.update(engine="oracle"), "engine must be one of"),
    (lambda d: d.update(nodes=[d["nodes"][1]]), "no mgm node"),
    (lambda d: d.update(env={"A": "${NOT_SET_ANYWHERE}"}), "${NOT_SET_ANYWHERE} is not set"),
    (lambda d: d.update(ssh={"identity_file": "/nonexistent/key"}), "no such file"),
])
def test_bad_inventories_fail_with_one_line(mutate, expected):
    doc = base_doc()
    mutate(doc)
    assert expected in problem(doc)


def test_bad_files_fail_with_one_line(tmp_path):
    with pytest.raises(InventoryError, match="cannot read it"):
        load(tmp_path / "missing.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text("engine: ndb\nhosts: [\n")
    with pytest.raises(InventoryError, match="not valid YAML at line"):
        load(bad)


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d.update({1: "x", "colour": "red"}), "unknown key 1"),
    (lambda d: d["nodes"][1].update({2: "x", "colour": "red"}), "unknown key 2"),
    (lambda d: d.update(engine=["ndb"]), "engine must be one of"),
    (lambda d: d["nodes"][1].update(host=["h2"]), "host ['h2'] is not in hosts"),
    (lambda d: d.update(ssh={"connect_timeout": float("inf")}), "connect_timeout must be a whole number"),
    (lambda d: d.update(ssh={"connect_timeout": -5}), "connect_timeout must be a whole number"),
    (lambda d: d["nodes"][1].update(nodeid="\u00b2"), "nodeid must be a whole number"),
    (lambda d: d["nodes"][2].update(sql="db3:\u00b2"), "must be host:port"),
])
def test_inventories_that_raised_a_traceback_fail_with_one_line(mutate, expected):
    doc = base_doc()
    mutate(doc)
    assert expected in problem(doc)


def test_binary_deep_and_self_referring_files_are_one_line_and_aliases_still_read(tmp_path, capsys):
    import yaml

    from ndbchaos.cli import main
    cases = {"binary.yml": bytes(range(256)) * 4,
             "deep.yml": b"engine: ndb\nhosts: " + b"[" * 20_000 + b"]" * 20_000 + b"\n",
             "deep-40.yml": b"engine: ndb\nhosts: " + b"[" * 40 + b"]" * 40 + b"\n",
             "cycle.yml": b"engine: ndb\nhosts: &a [*a]\n"}
    for name, data in cases.items():
        f = tmp_path / name
        f.write_bytes(data)
        with pytest.raises(InventoryError) as e:
            load(f)
        assert str(e.value).startswith(f"inventory {f}: ") and "\n" not in str(e.value), name
        # reap --inventory reads it with load_inventory: the same line, exit 2, no traceback
        assert main(["reap", "--inventory", str(f)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(f) in err[0], (name, err)
    # a value shared through an alias (an env block reused by every node) is no cycle
    doc = base_doc(env={"PATH": "/usr/bin"})
    text = yaml.safe_dump(doc).replace("env:\n  PATH: /usr/bin", "env: &e\n  PATH: /usr/bin")
    f = tmp_path / "alias.yml"
    f.write_text(text.replace("  process: ndb_mgmd\n", "  process: ndb_mgmd\n  env: *e\n"))
    assert load(f, environ={}).node("mgm1").env == {"PATH": "/usr/bin"}


def test_environment_variables_expand_in_env_and_sql():
    inv = parse(base_doc(env={"MYSQL_ROOT_PASSWORD": "${PW}"}, sql={"password": "${PW}x"}), Path("i.yml"),
                {"PW": "s3cret"})
    assert inv.env["MYSQL_ROOT_PASSWORD"] == "s3cret" and inv.sql["password"] == "s3cretx"


def test_host_addresses():
    assert HostSpec("a", "ssh://root@db1.example:2222").address == "db1.example"
    assert HostSpec("a", "ssh://10.0.0.5").address == "10.0.0.5"
    assert HostSpec("a", "ssh://u@[fe80::1]:22").address == "fe80::1"


# -- the process model --------------------------------------------------------------------------

PS_DATA = """   35       1 Ss   Wed Nov 25 06:49:10 2026
   36      35 Sl   Wed Nov 25 06:49:10 2026
"""


def test_a_data_node_is_its_angel_child_and_its_state_follows_the_child():
    procs = parse_ps(PS_DATA)
    assert [p.pid for p in procs] == [35, 36]
    assert [p.pid for p in proper(procs)] == [36]  # the data node proper, not the angel
    assert state_of(procs) == "running"
    frozen = [Proc(35, 1, "Ss", ""), Proc(36, 35, "Tl", "")]
    assert state_of(frozen) == "paused"
    assert state_of([Proc(35, 1, "Ss", "")]) == "running"  # the angel alone: the host still runs it
    assert state_of([]) == "exited"
    assert state_of([Proc(36, 35, "Z", "")]) == "exited"


def test_signal_names():
    assert signal_name("SIGKILL") == "KILL" and signal_name("stop") == "STOP" and signal_name(15) == "TERM"
    with pytest.raises(NdbChaosError):
        signal_name("SIGNOPE")


# -- guards ----------------------------------------------------------------------------------------

def test_guard_scripts_name_their_key_and_refuse_odd_keys():
    s = guard.arm_script("NDBCHAOS-AB12", "echo undo", 30)
    assert "sleep 30; echo undo" in s and "ndbchaos-guard-NDBCHAOS-AB12" in s and "setsid" in s
    assert "ndbchaos-guard[-]NDBCHAOS\\-AB12$" in guard.disarm_script("NDBCHAOS-AB12")
    with pytest.raises(ValueError):
        guard.arm_script("x; rm -rf /", "true", 30)


def test_guard_seconds(monkeypatch):
    monkeypatch.delenv("NDBCHAOS_GUARD_S", raising=False)
    assert guard.guard_seconds() == guard.DEFAULT_GUARD_S
    assert guard.guard_seconds(60) == 60
    assert guard.guard_seconds(60, Settings.from_env({"NDBCHAOS_GUARD_S": "30"})) == 30
    with pytest.raises(NdbChaosError, match="5 s at least"):
        guard.guard_seconds(settings=Settings.from_env({"NDBCHAOS_GUARD_S": "2"}))


# -- the cluster's own configuration ------------------------------------------------------------

NODES_OUT = ("1,ndb_mgmd,,10.0.0.1,1186,,1,/var/lib/mysql;11,ndbd,0,10.0.0.2,,2202,,/data;"
             "12,ndbd,0,10.0.0.4,,2202,,/data;21,mysqld,,10.0.0.3,,,0,;31,mysqld,,,,,0,")
DATA_OUT = "11,2,1000,1500,3000,1,2000,1;12,2,1000,1500,3000,1,2000,1"


def test_live_config_parses_ndb_config_output():
    cfg = liveconfig.parse(NODES_OUT, DATA_OUT)
    assert [n.node_id for n in cfg.data_nodes] == [11, 12]
    assert cfg.node_groups() == {0: [11, 12]}
    assert cfg.data_param_ms("HeartbeatIntervalDbDb", 5000) == 1000
    assert cfg.data_param("Arbitration") == "Default"
    assert cfg.node(1).get("PortNumber") == "1186" and cfg.node(11).get("ServerPort") == "2202"
    with pytest.raises(ValueError):
        liveconfig.parse("1,ndb_mgmd,x", DATA_OUT)


def test_inventory_is_checked_against_the_cluster_and_filled_in():
    cfg = liveconfig.parse(NODES_OUT, DATA_OUT)
    doc = base_doc()
    doc["hosts"]["h4"] = "ssh://root@10.0.0.4"
    doc["nodes"].append({"name": "data2", "role": "data", "host": "h4", "nodeid": 12, "process": "x", "start": "y"})
    inv = parse(doc, Path("i.yml"), {})
    problems, notes = liveconfig.check(inv, cfg)
    assert problems == []
    assert inv.node("data1").nodegroup == 0 and inv.node("mgm1").datadir == "/var/lib/mysql"
    assert any("node group 0 (from the cluster)" in n for n in notes)

    wrong = parse(base_doc(), Path("i.yml"), {})  # data2 missing; then a wrong id and a wrong type
    problems, _ = liveconfig.check(wrong, cfg)
    assert any("data node with node id 12" in p and "does not list" in p for p in problems)
    wrong.node("data1").nodeid = 19
    assert any("node id 19 is not in the cluster's configuration" in p for p in liveconfig.check(wrong, cfg)[0])
    wrong.node("data1").nodeid = 21
    assert any("is an SQL/API node in the cluster's configuration, not a data node" in p
               for p in liveconfig.check(wrong, cfg)[0])
    inv.node("data1").nodegroup = 1
    assert any("node group 1 in the inventory, 0 in the cluster" in p for p in liveconfig.check(inv, cfg)[0])


# -- a node handle on this machine (local://): real processes, real signals -------------------------------

@pytest.fixture
def local_node(tmp_path):
    """A 'node' of two processes like an angel and its data node: a shell (parent) running a
    child, both with a unique marker on their command lines."""
    marker = f"ndbchaos-unit-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "node.sh"
    script.write_text(f"#!/bin/sh\n{sys.executable} -c 'import time; time.sleep(300)' {marker}-child &\nwait\n")
    script.chmod(0o755)
    start = f"exec /bin/sh {script} {marker}-angel"
    spec = parse(base_doc(hosts={"h1": "local://", "h2": "local://", "h3": "local://"}), Path("i.yml"), {}).nodes[1]
    spec.process, spec.start, spec.logs = f"{marker}-(angel|child)", start, []
    remote = Remote(HostSpec("h2", "local://"))
    h = HostNode(remote, spec, {}, f"ndbchaos-inv-unit-{marker}", {}, guard_s=30)
    yield h
    subprocess.run(["pkill", "-KILL", "-f", marker])
    subprocess.run(["pkill", "-KILL", "-f", f"ndbchaos-guard-thaw-ndbchaos-inv-unit-{marker}"])
    for f in (h.start_log, h.start_script):
        Path(f).unlink(missing_ok=True)


def wait_state(h, want, timeout=10.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        h.reload()
        if h.status == want:
            return True
        time.sleep(0.1)
    return False


def test_a_local_node_starts_freezes_thaws_and_dies_like_a_data_node(local_node):
    h = local_node
    h.reload()
    assert h.status == "exited"
    h.start()
    assert wait_state(h, "running"), h.logs(tail=20)
    assert len(h.procs) == 2 and [p.pid for p in proper(h.procs)] != [h.procs[0].pid]
    h.pause()  # SIGSTOP to the child only, and a thaw guard on the "host"
    assert wait_state(h, "paused")
    code, out = h.remote.run(guard.list_script())
    assert f"ndbchaos-guard-{h.guard_key}" in out
    h.unpause()
    assert wait_state(h, "running")
    assert f"ndbchaos-guard-{h.guard_key}" not in h.remote.run(guard.list_script())[1]
    h.kill("SIGKILL")  # every process of the node
    assert wait_state(h, "exited")
    with pytest.raises(NdbChaosError, match="nothing to signal"):
        h.kill("SIGKILL")


def test_a_frozen_node_is_thawed_by_its_guard_when_nobody_comes_back(local_node):
    h = local_node
    h.guard_s = 2  # the controller "dies" after the freeze: only the guard is left to thaw it
    h.start()
    assert wait_state(h, "running")
    h.pause()
    assert wait_state(h, "paused")
    assert wait_state(h, "running", timeout=10), "the guard did not thaw the node"


def test_stop_terminates_then_kills(local_node):
    h = local_node
    h.start()
    assert wait_state(h, "running")
    h.stop(timeout=2)
    assert wait_state(h, "exited", timeout=5)


def test_start_waits_for_the_process_and_says_why_it_never_came(local_node, tmp_path):
    h = local_node
    real = h.spec.start
    h.spec.start = f"sleep 1.5; {real}"  # a start command that works a while before the node runs
    t0 = time.monotonic()
    h.start()
    assert h.status == "running" and time.monotonic() - t0 >= 1.4  # returned once the process was there
    h.kill("SIGKILL")
    assert wait_state(h, "exited")
    h.spec.start = "sleep 4; echo 'no such option --bogus' >&2; exit 1"
    h.start(wait_s=0.3)  # the command still runs when the wait (3 s at least) ends: the node is on its way
    h.reload()
    assert h.status == "created"
    with pytest.raises(NdbChaosError, match="start command ended .* no process of it runs: no such option --bogus"):
        h._await_process(10)


def test_a_command_that_never_returns_is_cut_locally():
    remote = Remote(HostSpec("h1", "local://"))
    remote._bound.seconds = 1
    t0 = time.monotonic()
    with pytest.raises(NdbChaosError, match="did not answer within 1 s"):
        remote.host.backend.run_local("sleep 30")
    assert time.monotonic() - t0 < 5


def test_a_process_gone_between_the_search_and_ps_is_searched_again(local_node, tmp_path):
    # ndbmtd starting: the process first found forks the angel and exits, so ps may find none of
    # the pids the search gave. Here ps misses once; the node must not read as exited for it.
    h = local_node
    h.start()
    assert wait_state(h, "running")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ps").write_text(f'#!/bin/sh\nif [ ! -f {fake}/missed ]; then touch {fake}/missed; exit 1; fi\n'
                             'exec /bin/ps "$@"\n')
    (fake / "ps").chmod(0o755)
    h.env = {"PATH": f"{fake}:/usr/bin:/bin"}
    h.reload()
    assert (fake / "missed").exists() and h.status == "running" and len(h.procs) == 2
