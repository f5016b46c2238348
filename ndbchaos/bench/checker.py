"""Benchmarks of the history and the checkers on a synthetic ledger history.

    from ndbchaos.bench.checker import bench_checker
    bench_checker(1_000_000)   # {"check_s": ..., "check_peak_mb": ..., ...}

or ``python -m ndbchaos.bench.checker [N] [--parse]``; ``python -m ndbchaos.bench.checker write N
PATH...`` writes the synthetic history to files (``.nch`` columnar, ``.jsonl``, ``.jsonl.gz``) for
timing ``ndbchaos check`` end to end (docs/history-format.md section 6); ``... spools N [PARTS]``
times the soak path (worker spools merged by ``History.read_parts``, then checked); ``... adya N
[LEVEL...] [--runs R] [--dir DIR]`` checks adya's simulated list-append histories of N
transactions with ``ndbchaos check`` and with ``adya check``, whole processes in turn
(``bench_adya``; docs/transactions.md, "Speed").

Memory is measured with ``tracemalloc`` (peak of traced allocations, Python objects and numpy
buffers, while ``check_history`` runs, in a second run so tracing does not slow the timed one);
On Linux ``rss_peak_during_check_mb`` is the process' resident high-water mark (VmHWM, reset
through /proc/self/clear_refs just before) while checking: the History in memory plus everything
the checks allocate; ``rss_before_check_mb`` the resident size with the History built.
``build_maxrss_mb`` is ``resource.getrusage().ru_maxrss`` before the checks: the peak of building
the synthetic history (the generator, not the checker).
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import tempfile
import time
import tracemalloc

import numpy as np

from ..checks import check_history
from ..history import Columns, ErrorInfo, History, Recorder, _Ints
from ..history.columnar import MAGIC, chunk_blocks, end_block, header_block


def synthetic_ledger(n_ops: int = 1_000_000, processes: int = 32, rate: float = 10_000.0,
                     reads: int = 8, seed: int = 7) -> tuple[History, list[dict]]:
    """A ledger history of about n_ops ops with one fault window, and the window.

    ``rate`` total ops/s (so the run lasts n_ops / rate seconds); ``reads`` ok reads spread over
    the run plus a final one, each listing the ids acknowledged before it started. During the
    first 5 % of the fault every op fails (half of the inserts indeterminate); afterwards the
    ops of SQL node ``sql1`` fail until the heal."""
    rng = np.random.default_rng(seed)
    dur = n_ops / rate
    n_ins = n_ops - reads - 1
    start = np.sort(rng.uniform(0.0, dur, n_ins))
    lat = rng.lognormal(np.log(0.002), 0.5, n_ins)
    f0, f1 = 0.40 * dur, 0.55 * dur
    node = rng.integers(0, 3, n_ins)
    hard = (start >= f0) & (start < f0 + 0.05 * (f1 - f0))
    partial = (start >= f0) & (start < f1) & (node == 0)
    lat[hard] = rng.uniform(0.5, 2.0, int(hard.sum()))
    end = start + lat
    typ = np.zeros(n_ins, dtype=np.int64)
    bad = hard | partial
    typ[bad] = np.where(rng.random(int(bad.sum())) < 0.5, 2, 1)
    proc = rng.integers(0, processes, n_ins)
    e_fail = ErrorInfo(1297, 4010, "temporary",
                       "Got temporary error 4010 'Node failure caused abort of transaction' from NDBCLUSTER")
    e_info = ErrorInfo(2013, None, "unknown", "Lost connection to MySQL server during query")

    # the inserts, straight into typed columns (a Recorder per op would take minutes at 20M)
    cols = Columns(("insert", "read"), ("sql1", "sql2", "sql3"))

    def put(name: str, values: np.ndarray, dtype) -> None:
        getattr(cols, name).frombytes(np.ascontiguousarray(values, dtype=dtype).tobytes())

    put("process", proc, np.int32)
    put("f", np.zeros(n_ins), np.uint8)
    put("type", typ, np.uint8)
    put("start", start, np.float64)
    put("end", end, np.float64)
    put("node", node, np.int16)
    put("ival", np.arange(n_ins), np.int64)
    put("errno", np.select([typ == 1, typ == 2], [e_fail.errno, e_info.errno], 0), np.int32)
    put("ecode", np.select([typ == 1, typ == 2], [e_fail.engine_code, -1], 0), np.int32)
    put("ecls", np.select([typ == 1, typ == 2], [1, 2], 0), np.uint8)
    for k in np.flatnonzero(typ).tolist():
        cols.msgs[k] = e_fail.message if typ[k] == 1 else e_info.message
    names = ("sql1", "sql2", "sql3")
    # reads: ids acknowledged before the read started, plus the indeterminate inserts that
    # "landed" (every other one)
    landed = (typ == 0) | ((typ == 2) & (np.arange(n_ins) % 2 == 0))
    ok_idx = np.flatnonzero(landed)
    ok_end = end[ok_idx]
    order = np.argsort(ok_end)
    sorted_ids, sorted_end = ok_idx[order], ok_end[order]
    rp = processes  # a reader process of its own
    for k in range(1, reads + 2):
        rs = dur * k / (reads + 1) + (0.05 if k <= reads else 0.01)
        upto = int(np.searchsorted(sorted_end, rs, "left"))
        ids = _Ints("q")
        ids.frombytes(np.sort(sorted_ids[:upto]).astype(np.int64).tobytes())
        cols.append(rp, "read", None, "ok", rs, rs + 0.02 + upto * 2e-8, names[k % 3], None)
        if upto:
            cols.objs[len(cols) - 1] = ids
        else:
            cols.objs[len(cols) - 1] = []
    h = History("ledger", {"processes": processes + 1, "rate": rate / processes}, cols)
    return h, [{"kind": "kill", "start": f0, "end": f1, "targets": ["ndbd-1"]}]


def _status_kb(key: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _rss_kb() -> int | None:
    return _status_kb("VmRSS")


def _hwm_kb() -> int | None:
    return _status_kb("VmHWM")


def _reset_hwm() -> bool:
    """Reset the resident high-water mark (Linux: echo 5 > /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def bench_record(n: int = 200_000) -> dict:
    """ns per ``Recorder.record`` call (best of 5), ok ops with int values and mixed ops."""
    e = ErrorInfo(1297, 4010, "temporary", "Got temporary error 4010")
    out = {}
    for label, err_every in (("record_ok_ns_per_op", 0), ("record_mixed_ns_per_op", 7)):
        best = float("inf")
        for _ in range(5):
            r = Recorder()
            rec = r.record
            t0 = time.perf_counter_ns()
            if err_every:
                for i in range(n):
                    if i % err_every:
                        rec(3, "insert", i, "ok", 1.0, 1.001, "sql1", None)
                    else:
                        rec(3, "read", None, "fail", 1.0, 1.001, "sql2", e)
            else:
                for i in range(n):
                    rec(3, "insert", i, "ok", 1.0, 1.001, "sql1", None)
            r.flush()
            best = min(best, (time.perf_counter_ns() - t0) / n)
        out[label] = round(best, 1)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for i in range(n):
            pass
        best = min(best, (time.perf_counter_ns() - t0) / n)
    out["empty_loop_ns_per_op"] = round(best, 1)
    return out


def bench_checker(n_ops: int = 1_000_000, record: bool = True) -> dict:
    """Check a synthetic n_ops ledger history in memory: seconds and peak memory.

    Returns ``check_s`` (wall seconds of ``check_history``, best of two), ``check_peak_mb``
    (tracemalloc peak during a third, traced run), the verdict's headline, and with ``record``
    the ``Recorder.record`` cost in ns/op (measured first, on a small heap)."""
    out_record = bench_record() if record else {}
    t0 = time.perf_counter()
    h, windows = synthetic_ledger(n_ops)
    build_s = time.perf_counter() - t0
    gc.collect()
    build_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss_reset = _reset_hwm()
    rss0 = _rss_kb()
    check_s = float("inf")
    for _ in range(2):
        gc.collect()
        t0 = time.perf_counter()
        verdict = check_history(h, windows)
        check_s = min(check_s, time.perf_counter() - t0)
        del verdict
    rss1 = _hwm_kb() if rss_reset else None
    gc.collect()
    tracemalloc.start()
    verdict = check_history(h, windows)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    d = verdict.durability
    out = {
        "n_ops": len(h),
        "check_s": round(check_s, 3),
        "check_peak_mb": round(peak / 2**20, 1),
        "memory_method": "tracemalloc peak during check_history (separate untimed run)",
        "valid": verdict.valid,
        "lost": d.lost, "indeterminate": d.indeterminate,
        "indeterminate_present": verdict.checks["durability"].details["indeterminate_present"],
        "build_synthetic_s": round(build_s, 3),
        "rss_before_check_mb": None if rss0 is None else round(rss0 / 1024, 1),
        "rss_peak_during_check_mb": None if rss1 is None else round(rss1 / 1024, 1),
        "build_maxrss_mb": round(build_maxrss / 1024, 1),
    }
    out.update(out_record)
    return out


def bench_parse(n_ops: int = 1_000_000, directory: str | None = None) -> dict:
    """Write a synthetic history as JSONL and as gzip JSONL, then time reading each back."""
    h, _ = synthetic_ledger(n_ops)
    out = {"n_ops": len(h)}
    with tempfile.TemporaryDirectory(dir=directory) as d:
        for label, name in (("jsonl", "h.jsonl"), ("gzip", "h.jsonl.gz")):
            path = os.path.join(d, name)
            t0 = time.perf_counter()
            h.write_jsonl(path)
            out[f"{label}_write_s"] = round(time.perf_counter() - t0, 3)
            out[f"{label}_mb"] = round(os.path.getsize(path) / 2**20, 1)
            gc.collect()
            t0 = time.perf_counter()
            h2 = History.read_jsonl(path)
            out[f"{label}_parse_s"] = round(time.perf_counter() - t0, 3)
            assert len(h2) == len(h)
            del h2
    return out


def write_synthetic(n_ops: int, paths: list[str]) -> dict:
    """Write the synthetic ledger history of n_ops ops to each path, the format picked by the
    name (``.nch`` columnar, ``.jsonl`` / ``.jsonl.gz`` JSON Lines); figures per file."""
    t0 = time.perf_counter()
    h, _ = synthetic_ledger(n_ops)
    out = {"n_ops": len(h), "build_s": round(time.perf_counter() - t0, 3)}
    for p in paths:
        t0 = time.perf_counter()
        h.write(p)
        out[p] = {"write_s": round(time.perf_counter() - t0, 3), "mb": round(os.path.getsize(p) / 2**20, 1)}
    return out


def bench_spools(n_ops: int = 1_000_000, parts: int = 4, directory: str | None = None) -> dict:
    """The soak path: the synthetic history split by process into ``parts`` columnar spools
    (chunks of 65,536 ops, as worker appenders write them), read back with
    ``History.read_parts`` (merged and sorted) and checked. Seconds, and the resident high-water
    mark (VmHWM) of reading + checking."""
    h, windows = synthetic_ledger(n_ops)
    c = h.cols
    proc = np.frombuffer(c.process, dtype=np.int32)
    out = {"n_ops": len(h), "parts": parts}
    with tempfile.TemporaryDirectory(dir=directory) as d:
        paths = []
        t0 = time.perf_counter()
        for k in range(parts):
            rows = np.flatnonzero(proc % parts == k)
            pos = {int(r): i for i, r in enumerate(rows.tolist())}
            sparse = {r: pos[r] for r in set(c.objs) | set(c.msgs) if r in pos}
            paths.append(os.path.join(d, f"w{k}.nch"))
            with open(paths[-1], "wb") as fh:
                fh.write(MAGIC + header_block(h.header()))
                for b in chunk_blocks(c, rows, sparse):
                    fh.write(b)
                fh.write(end_block(len(rows)))
            del rows, pos
        out["write_s"] = round(time.perf_counter() - t0, 3)
        out["mb"] = round(sum(os.path.getsize(p) for p in paths) / 2**20, 1)
        del h, c, proc
        gc.collect()
        rss_reset = _reset_hwm()
        t0 = time.perf_counter()
        merged = History.read_parts(paths)
        out["read_parts_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        verdict = check_history(merged, windows)
        out["check_s"] = round(time.perf_counter() - t0, 3)
        out["valid"] = verdict.valid
        out["rss_peak_read_and_check_mb"] = round(_hwm_kb() / 1024, 1) if rss_reset else None
    return out


#: adya's simulated isolation levels the comparison runs by default
ADYA_LEVELS = ("serializable", "snapshot-isolation", "read-committed")


def _timed(cmd: list[str], env: dict | None = None) -> dict:
    """One whole run of cmd: wall and CPU seconds, its peak resident MB (the kernel's accounting
    of the finished process, ``wait4``: never below this process' own size when it started the
    command, some 40 MB), its exit code."""
    import subprocess
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _pid, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024, "exit": p.returncode}


def bench_adya(n: int = 100_000, levels=ADYA_LEVELS, runs: int = 3, directory: str | None = None,
               adya: str | None = None, bytecode: bool = True) -> dict:
    """Our transactional checker beside adya's on adya's simulated list-append histories (``adya
    run sim -m list-append -i LEVEL -n N --seed 1``, written once into ``directory``): ``ndbchaos
    check --model list-append FILE -q`` and ``adya check FILE`` in turn, after one untimed pair,
    ``runs`` times each; per level the medians of each, the medians of the pairs' ratios (ours /
    adya) and whether every pair agreed on validity.

    ``bytecode``: ours runs from compiled bytecode, as an installed wheel does (pip compiles it
    when it installs): kept under ``directory`` (``PYTHONPYCACHEPREFIX``, written by the untimed
    run even where PYTHONDONTWRITEBYTECODE is set). Without it, ours runs as this environment
    has it: where PYTHONDONTWRITEBYTECODE is set and the source tree holds no bytecode, every run
    compiles our modules first (some 0.04 s)."""
    import shutil
    import statistics
    import subprocess
    adya = adya or shutil.which("adya") or os.path.expanduser("~/.cargo/bin/adya")
    if not os.access(adya, os.X_OK):
        raise RuntimeError("adya is not installed (`cargo install adya`)")
    directory = directory or tempfile.gettempdir()
    med = statistics.median
    env = None
    if bytecode:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = os.path.join(directory, "ndbchaos-bench-pycache")
    out: dict = {"n": n, "runs": runs, "bytecode": bytecode, "load_before": [round(x, 2) for x in os.getloadavg()]}
    for level in levels:
        path = os.path.join(directory, f"adya-list-append-{level}-{n}.jsonl")
        if not os.path.exists(path):
            subprocess.run([adya, "run", "sim", "-m", "list-append", "-i", level, "-n", str(n), "--seed", "1",
                            "-o", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            if not os.path.exists(path):
                raise RuntimeError(f"adya wrote no history for isolation level {level!r}")
        ours = [sys.executable, "-m", "ndbchaos.cli", "check", "--model", "list-append", path, "-q"]
        theirs = [adya, "check", path]
        _timed(ours, env), _timed(theirs)  # untimed: the files in the page cache, our bytecode written
        pairs = [(_timed(ours, env), _timed(theirs)) for _ in range(runs)]
        out[level] = {
            "file_mb": round(os.path.getsize(path) / 1e6, 1),
            "ours": {k: round(med(a[k] for a, _b in pairs), 3) for k in ("wall_s", "cpu_s", "peak_mb")},
            "adya": {k: round(med(b[k] for _a, b in pairs), 3) for k in ("wall_s", "cpu_s", "peak_mb")},
            "wall_ratio": round(med(a["wall_s"] / b["wall_s"] for a, b in pairs), 3),
            "cpu_ratio": round(med(a["cpu_s"] / b["cpu_s"] for a, b in pairs), 3),
            # exit 0: valid; 1: anomalies (adya's 2 and ours' 1 for unknown never count as agreeing)
            "same_verdict": all(a["exit"] == b["exit"] and a["exit"] in (0, 1) for a, b in pairs),
            "valid": pairs[-1][0]["exit"] == 0,
        }
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main(argv: list[str] | None = None) -> int:
    import json
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["write"]:  # python -m ndbchaos.bench.checker write N PATH...
        if len(args) < 3:
            print("usage: python -m ndbchaos.bench.checker write N PATH... (.nch columnar, .jsonl[.gz])",
                  file=sys.stderr)
            return 2
        print(json.dumps(write_synthetic(int(float(args[1])), args[2:]), indent=2))
        return 0
    if args[:1] == ["adya"]:  # python -m ndbchaos.bench.checker adya N [LEVEL...] [--runs R] [--dir DIR]
        rest, opts = [], {}
        it = iter(args[1:])
        for a in it:
            if a in ("--runs", "--dir"):
                opts[a] = next(it, None)
            elif a == "--no-bytecode":
                opts[a] = True
            else:
                rest.append(a)
        if not rest or opts.get("--runs", "1") is None or opts.get("--dir", "") is None:
            print("usage: python -m ndbchaos.bench.checker adya N [LEVEL...] [--runs R] [--dir DIR] [--no-bytecode]",
                  file=sys.stderr)
            return 2
        print(json.dumps(bench_adya(int(float(rest[0])), tuple(rest[1:]) or ADYA_LEVELS,
                                    int(opts.get("--runs") or 3), opts.get("--dir"),
                                    bytecode="--no-bytecode" not in opts), indent=2))
        return 0
    if args[:1] == ["spools"]:  # python -m ndbchaos.bench.checker spools N [PARTS]
        n, parts = int(float(args[1])) if len(args) > 1 else 1_000_000, int(args[2]) if len(args) > 2 else 4
        print(json.dumps(bench_spools(n, parts), indent=2))
        return 0
    parse = "--parse" in args
    args = [a for a in args if a != "--parse"]
    n = int(float(args[0])) if args else 1_000_000
    res = bench_checker(n)
    if parse:
        res.update({f"parse_{k}" if k != "n_ops" else k: v for k, v in bench_parse(n).items()})
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
