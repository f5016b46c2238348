"""The ballast table: filled by doubling until it holds what was asked, and left alone when it
already does (a cursor that keeps the row count as NDB would)."""

import re

from ndbchaos.workload import ballast


class Cursor:
    def __init__(self, rows=0):
        self.rows, self.sql = rows, []

    def execute(self, sql):
        self.sql.append(sql)
        if sql.startswith("INSERT") and "VALUES" in sql:
            self.rows += 1
        elif sql.startswith("INSERT"):
            self.rows += min(self.rows, int(re.search(r"LIMIT (\d+)", sql).group(1)))

    def fetchone(self):
        return (self.rows,)

    def close(self):
        pass


class Conn:
    def __init__(self, cur):
        self.cur = cur

    def cursor(self):
        return self.cur


def test_filled_by_doubling_to_the_size_asked():
    cur = Cursor()
    rows = ballast._fill(Conn(cur), 16_000, "ndbcluster")
    assert rows == 16_000 and cur.rows == 16_000
    assert cur.sql[0].startswith("CREATE TABLE IF NOT EXISTS ballast") and "ENGINE=ndbcluster" in cur.sql[0]
    doubles = [s for s in cur.sql if "SELECT pad" in s]
    # 1 -> 4,096 in 12 doublings, then 4,096 rows (4 MB) a statement at most (a larger one failed
    # with 921 on a one-node-group layout), the last topping up to 16,000
    assert len(doubles) == 15
    assert [int(s.rsplit(" ", 1)[1]) for s in doubles[-3:]] == [4096, 4096, 3712]
    assert max(int(s.rsplit(" ", 1)[1]) for s in doubles) == ballast.STATEMENT_ROWS


def test_a_table_already_large_enough_is_left_alone():
    cur = Cursor(rows=20_000)
    assert ballast._fill(Conn(cur), 16_000, "ndbcluster") == 20_000
    assert not [s for s in cur.sql if s.startswith("INSERT")]
