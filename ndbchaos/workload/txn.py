"""Transactional workloads for the anomaly checker (ndbchaos.txn): ``list_append`` and
``rw_register``, Elle's two models.

Each operation is one transaction of 1-4 micro-operations (``f == "txn"``, value ``[[f, k, v],
...]``) over a small set of keys that changes as keys fill up, as Elle's generator does: ``keys``
keys are active at a time, the lower ones hotter (key i is drawn twice as often as key i+1), and
a key retires for a fresh one after ``max_writes`` writes; every value written to a key is
unique (the key's next count). The set is shared by every client process (one lock over a small
shared array), so contention is real across processes and SQL nodes.

    list_append   ["append", k, v] appends v to the list at k; ["r", k, None] reads it
    rw_register   ["w", k, v] sets register k to v;            ["r", k, None] reads it

Storage (NDB manual, "Limitations relating to transaction handling"): a list is a
comma-separated string in a VARCHAR column (``storage="varchar"``), or in a TEXT column
(``"text"``: NDB keeps all but the first 256 bytes of a TEXT value in a hidden parts table, and a
SELECT of a TEXT column takes a shared lock). ``read_lock``: None (plain reads: NDB's READ
COMMITTED), ``"share"`` (``LOCK IN SHARE MODE``) or ``"update"`` (``FOR UPDATE``) on every read.
``precreate``: every key's row exists before the load (a locking read of a row that does not
exist locks nothing in NDB, which has no gap locks); otherwise a key's first write creates it.

Outcomes: an error before COMMIT rolls the transaction back: ``fail`` (it cannot have taken
effect). An error of COMMIT itself, or a connection lost during it, is ``info``: it may have
committed (NDB's 4010 at commit did: docs/ndb.md finding 22). A transaction whose COMMIT is
acknowledged is ``ok``. The final read (one transaction, after the load, of every key ever
used) shows what stayed.
"""

from __future__ import annotations

import contextlib
import random

from ..errors import UsageError
from .base import Workload, bulk_insert
from .registry import register

#: where a list's elements are kept: the column type (ASCII, so a VARCHAR byte is a character)
STORAGE = {"varchar": "VARCHAR({n}) CHARACTER SET ascii NOT NULL DEFAULT ''",
           "text": "TEXT CHARACTER SET ascii"}
READ_LOCKS = {None: "", "share": " LOCK IN SHARE MODE", "update": " FOR UPDATE"}


class Aborted(Exception):
    """A transaction that failed before its COMMIT was sent: rolled back, no effect. The runner
    records it ``fail`` with the error of ``cause``."""

    outcome = "fail"

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


class KeyPool:
    """The active keys, shared by every client process: ``[next fresh key, key 0..K-1, writes
    of key 0..K-1]`` in one shared array of 64-bit integers, under its lock."""

    def __init__(self, array, keys: int, max_writes: int):
        self.array = array
        self.keys = keys
        self.max_writes = max_writes

    @classmethod
    def create(cls, ctx, keys: int, max_writes: int) -> "KeyPool":
        a = ctx.Array("q", 1 + 2 * keys)
        a[0] = keys
        for i in range(keys):
            a[1 + i] = i
        return cls(a, keys, max_writes)

    def draw(self, rng: random.Random, mops: int, write_f: str) -> list[list]:
        """One transaction's micro-ops: half reads, half writes, keys drawn hot-first; each write
        gets the key's next value, and a key that has had ``max_writes`` is replaced."""
        out = []
        a, k_n = self.array, self.keys
        with a.get_lock():
            for _ in range(mops):
                i = min(int(rng.expovariate(0.6931471805599453)), k_n - 1)  # P(i) ~ 2^-i
                if rng.random() < 0.5:
                    out.append(["r", a[1 + i], None])
                    continue
                if a[1 + k_n + i] >= self.max_writes:  # retire it for a fresh key
                    a[1 + i] = a[0]
                    a[0] += 1
                    a[1 + k_n + i] = 0
                a[1 + k_n + i] += 1
                out.append([write_f, a[1 + i], a[1 + k_n + i]])
        return out

    def used(self) -> int:
        """How many keys have been used (0..n-1)."""
        return self.array[0]


class _Txn(Workload):
    write_f = ""
    defaults = {"keys": 8, "max_writes": 32, "min_mops": 1, "max_mops": 4, "read_lock": None,
                "storage": "varchar", "precreate": False, "precreate_keys": 4096, "table": ""}

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        if p["read_lock"] not in READ_LOCKS:
            raise UsageError(f"{self.name}: read_lock={p['read_lock']!r} (expected none, 'share' or 'update')")
        if p["storage"] not in STORAGE:
            raise UsageError(f"{self.name}: storage={p['storage']!r} (expected {' or '.join(STORAGE)})")
        if not 1 <= p["min_mops"] <= p["max_mops"] or p["keys"] < 1 or p["max_writes"] < 1:
            raise UsageError(f"{self.name}: needs 1 <= min_mops <= max_mops, keys >= 1 and max_writes >= 1")
        self.table = p["table"] or self.name
        self.pool: KeyPool | None = None

    # -- the shared key set: made by the runner, handed to every worker ---------------------
    def shared_state(self, ctx):
        self.pool = KeyPool.create(ctx, int(self.params["keys"]), int(self.params["max_writes"]))
        return self.pool.array

    def attach(self, shared) -> None:
        self.pool = KeyPool(shared, int(self.params["keys"]), int(self.params["max_writes"]))

    # -- schema -------------------------------------------------------------------------------
    def column(self) -> str:
        raise NotImplementedError

    def schema(self, table_engine: str) -> list[str]:
        return [f"DROP TABLE IF EXISTS {self.table}",
                f"CREATE TABLE {self.table} (k BIGINT NOT NULL PRIMARY KEY, v {self.column()}) "
                f"ENGINE={table_engine}"]

    def load(self, conn, table_engine: str) -> None:
        super().load(conn, table_engine)
        if self.params["precreate"]:
            cur = conn.cursor()
            bulk_insert(cur, self.table, ("k", "v"),
                        ((k, self.initial) for k in range(int(self.params["precreate_keys"]))))
            cur.close()

    # -- operations ---------------------------------------------------------------------------
    def next_op(self, rng, slot):
        if self.pool is None:
            raise RuntimeError(f"{self.name}: no shared key pool (the runner attaches one)")
        n = rng.randint(int(self.params["min_mops"]), int(self.params["max_mops"]))
        mops = self.pool.draw(rng, n, self.write_f)
        if self.params["precreate"] and self.pool.used() > int(self.params["precreate_keys"]):
            raise UsageError(f"{self.name}: more keys used than the {self.params['precreate_keys']} precreated")
        return "txn", mops, any(m[0] != "r" for m in mops)

    def execute(self, cur, f, value):
        if f != "txn":
            raise ValueError(f)
        lock = READ_LOCKS[self.params["read_lock"]]
        out = []
        try:
            cur.execute("START TRANSACTION")
            for mf, k, v in value:
                if mf == "r":
                    cur.execute(f"SELECT v FROM {self.table} WHERE k = %s{lock}", (k,))
                    rows = cur.fetchall()
                    out.append(["r", k, self.decode(rows[0][0] if rows else None)])
                else:
                    self.write(cur, k, v)
                    out.append([mf, k, v])
        except Exception as e:
            _rollback(cur)
            raise Aborted(e) from e
        cur.execute("COMMIT")  # an error here is the indeterminate one: the runner records info
        return out

    def final_reads(self):
        n = self.pool.used() if self.pool is not None else int(self.params["keys"])
        return [("txn", [["r", k, None] for k in range(n)])]

    def header_params(self) -> dict:
        p = dict(self.params)
        p["model"] = self.model
        return p

    # -- per model ----------------------------------------------------------------------------
    model = ""
    initial = None  # a precreated row's value: the empty list, or no register value

    def write(self, cur, k, v) -> None:
        raise NotImplementedError

    def decode(self, raw):
        raise NotImplementedError


@register
class ListAppend(_Txn):
    name = "list_append"
    model = "list-append"
    write_f = "append"
    initial = ""  # (a TEXT column has no default: CONCAT onto NULL would be NULL)

    def column(self) -> str:
        # the longest list: max_writes values of up to len(str(max_writes)) digits, each with a comma
        n = max(64, int(self.params["max_writes"]) * (len(str(self.params["max_writes"])) + 1))
        return STORAGE[self.params["storage"]].format(n=n)

    def write(self, cur, k, v) -> None:
        cur.execute(f"INSERT INTO {self.table} (k, v) VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = CONCAT(v, %s)",
                    (k, f",{v}", f",{v}"))

    def decode(self, raw):
        if raw is None:
            return []
        if isinstance(raw, (bytes, bytearray)):
            raw = raw.decode("ascii")
        return [int(x) for x in raw.split(",")[1:]]


@register
class RwRegister(_Txn):
    name = "rw_register"
    model = "rw-register"
    write_f = "w"

    def column(self) -> str:
        return "BIGINT NULL"

    def write(self, cur, k, v) -> None:
        cur.execute(f"INSERT INTO {self.table} (k, v) VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = VALUES(v)", (k, v))

    def decode(self, raw):
        return None if raw is None else int(raw)


def _rollback(cur) -> None:
    with contextlib.suppress(Exception):  # the connection may be gone: then nothing committed
        cur._connection.rollback()


__all__ = ["Aborted", "KeyPool", "ListAppend", "RwRegister"]
