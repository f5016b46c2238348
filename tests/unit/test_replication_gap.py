"""The gap a binlog server writes when it loses the source cluster, found in its own log
(``ndbchaos.replication.gap``), from rows as 9.7.2's SHOW BINLOG EVENTS gives them."""

import pytest

from ndbchaos.replication.channel import ReplicationError
from ndbchaos.replication.gap import Gap, find_gap, parse_last_applied

UUID = "4a4f69c9-ec37-11f1-9218-02420ad55a79"

# rows of a run on 9.7.2: two DDL groups the applier ran, then the gap and the rotation
EVENTS = [
    ["binlog.000003", "7603", "Gtid", "1021", "7680", f"SET @@SESSION.GTID_NEXT= '{UUID}:21'"],
    ["binlog.000003", "7680", "Query", "1021", "7820", "use `ndbchaos`; DROP TABLE IF EXISTS `ledger`"],
    ["binlog.000003", "8084", "Gtid", "1021", "8161", f"SET @@SESSION.GTID_NEXT= '{UUID}:23'"],
    ["binlog.000003", "8161", "Incident", "1021", "8209", "#1 (LOST_EVENTS)"],
    ["binlog.000003", "8209", "Rotate", "1021", "8253", "binlog.000004;pos=4"],
]


def test_the_gap_is_the_first_incident_with_the_gtid_before_it():
    assert find_gap(EVENTS) == Gap("binlog.000003", 8161, f"{UUID}:23", "#1 (LOST_EVENTS)")


def test_no_incident_is_no_gap():
    assert find_gap(EVENTS[:3]) is None
    assert find_gap([]) is None


def test_an_incident_without_a_gtid_before_it_cannot_be_skipped():
    with pytest.raises(ReplicationError, match="no GTID before it"):
        find_gap([EVENTS[1], EVENTS[3]])
    with pytest.raises(ReplicationError, match="no GTID before it"):
        find_gap([EVENTS[3]])


def test_a_gtid_that_is_not_one_is_refused_not_quoted_into_sql():
    bad = [["binlog.000003", "1", "Gtid", "1021", "2", "SET @@SESSION.GTID_NEXT= 'x'; DROP TABLE t; '"],
           EVENTS[3]]
    with pytest.raises(ReplicationError, match="no GTID"):
        find_gap(bad)


def test_a_short_row_is_an_error():
    with pytest.raises(ReplicationError, match="unexpected row"):
        find_gap([["binlog.000003", "1", "Gtid"]])


def test_the_newest_applied_position():
    assert parse_last_applied([["binlog.000003", "7603"]]) == ("binlog.000003", 7603)
    assert parse_last_applied([["./binlog.000003", "7603"]]) == ("binlog.000003", 7603)
    with pytest.raises(ReplicationError, match="no epoch"):
        parse_last_applied([])
    with pytest.raises(ReplicationError, match="not a binlog position"):
        parse_last_applied([["binlog'; DROP", "7603"]])
    with pytest.raises(ReplicationError, match="not a binlog position"):
        parse_last_applied([["binlog.000003", "-1"]])
