"""What a bench run compares and how: the tests, the configuration, one round's figures, and
how client threads are split over processes."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import UsageError

TESTS = {
    # name: (sysbench script, our workload, server counter)
    "point_select": ("oltp_point_select", "oltp_point_select", "Com_select"),
    "update_pk": ("oltp_update_non_index", "oltp_update_non_index", "Com_update"),
}


@dataclass
class BenchConfig:
    seconds: float = 10.0
    threads: int = 4
    rounds: int = 3
    warmup: float = 3.0
    processes: int | None = None  # our worker processes (None: auto)
    table_size: int = 10000
    project: str | None = None
    keep: bool = False
    settle: float = 1.0  # seconds between "all clients running" and the window's start
    checker_ops: int = 1_000_000
    tests: tuple[str, ...] = ("point_select", "update_pk")
    driver: str = "native"  # our client driver (ClientOptions.driver): native | python


@dataclass
class Sample:
    client: str  # "ours" | "ours-norec" | "sysbench"
    test: str
    rate: float  # statements/s counted by the server in the window
    window: float
    client_rate: float | None = None  # the client's own count (ok ops/s), when it has one
    errors: int = 0
    cpu_us: dict = field(default_factory=dict)  # CPU microseconds per statement, by part


def split_threads(threads: int, processes: int | None = None, cores: int | None = None) -> tuple[int, int]:
    """(processes, connections per process) for ``threads`` connections in total.

    Default: as many processes as cores (the GIL lets one process use one core), each with an
    equal share of the connections; ``processes`` must divide ``threads``."""
    if threads < 1:
        raise UsageError("--threads must be at least 1")
    if processes is not None:
        if processes < 1 or threads % processes:
            raise UsageError(f"--processes {processes} must divide --threads {threads}")
        return processes, threads // processes
    cores = cores or os.cpu_count() or 1
    p = max(d for d in range(1, min(threads, cores) + 1) if threads % d == 0)
    return p, threads // p


def ab_split(threads: int, processes: int | None = None, cores: int | None = None) -> tuple[int, int] | None:
    """(processes, connections) of each half of a recording A/B run, or None when the
    connections cannot be split into two equal halves of whole processes."""
    procs, conns = split_threads(threads, processes, cores)
    if procs % 2 == 0:
        return procs // 2, conns
    if procs == 1 and conns % 2 == 0:
        return 1, conns // 2
    return None


def bench_cores(cfg: BenchConfig) -> int | None:
    """The ``cores`` of ``split_threads`` for our runs: the native driver's loops run without
    the GIL, so its connections share one process by default (threads of one process switch
    more cheaply than processes: measured here 8-11 % more point selects with 1 x 4 than 2 x 2,
    as sysbench runs its threads); the Python driver's take one process per core."""
    return 1 if cfg.driver == "native" else None

