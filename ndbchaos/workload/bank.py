"""bank: transfers between accounts inside transactions, and reads of every balance.

The invariant (NDB's own testSRBank, Jepsen's bank test): every successful read sums to the
initial total. Transfers lock both rows (SELECT ... FOR UPDATE) in id order, so no transfer can
overdraw and the total is conserved by every committed transaction.

``read_lock``: how a read of every balance is made consistent. None (default): one plain SELECT,
a snapshot on engines with MVCC snapshots (InnoDB/Galera). ``"share"``: the SELECT takes shared
locks inside a transaction (``FOR SHARE``), for engines that only offer READ COMMITTED (NDB; the
engine asks for it through ``Engine.workload_params``). The choice is in the history's header.
"""

from __future__ import annotations

import contextlib

from ..errors import UsageError
from .base import Workload, bulk_insert
from .registry import register


@register
class Bank(Workload):
    name = "bank"
    defaults = {"accounts": 8, "balance": 100, "max_transfer": 5, "read_share": 0.2, "table": "accounts",
                "read_lock": None}
    READ_LOCKS = (None, "share")

    def __init__(self, **params):
        super().__init__(**params)
        if self.params["read_lock"] not in self.READ_LOCKS:
            raise UsageError(f"bank: read_lock={self.params['read_lock']!r} (expected none or 'share')")

    def schema(self, table_engine):
        t = self.params["table"]
        return [f"DROP TABLE IF EXISTS {t}",
                f"CREATE TABLE {t} (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL) ENGINE={table_engine}"]

    def load(self, conn, table_engine):
        super().load(conn, table_engine)
        cur = conn.cursor()
        bulk_insert(cur, self.params["table"], ("id", "balance"),
                    ((i, int(self.params["balance"])) for i in range(int(self.params["accounts"]))))
        cur.close()

    def header_params(self):
        p = dict(self.params)
        p["total"] = int(self.params["accounts"]) * int(self.params["balance"])
        return p

    def next_op(self, rng, slot):
        if rng.random() < self.params["read_share"]:
            return "read", None, False
        n = int(self.params["accounts"])
        a = rng.randrange(n)
        b = (a + rng.randrange(1, n)) % n
        return "transfer", {"from": a, "to": b, "amount": rng.randint(1, int(self.params["max_transfer"]))}, True

    def execute(self, cur, f, value):
        t = self.params["table"]
        if f == "read":
            if self.params["read_lock"] is None:
                cur.execute(f"SELECT id, balance FROM {t}")
                return {"balances": {str(i): int(b) for i, b in cur.fetchall()}}
            with _transaction(cur):
                cur.execute(f"SELECT id, balance FROM {t} FOR SHARE")
                rows = cur.fetchall()
            return {"balances": {str(i): int(b) for i, b in rows}}
        if f == "transfer":
            a, b, x = value["from"], value["to"], value["amount"]
            with _transaction(cur):
                lo, hi = sorted((a, b))
                cur.execute(f"SELECT id, balance FROM {t} WHERE id IN (%s, %s) ORDER BY id FOR UPDATE", (lo, hi))
                bal = dict(cur.fetchall())
                if bal.get(a, 0) < x:
                    raise InsufficientFunds(a, bal.get(a, 0), x)
                cur.execute(f"UPDATE {t} SET balance = balance - %s WHERE id = %s", (x, a))
                cur.execute(f"UPDATE {t} SET balance = balance + %s WHERE id = %s", (x, b))
            return value
        raise ValueError(f)

    def final_reads(self):
        return [("read", None)]


@contextlib.contextmanager
def _transaction(cur):
    """START TRANSACTION ... COMMIT; on any way out with an exception, roll back (best effort:
    the connection may be gone) and re-raise."""
    cur.execute("START TRANSACTION")
    try:
        yield
        cur.execute("COMMIT")
    except BaseException:
        try:
            cur._connection.rollback()
        except Exception:
            pass
        raise


class InsufficientFunds(Exception):
    """A definite, application-level failure: nothing was written."""

    errno = 0

    def __init__(self, acct, balance, amount):
        super().__init__(f"account {acct} has {balance}, cannot transfer {amount}")
        self.msg = str(self)
