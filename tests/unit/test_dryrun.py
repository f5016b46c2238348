"""The dry run (ndbchaos.dryrun) on the real catalogue's declarations and the real NDB engine's
rules, over a cluster whose every action is recorded: the plan names the faults, targets, phases,
bounds and guards, draws the targets a played run with the same seed draws, and acts on nothing."""

import random
from types import SimpleNamespace

from ndbchaos import dryrun
from ndbchaos.catalogue.test_datanode_loss import SCENARIOS as DATANODE
from ndbchaos.catalogue.test_nodegroup_loss import SCENARIOS as NODEGROUP
from ndbchaos.catalogue.test_soak import SOAKS
from ndbchaos.clock import RunClock
from ndbchaos.history import History
from ndbchaos.journal import Journal
from ndbchaos.killswitch import parse_conditions
from ndbchaos.record import RunRecord
from ndbchaos.vocabulary import ClusterOptions

from .test_plans import ndb_cluster


class Touched(Exception):
    pass


def _cluster():
    """The default NDB layout; any call that could act on a node raises."""
    c = ndb_cluster()
    c.project, c.clock, c.backend, c.joined = "p", RunClock(), "docker", {}
    c.journal = Journal(c.clock)
    c.options = ClusterOptions(seed=5)
    c.draws = 0

    def next_target_draw():
        c.draws += 1
        return c.draws

    def container(node):
        name = getattr(node, "container", node)
        return SimpleNamespace(name=name, id=name, kill=_touch, stop=_touch, start=_touch, pause=_touch,
                               exec_run=_touch, restart=_touch)

    c.next_target_draw, c.container = next_target_draw, container
    c.note = lambda kind, **f: c.journal.note(kind, **f)
    c.discover = lambda: c.topology
    return c


def _touch(*a, **k):
    raise Touched("a dry run acted on a node")


def _by_name(decls, name):
    return next(d for d in decls if d.name == name)


def test_a_scenarios_plan_names_its_fault_targets_phases_bounds_and_guard():
    c = _cluster()
    sc = _by_name(DATANODE, "kill_one_data_node")
    lines = dryrun.scenario_plan(sc, c, seed=11, load=" on sql1, sql2", conditions=parse_conditions(["down > 2"]))
    text = "\n".join(lines)
    target = sc.fault(_cluster(), random.Random(11)).window.targets  # what a played run with seed 11 draws
    assert lines[0] == "kill_one_data_node (datanode_loss): SIGKILL one data node under steady load, then node restart"
    assert f"fault        kill on {target[0]}" in text
    assert f"baseline     {sc.baseline_s:g} s of ledger load on sql1, sql2" in text
    assert "cluster survives; serving: sql1, sql2; stopped: none" in text
    assert f"kill switch  may be down: {target[0]}; may stop serving: none" in text
    assert "--abort-when down > 2" in text
    assert c.journal.windows() == [] and c.journal.open_faults() == []  # nothing injected


def test_a_plan_that_stops_the_cluster_says_so_and_lets_every_node_go():
    c = _cluster()
    text = "\n".join(dryrun.scenario_plan(_by_name(NODEGROUP, "kill_whole_nodegroup"), c, seed=3))
    assert "cluster stops; serving: none" in text and "the plan stops the cluster: every node may go down" in text
    assert "system_restart" in text


def test_a_soaks_plan_is_its_seeded_schedule_within_the_duration():
    sk = _by_name(SOAKS, "soak_mixed")
    a = dryrun.soak_plan(sk, _cluster(), seed=1, duration_s=300)
    b = dryrun.soak_plan(sk, _cluster(), seed=1, duration_s=300)
    assert a == b  # the same seed, the same schedule and targets
    steps = [x for x in a if x.lstrip()[:1].isdigit()]
    assert len(steps) >= 3 and all(" at >= " in x for x in steps)
    assert "soak stops at the first abort" in "\n".join(a)
    assert dryrun.soak_plan(sk, _cluster(), seed=2, duration_s=300) != a


def test_a_saved_runs_plan_is_what_it_did(tmp_path):
    h = History.read("tests/unit/fixtures/galera-soak/seed1-fault4.jsonl.gz")
    lines = dryrun.record_plan(RunRecord.from_json(h.run))
    assert lines[0].startswith("soak_mixed (galera")
    assert any("lose_one_sql_node: data1, pause 10.771 s, hold 3.079 s, seed 208509454" in x for x in lines)
    assert any(x.startswith("  fault        proxy_down on data1") for x in lines)
