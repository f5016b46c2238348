"""ndbchaos bench: our load generator against sysbench on the default Galera cluster."""

from __future__ import annotations

import signal

from ..bench.config import TESTS, BenchConfig
from ..bench.load import run_bench
from ..errors import UsageError
from . import HELP


def register(sub) -> None:
    p = sub.add_parser(
        "bench", help=HELP["bench"],
        description="Starts the default Galera cluster (or reuses --project ID), then on one SQL node, at equal "
                    "concurrency and for equal windows, alternates our load generator and sysbench on the same "
                    "statements: oltp_point_select, and oltp_update_non_index (UPDATE sbtest1 SET c=? WHERE id=?, "
                    "the update by primary key). Prints per-round figures, CPU per statement, the recording "
                    "overhead (ours with and without per-op recording), the checker speed on a synthetic "
                    "1,000,000-op history, and as its last lines ratio_point_select=X and ratio_update_pk=Y "
                    "(ours / sysbench throughput, counted by the server). The cluster is removed at the end "
                    "unless --keep or --project.")
    p.add_argument("--seconds", type=float, default=10.0, help="length of each measured window (default 10)")
    p.add_argument("--threads", type=int, default=4, help="connections, for sysbench and for us (default 4)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds per test (default 3)")
    p.add_argument("--warmup", type=float, default=3.0, help="warm-up seconds per client and test (default 3)")
    p.add_argument("--processes", type=int, default=None,
                   help="our worker processes (must divide --threads; default: one per core for "
                        "the python driver, one for native)")
    p.add_argument("--table-size", type=int, default=10000, help="rows in sbtest1 (default 10000, as sysbench)")
    p.add_argument("--project", help="reuse this running cluster (kept afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the cluster it started")
    p.add_argument("--tests", default="point_select,update_pk",
                   help="comma list of point_select, update_pk (default both)")
    p.add_argument("--driver", choices=("native", "python"), default="native",
                   help="our client: native (C loop on libmariadb; falls back to python with a note when it is "
                        "not built) or python (mysql-connector's C extension); default native")
    p.add_argument("--checker-ops", type=int, default=1_000_000, help="ops in the synthetic history to check")
    p.set_defaults(func=run)


def _sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run(args) -> int:
    tests = tuple(t.strip() for t in args.tests.split(",") if t.strip())
    bad = [t for t in tests if t not in TESTS]
    if bad or not tests:
        raise UsageError(f"--tests: unknown test(s) {', '.join(bad) or '(none)'} (known: {', '.join(TESTS)})")
    if args.threads < 1 or args.rounds < 1 or args.seconds <= 0 or args.table_size < 1:
        raise UsageError("--threads, --rounds, --table-size must be at least 1 and --seconds positive")
    cfg = BenchConfig(seconds=args.seconds, threads=args.threads, rounds=args.rounds, warmup=args.warmup,
                      processes=args.processes, table_size=args.table_size, project=args.project,
                      keep=args.keep, tests=tests, checker_ops=args.checker_ops,
                      driver=args.driver)
    try:
        old = signal.signal(signal.SIGTERM, _sigterm)
    except ValueError:  # not the main thread
        old = None
    try:
        run_bench(cfg, out=lambda line: print(line, flush=True))
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    return 0
