"""ledger: inserts of unique ids, then a final read of every id. The lost-write check.

Every acknowledged (ok) insert must be present in the final read; an id read that was never
inserted is a phantom; an insert whose outcome is unknown (info) may or may not be there.
"""

from __future__ import annotations

from .base import Workload
from .registry import register


@register
class Ledger(Workload):
    name = "ledger"
    defaults = {"table": "ledger"}

    def __init__(self, **params):
        super().__init__(**params)
        self._seq: dict[int, int] = {}

    def schema(self, table_engine: str) -> list[str]:
        t = self.params["table"]
        return [f"DROP TABLE IF EXISTS {t}",
                f"CREATE TABLE {t} (id BIGINT NOT NULL PRIMARY KEY, slot INT NOT NULL) ENGINE={table_engine}"]

    def next_op(self, rng, slot):
        n = self._seq.get(slot, 0) + 1
        self._seq[slot] = n
        return "insert", (slot + 1) * 1_000_000_000 + n, True

    def execute(self, cur, f, value):
        t = self.params["table"]
        if f == "insert":
            cur.execute(f"INSERT INTO {t} (id, slot) VALUES (%s, %s)", (value, value // 1_000_000_000))
            return value
        if f == "read":
            cur.execute(f"SELECT id FROM {t}")
            return sorted(r[0] for r in cur.fetchall())
        raise ValueError(f)

    def final_reads(self):
        return [("read", None)]
