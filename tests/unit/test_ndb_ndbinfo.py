"""ndbinfo query helpers and the readiness judgements over their rows (docs/facts.md NDB 4, 10)."""

import pytest

from ndbchaos.engines.ndb import ndbinfo


class FakeCursor:
    def __init__(self, tables):
        self.tables, self.sql = tables, []

    def execute(self, sql):
        self.sql.append(sql)
        table = sql.split("ndbinfo.")[1].split()[0]
        cols, self._rows = self.tables[table]
        self.description = [(c, None) for c in cols]

    def fetchall(self):
        return self._rows


def test_queries_return_dicts_by_column_name():
    cur = FakeCursor({
        "nodes": (["node_id", "uptime", "status", "start_phase", "config_generation"],
                  [(11, 30, b"STARTED", 0, 1), (12, 2, "STARTING", 5, 1)]),
        "arbitrator_validity_summary": (["arbitrator", "arb_ticket", "arb_connected", "consensus_count"],
                                        [(1, "6b8d0001", "Yes", 4)]),
        "membership": (["node_id", "group_id", "president", "arbitrator", "arb_state", "arb_connected"],
                       [(11, 0, 11, 1, "ARBIT_RUN", "Yes")]),
        "restart_info": (["node_id", "node_restart_status", "total_restart_secs"], [(12, "Restart completed", 31)]),
    })
    rows = ndbinfo.nodes(cur)
    assert rows[0] == {"node_id": 11, "uptime": 30, "status": "STARTED", "start_phase": 0, "config_generation": 1}
    assert ndbinfo.arbitrator_validity_summary(cur)[0]["arb_connected"] == "Yes"
    assert ndbinfo.membership(cur)[0]["president"] == 11
    assert ndbinfo.restart_info(cur)[0]["total_restart_secs"] == 31
    assert cur.sql[0] == "SELECT * FROM ndbinfo.nodes"
    with pytest.raises(ValueError):
        ndbinfo.query(cur, "users; DROP TABLE x")


def test_nodes_ready():
    rows = [{"node_id": 11, "status": "STARTED"}, {"node_id": 12, "status": "STARTING"}]
    ok, why = ndbinfo.nodes_ready(rows, [11, 12, 13])
    assert not ok and why == ["data node 12 is STARTING in ndbinfo.nodes", "data node 13 missing from ndbinfo.nodes"]
    assert ndbinfo.nodes_ready(rows[:1], [11]) == (True, [])


@pytest.mark.parametrize("rows,agreed,arb", [
    ([{"arbitrator": 1, "arb_ticket": "t", "arb_connected": "Yes", "consensus_count": 4}], True, 1),
    ([{"arbitrator": 1, "arb_ticket": "t", "arb_connected": "No", "consensus_count": 4}], False, 1),
    ([{"arbitrator": 0, "arb_ticket": "", "arb_connected": "No", "consensus_count": 4}], False, None),
    ([{"arbitrator": 1, "arb_connected": "Yes"}, {"arbitrator": 2, "arb_connected": "Yes"}], False, None),
    ([], False, None),
])
def test_arbitrator_summary(rows, agreed, arb):
    s = ndbinfo.arbitrator_summary(rows)
    assert s["agreed"] is agreed and s["arbitrator"] == arb and s["rows"] == len(rows)


def test_president_and_tsv():
    assert ndbinfo.president([{"president": 11}, {"president": 11}]) == 11
    assert ndbinfo.president([{"president": 11}, {"president": 13}]) is None
    text = ("mysql: [Warning] Using a password on the command line interface can be insecure.\n"
            "node_id\tstatus\tstart_phase\n11\tSTARTED\t0\n12\tSTARTING\t5\nbroken line\n13\tNULL\t0\n")
    assert ndbinfo.parse_tsv(text) == [{"node_id": 11, "status": "STARTED", "start_phase": 0},
                                       {"node_id": 12, "status": "STARTING", "start_phase": 5},
                                       {"node_id": 13, "status": None, "start_phase": 0}]
    assert ndbinfo.parse_tsv("") == []


def test_succession_is_the_join_order_not_node_ids():
    # measured on 9.7.2 (ndbinfo.membership after a start): the president first, then as joined
    rows = [{"node_id": 11, "president": 11, "succession_order": 1},
            {"node_id": 12, "president": 11, "succession_order": 3},
            {"node_id": 13, "president": 11, "succession_order": 4},
            {"node_id": 14, "president": 11, "succession_order": 2}]
    assert ndbinfo.succession(rows) == [11, 14, 12, 13]
    assert ndbinfo.succession([{**rows[0], "president": 12}, *rows[1:]]) == []  # no agreed president
    assert ndbinfo.succession([]) == []
