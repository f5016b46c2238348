"""The workload protocol.

A workload owns its schema (per engine: ``ENGINE=NDBCLUSTER`` on ndb, InnoDB on galera), its data
setup, its operation mix and its final reads. The runner calls, per operation:

    f, value, is_write = wl.next_op(rng, slot)       # what to do (recorded even if it fails)
    result = wl.execute(cursor, f, value)            # do it; return the value to record

``slot`` is the connection's index (0..N-1), for workloads that partition their key space.
Parameters are plain keyword arguments so a workload can be rebuilt in a worker process from
``(name, params)``.
"""

from __future__ import annotations

import random
from typing import Any

from ..errors import UsageError


class Workload:
    name = "base"
    #: the transactional model of its operations (Elle's list-append, rw-register), or "": a
    #: transactional workload is judged by the anomaly checker (ndbchaos.checks.transactions)
    model = ""
    #: defaults for parameters; subclasses extend
    defaults: dict[str, Any] = {}

    def __init__(self, **params):
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise UsageError(f"workload {self.name}: unknown parameter(s) {', '.join(sorted(unknown))}")
        self.params = {**self.defaults, **params}

    def spec(self) -> tuple:
        """``(name, params)`` a worker process rebuilds the workload from; a project's workload adds
        its class's ``module:qualname`` (``ndbchaos.workload.app``), imported there again."""
        return self.name, dict(self.params)

    # -- schema and data --------------------------------------------------------------------
    def schema(self, table_engine: str) -> list[str]:
        raise NotImplementedError

    def load(self, conn, table_engine: str) -> None:
        """Create the schema and the initial data (through one SQL node)."""
        cur = conn.cursor()
        for stmt in self.schema(table_engine):
            cur.execute(stmt)
        cur.close()

    # -- state shared by every client process ------------------------------------------------
    def shared_state(self, ctx):
        """Made once by the runner (``ctx``: its multiprocessing context) before the workers
        start, and handed to each worker's copy through ``attach``: e.g. the key set of the
        transactional workloads. None: nothing is shared."""
        return None

    def attach(self, shared) -> None:
        """A worker's copy receives what ``shared_state`` made."""

    # -- operations ---------------------------------------------------------------------------
    def next_op(self, rng: random.Random, slot: int) -> tuple[str, Any, bool]:
        raise NotImplementedError

    def execute(self, cur, f: str, value: Any) -> Any:
        raise NotImplementedError

    def redo_indeterminate(self, f: str) -> int:
        """How many times the client does ``f`` again, with the same value, when its outcome is
        unknown (``info``): an idempotent operation, as an application retries it. Default none."""
        return 0

    # -- after the load stops -----------------------------------------------------------------
    def final_reads(self) -> list[tuple[str, Any]]:
        """Operations to run once at the end on a healthy node (e.g. read every id)."""
        return []

    def header_params(self) -> dict:
        return dict(self.params)


def bulk_insert(cur, table: str, cols: tuple[str, ...], rows, batch: int = 500) -> None:
    rows = list(rows)
    ph = "(" + ",".join(["%s"] * len(cols)) + ")"
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        cur.execute(f"INSERT INTO {table} ({','.join(cols)}) VALUES " + ",".join([ph] * len(chunk)),
                    [v for r in chunk for v in r])
