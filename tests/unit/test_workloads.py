"""The fakebook and oltp workloads: op mixes, value shapes, schemas and statement sequences,
without a database (a fake cursor records what would be sent)."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from ndbchaos.errors import UsageError
from ndbchaos.workload import get_workload
from ndbchaos.workload.fakebook import READS, WRITES, Fakebook
from ndbchaos.workload.oltp import FastSQL, Oltp, Stmt


class FakeCursor:
    """A DB-API cursor that records (sql, params); no ``_connection``, so FastSQL uses it."""

    def __init__(self, fail_on: str | None = None, rows=None):
        self.sent: list[tuple[str, tuple | None]] = []
        self.fail_on = fail_on
        self.rows = rows or []
        self.lastrowid = 0
        self.rowcount = 1
        self.with_rows = False

    def execute(self, sql, params=None):
        self.sent.append((sql, params))
        if self.fail_on and sql.startswith(self.fail_on):
            raise Boom(1213, "Deadlock found when trying to get lock; try restarting transaction")
        self.with_rows = sql.startswith("SELECT")
        if sql.startswith("INSERT"):
            self.lastrowid += 1

    def fetchall(self):
        return list(self.rows)


class Boom(Exception):
    def __init__(self, errno, msg):
        super().__init__(msg)
        self.errno, self.msg = errno, msg


def draws(wl, n=10_000, seed=42):
    rng = random.Random(seed)
    return [wl.next_op(rng, 0) for _ in range(n)]


# -- fakebook -------------------------------------------------------------------------------------

def test_fakebook_read_split_matches_the_published_mix():
    ops = draws(get_workload("fakebook", write_share=0.0))
    c = Counter(f for f, _, _ in ops)
    assert set(c) <= set(READS)
    share = {f: c[f] / len(ops) for f in READS}
    assert share["status"] == pytest.approx(0.70, abs=0.02)
    assert share["conversation"] == pytest.approx(0.25, abs=0.02)
    assert share["friends"] == pytest.approx(0.04, abs=0.01)
    assert share["login"] == pytest.approx(0.01, abs=0.005)
    assert not any(w for _, _, w in ops)


def test_fakebook_write_share_and_write_mix():
    ops = draws(get_workload("fakebook", write_share=0.2), n=20_000)
    writes = [f for f, _, w in ops if w]
    assert len(writes) / len(ops) == pytest.approx(0.2, abs=0.015)
    assert set(writes) == set(WRITES)
    c = Counter(writes)
    assert c["post_status"] / len(writes) == pytest.approx(0.50, abs=0.03)
    assert c["send_message"] / len(writes) == pytest.approx(0.35, abs=0.03)
    # the reads keep their own split among themselves
    reads = [f for f, _, w in ops if not w]
    assert Counter(reads)["status"] / len(reads) == pytest.approx(0.70, abs=0.02)
    assert all((f in WRITES) == w for f, _, w in ops)


def test_fakebook_value_shapes():
    wl = get_workload("fakebook", users=300, write_share=0.5)
    for f, v, _ in draws(wl, n=5000, seed=3):
        if f in ("status", "friends", "login", "post_status"):
            assert type(v) is int and 1 <= v <= 300
        elif f == "conversation":
            a, b = v
            assert b == wl.partner(a) and a != b
        elif f == "send_message":
            a, b = v
            assert a != b and (b == wl.partner(a) or a == wl.partner(b))
        elif f == "comment":
            u, nid = v
            assert 1 <= u <= 300 and (nid - 1) % wl.params["status_max"] == 0
        elif f == "add_friend":
            a, b = v
            assert a != b and 1 <= a <= 300 and 1 <= b <= 300
        else:
            pytest.fail(f"unexpected op {f}")


def test_fakebook_is_deterministic_per_seed():
    a = draws(get_workload("fakebook"), n=200, seed=9)
    b = draws(get_workload("fakebook"), n=200, seed=9)
    assert a == b


def test_fakebook_custom_mix_and_bad_mix():
    ops = draws(get_workload("fakebook", write_share=0, read_mix={"login": 1}), n=100)
    assert {f for f, _, _ in ops} == {"login"}
    with pytest.raises(UsageError, match="unknown read_mix"):
        get_workload("fakebook", read_mix={"timeline": 1})
    with pytest.raises(UsageError, match="write_share"):
        get_workload("fakebook", write_share=1.5)
    with pytest.raises(UsageError, match="unknown parameter"):
        get_workload("fakebook", userz=3)


def test_fakebook_execute_sends_the_statements_and_records_ids():
    wl = get_workload("fakebook", users=100)
    cur = FakeCursor()
    assert wl.execute(cur, "status", 7) == 7
    sql, params = cur.sent[-1]
    assert "FROM fb_notification n WHERE n.uid = %s ORDER BY n.date DESC LIMIT 10" in sql and params == (7,)
    assert wl.execute(cur, "conversation", [3, 9]) == [3, 9]
    assert cur.sent[-1][1] == (3, 9, 9, 3) and "fb_messages" in cur.sent[-1][0]
    wl.execute(cur, "friends", 5)
    assert "JOIN fb_users u ON u.id = r.id_2 WHERE r.id_1 = %s" in cur.sent[-1][0]
    wl.execute(cur, "login", 5)
    assert cur.sent[-1][1] == ("user5@fakebook.example",)
    assert wl.execute(cur, "post_status", 5) == [5, 1]
    assert cur.sent[-1][0].startswith("INSERT INTO fb_notification") and cur.sent[-1][1][0] == 5
    assert wl.execute(cur, "send_message", [5, 6]) == [5, 6, 2]
    assert wl.execute(cur, "comment", [5, 11]) == [5, 11, 3]
    assert cur.sent[-1][1][:2] == (11, 5)
    assert wl.execute(cur, "add_friend", [5, 6]) == [5, 6]
    assert cur.sent[-1] == ("INSERT IGNORE INTO fb_relations (id_1, id_2) VALUES (%s, %s), (%s, %s)", (5, 6, 6, 5))
    with pytest.raises(ValueError):
        wl.execute(cur, "poke", 1)


def test_fakebook_schema_per_engine_without_fk_or_text():
    wl = get_workload("fakebook")
    for engine in ("NDBCLUSTER", "InnoDB"):
        ddl = wl.schema(engine)
        creates = [s for s in ddl if s.startswith("CREATE TABLE")]
        assert len(creates) == 5 and all(s.endswith(f"ENGINE={engine}") for s in creates)
        text = " ".join(ddl).upper()
        assert "FOREIGN KEY" not in text and " TEXT" not in text and "BLOB" not in text
        assert "UNIQUE KEY MAIL (MAIL)" in text
    assert wl.schema("InnoDB")[0] == "DROP TABLE IF EXISTS fb_comments"  # children first


def test_fakebook_generated_data():
    wl = get_workload("fakebook", users=400, friends=20, status_max=10, messages_max=10, comments_max=3)
    data = wl.generate()
    assert data == wl.generate()  # deterministic
    users = data["users"][1]
    assert [u[0] for u in users] == list(range(1, 401)) and len({u[4] for u in users}) == 400
    rel = set(data["relations"][1])
    assert all((b, a) in rel for a, b in rel) and all(a != b for a, b in rel)
    assert 15 <= len(rel) / 400 <= 20  # ~20 friends each (10 picks, both ways, a few collide)
    notes = data["notification"][1]
    assert {n[0] for n in notes} >= {wl.first_status_id(u) for u in range(1, 401)}
    assert 1 <= len(notes) / 400 <= 10
    nids = {n[0] for n in notes}
    assert all(c[1] in nids for c in data["comments"][1])
    for _mid, s, r, header, date, content in data["messages"][1]:
        assert r == wl.partner(s) or s == wl.partner(r)
        assert len(header) <= 100 and len(content) <= 500 and re.match(r"2024|2025", date)
    for cols, rows in data.values():
        assert all(len(r) == len(cols) for r in rows)


def test_fakebook_partner_is_never_self():
    wl = Fakebook(users=2)
    assert wl.partner(1) == 2 and wl.partner(2) == 1
    wl = Fakebook(users=997, seed=5)
    assert all(wl.partner(u) != u and 1 <= wl.partner(u) <= 997 for u in range(1, 998))


# -- oltp -----------------------------------------------------------------------------------------

SYSBENCH_RW = [
    "BEGIN",
    *["SELECT c FROM sbtest1 WHERE id=%s"] * 10,
    "SELECT c FROM sbtest1 WHERE id BETWEEN %s AND %s",
    "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN %s AND %s",
    "SELECT c FROM sbtest1 WHERE id BETWEEN %s AND %s ORDER BY c",
    "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN %s AND %s ORDER BY c",
    "UPDATE sbtest1 SET k=k+1 WHERE id=%s",
    "UPDATE sbtest1 SET c=%s WHERE id=%s",
    "DELETE FROM sbtest1 WHERE id=%s",
    "INSERT INTO sbtest1 (id, k, c, pad) VALUES (%s, %s, %s, %s)",
    "COMMIT",
]


def test_oltp_read_write_transaction_is_sysbenchs():
    wl = get_workload("oltp")
    f, seed, is_write = wl.next_op(random.Random(1), 0)
    assert (f, is_write) == ("read_write", True) and type(seed) is int
    cur = FakeCursor()
    assert wl.execute(cur, f, seed) == seed
    assert [s for s, _ in cur.sent] == SYSBENCH_RW
    assert wl.statements_per_event == 20  # 18 statements + BEGIN/COMMIT
    params = [p for _, p in cur.sent]
    for p in params[1:11]:
        assert 1 <= p[0] <= 10000
    for p in params[11:15]:
        assert p[1] - p[0] == 99  # range_size 100
    c_new, upd_id = params[16]
    assert re.fullmatch(r"(\d{11}-){9}\d{11}", c_new) and 1 <= upd_id <= 10000
    (del_id,), ins = params[17], params[18]
    assert ins[0] == del_id and re.fullmatch(r"(\d{11}-){4}\d{11}", ins[3])
    # the recorded seed rebuilds the same transaction
    assert wl.plan(seed) == wl.plan(seed)
    cur2 = FakeCursor()
    get_workload("oltp").execute(cur2, f, seed)
    assert cur2.sent == cur.sent


def test_oltp_modes_and_parameters():
    cur = FakeCursor()
    wl = get_workload("oltp_read_only")
    wl.execute(cur, *wl.next_op(random.Random(2), 0)[:2])
    assert [s for s, _ in cur.sent] == SYSBENCH_RW[:15] + ["COMMIT"]
    assert wl.next_op(random.Random(2), 0)[2] is False

    cur = FakeCursor()
    wl = get_workload("oltp_write_only", skip_trx=True, delete_inserts=2)
    wl.execute(cur, *wl.next_op(random.Random(2), 0)[:2])
    assert [s.split()[0] for s, _ in cur.sent] == ["UPDATE", "UPDATE", "DELETE", "INSERT", "DELETE", "INSERT"]

    cur = FakeCursor()
    wl = get_workload("oltp", point_selects=3, range_selects=False, range_size=5)
    wl.execute(cur, *wl.next_op(random.Random(2), 0)[:2])
    assert [s for s, _ in cur.sent][:5] == ["BEGIN"] + ["SELECT c FROM sbtest1 WHERE id=%s"] * 3 + [
        "UPDATE sbtest1 SET k=k+1 WHERE id=%s"]

    with pytest.raises(UsageError):
        get_workload("oltp", mode="bulk")


def test_oltp_single_statement_events():
    rng = random.Random(5)
    wl = get_workload("oltp_point_select", table_size=50)
    f, v, w = wl.next_op(rng, 0)
    assert f == "point_select" and type(v) is int and 1 <= v <= 50 and w is False
    cur = FakeCursor()
    assert wl.execute(cur, f, v) == v
    assert cur.sent == [("SELECT c FROM sbtest1 WHERE id=%s", (v,))]

    wl = get_workload("oltp_update_non_index")
    f, v, w = wl.next_op(rng, 0)
    cur = FakeCursor()
    wl.execute(cur, f, v)
    (sql, (c, i)), = cur.sent
    assert (f, w, sql, i) == ("update_non_index", True, "UPDATE sbtest1 SET c=%s WHERE id=%s", v)
    assert re.fullmatch(r"(\d{11}-){9}\d{11}", c)
    # consecutive updates write different values (a repeated value would be a no-op row update)
    seen = set()
    for _ in range(50):
        cur = FakeCursor()
        wl.execute(cur, *wl.next_op(rng, 0)[:2])
        seen.add(cur.sent[0][1][0])
    assert len(seen) > 40

    wl = get_workload("oltp_update_index", index_updates=3)
    f, v, w = wl.next_op(rng, 0)
    cur = FakeCursor()
    wl.execute(cur, f, v)
    assert type(v) is list and len(v) == 3 and [p for _, p in cur.sent] == [(i,) for i in v]
    assert all(s == "UPDATE sbtest1 SET k=k+1 WHERE id=%s" for s, _ in cur.sent)


def test_oltp_rolls_back_a_failed_transaction():
    wl = get_workload("oltp")
    cur = FakeCursor(fail_on="UPDATE sbtest1 SET k")
    with pytest.raises(Boom):
        wl.execute(cur, "read_write", 12345)
    assert cur.sent[-1] == ("ROLLBACK", None)
    assert "COMMIT" not in [s for s, _ in cur.sent]


def test_oltp_schema_is_sysbenchs():
    ddl = get_workload("oltp").schema("NDBCLUSTER")
    assert ddl[0] == "DROP TABLE IF EXISTS sbtest1"
    assert "c CHAR(120) DEFAULT '' NOT NULL" in ddl[1] and "pad CHAR(60) DEFAULT '' NOT NULL" in ddl[1]
    assert "PRIMARY KEY (id)" in ddl[1] and ddl[1].endswith("ENGINE=NDBCLUSTER")
    assert ddl[2] == "CREATE INDEX k_1 ON sbtest1(k)"
    assert len(get_workload("oltp", create_secondary=False).schema("InnoDB")) == 2


def test_oltp_load_skipped_when_not_creating():
    class NoConn:
        def cursor(self):
            raise AssertionError("must not touch the database")
    get_workload("oltp_point_select", create=False).load(NoConn(), "InnoDB")


# -- the fast path --------------------------------------------------------------------------------

class FakeC:
    """Stands in for ``_mysql_connector.MySQL``: records queries, returns canned rows."""

    def __init__(self, rows=()):
        self.queries, self.rows, self._it = [], list(rows), None
        self.have_result_set = False
        self.prepared: list[bytes] = []

    def query(self, sql):
        self.queries.append(sql)
        self.have_result_set = sql.startswith(b"SELECT")
        self._it = iter(self.rows)

    def fetch_row(self):
        return next(self._it, None)

    def free_result(self):
        self._it = None

    consume_result = free_result

    def affected_rows(self):
        return 1

    def insert_id(self):
        return 77

    def escape_string(self, b):
        return b.replace(b"\\", b"\\\\").replace(b"'", b"\\'")

    def stmt_prepare(self, sql):
        self.prepared.append(sql)
        return FakeStmt(self, sql)


class FakeStmt:
    def __init__(self, c, sql):
        self.c, self.sql, self.execs = c, sql, []

    def stmt_execute(self, *args, query_attrs=None):
        assert query_attrs is not None  # omitting it crashes the 9.7 C extension
        self.execs.append(args)
        self.have_result_set = self.sql.startswith(b"SELECT")
        self._it = iter(self.c.rows)

    def fetch_row(self):
        return next(self._it, None)

    def free_result(self):
        pass


class CCursor:
    def __init__(self, c):
        self._connection = type("Conn", (), {"_cmysql": c})()


def test_stmt_render_escapes_and_formats():
    s = Stmt("INSERT INTO t (a, b, c) VALUES (%s, %s, %s)")
    esc = FakeC().escape_string
    assert s.render(esc, (5, "it's", None)) == b"INSERT INTO t (a, b, c) VALUES (5, 'it\\'s', NULL)"
    assert s.qmark == b"INSERT INTO t (a, b, c) VALUES (?, ?, ?)"
    assert Stmt("SELECT 100%").render(esc, ()) == b"SELECT 100%"


def test_fast_path_text_and_prepared():
    c = FakeC(rows=[("x",), ("y",)])
    cur = CCursor(c)
    wl = get_workload("oltp_point_select", ps=False)
    wl.execute(cur, "point_select", 42)
    assert c.queries == [b"SELECT c FROM sbtest1 WHERE id=42"]
    wl = get_workload("oltp_update_non_index", ps=False)
    f, v, _ = wl.next_op(random.Random(1), 0)
    wl.execute(cur, f, v)
    assert re.fullmatch(rb"UPDATE sbtest1 SET c='[\d-]{119}' WHERE id=%d" % v, c.queries[-1])

    c = FakeC(rows=[("x",)])
    cur = CCursor(c)
    wl = get_workload("oltp_point_select")  # ps=True by default, as sysbench
    for i in (1, 2, 3):
        wl.execute(cur, "point_select", i)
    assert c.prepared == [b"SELECT c FROM sbtest1 WHERE id=?"]  # prepared once per connection
    cur2 = CCursor(c)  # a reconnect: new cursor, prepared again
    wl.execute(cur2, "point_select", 4)
    assert len(c.prepared) == 2

    sql = FastSQL(ps=True)
    c = FakeC(rows=[(1, "a"), (2, "b")])
    cur = CCursor(c)
    assert sql.rows(cur, Stmt("SELECT id, c FROM t WHERE id BETWEEN %s AND %s"), (1, 2)) == [(1, "a"), (2, "b")]
    assert sql.run(cur, Stmt("BEGIN")) == 1 and c.queries == [b"BEGIN"]  # no parameters: plain text
    assert sql.insert_id(cur) == 77


def test_registry_names():
    for name in ("fakebook", "oltp", "oltp_read_write", "oltp_read_only", "oltp_write_only",
                 "oltp_point_select", "oltp_update_index", "oltp_update_non_index"):
        wl = get_workload(name)
        assert wl.name == name and wl.spec()[0] == name
        assert isinstance(wl, (Oltp, Fakebook))


# -- bank -----------------------------------------------------------------------------------------

class _Conn:
    def __init__(self):
        self.rolled_back = 0

    def rollback(self):
        self.rolled_back += 1


def test_bank_reads_plain_or_under_shared_locks():
    cur = FakeCursor(rows=[(0, 60), (1, 40)])
    assert get_workload("bank").execute(cur, "read", None) == {"balances": {"0": 60, "1": 40}}
    assert [s for s, _ in cur.sent] == ["SELECT id, balance FROM accounts"]
    # NDB offers only READ COMMITTED: a consistent total needs shared locks in one transaction
    cur = FakeCursor(rows=[(0, 60), (1, 40)])
    assert get_workload("bank", read_lock="share").execute(cur, "read", None)["balances"] == {"0": 60, "1": 40}
    assert [s for s, _ in cur.sent] == ["START TRANSACTION", "SELECT id, balance FROM accounts FOR SHARE", "COMMIT"]
    with pytest.raises(UsageError):
        get_workload("bank", read_lock="exclusive")


def test_bank_transfer_rolls_back_on_any_error():
    from ndbchaos.workload.bank import InsufficientFunds
    cur = FakeCursor(rows=[(0, 3), (1, 40)])
    cur._connection = _Conn()
    with pytest.raises(InsufficientFunds):
        get_workload("bank").execute(cur, "transfer", {"from": 0, "to": 1, "amount": 5})
    assert cur._connection.rolled_back == 1 and not any(s.startswith(("UPDATE", "COMMIT")) for s, _ in cur.sent)
    cur = FakeCursor(rows=[(0, 30), (1, 40)], fail_on="UPDATE")
    cur._connection = _Conn()
    with pytest.raises(Boom):
        get_workload("bank").execute(cur, "transfer", {"from": 0, "to": 1, "amount": 5})
    assert cur._connection.rolled_back == 1
