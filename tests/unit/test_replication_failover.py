"""The channel failover's SQL and the standby's answers (no Docker)."""

import pytest

from ndbchaos.replication.channel import ReplicationError
from ndbchaos.replication.failover import parse_position, position_sql


def test_the_position_is_right_after_the_last_applied_epoch_in_the_standby_binlog():
    sql = position_sql(90194313225)
    assert "WHERE epoch = 90194313225" in sql and "next_position" in sql and "SUBSTRING_INDEX(next_file" in sql
    assert parse_position([["binlog.000003", "7608"]], 90194313225, "sql2") == ("binlog.000003", 7608)


def test_a_standby_without_that_epoch_or_with_a_strange_row_is_refused_in_one_line():
    with pytest.raises(ReplicationError, match="no ndb_binlog_index row for epoch 42"):
        parse_position([], 42, "sql2")
    with pytest.raises(ReplicationError, match="unexpected"):
        parse_position([["binlog.000003", "x"]], 42, "sql2")
