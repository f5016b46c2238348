"""``ndbchaos baseline``: a layout's steady throughput and latency, with no fault.

What every fault's client impact is measured against: the scenarios' own load (the same worker
processes x connections over every SQL node, the same client) on a healthy cluster, for a
measured window after a warm-up. Two workloads by default:

- ``fakebook``: the read mix of the published MySQL Cluster load test (docs/facts.md Field
  tests 2: 70 % status updates of a user, 25 % a conversation, 4 % friends, 1 % login), with no
  writes (``write_share=0``);
- ``pk_update``: the single-row update by primary key of the published benchmark (docs/facts.md
  Field tests 3).

Figures come from the client's own history: operations that completed inside the window (ok,
and failed or of unknown outcome), throughput per SQL node and in all, latency percentiles of
the ok ones (HdrHistogram, ``checks.latency``). Resources come from each container's cgroup
through Docker's stats: memory in use (without the page cache, as ``docker stats`` shows it) at
the window's end and the cores used during the window, summed per role (data, sql, mgm), and
the cores of the client processes from /proc. On a 2-core host the load generator shares
the cores with the cluster, so the figures are this host's, not the layout's ceiling: the CPU
columns say where the cores went.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from ..runtimes import docker as runtime
from ..checks.latency import bin_counts, histogram_from_counts
from ..clock import RunClock
from ..errors import NdbChaosError, UsageError
from ..waiting import wait_until
from ..workload import get_workload
from ..workload.runner import ClientOptions, Endpoint, WorkloadRunner
from .meter import loadavg, proc_cpu

#: the workloads measured, with the parameters that make them the published tests' operations
WORKLOADS = {
    "fakebook": {"write_share": 0.0},
    "pk_update": {},
}


@dataclass(frozen=True)
class SteadyConfig:
    workloads: tuple[str, ...] = ("fakebook", "pk_update")
    seconds: float = 30.0
    warmup: float = 5.0
    processes: int = 2
    connections: int = 2
    driver: str = "python"  # the scenarios' client (ClientOptions' default)
    seed: int = 1

    def __post_init__(self):
        bad = [w for w in self.workloads if w not in WORKLOADS]
        if bad or not self.workloads:
            raise UsageError(f"--workloads: unknown {', '.join(bad) or '(none)'} (known: {', '.join(WORKLOADS)})")
        if self.seconds <= 0 or self.warmup < 0:
            raise UsageError("--seconds must be positive and --warmup not negative")
        if self.processes < 1 or self.connections < 1:
            raise UsageError("--processes and --connections must be at least 1")
        if self.driver not in ("python", "native"):
            raise UsageError(f"--driver: python or native, not {self.driver}")


@dataclass(frozen=True)
class RoleUsage:
    """One role's containers during a window: how many, memory in use at its end, cores used in it."""
    containers: int
    memory_mib: float
    cores: float


@dataclass(frozen=True)
class Steady:
    """One workload's measured window."""
    workload: str
    driver: str
    concurrency: int
    window_s: float
    ok: int
    failed: int
    per_node: dict[str, float]  # ok operations/s by SQL node
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    roles: dict[str, RoleUsage] = field(default_factory=dict)
    client_cpu_s: float = 0.0

    @property
    def rate(self) -> float:
        return self.ok / self.window_s if self.window_s > 0 else 0.0

    @property
    def client_cores(self) -> float:
        return self.client_cpu_s / self.window_s if self.window_s > 0 else 0.0

    def lines(self) -> list[str]:
        def ms(v):
            return "-" if v is None else f"{v:.2f}"
        out = [f"{self.workload}: {self.rate:,.0f} ok ops/s over {self.window_s:.1f} s ({self.ok:,} ok, "
               f"{self.failed} failed or unknown; {self.concurrency} connections, {self.driver} client); "
               f"latency p50 {ms(self.p50_ms)} ms, p95 {ms(self.p95_ms)} ms, p99 {ms(self.p99_ms)} ms, "
               f"max {ms(self.max_ms)} ms",
               "  per SQL node: " + ", ".join(f"{n} {r:,.0f}/s" for n, r in sorted(self.per_node.items()))]
        if self.roles:
            out.append("  resources: " + "; ".join(
                f"{role} x{u.containers} {u.memory_mib:,.0f} MiB, {u.cores:.2f} cores"
                for role, u in sorted(self.roles.items())) + f"; clients {self.client_cores:.2f} cores")
        return out

    def to_dict(self) -> dict:
        return {"workload": self.workload, "driver": self.driver, "concurrency": self.concurrency,
                "window_s": round(self.window_s, 3), "ok": self.ok, "failed": self.failed,
                "rate": round(self.rate, 1), "per_node": {k: round(v, 1) for k, v in self.per_node.items()},
                "p50_ms": self.p50_ms, "p95_ms": self.p95_ms, "p99_ms": self.p99_ms, "max_ms": self.max_ms,
                "roles": {k: {"containers": u.containers, "memory_mib": round(u.memory_mib, 1),
                              "cpu_cores": round(u.cores, 3)} for k, u in self.roles.items()},
                "client_cpu_cores": round(self.client_cores, 3)}


def window_figures(cols, t0: float, t1: float) -> tuple[int, int, dict[str, int], dict[str, float | None]]:
    """(ok, not ok, ok per SQL node, latency percentiles in ms) of the operations of a history's
    columns that completed in [t0, t1] (run-clock seconds); not ok counts the failed ones and
    those of unknown outcome."""
    end = np.asarray(cols.end, dtype=np.float64)
    start = np.asarray(cols.start, dtype=np.float64)
    typ = np.asarray(cols.type, dtype=np.int64)
    node = np.asarray(cols.node, dtype=np.int64)
    inside = (end >= t0) & (end <= t1)
    ok = inside & (typ == 0)
    failed = inside & (typ != 0)  # failed, or of unknown outcome
    per_node: dict[str, int] = {}
    for i, name in enumerate(cols.node_names):
        n = int(np.count_nonzero(ok & (node == i)))
        if n:
            per_node[name] = n
    us = np.rint((end[ok] - start[ok]) * 1e6).astype(np.int64)
    if len(us) == 0:
        return 0, int(np.count_nonzero(failed)), per_node, {"p50": None, "p95": None, "p99": None, "max": None}
    h = histogram_from_counts(bin_counts(us))
    pct = {f"p{q}": round(h.get_value_at_percentile(q) / 1000.0, 3) for q in (50, 95, 99)}
    pct["max"] = round(float(us.max()) / 1000.0, 3)
    return int(np.count_nonzero(ok)), int(np.count_nonzero(failed)), per_node, pct


def role_usage(before: dict[str, dict], after: dict[str, dict], roles: dict[str, str]) -> dict[str, RoleUsage]:
    """Per role: containers, memory in use at the end (MiB), cores used between the two samples.
    ``before``/``after``: container name -> Docker's stats (``read``, ``cpu_stats``,
    ``memory_stats``); ``roles``: container name -> role. Each container's CPU time is divided by
    the time between its own two samples (their ``read`` stamps), so samples taken one after the
    other do not stretch the window. A container missing from either sample is left out."""
    acc: dict[str, list[float]] = {}
    for name, role in roles.items():
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            continue
        span = _read_s(b) - _read_s(a)
        if span <= 0:
            continue
        cores = max(_cpu_ns(b) - _cpu_ns(a), 0) / 1e9 / span
        r = acc.setdefault(role, [0, 0.0, 0.0])
        r[0] += 1
        r[1] += _memory_bytes(b) / (1 << 20)
        r[2] += cores
    return {role: RoleUsage(int(n), mem, cores) for role, (n, mem, cores) in acc.items()}


def _read_s(stats: dict) -> float:
    """Docker's ``read`` stamp (RFC 3339 with nanoseconds) in seconds since the epoch; 0 when absent."""
    text = str(stats.get("read") or "")
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", text)
    if not m:
        return 0.0
    whole = datetime.fromisoformat(m.group(1) + (m.group(3).replace("Z", "+00:00"))).timestamp()
    return whole + (float("0." + m.group(2)) if m.group(2) else 0.0)


def _cpu_ns(stats: dict) -> int:
    return int(((stats.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage") or 0)


def _memory_bytes(stats: dict) -> int:
    """In use without the page cache, as ``docker stats`` computes it (cgroup v1: ``total_inactive_file``,
    v2: ``inactive_file``)."""
    m = stats.get("memory_stats") or {}
    usage = int(m.get("usage") or 0)
    st = m.get("stats") or {}
    cache = st.get("total_inactive_file", st.get("inactive_file", 0))
    return max(usage - int(cache or 0), 0)


def container_stats(project: str) -> tuple[dict[str, dict], dict[str, str]]:
    """(container name -> one-shot stats, container name -> role) of a project's running containers,
    sampled at once (one thread per container: a sample takes Docker a few hundred ms)."""
    cs = [c for c in runtime.project_containers(project, all_=False) if (c.labels or {}).get("ndbchaos.role")]

    def sample(c):
        try:
            return c.stats(stream=False, one_shot=True)
        except Exception:
            return None

    stats, roles = {}, {}
    if not cs:
        return stats, roles
    with ThreadPoolExecutor(max_workers=min(len(cs), 24)) as pool:
        for c, st in zip(cs, pool.map(sample, cs)):
            if st is not None:
                stats[c.name], roles[c.name] = st, c.labels["ndbchaos.role"]
    return stats, roles


def measure(cluster, workload: str, cfg: SteadyConfig) -> Steady:
    """Start ``workload`` over every SQL node of a running cluster, warm up, measure one window."""
    eng = cluster.engine
    endpoints = [Endpoint(n.name, n.sql_port, n.sql_host) for n in cluster.topology.sql_nodes]
    if not endpoints:
        raise NdbChaosError("the cluster has no SQL node with a published port")
    wl = get_workload(workload, **{**eng.workload_params(workload), **WORKLOADS[workload]})
    clock = RunClock()
    opts = ClientOptions(engine=eng.name, user=eng.sql_user, password=eng.sql_password, database=eng.sql_database,
                         seed=cfg.seed, driver=cfg.driver)
    runner = WorkloadRunner(wl, endpoints, clock, processes=cfg.processes, connections=cfg.connections, options=opts)
    runner.setup(table_engine=eng.table_engine)
    try:
        runner.start()
        wait_until(lambda: all(runner.last_ok(e.node) >= 0 for e in endpoints), 60, on_timeout=lambda: NdbChaosError(
            f"{workload}: not every SQL node served an operation within 60 s"))
        time.sleep(cfg.warmup)
        before, roles = container_stats(cluster.project)
        c0 = proc_cpu(runner.worker_pids())
        t0 = clock.now()
        time.sleep(cfg.seconds)
        t1 = clock.now()
        after, _ = container_stats(cluster.project)
        client_cpu = proc_cpu(runner.worker_pids()) - c0
        history = runner.stop()
    except BaseException:
        runner.kill()
        raise
    ok, failed, per_node, pct = window_figures(history.cols, t0, t1)
    window = t1 - t0
    return Steady(workload, runner.opts.driver, runner.n_slots, window, ok, failed,
                  {n: c / window for n, c in per_node.items()}, pct["p50"], pct["p95"], pct["p99"], pct["max"],
                  role_usage(before, after, roles), client_cpu)


def host_line() -> str:
    return f"host: {os.cpu_count()} cores, load average {loadavg()}"


__all__ = ["WORKLOADS", "RoleUsage", "Steady", "SteadyConfig", "container_stats", "host_line", "measure",
           "role_usage", "window_figures"]
