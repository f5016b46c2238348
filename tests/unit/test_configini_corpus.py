"""config.ini as ndb_mgmd 9.7.2 reads it: the framework's parser (engines/ndb/iniread.py) against
the distribution's own ndb_config, over a corpus of real files and broken variants of each
(fixtures/configini/: the files name their sources; cases.py makes the variants; expected.json
is ndb_config's reading of every one, recorded by record.py), and `ndbchaos layout --ndb-config`
over all of them: the engine's answer, or one line and exit 2, never a traceback."""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ndbchaos import settings as ndb_settings
from ndbchaos.cli import main
from ndbchaos.engines.ndb.iniread import ConfigIniError, load_config_ini
from ndbchaos.engines.ndb.ndbconfig_tool import VERSION, ndb_config, read
from ndbchaos.engines.ndb.twin import twin_of
from ndbchaos.errors import NdbChaosError, UsageError

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "configini"))
from cases import CORPUS, EXPECTED, VARIANTS, as_json, cases, digest, ours  # noqa: E402

CASES = cases()
RECORDED = json.loads(EXPECTED.read_text())["cases"]
#: the failure detection settings a twin's data nodes must run as the user's do
FAILURE_DETECTION = ("HeartbeatIntervalDbDb", "HeartbeatIntervalDbApi", "ArbitrationTimeout", "Arbitration",
                     "TimeBetweenGlobalCheckpoints", "TimeBetweenEpochsTimeout", "StopOnError")


def _tool():
    """ndb_config of NDBCHAOS_NDB_DIST; skip without one, fail under CI=true when the variable
    names a distribution ndb_config cannot be had from."""
    why = None
    try:
        tool = ndb_config()
    except NdbChaosError as e:
        tool, why = None, str(e)
    if tool is not None:
        r = subprocess.run([str(tool), "--version"], capture_output=True, text=True, timeout=30)
        if r.returncode != 0 or VERSION not in r.stdout:
            tool, why = None, f"{tool} --version: {(r.stdout + r.stderr).strip()[:200]}"
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and NDBCHAOS_NDB_DIST is set, but ndb_config cannot be had from it: {why}")
        pytest.skip(why)
    if tool is None:
        pytest.skip(f"no MySQL Cluster {VERSION} distribution: set NDBCHAOS_NDB_DIST to compare with ndb_config")
    return tool


def test_the_corpus_is_real_files_that_name_their_sources():
    assert len(CORPUS) >= 15
    for f in CORPUS:
        first = f.read_bytes().split(b"\n", 1)[0]
        assert first.startswith(b"# source: ") and len(first) > 30, f.name
    assert len(CASES) == len(CORPUS) * (1 + len(VARIANTS)) and set(RECORDED) == {n for n, _ in CASES}
    accepted = [n for n in RECORDED if "error" not in RECORDED[n]]
    # both kinds are held: what 9.7.2 reads and what it refuses
    assert len(accepted) >= 60 and len(RECORDED) - len(accepted) >= 60


def test_the_parser_reads_every_case_as_ndb_config_did():
    """Without a distribution: the framework's parser gives ndb_config's recorded answer for every
    file and variant (the same nodes, ids, types, groups, hosts, ranks and failure detection
    settings, or a refusal with the same line and reason)."""
    stale = [n for n, d in CASES if RECORDED[n]["sha"] != digest(d)]
    assert not stale, f"corpus or variants changed: re-run tests/unit/fixtures/configini/record.py ({stale[:3]})"
    wrong = []
    for name, data in CASES:
        got = {"sha": digest(data), **as_json(ours(data))}
        if got != RECORDED[name]:
            wrong.append(f"{name}: ndb_config {RECORDED[name]} / ours {got}")
    assert not wrong, "\n".join(wrong[:5])


def test_ndb_config_reads_them_as_recorded_and_as_the_parser_does():
    """With the distribution: ndb_config itself, on every corpus file and a spread of the variants
    (record.py --check runs all of them), agrees with the recording and with the parser."""
    tool = _tool()
    picked = [c for i, c in enumerate(CASES) if ":" not in c[0] or i % 14 == 0]
    with ThreadPoolExecutor(4) as pool:
        live = list(pool.map(lambda c: read(tool, c[1]), picked))
    for (name, data), ans in zip(picked, live):
        engine = {"sha": digest(data), **as_json(ans)}
        assert engine == RECORDED[name], f"{name}: recorded {RECORDED[name]}, ndb_config now {engine}"
        assert as_json(ours(data)) == as_json(ans), name


def _layout(path, capsys):
    code = main(["layout", "--ndb-config", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_layout_of_every_case_is_the_engines_answer_or_one_line(tmp_path, capsys, monkeypatch):
    """`ndbchaos layout --ndb-config FILE` over the corpus and its variants: where ndb_config
    refused, exit 2 with its reason in one line; where it read the file, the twin's node ids, node
    groups, replicas and failure detection settings are the ones ndb_config read (NDB's defaults
    where the file says nothing), or one line naming what a container cannot be. Never a traceback."""
    monkeypatch.delenv("NDBCHAOS_NDB_DIST", raising=False)
    from ndbchaos.engines.ndb.config import parse_config_ini
    twins = 0
    for i, (name, data) in enumerate(CASES):
        p = tmp_path / f"{i}.ini"
        p.write_bytes(data)
        code, out, err = _layout(p, capsys)
        rec = RECORDED[name]
        assert "Traceback" not in out + err, name
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and str(p) in err, (name, err)
            if "error" in rec:
                assert rec["error"] in err, (name, rec["error"], err)
            else:  # a file 9.7.2 reads: only a container limit may refuse it, never a parse error
                assert ": line " not in err, (name, err)
            continue
        assert code == 0 and "error" not in rec, (name, code, err)
        twins += 1
        load_config_ini(out)  # what the twin's ndb_mgmd reads is a file ndb_mgmd reads
        cfg = parse_config_ini(out)
        data_nodes = {i: v for i, v in rec["nodes"].items() if v[0] == "ndbd" and v[1] != 65536}
        assert {str(n.node_id) for n in cfg.data_nodes} == set(data_nodes), name
        groups = {str(i): g for g, ms in cfg.node_groups().items() for i in ms}
        assert groups == {i: v[1] for i, v in data_nodes.items()}, name
        first = rec["data"][min(rec["data"], key=int)]
        assert str(cfg.replicas) == first["NoOfReplicas"], name
        for k in FAILURE_DETECTION:
            v = cfg.data_param(k)
            assert {"true": "1", "false": "0"}.get(v, v) == first[k], (name, k, v, first[k])
    assert twins >= 40


def test_ndb_config_reads_each_twin_as_the_twin_means_it(tmp_path, capsys):
    """The config.ini a twin's ndb_mgmd is given, for every corpus file 9.7.2 reads: ndb_config
    reads it, with the user's node ids, node groups and failure detection settings."""
    tool = _tool()
    for name, data in CASES:
        if ":" in name or "error" in RECORDED[name]:
            continue
        p = tmp_path / name
        p.write_bytes(data)
        code, out, err = _layout(p, capsys)
        if code != 0:
            continue
        twin = read(tool, out.encode())
        assert twin.error is None, (name, twin.error)
        rec = RECORDED[name]
        for nid, (typ, ng, _) in rec["nodes"].items():
            if typ == "ndbd":
                assert twin.nodes[int(nid)][:2] == (typ, ng), name
                assert all(twin.data[int(nid)][k] == rec["data"][nid][k] for k in FAILURE_DETECTION), name


def test_the_twin_refuses_in_ndb_configs_own_words(tmp_path):
    """With the distribution, ndb_config parses the file first: its refusal is the twin's."""
    _tool()
    p = tmp_path / "c.ini"
    data = dict(CASES)["01-manual-9.5-initial-configuration.ini:heartbeat-negative"]
    p.write_bytes(data)
    with pytest.raises(UsageError) as e:
        twin_of(p)
    assert str(e.value) == (f"--ndb-config {p}: line 3: Illegal value -1 for parameter HeartbeatIntervalDbDb. Legal "
                            f"values are between 10 and 4294967039 (ndb_config {VERSION})")


def test_a_distribution_that_is_not_one_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("NDBCHAOS_NDB_DIST", str(tmp_path / "missing.tar.xz"))
    with pytest.raises(NdbChaosError, match="missing.tar.xz: No such file or directory"):
        ndb_config()
    (tmp_path / "junk.tar.xz").write_bytes(b"not an archive")
    monkeypatch.setenv("NDBCHAOS_NDB_DIST", str(tmp_path / "junk.tar.xz"))
    monkeypatch.setenv("NDBCHAOS_CACHE", str(tmp_path / "cache"))
    ndb_settings.use(None)  # the settings are read once: read them again
    with pytest.raises(NdbChaosError, match="not a readable MySQL Cluster distribution"):
        ndb_config()
    p = tmp_path / "c.ini"
    p.write_bytes(CORPUS[0].read_bytes())
    with pytest.raises(UsageError) as e:
        twin_of(p)
    assert "\n" not in str(e.value) and "junk.tar.xz" in str(e.value)


@pytest.mark.parametrize("make,said", [
    (lambda p: p / "none.ini", "No such file or directory"),
    (lambda p: p, "is a directory"),
])
def test_a_file_that_cannot_be_read_is_one_line(tmp_path, capsys, monkeypatch, make, said):
    monkeypatch.delenv("NDBCHAOS_NDB_DIST", raising=False)
    code, out, err = _layout(make(tmp_path), capsys)
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bytes_are_read_as_ndb_mgmd_reads_them():
    """Latin-1 (or any byte) in a comment or a value is read, as 9.7.2 reads it (expected.json:
    the latin1-comment variants); a NUL ends its line; a blank line with a CR is a parse error."""
    base = CORPUS[0].read_bytes()
    cfg = load_config_ini(base.replace(b"# Number of fragment replicas", b"# r\xe9plicas \xff"))
    assert cfg.replicas == 2
    cfg = load_config_ini(base + b"\n[system]\nName=caf\xe9\n")
    assert cfg.system["name"] == "caf\xe9"
    with pytest.raises(ConfigIniError, match=r"^line 2: Parse error$"):
        load_config_ini(b"[ndbd default]\r\n\r\nNoOfReplicas=2\r\n")


# what ndb_config 9.7.2 answered for each of these when they were written (host names as addresses)
NODE_IDS = [
    # sections without NodeId are numbered in file order, from 1
    ("[mysqld]\n[ndbd]\nHostName=10.0.0.1\n[ndb_mgmd]\nHostName=10.0.0.9\n[ndbd]\nHostName=10.0.0.2\n[api]\n",
     {1: "API", 2: "NDB", 3: "MGM", 4: "NDB", 5: "API"}),
    # ... each one after the last id given or taken
    ("[mysqld]\nNodeId=10\n[ndbd]\nHostName=10.0.0.1\n[ndb_mgmd]\nHostName=10.0.0.9\n[ndbd]\nHostName=10.0.0.2\n"
     "[api]\n", {10: "API", 11: "NDB", 12: "MGM", 13: "NDB", 14: "API"}),
    # ... skipping the ids earlier sections hold
    ("[ndb_mgmd]\nHostName=10.0.0.9\nNodeId=2\n[ndbd]\nHostName=10.0.0.1\nNodeId=1\n[ndbd]\nHostName=10.0.0.2\n"
     "[mysqld]\n", {2: "MGM", 1: "NDB", 3: "NDB", 4: "API"}),
    # an id given after it was taken by a section without one is refused
    ("[mysqld]\n[ndbd]\nHostName=10.0.0.1\nNodeId=1\n[ndb_mgmd]\nHostName=10.0.0.9\n[ndbd]\nHostName=10.0.0.2\n"
     "[api]\n", "line 5: Duplicate nodeid in section [DB] starting at line: 2. Previously used on line 1."),
    # past 255 there is no id left
    ("[ndb_mgmd]\nHostName=10.0.0.9\nNodeId=255\n[mysqld]\n[ndbd]\nHostName=10.0.0.1\nNodeId=1\n[ndbd]\n"
     "HostName=10.0.0.2\n", "line 5: too many nodes configured, only up to 256 nodes supported."),
]


@pytest.mark.parametrize("text,want", NODE_IDS)
def test_node_ids_are_assigned_as_ndb_mgmd_assigns_them(text, want):
    if isinstance(want, str):
        with pytest.raises(ConfigIniError) as e:
            load_config_ini(text)
        assert str(e.value) == want
        return
    assert {n.node_id: n.type for n in load_config_ini(text).nodes} == want


settings.register_profile("configini", max_examples=60, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(settings.get_profile("configini"))
@given(which=st.integers(0, len(CORPUS) - 1), at=st.floats(0, 1), junk=st.binary(min_size=1, max_size=12),
       cut=st.booleans())
def test_any_bytes_give_a_reading_or_one_line(tmp_path, capsys, monkeypatch, which, at, junk, cut):
    """A corpus file with bytes spliced in (or cut short there): the parser reads it or refuses it
    with ``line N: reason``, and `ndbchaos layout` exits 0 or 2 with one line; never a traceback."""
    monkeypatch.delenv("NDBCHAOS_NDB_DIST", raising=False)
    data = CORPUS[which].read_bytes()
    i = int(at * len(data))
    data = data[:i] + (b"" if cut else junk + data[i:])
    try:
        load_config_ini(data)
    except ConfigIniError as e:
        assert str(e).startswith("line ") and "\n" not in str(e)
    p = tmp_path / "fuzz.ini"
    p.write_bytes(data)
    code, out, err = _layout(p, capsys)
    assert "Traceback" not in out + err
    assert code == 0 or (code == 2 and len(err.strip().splitlines()) == 1), (code, err)


# the deprecated [computer] indirection (ExecuteOnComputer), as ndb_config 9.7.2 answered it
_C = "[computer]\nId=c1\nHostName=10.0.0.1\n[computer]\nId=c2\nHostName=10.0.0.2\n"
COMPUTERS = [
    (_C + "[ndb_mgmd]\nHostName=10.0.0.9\n[ndbd]\nExecuteOnComputer=c1\n[ndbd]\nExecuteOnComputer=c2\n[mysqld]\n",
     {1: "10.0.0.9", 2: "10.0.0.1", 3: "10.0.0.2", 4: None}),
    ("[computer]\nId=c1\nHostName=10.0.0.1\n[ndb_mgmd]\nHostName=10.0.0.9\n[ndbd]\nExecuteOnComputer=c9\n[ndbd]\n"
     "HostName=10.0.0.2\n[mysqld]\n", 'line 8: Computer "c9" not declared- [DB] starting at line: 6'),
    ("[ndb_mgmd]\nHostName=10.0.0.9\n[ndbd]\nExecuteOnComputer=c1\n[ndbd]\nHostName=10.0.0.2\n[mysqld]\n" + _C,
     'line 5: Computer "c1" not declared- [DB] starting at line: 3'),
    ("[computer]\nId=c1\n[ndb_mgmd]\nHostName=10.0.0.9\n[ndbd]\nExecuteOnComputer=c1\n[ndbd]\nHostName=10.0.0.2\n"
     "[mysqld]\n", "line 3: Mandatory parameter HostName missing from section [COMPUTER] starting at line: 1"),
]


@pytest.mark.parametrize("text,want", COMPUTERS)
def test_a_computer_section_gives_its_host_as_ndb_mgmd_does(text, want):
    if isinstance(want, str):
        with pytest.raises(ConfigIniError) as e:
            load_config_ini(text)
        assert str(e.value) == want
        return
    assert {n.node_id: n.hostname for n in load_config_ini(text).nodes} == want
