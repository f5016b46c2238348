"""Cluster options are a typed value (``vocabulary.ClusterOptions``): a mapping is accepted only at
the edge (a handle's constructor, ``with_toxiproxy``) and checked there, one line naming the bad
option; engines and runtimes read attributes, never keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ndbchaos.engines.galera import GaleraEngine
from ndbchaos.engines.ndb import NdbEngine
from ndbchaos.errors import UsageError
from ndbchaos.runtimes.compose.cluster import ComposeCluster
from ndbchaos.vocabulary import ClusterOptions, OptionError

PKG = Path(__file__).resolve().parents[2] / "ndbchaos"


def test_a_mapping_becomes_options_and_back():
    o = ClusterOptions.of({"ndb_layout": "small", "ports": {"sql1": "13306"}, "overlays": [Path("/x.yml")],
                           "keep": True, "seed": None})
    assert o.ndb_layout == "small" and o.ports == {"sql1": 13306} and o.overlays == ("/x.yml",) and o.keep
    assert o.given() == {"ndb_layout": "small", "ports": {"sql1": 13306}, "overlays": ["/x.yml"], "keep": True}
    assert ClusterOptions.of(o) is o and ClusterOptions.of(None) == ClusterOptions()
    assert ClusterOptions().given() == {}


def test_with_makes_a_new_value():
    o = ClusterOptions(ndb_layout="small")
    p = o.with_(overlays=["/a.yml"], ndb_subnet="10.1.2")
    assert o.overlays == () and o.ndb_subnet is None
    assert p.overlays == ("/a.yml",) and p.ndb_subnet == "10.1.2" and p.ndb_layout == "small"
    with pytest.raises(Exception):
        o.ndb_layout = "default"  # frozen


@pytest.mark.parametrize("bad, said", [
    ({"nd_layout": "small"}, "unknown cluster option 'nd_layout' (known: "),
    ({"galera_data_nodes": "3"}, "cluster option galera_data_nodes: '3' is not a whole number"),
    ({"keep": "yes"}, "cluster option keep: 'yes' is not true or false"),
    ({"seed": True}, "cluster option seed: True is not a whole number"),
    ({"ndb_start_timeout": "fast"}, "cluster option ndb_start_timeout: 'fast' is not a number"),
    ({"overlays": "a.yml"}, "cluster option overlays: a list of compose files, not 'a.yml'"),
    ({"ports": [1, 2]}, "cluster option ports: a mapping, not [1, 2]"),
    (["ndb_layout"], "cluster options must be a mapping of names to values, not list"),
])
def test_a_bad_option_is_one_line_naming_it(bad, said):
    with pytest.raises(OptionError) as ei:
        ClusterOptions.of(bad)
    assert str(ei.value).startswith(said) and "\n" not in str(ei.value)


def test_the_handle_is_the_edge():
    c = ComposeCluster(GaleraEngine(), {"galera_data_nodes": 3}, project="ndbchaos-optionstest")
    assert isinstance(c.options, ClusterOptions) and c.options.galera_data_nodes == 3
    with pytest.raises(UsageError, match="unknown cluster option 'galera_nodes'"):
        ComposeCluster(GaleraEngine(), {"galera_nodes": 3}, project="ndbchaos-optionstest")


def test_engines_answer_from_typed_options():
    eng = NdbEngine()
    small = ClusterOptions(ndb_layout="small", ndb_subnet="10.9.9")
    assert eng.layout(small) == "small" and eng.subnet(small) == "10.9.9"
    assert eng.compose_env(small.with_(ports={"sql1": 13306}))["NDBCHAOS_PORT_SQL1"] == "13306"
    assert eng.options_from_topology  # returns ClusterOptions: test_ndb_faultfacts compares its given()


def test_no_engine_or_runtime_reads_options_by_key():
    """``options["x"]`` / ``options.get("x")`` on cluster options would bypass the type."""
    pattern = re.compile(r"\boptions(\.get\(|\[)")
    offenders = []
    for sub in ("engines", "runtimes", "faults"):
        for p in (PKG / sub).rglob("*.py"):
            for i, line in enumerate(p.read_text().splitlines(), 1):
                if pattern.search(line) and "check_options" not in line and not line.lstrip().startswith("#"):
                    offenders.append(f"{p.relative_to(PKG)}:{i}: {line.strip()}")
    for p in (PKG / "handle.py", PKG / "fixtures.py"):
        for i, line in enumerate(p.read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{p.relative_to(PKG)}:{i}: {line.strip()}")
    assert offenders == []
