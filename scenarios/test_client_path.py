"""client_path: faults between the clients and one SQL node (toxiproxy in front of it).

The engine is not involved: the affected endpoint's clients see the fault (latency, resets), the
other endpoints are unaffected, and nothing is lost.
"""

from __future__ import annotations

import pytest

from ndbchaos.faults.toxiproxy import Latency, ResetPeer

from .common import AFTER_S, BASELINE_S, HOLD_S

pytestmark = [pytest.mark.client_path, pytest.mark.docker]

LATENCY_MS = 150


def test_latency_on_one_sql_node(cluster, scenario):
    run = scenario("pk_update", title=f"{LATENCY_MS} ms latency on the client path of one SQL node",
                   via_proxy=True)
    target = run.rng.choice(cluster.topology.sql_nodes)
    others = [n.name for n in cluster.topology.sql_nodes if n.name != target.name]
    with run.phase("baseline"):
        run.start_load()
        run.hold(BASELINE_S)
    with run.phase("fault", f"latency {LATENCY_MS} ms on {target.name}"):
        fault = run.inject(Latency(cluster, [target], latency_ms=LATENCY_MS))
        run.hold(HOLD_S)
    with run.phase("recovery"):
        run.heal(fault)
        run.hold(AFTER_S)
    res = run.finish()
    lat = res.verdict["checks"]["latency"]
    run.measure("latency checker", lat["summary"])
    w = fault.window
    during = [o for o in res.history if o.type == "ok" and o.start >= w.effective_at and o.end <= w.end]
    slow = sorted((o.end - o.start) * 1000 for o in during if o.node == target.name)
    fast = sorted((o.end - o.start) * 1000 for o in during if o.node in others)
    assert slow, f"no successful operation on {target.name} during the latency fault"
    p50_slow = slow[len(slow) // 2]
    run.measure(f"p50 latency on {target.name} during the fault", p50_slow, "ms", bound=LATENCY_MS)
    # One statement is at least one round trip through the proxy, so every op pays the latency.
    assert p50_slow >= LATENCY_MS * 0.95, f"p50 {p50_slow:.0f} ms on {target.name}: the latency did not apply"
    if fast:
        p50_fast = fast[len(fast) // 2]
        run.measure("p50 latency elsewhere during the fault", p50_fast, "ms")
        assert p50_fast < LATENCY_MS / 2, f"untouched endpoints slowed down too: p50 {p50_fast:.0f} ms"
    assert res.verdict["checks"]["errors"]["valid"] in (True, "unknown")


def test_reset_connections_on_one_sql_node(cluster, scenario):
    """TCP resets on one endpoint's client path: its clients get connection errors and reconnect;
    writes that may have reached the server are indeterminate, never counted lost."""
    run = scenario("ledger", title="TCP reset of every connection to one SQL node", via_proxy=True)
    target = run.rng.choice(cluster.topology.sql_nodes)
    with run.phase("baseline"):
        run.start_load()
        run.hold(BASELINE_S)
    with run.phase("fault", f"reset_peer on {target.name}"):
        fault = run.inject(ResetPeer(cluster, [target], timeout_ms=0))
        run.hold(HOLD_S)
    with run.phase("recovery"):
        run.heal(fault)
        t_ok = run.runner.wait_ok(target.name, after=fault.window.end, timeout=10)
        assert t_ok is not None, f"clients of {target.name} did not reconnect after the heal"
        run.measure("reconnected after heal", t_ok - fault.window.end, "s")
        run.hold(AFTER_S)
    res = run.finish()
    dur = res.verdict["checks"]["durability"]
    assert dur["valid"] is True, dur["summary"]
