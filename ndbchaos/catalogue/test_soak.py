"""soak: load for --soak-duration seconds (ten minutes by default) while a seeded schedule of
faults plays out, each healed and the cluster healthy again before the next (``ndbchaos.soak``).

    pytest -m soak                                  # ten minutes
    pytest -m soak --soak-duration 3600 --seed 7    # an hour; the same seed, the same schedule

The menu is the catalogue's own declarations, so each fault of the schedule is judged against
the engine's expectation for it exactly as the scenario of that name is; the whole history is
judged once more at the end (no acknowledged write lost, errors of the allowed classes). Each
fault reaches the load as in its own scenario (``ndbchaos.soak.menu_on``): on Galera the SQL node
loss takes a toxiproxy proxy down, so the soak's clients go through the proxies. Marked ``slow``
too, so the default run (``-m "not slow"``) leaves it out.
"""

from __future__ import annotations

import pytest

from ndbchaos.soak import Soak
from ndbchaos.catalogue import test_datanode_loss, test_mgmnode_loss, test_partition, test_sqlnode_loss

pytestmark = [pytest.mark.soak, pytest.mark.slow, pytest.mark.docker]


def declared(*names: str) -> tuple:
    """The catalogue's declarations of these names."""
    catalogue = {sc.name: sc for mod in (test_datanode_loss, test_mgmnode_loss, test_partition, test_sqlnode_loss)
                 for sc in mod.SCENARIOS}
    return tuple(catalogue[n] for n in names)


#: the faults a cluster survives, of five kinds: a node dies, hangs, leaves; the arbitrator dies;
#: an SQL node dies; a data node is cut off
SURVIVABLE = ("kill_one_data_node", "freeze_one_data_node", "graceful_stop_one_data_node", "kill_arbitrator",
              "lose_one_sql_node", "isolate_one_data_node")

SOAKS = [
    Soak("soak_mixed", "steady load under a seeded random schedule of survivable faults",
         menu=declared(*SURVIVABLE)),
    # The same schedule under transactions (plain reads): the anomaly checker judges the whole
    # run against the engine's promise (docs/transactions.md), as in the txn scenarios.
    Soak("soak_txn", "transactions under a seeded random schedule of survivable faults",
         menu=declared(*SURVIVABLE), workload="list_append"),
]


@pytest.mark.parametrize("sk", [pytest.param(sk, id=sk.name) for sk in SOAKS])
def test_soak(sk, soak):
    soak(sk)
