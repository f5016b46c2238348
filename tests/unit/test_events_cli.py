"""`ndbchaos events`: JSON lines out, one-line errors with exit 2."""

import io
import json
import subprocess
import sys

from ndbchaos.cli import main

CLUSTER_LOG = """\
2026-06-06 18:38:11 [MgmtSrvr] INFO     -- Id: 1, Command port: *:1186
2026-06-06 18:38:12 [MgmtSrvr] ALERT    -- Node 11: Node 12 Disconnected
2026-06-06 18:38:12 [MgmtSrvr] INFO     -- Node 11: Communication to Node 12 closed
2026-06-06 18:38:12 [MgmtSrvr] ALERT    -- Node 11: Arbitration check won - all node groups and more than 1/2 nodes left
2026-06-06 18:38:13 [MgmtSrvr] ALERT    -- Node 11: All nodes completed failure of Node 12
2026-06-06 18:38:40 [MgmtSrvr] INFO     -- Node 12: Start phase 4 completed (node restart)
2026-06-06 18:39:02 [MgmtSrvr] INFO     -- Node 12: Started (version 8.4.7)
"""

MARIADB_LOG = """\
2026-11-22  2:45:20 0 [Note] WSREP: Shifting JOINED -> SYNCED (TO: 7717)
2026-11-22  2:45:20 0 [Note] WSREP: Synchronized with group, ready for connections
2026-11-22  2:45:21 0 [Note] mariadbd: ready for connections.
Version: '10.11.19-MariaDB-0+deb12u1'  socket: '/run/mysqld/mysqld.sock'  port: 3306  Debian 12
"""


def _run(capsys, *argv):
    code = main(["events", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_ndb_cluster_log(tmp_path, capsys):
    f = tmp_path / "ndb_1_cluster.log"
    f.write_text(CLUSTER_LOG)
    code, out, err = _run(capsys, "--engine", "ndb", str(f))
    assert code == 0 and err == ""
    evs = [json.loads(ln) for ln in out.splitlines()]
    assert [e["kind"] for e in evs] == ["node_disconnected", "communication_closed", "arbitration_check_won",
                                        "node_failure_completed", "start_phase_completed", "node_started"]
    assert evs[0] == {**evs[0], "time": "2026-06-06T18:38:12", "reporter": 11, "node": 12}
    assert list(evs[0])[:4] == ["time", "reporter", "node", "kind"]
    assert evs[4]["phase"] == 4 and evs[4]["start_type"] == "node restart" and evs[4]["node"] == 12
    code, out, _ = _run(capsys, "--all", str(f))  # --engine defaults to ndb
    # "Id: 1, Command port: *:1186" is the management server's own start line: deliberately ignored
    first = json.loads(out.splitlines()[0])
    assert code == 0 and len(out.splitlines()) == 7 and first["kind"] == "ignored" and first["group"] == "mgmd_config"


def test_galera_error_log(tmp_path, capsys):
    f = tmp_path / "mariadb.err"
    f.write_text(MARIADB_LOG)
    code, out, _ = _run(capsys, "--engine", "galera", str(f))
    assert code == 0
    assert [json.loads(ln)["kind"] for ln in out.splitlines()] == ["state_shift", "synced", "ready_for_connections"]


def test_stdin_and_reporter(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("[ndbd] ALERT    -- Arbitration check won - node group majority\n"))
    code, out, _ = _run(capsys, "--reporter", "12", "-")
    ev = json.loads(out)
    assert code == 0 and ev["reporter"] == 12 and ev["node"] == 12 and ev["kind"] == "arbitration_check_won"


def test_missing_file_unknown_engine_directory(tmp_path, capsys):
    code, out, err = _run(capsys, str(tmp_path / "nope.log"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "cannot read" in err
    code, out, err = _run(capsys, "--engine", "oracle", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "unknown engine" in err
    code, out, err = _run(capsys, str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_unreadable_bytes_are_not_fatal(tmp_path, capsys):
    f = tmp_path / "bin.log"
    f.write_bytes(b"\xff\xfe\x00garbage\n2026-06-06 18:38:12 [MgmtSrvr] ALERT    -- Node 11: Node 12 Disconnected\n")
    code, out, _ = _run(capsys, str(f))
    assert code == 0 and json.loads(out)["kind"] == "node_disconnected"


def test_subprocess_exit_code_and_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "ndbchaos.cli", "events", str(tmp_path / "missing")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
