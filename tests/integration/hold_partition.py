"""A controller that dies mid-partition (run by tests/integration/test_inventory.py).

    python tests/integration/hold_partition.py INVENTORY NODE

Attaches to the inventory's cluster, isolates NODE from every other member with iptables on the
hosts (each chain guarded on its host for NDBCHAOS_GUARD_S seconds), prints ``APPLIED <chain>``
and then waits forever, for the test to SIGKILL it: nothing of this process heals anything.
"""

import sys
import time

from ndbchaos.engines import get_engine
from ndbchaos.faults import grudge as G
from ndbchaos.faults.partition import Partition, members
from ndbchaos.runtimes.inventory import InventoryCluster, load_inventory


def main(path: str, node: str) -> None:
    inv = load_inventory(path)
    cluster = InventoryCluster(get_engine(inv.engine), inv)
    cluster.verify()
    cluster.discover()
    names = [n.name for n in members(cluster)]
    fault = Partition(cluster, G.isolate(names, node), kind="isolate", focus=[node])
    fault.inject()
    print(f"APPLIED {fault.chain}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
