"""``ndbchaos bench``: this load generator against sysbench, on the same SQL node, at equal
concurrency, with the same statements, alternating runs of equal length.

Two tests, each a single statement per operation on sysbench's ``sbtest1`` table:

- ``point_select``: ``SELECT c FROM sbtest1 WHERE id=?`` (sysbench ``oltp_point_select``, our
  ``oltp_point_select`` workload);
- ``update_pk``: ``UPDATE sbtest1 SET c=? WHERE id=?`` (sysbench ``oltp_update_non_index``, our
  ``oltp_update_non_index``). The non-index update is the update by primary key of the published
  MySQL Cluster benchmark (docs/facts.md Field tests 3: a non-indexed column, found by PK,
  no batching); ``oltp_update_index`` updates ``k``, which also maintains the secondary index
  ``k_1`` and so measures index maintenance as well.

Throughput is counted by the server, identically for both clients: the SQL node's ``Com_select``
/ ``Com_update`` counters are read at the start and the end of a measuring window that opens only
once every client connection is running (clients keep running a little before and after it). The
clients' own counts (sysbench's summary, our history) are reported beside it as a cross-check.
CPU time per statement is read from /proc for the client processes (our workers, sysbench), the
cluster's containers (the database) and the docker-proxy of the published port.
"""

from __future__ import annotations

import logging
import math
import os
import statistics
import time

from ..clock import RunClock
from ..runtimes.compose.cluster import ComposeCluster
from ..engines import get_engine
from ..errors import NdbChaosError, UsageError
from ..waiting import wait_until
from ..workload import get_workload
from ..workload.native import library_path, supported
from ..workload.runner import ClientOptions, Endpoint, WorkloadRunner
from .checker import bench_checker
from .config import TESTS, BenchConfig, Sample, ab_split, bench_cores, split_threads
from .meter import Counters, Meter, container_pids, docker_proxy_pids, loadavg
from .sysbench import ensure_sysbench, run_sysbench, sysbench_version
from ..vocabulary import ClusterOptions

log = logging.getLogger("ndbchaos")

# -- helpers -------------------------------------------------------------------------------------

def run_ours(test: str, ep, cfg: BenchConfig, counters: Counters, server_pids: dict, record: bool,
             seconds: float, seed: int = 0, params: dict | None = None) -> Sample:
    _sb, wl_name, counter = TESTS[test]
    procs, conns = split_threads(cfg.threads, cfg.processes, bench_cores(cfg))
    wl = get_workload(wl_name, **{"table_size": cfg.table_size, "create": False, **(params or {})})
    clock = RunClock()
    runner = WorkloadRunner(wl, [ep], clock, processes=procs, connections=conns,
                            options=ClientOptions(engine="galera", record=record, seed=seed,
                                                  driver=cfg.driver))
    try:
        runner.start()
        wait_until(lambda: runner.last_ok(ep.node) >= 0 or not any(p.is_alive() for p in runner._procs), 60)
        if runner.last_ok(ep.node) < 0:
            raise NdbChaosError(f"our {wl_name} load made no successful operation on {ep.node} within 60 s")
        time.sleep(cfg.settle)  # every connection is up (spawned processes connect within this)
        meter = Meter(counters, {"client": [p.pid for p in runner._procs], **server_pids})
        meter.open()
        t0 = clock.at(meter.t0)
        time.sleep(seconds)
        rate, window, cpu = meter.close(counter)
        t1 = clock.at(meter.t0 + window)
        history = runner.stop()
    except BaseException:
        runner.kill()
        raise
    died = [p.exitcode for p in runner._procs if p.exitcode not in (0, None)]
    if died:  # fewer connections than sysbench for part of the window: the figure is void
        raise NdbChaosError(f"{len(died)} of our worker processes died during the {wl_name} run "
                            f"(exit codes {', '.join(map(str, died))}); see the kernel log for a crash")
    client_rate = None
    errors = 0
    if record:
        cols = history.cols
        end, typ = cols.end, cols.type
        ok = sum(1 for i in range(len(end)) if typ[i] == 0 and t0 <= end[i] <= t1)
        errors = sum(1 for x in typ if x != 0)
        client_rate = ok / (t1 - t0)
    return Sample("ours" if record else "ours-norec", test, rate, window, client_rate, errors, cpu)


def run_recording_ab(test: str, ep, cfg: BenchConfig, counters: Counters, server_pids: dict,
                     seconds: float, seed: int = 0) -> Sample:
    """Ours with and without per-op recording at the same time, half of the connections each.

    Both halves see the same host at the same moment, so the comparison is not at the mercy of
    load elsewhere, as two runs one after the other are on a shared 2-core host. The server
    counts every statement in the window; the recording half's own history says how many were
    its own; the rest are the other half's. ``rate`` is the non-recording half's statements/s,
    scaled to all connections; ``client_rate`` the recording half's, scaled the same way."""
    _sb, wl_name, counter = TESTS[test]
    split = ab_split(cfg.threads, cfg.processes, bench_cores(cfg))
    if split is None:
        raise UsageError("the recording A/B run needs connections that split into two equal halves")
    procs, conns = split
    clock = RunClock()
    runners = {}
    for rec in (True, False):
        wl = get_workload(wl_name, table_size=cfg.table_size, create=False)
        runners[rec] = WorkloadRunner(wl, [ep], clock, processes=procs, connections=conns,
                                      options=ClientOptions(engine="galera", record=rec, driver=cfg.driver,
                                                            seed=seed * 2 + (0 if rec else 1)))
    histories = {}
    try:
        for r in runners.values():
            r.start()
        wait_until(lambda: all(r.last_ok(ep.node) >= 0 for r in runners.values()), 60, on_timeout=lambda: NdbChaosError(
            f"our {wl_name} load made no successful operation on {ep.node} within 60 s"))
        time.sleep(cfg.settle)
        meter = Meter(counters, {"rec": [p.pid for p in runners[True]._procs],
                                 "norec": [p.pid for p in runners[False]._procs], **server_pids})
        meter.open()
        time.sleep(seconds)
        meter.close(counter)
        for rec, r in runners.items():
            histories[rec] = r.stop()
    except BaseException:
        for r in runners.values():
            r.kill()
        raise
    died = [p.exitcode for r in runners.values() for p in r._procs if p.exitcode not in (0, None)]
    if died:
        raise NdbChaosError(f"{len(died)} of our worker processes died during the {wl_name} run "
                            f"(exit codes {', '.join(map(str, died))}); see the kernel log for a crash")
    t0, t1 = clock.at(meter.t0), clock.at(meter.t1)
    cols = histories[True].cols
    end, typ = cols.end, cols.type
    in_window = [i for i in range(len(end)) if t0 <= end[i] <= t1]
    n_rec = len(in_window)
    n_norec = max(0, meter.n - n_rec)
    errors = sum(1 for i in in_window if typ[i] != 0)
    window = meter.t1 - meter.t0
    cpu = {"client": meter.cpu_s["norec"] * 1e6 / n_norec if n_norec else None,
           "client_rec": meter.cpu_s["rec"] * 1e6 / n_rec if n_rec else None}
    sample = Sample("ab", test, 2 * n_norec / window, window, 2 * n_rec / window, errors, cpu)
    return sample


# -- the whole bench -----------------------------------------------------------------------------

def _driver_line(cfg: BenchConfig, out) -> str:
    """Say which client driver our runs use (the native one falls back to Python, with why)."""
    if cfg.driver == "python":
        out("bench: our client: the Python driver (mysql-connector's C extension through fastsql)")
        return "python"
    if cfg.driver != "native":
        raise UsageError(f"--driver must be native or python, not {cfg.driver!r}")
    for test in cfg.tests:
        why = supported(get_workload(TESTS[test][1], table_size=cfg.table_size, create=False))
        if why is not None:
            out(f"bench: our client: the Python driver (native driver unavailable for {test}: {why})")
            return "python"
    out(f"bench: our client: the native driver ({library_path()}; libmariadb connects and prepares, each "
        "execution on the binary protocol)")
    return "native"


def _fmt_cpu(cpu: dict) -> str:
    return " ".join(f"{k}={v:.0f}" for k, v in cpu.items() if v is not None)


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return statistics.fmean(xs) if xs else float("nan")


def run_bench(cfg: BenchConfig, out=print) -> dict:
    """Run the whole bench; print progress and the figures through ``out``; return them."""
    import mysql.connector


    if cfg.seconds <= 0 or cfg.rounds < 1:
        raise UsageError("--seconds must be positive and --rounds at least 1")
    split_threads(cfg.threads, cfg.processes)  # a bad --processes fails before anything starts
    sb = ensure_sysbench()
    out(f"bench: load average {loadavg()} on {os.cpu_count()} cores before the bench")
    out(f"bench: {sysbench_version(sb)}; mysql-connector {mysql.connector.__version__}, "
        f"C extension {'in use' if mysql.connector.HAVE_CEXT else 'MISSING (pure Python)'}")
    cfg.driver = _driver_line(cfg, out)
    procs, conns = split_threads(cfg.threads, cfg.processes, bench_cores(cfg))
    results: dict = {"config": cfg.__dict__.copy(), "samples": []}
    cluster = ComposeCluster(get_engine("galera"), ClusterOptions(keep=bool(cfg.keep)), project=cfg.project)
    reused = bool(cfg.project)
    counters = None
    try:
        t0 = time.monotonic()
        if reused:
            cluster.discover()
            cluster.wait_healthy(60)
            out(f"bench: reusing cluster {cluster.project}")
        else:
            out(f"bench: starting a Galera cluster, project {cluster.project} ...")
            cluster.up()
            out(f"bench: cluster ready in {time.monotonic() - t0:.1f} s")
        node = sorted(cluster.topology.sql_nodes, key=lambda n: n.name)[0]
        ep = Endpoint(node.name, node.sql_port)
        out(f"bench: SQL node {node.name} at 127.0.0.1:{node.sql_port}; {cfg.threads} connections each "
            f"(ours: {procs} process(es) x {conns} thread(s)); {cfg.seconds:g} s windows, {cfg.rounds} round(s), "
            f"warm-up {cfg.warmup:g} s; sbtest1 with {cfg.table_size} rows")
        # the table, identical to sysbench's (explicit ids 1..table_size)
        WorkloadRunner(get_workload("oltp", table_size=cfg.table_size), [ep], RunClock()).setup(ep, "InnoDB")
        counters = Counters(ep.port)
        server = {"server": container_pids(cluster.project)}
        px = docker_proxy_pids(ep.port)
        if px:
            server["proxy"] = px
        if cfg.warmup > 0:
            out("bench: warm-up ...")
            for test in cfg.tests:
                run_ours(test, ep, cfg, counters, server, record=False, seconds=cfg.warmup)
                run_sysbench(sb, test, ep, cfg, counters, server, cfg.warmup)
        ab = ab_split(cfg.threads, cfg.processes, bench_cores(cfg)) is not None
        norec = "ab" if ab else "ours-norec"
        for test in cfg.tests:
            for r in range(1, cfg.rounds + 1):
                # ours (recording) runs between the two runs it is compared with (sysbench, and the
                # run without recording), and the order flips every round, so a drift of the
                # host's load biases neither comparison
                order = (norec, "ours", "sysbench") if r % 2 else ("sysbench", "ours", norec)
                for client in order:
                    if client == "sysbench":
                        s = run_sysbench(sb, test, ep, cfg, counters, server, cfg.seconds)
                    elif client == "ab":
                        s = run_recording_ab(test, ep, cfg, counters, server, cfg.seconds, seed=r)
                    else:
                        s = run_ours(test, ep, cfg, counters, server, record=(client == "ours"),
                                     seconds=cfg.seconds, seed=r)
                    results["samples"].append(s)
                    if client == "ab":
                        out(f"{test} round {r}: {'ours A/B':<10} half recording {s.client_rate / 2:6.0f} stmt/s, "
                            f"half not {s.rate / 2:6.0f} stmt/s at the same time, errors {s.errors}; "
                            f"client cpu us/stmt {s.cpu_us['client_rec'] or 0:.0f} vs {s.cpu_us['client'] or 0:.0f}")
                        continue
                    extra = f", client count {s.client_rate:.0f}/s" if s.client_rate is not None else ""
                    out(f"{test} round {r}: {s.client:<10} {s.rate:8.0f} stmt/s{extra}, errors {s.errors}; "
                        f"cpu us/stmt {_fmt_cpu(s.cpu_us)}")
    finally:
        if counters is not None:
            if reused:  # leave a reused cluster as we found it, without our table
                try:
                    counters.conn.cursor().execute("DROP TABLE IF EXISTS sbtest1")
                except Exception:
                    pass
            counters.close()
        if reused or cfg.keep:
            out(f"bench: cluster kept: project {cluster.project}")
        elif cluster.started:
            cluster.down()
            out(f"bench: cluster {cluster.project} removed")
    summary = summarize(results["samples"], cfg.tests)
    results["summary"] = summary
    for test in cfg.tests:
        s = summary[test]
        if s["overhead_method"] == "A/B":
            norec = (f"A/B: recording half {s['ab_recording']:.0f}/s, non-recording half {s['ours-norec']:.0f}/s "
                     f"(each x2)")
        else:
            norec = f"ours_without_recording={s['ours-norec']:.0f}/s"
        out(f"throughput_{test} ours={s['ours']:.0f}/s sysbench={s['sysbench']:.0f}/s; {norec} "
            f"(statements/s counted by the server, mean of {cfg.rounds} rounds)")
        out(f"client_cpu_us_per_stmt_{test} ours={s['cpu_ours']:.1f} sysbench={s['cpu_sysbench']:.1f}; "
            f"server={s['cpu_server_ours']:.1f} vs {s['cpu_server_sysbench']:.1f}"
            + (f"; proxy={s['cpu_proxy_ours']:.1f} vs {s['cpu_proxy_sysbench']:.1f}" if 'cpu_proxy_ours' in s else ""))
    for test in cfg.tests:
        s = summary[test]
        how = ("half the connections recording, half not, in the same window" if s["overhead_method"] == "A/B"
               else "ours with per-op recording, then without")
        out(f"recording_overhead_{test}={s['recording_overhead'] * 100:.1f}% "
            f"(median over rounds of 1 - with / without recording; {how}: "
            f"{', '.join(f'{x * 100:.1f}%' for x in s['overheads'])}"
            + (f"; by CPU: {s['recording_cpu_us']:+.1f} us client CPU per statement = "
               f"{s['recording_overhead_cpu'] * 100:+.1f}% of a statement's CPU" if "recording_cpu_us" in s else "")
            + ")")
    results["checker"] = checker_figure(cfg.checker_ops, out)
    out(f"bench: load average {loadavg()} after the bench")
    for test in cfg.tests:
        s = summary[test]
        out(f"per_round_ratio_{test}={','.join(f'{x:.2f}' for x in s['ratios'])}")
    for test in cfg.tests:
        out(f"ratio_{test}={summary[test]['ratio']:.2f}")
    return results


def summarize(samples: list[Sample], tests) -> dict:
    """Per test: mean rates, and the ratio and recording overhead as medians of per-round values.

    In a round ours (recording) runs right between sysbench and the run without recording, so a
    per-round ratio compares adjacent runs; the median over rounds resists a burst of load from
    elsewhere. With an A/B run ("ab": half the connections recording, half not, at the same
    time) the overhead compares the two halves of one window."""
    out = {}
    for test in tests:
        by = {c: [s for s in samples if s.test == test and s.client == c]
              for c in ("ours", "sysbench", "ours-norec", "ab")}
        d = {c: _mean([s.rate for s in by[c]]) for c in ("ours", "sysbench")}
        ratios = [o.rate / s.rate for o, s in zip(by["ours"], by["sysbench"]) if s.rate]
        d["ratios"] = ratios
        d["ratio"] = statistics.median(ratios) if ratios else float("nan")
        if by["ab"]:
            d["overhead_method"] = "A/B"
            d["ours-norec"] = _mean([s.rate for s in by["ab"]])
            d["ab_recording"] = _mean([s.client_rate for s in by["ab"]])
            overheads = [1 - s.client_rate / s.rate for s in by["ab"] if s.rate]
            rec_cpu = _mean([s.cpu_us.get("client_rec") for s in by["ab"]])
            norec_cpu = _mean([s.cpu_us.get("client") for s in by["ab"]])
        else:
            d["overhead_method"] = "sequential"
            d["ours-norec"] = _mean([s.rate for s in by["ours-norec"]])
            overheads = [1 - o.rate / n.rate for o, n in zip(by["ours"], by["ours-norec"]) if n.rate]
            rec_cpu = _mean([s.cpu_us.get("client") for s in by["ours"]])
            norec_cpu = _mean([s.cpu_us.get("client") for s in by["ours-norec"]])
        d["overheads"] = overheads
        d["recording_overhead"] = statistics.median(overheads) if overheads else float("nan")
        for part in ("client", "server", "proxy"):
            for c in ("ours", "sysbench"):
                vals = [s.cpu_us.get(part) for s in by[c]]
                if any(v is not None for v in vals):
                    d[f"cpu_{part}_{c}" if part != "client" else f"cpu_{c}"] = _mean(vals)
        # the same overhead in CPU time: extra client CPU per statement over the whole CPU cost of
        # a statement (client + server + proxy)
        if not (math.isnan(rec_cpu) or math.isnan(norec_cpu)):
            total = sum(d.get(k, 0.0) for k in ("cpu_ours", "cpu_server_ours", "cpu_proxy_ours"))
            d["recording_cpu_us"] = rec_cpu - norec_cpu
            d["recording_overhead_cpu"] = d["recording_cpu_us"] / total if total else float("nan")
        out[test] = d
    return out


def checker_figure(n_ops: int, out=print) -> dict | None:
    res = bench_checker(n_ops)
    out(f"checker_{n_ops}_ops seconds={res.get('check_s')} peak_mb={res.get('check_peak_mb')} "
        f"(tracemalloc peak; resident peak {res.get('rss_peak_during_check_mb')} MB; "
        f"Recorder.record {res.get('record_ok_ns_per_op')} ns/op)")
    return res
