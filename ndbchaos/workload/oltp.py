"""oltp: sysbench's OLTP scripts on its ``sbtest`` table, with the same statements.

One operation is one sysbench *event*: for ``read_write`` a whole transaction (by default 18
statements inside BEGIN/COMMIT: 10 point selects, 4 range selects, an index update, a non-index
update, a delete and an insert), for ``point_select`` one ``SELECT c FROM sbtest1 WHERE id=?``,
for ``update_non_index`` one ``UPDATE sbtest1 SET c=? WHERE id=?``. The schema, the statements and
the parameters (``table_size``, ``range_size``, ``point_selects``, ``simple_ranges``, ...) are
those of sysbench 1.0's ``oltp_common.lua``, so ``ndbchaos bench`` can run both against the same
table and compare throughput statement for statement (docs/facts.md Anchors 9).

Registered names, one per sysbench script: ``oltp`` / ``oltp_read_write``, ``oltp_read_only``,
``oltp_write_only``, ``oltp_point_select``, ``oltp_update_index``, ``oltp_update_non_index``
(``oltp`` takes ``mode=`` to pick any of them).

Recorded values: a point select or a single update records its row id; a transaction records
the 62-bit seed from which every id and string of that transaction is drawn
(``Oltp.plan(seed)`` rebuilds its statement list).

Differences from sysbench, on purpose: ids are uniform over ``1..table_size`` (sysbench
``--rand-type=uniform``; sysbench 1.0 defaults to ``special``), the table is loaded with explicit
ids ``1..table_size`` (sysbench ``--auto_inc=off``: with auto-increment, Galera's
``wsrep_auto_increment_control`` leaves gaps so most point selects would miss), one table.

The hot path talks to the C extension's handle directly (``FastSQL``, in ``fastsql``); see there why.
"""

from __future__ import annotations

import random

from ..errors import UsageError
from .base import Workload, bulk_insert
from .fastsql import _NO_ATTRS, FastSQL, Stmt
from .registry import register

_DIGITS = "0123456789"


# -- sysbench's values ---------------------------------------------------------------------------

def rand_template(rng: random.Random, groups: int) -> str:
    """sysbench's c / pad value: ``groups`` groups of 11 random digits joined by '-'."""
    return "-".join("%011d" % rng.randrange(100_000_000_000) for _ in range(groups))


def c_value(rng) -> str:  # 119 characters
    return rand_template(rng, 10)


def pad_value(rng) -> str:  # 59 characters
    return rand_template(rng, 5)


_POOL: dict[int, tuple[list[str], list[bytes]]] = {}


def _c_pool(seed: int) -> tuple[list[str], list[bytes]]:
    """1024 random c values per seed (as str and as quoted SQL literal), shared by instances."""
    p = _POOL.get(seed)
    if p is None:
        rng = random.Random(seed * 7919 + 17)
        vals = [c_value(rng) for _ in range(1024)]
        p = _POOL[seed] = (vals, [b"'" + v.encode() + b"'" for v in vals])  # digits and '-' only
    return p


MODES = ("read_write", "read_only", "write_only", "point_select", "update_index", "update_non_index")
TRX_MODES = ("read_write", "read_only", "write_only")


@register
class Oltp(Workload):
    name = "oltp"
    defaults = {
        "mode": "read_write",
        "table": "sbtest1",
        "table_size": 10000,
        "range_size": 100,
        "point_selects": 10,
        "simple_ranges": 1,
        "sum_ranges": 1,
        "order_ranges": 1,
        "distinct_ranges": 1,
        "index_updates": 1,
        "non_index_updates": 1,
        "delete_inserts": 1,
        "range_selects": True,
        "skip_trx": False,
        "create_secondary": True,
        "create": True,  # False: keep an existing table (e.g. made by ``sysbench prepare``)
        "ps": True,  # server-side prepared statements, as sysbench's --db-ps-mode=auto
        "seed": 1,
    }

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        if p["mode"] not in MODES:
            raise UsageError(f"workload {self.name}: mode must be one of {', '.join(MODES)}, not {p['mode']!r}")
        if int(p["table_size"]) < 1:
            raise UsageError(f"workload {self.name}: table_size must be at least 1")
        t = p["table"]
        self.n = int(p["table_size"])
        self.sql = FastSQL(ps=p["ps"])
        self.S = {
            "begin": Stmt("BEGIN"),
            "commit": Stmt("COMMIT"),
            "point_selects": Stmt(f"SELECT c FROM {t} WHERE id=%s"),
            "simple_ranges": Stmt(f"SELECT c FROM {t} WHERE id BETWEEN %s AND %s"),
            "sum_ranges": Stmt(f"SELECT SUM(k) FROM {t} WHERE id BETWEEN %s AND %s"),
            "order_ranges": Stmt(f"SELECT c FROM {t} WHERE id BETWEEN %s AND %s ORDER BY c"),
            "distinct_ranges": Stmt(f"SELECT DISTINCT c FROM {t} WHERE id BETWEEN %s AND %s ORDER BY c"),
            "index_updates": Stmt(f"UPDATE {t} SET k=k+1 WHERE id=%s"),
            "non_index_updates": Stmt(f"UPDATE {t} SET c=%s WHERE id=%s"),
            "deletes": Stmt(f"DELETE FROM {t} WHERE id=%s"),
            "inserts": Stmt(f"INSERT INTO {t} (id, k, c, pad) VALUES (%s, %s, %s, %s)"),
        }
        # Hot-path templates for the single-statement modes.
        self._ps = self.S["point_selects"].fmt.replace(b"%s", b"%d")
        self._ui = self.S["index_updates"].fmt.replace(b"%s", b"%d")
        self._un = self.S["non_index_updates"].fmt.replace(b"=%s WHERE id=%s", b"=%s WHERE id=%d")
        self._c_str, self._c_lit = _c_pool(int(p["seed"]))
        self._c_i = 0
        mode = p["mode"]
        self._repeat = int(p["index_updates"] if mode == "update_index" else p["non_index_updates"])
        self._f = mode
        self._is_write = mode not in ("read_only", "point_select")
        # statements per event (for reports: qps = events/s x this)
        self.statements_per_event = len(self.plan(0)) if mode in TRX_MODES else (
            1 if mode == "point_select" else self._repeat)

    # -- schema and data -------------------------------------------------------------------------
    def schema(self, table_engine):
        t = self.params["table"]
        stmts = [f"DROP TABLE IF EXISTS {t}",
                 # sysbench's create_table(), with the id given by the loader (auto_inc=off)
                 f"CREATE TABLE {t} (\n  id INTEGER NOT NULL,\n  k INTEGER DEFAULT '0' NOT NULL,\n"
                 f"  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n"
                 f"  PRIMARY KEY (id)\n) ENGINE={table_engine}"]
        if self.params["create_secondary"]:
            stmts.append(f"CREATE INDEX k_{t.removeprefix('sbtest') or '1'} ON {t}(k)")
        return stmts

    def load(self, conn, table_engine):
        if not self.params["create"]:
            return
        super().load(conn, table_engine)
        rng = random.Random(int(self.params["seed"]))
        n = self.n
        cur = conn.cursor()
        bulk_insert(cur, self.params["table"], ("id", "k", "c", "pad"),
                    ((i, rng.randint(1, n), c_value(rng), pad_value(rng)) for i in range(1, n + 1)), batch=1000)
        if not conn.autocommit:
            conn.commit()
        cur.close()

    def header_params(self):
        p = dict(self.params)
        p["statements_per_event"] = self.statements_per_event
        return p

    # -- operations -----------------------------------------------------------------------------
    def next_op(self, rng, slot):
        f = self._f
        if f == "point_select":
            return f, rng.randint(1, self.n), False
        if f in ("update_index", "update_non_index"):
            if f == "update_non_index":
                self._c_i = rng.getrandbits(10)  # the new c value: one of 1024 random sysbench strings
            if self._repeat == 1:
                return f, rng.randint(1, self.n), True
            return f, [rng.randint(1, self.n) for _ in range(self._repeat)], True
        return f, rng.getrandbits(62), self._is_write

    def plan(self, seed: int) -> list[tuple[str, tuple]]:
        """The statements of one transaction event, as (statement key, params), from its seed."""
        p = self.params
        r = random.Random(seed)
        n = self.n

        def rid():
            return r.randint(1, n)

        out: list[tuple[str, tuple]] = []
        mode = p["mode"]
        trx = not p["skip_trx"]
        if trx:
            out.append(("begin", ()))
        if mode in ("read_write", "read_only"):
            for _ in range(int(p["point_selects"])):
                out.append(("point_selects", (rid(),)))
            if p["range_selects"]:
                rs = int(p["range_size"])
                for key in ("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges"):
                    for _ in range(int(p[key])):
                        a = rid()
                        out.append((key, (a, a + rs - 1)))
        if mode in ("read_write", "write_only"):
            for _ in range(int(p["index_updates"])):
                out.append(("index_updates", (rid(),)))
            for _ in range(int(p["non_index_updates"])):
                out.append(("non_index_updates", (c_value(r), rid())))
            for _ in range(int(p["delete_inserts"])):
                i, k = rid(), rid()
                out.append(("deletes", (i,)))
                out.append(("inserts", (i, k, c_value(r), pad_value(r))))
        if trx:
            out.append(("commit", ()))
        return out

    def execute(self, cur, f, value):
        sql = self.sql
        cm = sql.handle(cur)
        if cm is not None and f in _SINGLE:
            return self._fast(sql, cm, f, value)
        S = self.S
        if f == "point_select":
            sql.rows(cur, S["point_selects"], (value,))
            return value
        if f == "update_non_index":
            ids = (value,) if type(value) is int else value
            for j, i in enumerate(ids):
                sql.run(cur, S["non_index_updates"], (self._c_str[(self._c_i + j) & 1023], i))
            return value
        if f == "update_index":
            for i in ((value,) if type(value) is int else value):
                sql.run(cur, S["index_updates"], (i,))
            return value
        if f in TRX_MODES:
            steps = self.plan(value)
            in_trx = steps[0][0] == "begin"
            try:
                for key, params in steps:
                    if key in READS:
                        sql.rows(cur, S[key], params)
                    else:
                        sql.run(cur, S[key], params)
            except BaseException:
                if in_trx:
                    sql.rollback(cur)
                raise
            return value
        raise ValueError(f)

    def _fast(self, sql, cm, f, value):
        """The single-statement events on the C handle: the hot path of ``ndbchaos bench``."""
        if f == "point_select":
            if sql.ps:
                src = sql.prepared(cm, self.S["point_selects"])
                src.stmt_execute(value, query_attrs=_NO_ATTRS)
            else:
                cm.query(self._ps % value)
                src = cm
            if src.have_result_set:
                fetch = src.fetch_row
                while fetch() is not None:
                    pass
                src.free_result()
            return value
        ids = (value,) if type(value) is int else value
        if f == "update_non_index":
            if sql.ps:
                st = sql.prepared(cm, self.S["non_index_updates"])
                for j, i in enumerate(ids):
                    st.stmt_execute(self._c_str[(self._c_i + j) & 1023], i, query_attrs=_NO_ATTRS)
            else:
                for j, i in enumerate(ids):
                    cm.query(self._un % (self._c_lit[(self._c_i + j) & 1023], i))
            return value
        if sql.ps:  # update_index
            st = sql.prepared(cm, self.S["index_updates"])
            for i in ids:
                st.stmt_execute(i, query_attrs=_NO_ATTRS)
        else:
            for i in ids:
                cm.query(self._ui % i)
        return value


_SINGLE = frozenset(("point_select", "update_non_index", "update_index"))
READS = frozenset(("point_selects", "simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges"))


def _alias(mode: str):
    cls = type(f"Oltp_{mode}", (Oltp,), {
        "name": f"oltp_{mode}",
        "defaults": {**Oltp.defaults, "mode": mode},
        "__doc__": f"sysbench oltp_{mode}.lua (``oltp`` with mode={mode!r}).",
    })
    return register(cls)


for _m in MODES:
    _alias(_m)
