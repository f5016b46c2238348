"""Ballast: a table of filler rows in the framework's own database, for faults that need the
cluster to hold more data than the scenarios' small tables (an online backup must still be
running when a kill lands: ``KillDuringBackup``).

``ensure(cluster, mb)`` makes ``<database>.ballast`` hold at least ``mb`` MB (rows of 1 KB,
doubled by ``INSERT ... SELECT`` until large enough) and leaves it for the next run: it is
created once per cluster, and ``DROP TABLE ndbchaos.ballast`` removes it. It is never created
unless a fault asks for it."""

from __future__ import annotations

import time

from ..errors import NdbChaosError
from ..sqlconn import connect, error_fields

TABLE = "ballast"
ROW_BYTES = 1000
#: one statement of the filling (at most ``STATEMENT_ROWS``): NDB writes it in well under a
#: second here (9.7.2: 16 MB in 1.5 s over ssh); the bound is for a loaded machine
STATEMENT_TIMEOUT_S = 120
#: rows one INSERT ... SELECT adds at most: a 16 MB statement failed with 921 "Out of transaction
#: memory in local data manager, copy tuples" on a one-node-group layout (9.7.2, the layouts'
#: SharedGlobalMemory=32M), so the table grows 4 MB at a time once it is that large
STATEMENT_ROWS = 4096


def ensure(cluster, mb: float, table_engine: str | None = None) -> dict:
    """Make the ballast table hold at least ``mb`` MB; what it holds and how long that took."""
    engine = cluster.engine
    table_engine = table_engine or engine.table_engine
    want = max(1, int(mb * 1_000_000 / ROW_BYTES))
    nodes = cluster.topology.sql_nodes
    if not nodes:
        raise NdbChaosError("ballast: the cluster has no SQL node to create it through")
    t0 = time.monotonic()
    last = None
    for node in nodes:
        try:
            conn = connect(node.sql_port, engine.sql_user, engine.sql_password, engine.sql_database,
                           host=node.sql_host, connect_timeout=5, read_timeout=STATEMENT_TIMEOUT_S,
                           write_timeout=STATEMENT_TIMEOUT_S)
        except Exception as e:
            last = f"{node.name}: {error_fields(e)[1]}"
            continue
        try:
            rows = _fill(conn, want, table_engine)
        except Exception as e:
            raise NdbChaosError(f"ballast: filling {TABLE} through {node.name} failed: {error_fields(e)[1]}") from None
        finally:
            conn.close()
        return {"table": f"{engine.sql_database}.{TABLE}", "rows": rows, "mb": round(rows * ROW_BYTES / 1e6, 1),
                "through": node.name, "seconds": round(time.monotonic() - t0, 2)}
    raise NdbChaosError(f"ballast: no SQL node answered ({last})")


def _fill(conn, want: int, table_engine: str) -> int:
    cur = conn.cursor()
    try:
        cur.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                    f"pad VARCHAR({ROW_BYTES}) NOT NULL) ENGINE={table_engine}")
        rows = _count(cur)
        if rows == 0:
            cur.execute(f"INSERT INTO {TABLE} (pad) VALUES (REPEAT('b', {ROW_BYTES}))")
            rows = 1
        while rows < want:
            more = min(rows, want - rows, STATEMENT_ROWS)
            cur.execute(f"INSERT INTO {TABLE} (pad) SELECT pad FROM {TABLE} LIMIT {more}")
            rows = _count(cur)
        return rows
    finally:
        cur.close()


def _count(cur) -> int:
    cur.execute(f"SELECT COUNT(*) FROM {TABLE}")
    return int(cur.fetchone()[0])
