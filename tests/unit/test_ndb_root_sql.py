"""root_sql's end line: an answer that lost its output on the way is told apart from an empty
result (no Docker: the container's exec is faked)."""

import pytest

from ndbchaos import topology as TP
from ndbchaos.engines.ndb.shell import SQL_END, SQL_OUTPUT_LOST, NdbShell, sql_answer
from ndbchaos.replication.channel import ReplicationError
from ndbchaos.replication.pair import SqlNode


def test_the_end_line_is_removed_and_its_absence_on_exit_0_is_a_lost_output():
    assert sql_answer(0, f"42\n{SQL_END}\n") == (0, "42\n")
    assert sql_answer(0, f"{SQL_END}\n") == (0, "")  # an empty result, proven complete
    code, out = sql_answer(0, "")
    assert code == SQL_OUTPUT_LOST and "did not arrive whole" in out
    assert sql_answer(0, "42\n")[0] == SQL_OUTPUT_LOST  # cut before the end
    # a failing statement stops mysql before the end line: its exit code and message stay
    assert sql_answer(1, "ERROR 1146 (42S02): Table 'x.y' doesn't exist\n") == (
        1, "ERROR 1146 (42S02): Table 'x.y' doesn't exist\n")


class _Shell(NdbShell):
    def __init__(self, answers):
        super().__init__()
        self.answers, self.sent = list(answers), []

    def exec(self, cluster, node, cmd, timeout=10):
        self.sent.append(cmd[-1])
        return self.answers.pop(0)


def test_the_statements_are_sent_with_the_end_statement_after_them():
    sh = _Shell([(0, f"1\n{SQL_END}\n")] * 3)
    assert sh.root_sql(None, None, "SELECT 1;  ") == (0, "1\n")
    assert sh.sent[-1] == f"SELECT 1\n;SELECT '{SQL_END}'"
    sh.root_sql(None, None, "SELECT 1 -- a trailing comment")  # the ';' is not commented out
    assert sh.sent[-1].endswith(f"comment\n;SELECT '{SQL_END}'")
    sh.root_sql(None, None, "SHOW REPLICA STATUS\\G")  # \G ends the statement itself
    assert sh.sent[-1] == f"SHOW REPLICA STATUS\\G\nSELECT '{SQL_END}';"


class _Engine:
    def __init__(self, answers):
        self.shell = _Shell(answers)

    def root_sql(self, cluster, node, sql, timeout=30):
        return self.shell.root_sql(cluster, node, sql, timeout)


class _Cluster:
    project = "p"

    def __init__(self, answers):
        self.engine = _Engine(answers)


NODE = TP.Node("sql1", TP.SQL, "sql1")


def test_a_read_whose_output_was_lost_is_asked_again_and_anything_else_is_an_error():
    c = _Cluster([(0, ""), (0, f"7\n{SQL_END}\n")])
    assert SqlNode(c, NODE).rows("SELECT COALESCE(MAX(epoch), 0) FROM mysql.ndb_apply_status") == [["7"]]
    assert len(c.engine.shell.sent) == 2
    c = _Cluster([(0, "")] * 3)
    with pytest.raises(ReplicationError, match="did not arrive whole"):
        SqlNode(c, NODE).rows("SELECT 1")
    assert len(c.engine.shell.sent) == 3
    c = _Cluster([(0, ""), (0, f"{SQL_END}\n")])
    with pytest.raises(ReplicationError, match=r"exit -3.*did not arrive whole"):
        SqlNode(c, NODE).rows("START REPLICA")  # ran once: running it again could do it twice
    assert len(c.engine.shell.sent) == 1
