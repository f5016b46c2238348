"""The scenario families: one registry for the pytest markers, the report's features and the
way a family's plan is derived (``ndbchaos.plans``).

    pytest -m nodegroup_loss          # one family
    pytest -m "partition and not slow"
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    plan: str  # node_loss | partition | client_path: the builder in ndbchaos.plans


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("datanode_loss", "one or more data nodes die (kill, stop, freeze)", "node_loss"),
    Family("nodegroup_loss", "every data node of a node group dies", "node_loss"),
    Family("mgmnode_loss", "management node / arbitrator dies", "node_loss"),
    Family("sqlnode_loss", "an SQL node dies", "node_loss"),
    Family("partition", "the network splits", "partition"),
    Family("client_path", "faults between clients and SQL nodes (toxiproxy)", "client_path"),
    Family("storage", "a data node's disk fills up (its data directory on a bounded disk: --data-disk SIZE)",
           "node_loss"),
    Family("operations", "an operator's procedure under load (online add node group, backup and restore, "
           "online schema change), with a fault during a step", "node_loss"),
    Family("error_insert", "NDB's own failure points: a data node crashed or hung by an error-insert code "
           "(needs a build with error insertion)", "node_loss"),
)}

#: markers that are not families
OTHER_MARKERS = {
    "ndb_contract": "runs only against a real MySQL NDB Cluster",
    "docker": "needs a Docker engine",
    "slow": "long-running",
    "soak": "load for a long time under a seeded random schedule of faults (ndbchaos.soak)",
    "txn": "transactional workloads under the catalogue's faults, judged by the anomaly checker (ndbchaos.txn)",
    "replication": "two NDB clusters joined by NDB Cluster Replication, faults on the channel, judged by the "
                   "convergence check (ndbchaos.replication)",
}


def markers() -> dict[str, str]:
    """Every marker the plugin registers: name -> description."""
    return {**{f.name: f.description for f in FAMILIES.values()}, **OTHER_MARKERS}
