"""The scenario catalogue, installed with the package: one module per fault family
(``test_<family>.py``: its declarations in ``SCENARIOS`` and one parametrized test), the ``txn``
scenarios, the soak, and the helpers they share.

Run it from any directory (the plugin registers the markers and gives the fixtures):

    pytest --pyargs ndbchaos.catalogue -m nodegroup_loss
    pytest --pyargs ndbchaos.catalogue -m "not slow" --engine galera

Replication between two clusters (``test_replication.py``, ``test_replication_active.py``:
``PAIR_MODULES``) is not declared yet: each is a module of plain scenarios on a pair of clusters of
its own (``helpers.replication_pair``), marked ``replication`` and ``slow``:

    pytest --pyargs ndbchaos.catalogue -m replication --engine ndb

A checkout's ``scenarios/`` collects the same declarations under its own paths (its test ids are
``scenarios/test_<family>.py::test_<family>[<name>]``). A project's own scenarios use the same
helpers:

    from ndbchaos.catalogue import one_data_node, params
"""

from __future__ import annotations

from .helpers import (every_data_node, every_mgm_node, lose_one_sql_node, masters, one_data_node, one_nodegroup,
                      one_per_nodegroup, one_sql_node, params, replicated, sql_only)

#: the modules of the catalogue, in the order of the README's table
MODULES = ("test_datanode_loss", "test_nodegroup_loss", "test_mgmnode_loss", "test_sqlnode_loss", "test_partition",
           "test_client_path", "test_storage", "test_operations", "test_error_insert", "test_txn", "test_soak")
#: the modules of plain scenarios on two clusters of their own (not declarations: no ``SCENARIOS``)
PAIR_MODULES = ("test_replication", "test_replication_active")


def declarations() -> list[tuple[str, object]]:
    """``(module name, declaration)`` of every scenario of the catalogue (``Scenario``, and the
    soak's ``Soak``), in module order; imported on first call."""
    import importlib
    out = []
    for name in MODULES:
        mod = importlib.import_module(f"{__name__}.{name}")
        out += [(name, d) for d in getattr(mod, "SCENARIOS", []) + getattr(mod, "SOAKS", [])]
    return out


__all__ = ["MODULES", "PAIR_MODULES", "declarations", "every_data_node", "every_mgm_node", "lose_one_sql_node",
           "masters", "one_data_node", "one_nodegroup", "one_per_nodegroup", "one_sql_node", "params", "replicated",
           "sql_only"]
