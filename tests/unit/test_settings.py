"""The settings (``ndbchaos.settings``): every NDBCHAOS_* variable and CI read in one place, typed
and checked there, the options laid over them."""

from __future__ import annotations

import ast
import os
import subprocess
import re
from pathlib import Path

import pytest

from ndbchaos import pytest_plugin, settings
from ndbchaos.engines import ENGINE_NAMES
from ndbchaos.errors import UsageError
from ndbchaos.settings import VARIABLES, Settings

DOCS = Path(__file__).resolve().parents[2] / "docs" / "inputs.md"


def test_defaults():
    s = Settings.from_env({})
    assert s == Settings()
    assert (s.engine, s.inventory, s.galera_data_nodes, s.data_disk, s.ndb_layout, s.ndb_subnet) == \
        ("auto", None, 2, None, None, None)
    assert (s.pumba, s.pumba_bin, s.docker_timeout_s, s.guard_s, s.project, dict(s.ports), s.ci) == \
        ("auto", "pumba", 60.0, None, None, {}, False)
    assert s.cache == Path.home() / ".cache" / "ndbchaos"
    assert s.tools_dir == s.cache / "tools" and s.disks_dir == s.cache / "disks"


def test_parsing():
    env = {"NDBCHAOS_ENGINE": "NDB", "NDBCHAOS_INVENTORY": "hosts.yml", "NDBCHAOS_GALERA_DATA_NODES": "3",
           "NDBCHAOS_DATA_DISK": "512M", "NDBCHAOS_NDB_LAYOUT": "small", "NDBCHAOS_NDB_SUBNET": "10.50.1.0/24",
           "NDBCHAOS_NDB_IMAGE": "mine:1", "NDBCHAOS_NDB_DIST": "/d.tar.xz", "NDBCHAOS_NDB_ROOT_PASSWORD": "pw",
           "NDBCHAOS_GALERA_IMAGE": "g:1", "NDBCHAOS_TOXIPROXY_IMAGE": "t:1", "NDBCHAOS_TOOLS_IMAGE": "tools:1",
           "NDBCHAOS_PUMBA": "0", "NDBCHAOS_PUMBA_BIN": "/opt/pumba", "NDBCHAOS_DOCKER_TIMEOUT_S": "7.5",
           "NDBCHAOS_GUARD_S": "30", "NDBCHAOS_CACHE": "/c", "NDBCHAOS_TOOLS": "/t", "NDBCHAOS_DISKS": "/d",
           "NDBCHAOS_PROJECT": "ndbchaos-1", "NDBCHAOS_PORT_SQL1": "13306", "NDBCHAOS_PORT_DATA2": " 13307 ",
           "CI": "true", "OTHER": "x"}
    s = Settings.from_env(env)
    assert (s.engine, s.inventory, s.galera_data_nodes, s.data_disk, s.ndb_layout, s.ndb_subnet) == \
        ("ndb", "hosts.yml", 3, "512M", "small", "10.50.1")
    assert (s.ndb_image, s.ndb_dist, s.ndb_root_password, s.galera_image, s.toxiproxy_image, s.tools_image) == \
        ("mine:1", "/d.tar.xz", "pw", "g:1", "t:1", "tools:1")
    assert (s.pumba, s.pumba_bin, s.docker_timeout_s, s.guard_s, s.project) == \
        ("native", "/opt/pumba", 7.5, 30, "ndbchaos-1")
    assert (s.cache, s.tools_dir, s.disks_dir) == (Path("/c"), Path("/t"), Path("/d"))
    assert dict(s.ports) == {"data2": 13307, "sql1": 13306}
    assert s.port_env == {"NDBCHAOS_PORT_DATA2": "13307", "NDBCHAOS_PORT_SQL1": "13306"}
    assert s.ci is True


@pytest.mark.parametrize("value, ci", [("1", True), ("yes", True), ("TRUE", True), ("false", False),
                                       ("0", False), ("", False), ("whatever", False)])
def test_ci(value, ci):
    assert Settings.from_env({"CI": value}).ci is ci


@pytest.mark.parametrize("value, pumba", [("1", "pumba"), ("on", "pumba"), ("pumba", "pumba"), ("native", "native"),
                                          ("off", "native"), ("Auto", "auto")])
def test_pumba(value, pumba):
    assert Settings.from_env({"NDBCHAOS_PUMBA": value}).pumba == pumba


def test_empty_values_are_unset():
    assert Settings.from_env({"NDBCHAOS_DOCKER_TIMEOUT_S": "", "NDBCHAOS_NDB_IMAGE": " ",
                              "NDBCHAOS_PORT_SQL1": ""}) == Settings()


@pytest.mark.parametrize("var, value, why", [
    ("NDBCHAOS_DOCKER_TIMEOUT_S", "x", "not a number of seconds"),
    ("NDBCHAOS_DOCKER_TIMEOUT_S", "-1", "not a positive number of seconds"),
    ("NDBCHAOS_DOCKER_TIMEOUT_S", "inf", "not a positive number of seconds"),
    ("NDBCHAOS_GUARD_S", "1.5", "not a whole number of seconds"),
    ("NDBCHAOS_ENGINE", "mysql", "not an engine (ndb, galera, auto)"),
    ("NDBCHAOS_GALERA_DATA_NODES", "two", "not a whole number (2 or 3)"),
    ("NDBCHAOS_GALERA_DATA_NODES", "5", "2 or 3 Galera data nodes"),
    ("NDBCHAOS_DATA_DISK", "lots", "expected a number of MB, e.g. 512M or 2G"),
    ("NDBCHAOS_DATA_DISK", "1M", "between 64 MB and 64 GB"),
    ("NDBCHAOS_NDB_SUBNET", "10.1", "expected the first three octets of a /24, e.g. 10.213.77"),
    ("NDBCHAOS_NDB_SUBNET", "10.1.2.0/16", "only a /24 is supported"),
    ("NDBCHAOS_PUMBA", "maybe", "expected auto, pumba (1, yes, on, true) or native (0, no, off, false)"),
    ("NDBCHAOS_PORT_SQL1", "70000", "not a port number (1-65535)"),
    ("NDBCHAOS_PORT_SQL1", "x", "not a port number"),
])
def test_a_bad_value_is_one_line_naming_the_variable(var, value, why):
    with pytest.raises(UsageError) as e:
        Settings.from_env({var: value})
    assert str(e.value) == f"{var}={value!r}: {why}"
    assert e.value.exit_code == 2


def test_options_over_the_environment():
    env = Settings.from_env({"NDBCHAOS_ENGINE": "galera", "NDBCHAOS_NDB_LAYOUT": "small",
                             "NDBCHAOS_GALERA_DATA_NODES": "3", "NDBCHAOS_DATA_DISK": "1G"})
    given = env.with_options(engine="ndb", ndb_layout="nodegroups=2,replicas=2", galera_data_nodes=None,
                             data_disk=None)
    assert (given.engine, given.ndb_layout) == ("ndb", "nodegroups=2,replicas=2")  # an option given wins
    assert (given.galera_data_nodes, given.data_disk) == (3, "1G")  # an option not given leaves the variable's
    assert env.ndb_layout == "small"  # frozen: a new value, the old one unchanged
    with pytest.raises(UsageError, match=r"^--galera-data-nodes=4: 2 or 3 Galera data nodes$"):
        env.with_options(galera_data_nodes=4)
    with pytest.raises(TypeError):
        env.with_options(no_such_option=1)
    assert env.replace(ci=True).ci is True


class _Config:
    def __init__(self, **options):
        self.options = options

    def getoption(self, name, default=None):
        return self.options.get(name, default)


def test_the_plugin_lays_its_options_over_the_environment(monkeypatch):
    monkeypatch.setenv("NDBCHAOS_NDB_LAYOUT", "small")
    monkeypatch.setenv("NDBCHAOS_ENGINE", "galera")
    monkeypatch.setenv("NDBCHAOS_GALERA_DATA_NODES", "3")
    s = pytest_plugin.session_settings(_Config(**{"--engine": "ndb"}).getoption, "nodegroups=2,replicas=2")
    assert (s.engine, s.ndb_layout, s.galera_data_nodes) == ("ndb", "nodegroups=2,replicas=2", 3)
    assert pytest_plugin.session_settings(_Config().getoption).ndb_layout == "small"
    monkeypatch.setenv("NDBCHAOS_DOCKER_TIMEOUT_S", "x")
    with pytest.raises(pytest.UsageError, match=r"^NDBCHAOS_DOCKER_TIMEOUT_S='x': not a number of seconds$"):
        pytest_plugin.session_settings(_Config().getoption)


def test_the_plugin_writes_no_variable():
    """The layout reaches the engine as the session's settings, not through os.environ."""
    source = Path(pytest_plugin.__file__).read_text()
    assert "os.environ[" not in source and "setdefault" not in source and "putenv" not in source


def test_current_reads_once_and_use_installs(monkeypatch):
    monkeypatch.setenv("NDBCHAOS_DOCKER_TIMEOUT_S", "5")
    first = settings.current()
    monkeypatch.setenv("NDBCHAOS_DOCKER_TIMEOUT_S", "6")
    assert settings.current() is first and first.docker_timeout_s == 5
    settings.use(Settings(docker_timeout_s=9))
    assert settings.current().docker_timeout_s == 9
    settings.use(None)
    assert settings.current().docker_timeout_s == 6


def test_inherited_leaves_our_variables_out():
    assert settings.inherited({"PATH": "/bin", "NDBCHAOS_NDB_IMAGE": "x", "CI": "true"}) == \
        {"PATH": "/bin", "CI": "true"}


def test_the_engine_choices_are_the_registry_s():
    assert settings.ENGINE_CHOICES == ENGINE_NAMES


def test_docs_list_every_variable():
    """docs/inputs.md's table lists every variable the package reads, with the same type and default."""
    text = DOCS.read_text()
    for var in VARIABLES:
        row = re.search(rf"^\| `{re.escape(var.name)}` \| (.*?) \| (.*?) \|", text, re.M)
        assert row, f"{var.name} is not in docs/inputs.md's table"
        assert (row.group(1), row.group(2)) == (var.type, var.default), var.name


# -- the one reader: no other module of the package reads an NDBCHAOS_* variable or CI -------------

PACKAGE = Path(__file__).resolve().parents[2] / "ndbchaos"
#: modules that still read one, each with why (to be taken out when it no longer does)
KNOWN_READERS: dict[str, str] = {}
_OURS = re.compile(r"^(NDBCHAOS_|CI$)")


def _names_of_our_variables(trees) -> set[str]:
    """Module-level names bound to a variable's name (``DIST_ENV = "NDBCHAOS_NDB_DIST"``)."""
    names = set()
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str) and _OURS.match(node.value.value):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _ours(node, names: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(_OURS.match(node.value))
    if isinstance(node, ast.JoinedStr):
        return bool(node.values) and _ours(node.values[0], names)
    if isinstance(node, ast.BinOp):
        return _ours(node.left, names)
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr in names
    return False


def _environ(node) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or \
        (isinstance(node, ast.Name) and node.id == "environ")


def reads(tree, names: set[str]) -> list[int]:
    """The lines of ``tree`` that read (or write) one of our variables: ``environ.get/pop/
    setdefault(V)``, ``environ[V]``, ``V in environ``, ``getenv(V)``, ``k.startswith("NDBCHAOS_")``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            f, key = node.func, node.args[0]
            if isinstance(f, ast.Attribute) and f.attr in ("get", "pop", "setdefault") and _environ(f.value) \
                    and _ours(key, names):
                lines.append(node.lineno)
            elif ((isinstance(f, ast.Attribute) and f.attr in ("getenv", "putenv", "unsetenv"))
                  or (isinstance(f, ast.Name) and f.id == "getenv")) and _ours(key, names):
                lines.append(node.lineno)
            elif isinstance(f, ast.Attribute) and f.attr == "startswith" and _ours(key, names):
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _environ(node.value) and _ours(node.slice, names):
            lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                and any(_environ(c) for c in node.comparators) and _ours(node.left, names):
            lines.append(node.lineno)
    return sorted(set(lines))


def _package_readers() -> dict[str, list[int]]:
    trees = {str(p.relative_to(PACKAGE.parent)): ast.parse(p.read_text(), str(p))
             for p in sorted(PACKAGE.rglob("*.py"))}
    names = _names_of_our_variables(trees.values())
    found = {path: reads(tree, names) for path, tree in trees.items() if path != "ndbchaos/settings.py"}
    return {path: lines for path, lines in found.items() if lines}


def test_no_module_but_the_settings_reads_a_variable():
    readers = _package_readers()
    unknown = {path: lines for path, lines in readers.items() if path not in KNOWN_READERS}
    assert unknown == {}, "read NDBCHAOS_* or CI through ndbchaos.settings, not os.environ: " + \
        ", ".join(f"{p}:{n}" for p, lines in unknown.items() for n in lines)


def test_the_known_readers_still_read():
    """A module that no longer reads a variable is taken out of KNOWN_READERS."""
    readers = _package_readers()
    assert [p for p in KNOWN_READERS if p not in readers] == []


def test_the_scan_finds_each_way_of_reading():
    src = '''import os
from os import environ, getenv
DIST_ENV = "NDBCHAOS_NDB_DIST"
a = os.environ.get("NDBCHAOS_X")
b = os.environ["CI"]
c = "NDBCHAOS_Y" in os.environ
d = getenv(DIST_ENV)
e = environ.get(f"NDBCHAOS_PORT_{a}")
f = [k for k in os.environ if k.startswith("NDBCHAOS_")]
os.environ["NDBCHAOS_NDB_LAYOUT"] = "small"
g = os.environ.setdefault(mod.IMAGE_ENV, "x")
h = os.environ.get("HOME"), {**os.environ, DIST_ENV: "d"}, os.environ.get("CI_PIPELINE_ID")
'''
    tree = ast.parse(src)
    names = _names_of_our_variables([tree]) | {"IMAGE_ENV"}
    assert reads(tree, names) == [4, 5, 6, 7, 8, 9, 10, 11]


# -- Compose gets our variables from the settings only -------------------------------------------

def test_compose_inherits_none_of_our_variables(monkeypatch):
    from ndbchaos.runtimes import docker
    seen = {}

    def run(cmd, env, **kw):
        seen.update(env)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(docker, "compose_cmd", lambda: ["compose"])
    monkeypatch.setattr(docker.subprocess, "run", run)
    monkeypatch.setenv("NDBCHAOS_NDB_IMAGE", "from-the-environment:1")
    monkeypatch.setenv("NDBCHAOS_PORT_SQL1", "13306")
    docker.compose("p", [], {"NDBCHAOS_PROJECT": "p", "NDBCHAOS_NDB_IMAGE": "chosen:1"}, "ps")
    assert seen["NDBCHAOS_PROJECT"] == "p" and seen["NDBCHAOS_NDB_IMAGE"] == "chosen:1"
    assert "NDBCHAOS_PORT_SQL1" not in seen and seen["PATH"] == os.environ["PATH"]


def test_a_cluster_hands_compose_the_settings_ports(monkeypatch, tmp_path):
    from ndbchaos.runtimes.compose.cluster import ComposeCluster
    from ndbchaos.engines.ndb import NdbEngine
    monkeypatch.setenv("NDBCHAOS_TOOLS", str(tmp_path / "tools"))
    c = ComposeCluster(NdbEngine(), {"ndb_image": "mine:1"}, project="p",
                       settings=Settings.from_env({"NDBCHAOS_PORT_SQL1": "13306"}))
    pinned = c.pin_ports()
    assert "NDBCHAOS_PORT_SQL1" not in pinned and "NDBCHAOS_PORT_SQL2" in pinned  # the user's is kept
    env = c.env
    assert env["NDBCHAOS_PORT_SQL1"] == "13306" and env["NDBCHAOS_PORT_SQL2"] == str(pinned["NDBCHAOS_PORT_SQL2"])
    options = ComposeCluster(NdbEngine(), {"ndb_image": "mine:1", "ports": {"sql1": 14000}}, project="p",
                             settings=Settings.from_env({"NDBCHAOS_PORT_SQL1": "13306"})).env
    assert options["NDBCHAOS_PORT_SQL1"] == "14000"  # the option over the variable
