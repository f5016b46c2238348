"""The rolling configuration change's pure parts: which parameters a rolling restart may change
(the others refused with what they need), config.ini edited where the value is set, ndb_config's
answer read, and the image entrypoint's options for one start of ndb_mgmd."""

import os
import subprocess
from pathlib import Path

import pytest

from ndbchaos.engines.ndb import rolling as R
from ndbchaos.errors import UsageError
from ndbchaos.resources import IMAGES_DIR

INI = """# a comment
[system]
Name=t

[ndbd default]
NoOfReplicas=2
DataMemory=64M
# DataMemory=1G in a comment stays
datadir=/var/lib/mysql

[ndb_mgmd]
NodeId=1
HostName=10.0.0.1

[ndbd]
NodeId=11
HostName=10.0.0.11

[ndbd]
NodeId=12
HostName=10.0.0.12
DataMemory=96M

[mysqld]
NodeId=21
"""


def test_a_parameter_of_restart_type_n_is_accepted_with_the_manuals_spelling():
    assert R.check_changes({"datamemory": "80M", "TimeBetweenGlobalCheckpoints": 1500}) == \
        {"DataMemory": "80M", "TimeBetweenGlobalCheckpoints": "1500"}


@pytest.mark.parametrize("param,needs", [("NoOfFragmentLogFiles", "an initial node restart"),
                                         ("MaxDiskWriteSpeed", "a system restart"),
                                         ("NoOfReplicas", "a backup, an initial system restart")])
def test_a_parameter_a_rolling_restart_cannot_apply_is_refused_with_what_it_needs(param, needs):
    with pytest.raises(UsageError, match=f"{param} cannot be changed by a rolling restart; it needs {needs}"):
        R.check_changes({param: "1"})


@pytest.mark.parametrize("changes,said", [({}, "no parameter"), ({"NoSuchThing": "1"}, "not a data node parameter"),
                                          ({"DataMemory": "80M\n[ndbd]"}, "not a config.ini value"),
                                          ({"DataMemory": ""}, "not a config.ini value")])
def test_bad_changes_are_one_line(changes, said):
    with pytest.raises(UsageError, match=said) as e:
        R.check_changes(changes)
    assert "\n" not in str(e.value)


def test_a_value_set_in_the_default_section_is_replaced_where_it_is():
    out = R.set_parameters(INI, {"DataMemory": "80M"})
    lines = out.splitlines()
    default = lines[lines.index("[ndbd default]"):lines.index("[ndb_mgmd]")]
    assert "DataMemory=80M" in default and "DataMemory=64M" not in out
    assert "# DataMemory=1G in a comment stays" in out
    # a data node's own value would override the default: it gets the new value too
    node12 = lines[lines.index("NodeId=12"):]
    assert "DataMemory=80M" in node12 and "DataMemory=96M" not in out
    assert out.count("DataMemory=80M") == 2
    # nothing else changed
    def others(text):
        return [ln for ln in text.splitlines() if "DataMemory" not in ln or ln.startswith("#")]
    assert others(out) == others(INI)


def test_a_value_not_set_yet_is_added_at_the_end_of_the_default_section():
    out = R.set_parameters(INI, {"TimeBetweenGlobalCheckpoints": "1500"})
    lines = out.splitlines()
    at = lines.index("TimeBetweenGlobalCheckpoints=1500")
    assert lines.index("[ndbd default]") < at < lines.index("[ndb_mgmd]")
    assert lines[at - 1] == "datadir=/var/lib/mysql" and lines[at + 1] == ""


def test_the_default_section_may_be_the_last_one():
    out = R.set_parameters("[ndbd default]\nNoOfReplicas=2\n", {"DataMemory": "80M"})
    assert out == "[ndbd default]\nNoOfReplicas=2\nDataMemory=80M\n"


def test_a_config_without_a_default_section_is_refused():
    with pytest.raises(UsageError, match=r"no \[ndbd default\] section"):
        R.set_parameters("[ndbd]\nNodeId=11\n", {"DataMemory": "80M"})


def test_ndb_configs_answer_is_read_per_node():
    assert R.parse_query("11,83886080,2000 12,83886080,2000\n", ["DataMemory", "TimeBetweenGlobalCheckpoints"]) == {
        11: {"DataMemory": "83886080", "TimeBetweenGlobalCheckpoints": "2000"},
        12: {"DataMemory": "83886080", "TimeBetweenGlobalCheckpoints": "2000"}}
    # an error's words are no answer
    assert R.parse_query("ERROR -- at line 31: Illegal value 1K for parameter DataMemory.", ["DataMemory"]) == {}


def _entrypoint(tmp_path, once: str | None, *args):
    fake = tmp_path / "ndb_mgmd"
    fake.write_text('#!/bin/sh\necho "ARGS: $*"\n')
    fake.chmod(0o755)
    f = tmp_path / "once"
    if once is not None:
        f.write_text(once)
    entry = Path(IMAGES_DIR) / "ndb" / "entrypoint.sh"
    r = subprocess.run(["bash", str(entry), "ndb_mgmd", *args], capture_output=True, text=True, timeout=30,
                       env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "NDBCHAOS_MGMD_ONCE": str(f)})
    assert r.returncode == 0, r.stderr
    return [ln for ln in r.stdout.splitlines() if ln.startswith("ARGS:")][0], f.exists()


def test_the_entrypoint_takes_options_for_one_start_and_forgets_them(tmp_path):
    args, left = _entrypoint(tmp_path, f"--config-file={R.CONFIG}\n--reload\n", "--ndb-nodeid=1")
    assert args == f"ARGS: --ndb-nodeid=1 --config-file={R.CONFIG} --reload --nodaemon"
    assert not left  # read once: the next start is a plain one
    args, _ = _entrypoint(tmp_path, None, "--ndb-nodeid=1")
    assert args == "ARGS: --ndb-nodeid=1 -f /etc/mysql-cluster.cnf --nodaemon"
