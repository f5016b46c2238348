"""The transactional workloads for a few seconds against the session's real cluster (NDB when it
is available, as in CI, else Galera), every variant: plain and locking reads, VARCHAR and TEXT
lists, rows created by the first append or before the load. On a healthy cluster each history
is judged by the anomaly checker against the models the engine promises for that variant
(``Engine.consistency_models``); contention is real (every SQL node, shared hot keys); the final
read holds every acknowledged append or write."""

from __future__ import annotations

import time

import pytest

from ndbchaos.txn import CheckOptions, TxnHistory, check
from ndbchaos.workload import get_workload
from ndbchaos.workload.runner import ClientOptions, Endpoint, WorkloadRunner

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

SECONDS = 8

VARIANTS = [
    ("list_append", {}),
    ("list_append", {"read_lock": "update"}),
    ("list_append", {"read_lock": "share", "precreate": True}),
    ("list_append", {"storage": "text"}),
    ("list_append", {"storage": "text", "read_lock": "update", "precreate": True}),
    ("rw_register", {}),
    ("rw_register", {"read_lock": "update", "precreate": True}),
]


def _run(cluster, name, params):
    eps = [Endpoint(n.name, n.sql_port) for n in sorted(cluster.topology.sql_nodes, key=lambda n: n.name)]
    wl = get_workload(name, **{**cluster.engine.workload_params(name), **params})
    runner = WorkloadRunner(wl, eps, cluster.clock, processes=4, connections=2,
                            options=ClientOptions(engine=cluster.engine.name, seed=3))
    runner.setup(eps[0], cluster.engine.table_engine)
    runner.start()
    try:
        time.sleep(SECONDS + 1.5)
    finally:
        history = runner.stop()
    runner.final_reads(history, eps)
    return wl, history


@pytest.mark.parametrize("name,params", VARIANTS, ids=[f"{n}-{'-'.join(f'{k}={v}' for k, v in p.items()) or 'plain'}"
                                                       for n, p in VARIANTS])
def test_a_variant_on_a_healthy_cluster(cluster, name, params):
    wl, history = _run(cluster, name, params)
    ops = list(history)
    txns = [o for o in ops if o.f == "txn" and o.process != 1_000_000]
    ok = [o for o in txns if o.type == "ok"]
    # with a lock on every read, transactions that lock hot keys in opposite orders wait for each
    # other until the engine's deadlock timeout (NDB: 1.2 s) aborts one: far fewer commit
    assert len(ok) >= (20 if params.get("read_lock") else 100), f"{len(ok)} ok transactions of {len(txns)}"
    # more than one SQL node served, and some transactions wrote
    assert len({o.node for o in ok}) == len(cluster.topology.sql_nodes)
    assert any(m[0] != "r" for o in ok for m in o.value)
    # every acknowledged write is in the final read
    (final,) = [o for o in ops if o.process == 1_000_000 and o.type == "ok"]
    state = {k: v for _f, k, v in final.value}
    for o in ok:
        for f, k, v in o.value:
            if f == "append":
                assert v in state[k], (o, state[k])
    models = cluster.engine.consistency_models(name, wl.params)
    v = check(TxnHistory.from_history(history), CheckOptions(model=wl.model, consistency_models=tuple(models.models)))
    assert v.valid is True, (models, v.summary(), [a.explain(v.history) for k in v.anomaly_types
                                                   for a in v.anomalies[k][:1]])
