"""The inventory backend: the same scenarios against an existing cluster on hosts the framework
did not start, reached through testinfra (``ssh://`` tested here; ``ansible://``, ``docker://``,
``local://`` are testinfra's too). docs/inventory.md is the user's guide.

    spec       the inventory file: read, validated, one-line errors (pure)
    remote     a host (testinfra) and ``HostNode``, the node handle faults and engines drive
    guard      on-host expiry of what a fault leaves (iptables chains, frozen processes)
    cluster    ``InventoryCluster`` (verify, attach, reset, detach) and ``reap_inventory``
"""

from .cluster import InventoryCluster, reap_inventory
from .spec import Inventory, InventoryError
from .spec import load as load_inventory

__all__ = ["Inventory", "InventoryCluster", "InventoryError", "load_inventory", "reap_inventory"]
