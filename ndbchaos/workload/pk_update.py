"""pk_update: the single-row update by primary key of a published MySQL Cluster benchmark
(over 120,000 updates/s on two data nodes, docs/facts.md Field tests 3):

    t1 (id BIGINT AUTO_INCREMENT PK, data1 VARCHAR(512), data2 VARCHAR(512))
    UPDATE t1 SET data1=<64 bytes> WHERE id=<random>        -- no batching
"""

from __future__ import annotations

import string

from .base import Workload, bulk_insert
from .registry import register

_ALPHA = string.ascii_letters + string.digits


@register
class PkUpdate(Workload):
    name = "pk_update"
    defaults = {"rows": 10000, "table": "t1", "read_share": 0.0}

    def schema(self, table_engine):
        t = self.params["table"]
        return [f"DROP TABLE IF EXISTS {t}",
                f"CREATE TABLE {t} (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                f"data1 VARCHAR(512), data2 VARCHAR(512)) ENGINE={table_engine}"]

    def load(self, conn, table_engine):
        super().load(conn, table_engine)
        cur = conn.cursor()
        bulk_insert(cur, self.params["table"], ("id", "data1", "data2"),
                    ((i, "x" * 64, "y" * 64) for i in range(1, int(self.params["rows"]) + 1)))
        if not conn.autocommit:
            conn.commit()
        cur.close()

    def next_op(self, rng, slot):
        key = rng.randint(1, int(self.params["rows"]))
        if self.params["read_share"] and rng.random() < self.params["read_share"]:
            return "read", key, False
        return "update", key, True

    def execute(self, cur, f, value):
        t = self.params["table"]
        if f == "update":
            # 64 bytes of fresh data per update, as in the benchmark.
            data = "".join(_ALPHA[(value * 7 + i) % len(_ALPHA)] for i in range(64))
            cur.execute(f"UPDATE {t} SET data1=%s WHERE id=%s", (data, value))
            return value
        if f == "read":
            cur.execute(f"SELECT data1 FROM {t} WHERE id=%s", (value,))
            cur.fetchall()
            return value
        raise ValueError(f)
