"""What every NDB expectation rule reads (``Facts``: the topology, config.ini and the bounds
derived from their timing settings) and the exit codes and sources the rules cite. The rules are
in ``expect_data`` (data node families) and ``expect_restarts`` (management and SQL nodes,
restarts); ``expectations`` picks one by family.
"""

from __future__ import annotations

from ... import topology as TP
from ...errors import UsageError
from .config import NdbConfig
from .mycnf import seconds as option_seconds
from .rules import (CONTAINER_START_SLACK, HEARTBEATS_TO_DETECT, NDB_WAIT_CONNECTED, NDB_WAIT_SETUP, NDBT_EXTRA_WAIT,
                    NDBT_WAIT_CLUSTER_STARTED, OBSERVATION_SLACK, arbitrator_candidates, timings)

SEC51 = "docs/facts.md NDB 5.1"

#: Forced shutdown of a data node that learns, on waking, that the others declared it dead
#: (heartbeat failure while it was frozen): measured on 9.7.2, "We(12) have been declared dead by
#: 13 ... Heartbeat failure", 0.3 s after the thaw.
DECLARED_DEAD_EXIT = 2315
#: ... or, as often, it first finds its transporters to the others closed while it slept: it
#: handles that as connection failures of every other node ("Node 12 leaving cluster due to
#: Connection failure ... Members : 11"), finds itself alone and loses its own check ("Arbitration
#: check lost - missing node group", "Arbitrator decided to shutdown this node"): 2305, 0.35 s
#: after the thaw. Which comes first is a race (docs/ndb.md finding 28: 3 of 13 thaws gave 2305,
#: the master and other nodes alike); either way the woken node never rejoins on its own.
ALONE_THAW_EXIT = 2305

#: the error a backup is aborted with when a data node fails during it (measured on 9.7.2)
BACKUP_ABORTED_BY_NODE_FAILURE = 1326


class Facts:
    """What every family's rule reads: the topology and config.ini, and the bounds derived from
    their timing settings."""

    def __init__(self, family: str, topology: TP.Topology, cfg: NdbConfig):
        topo = topology
        self.family, self.topo, self.cfg = family, topo, cfg
        self.tm = tm = timings(cfg)
        hb, hb_api, arb_to = tm["heartbeat_db_s"], tm["heartbeat_api_s"], tm["arbitration_timeout_s"]
        self.arb_to = arb_to
        self.groups = {g: {m.nodeid for m in ms} for g, ms in topo.nodegroups().items()}
        self.by_name = {n.name: n for n in topo.nodes}
        self.by_id = {n.nodeid: n for n in topo.nodes if n.nodeid is not None}
        self.data_ids = {n.nodeid for n in topo.data_nodes}
        self.candidates = [i for i in arbitrator_candidates(cfg) if i in self.by_id]
        self.sqls = [n.name for n in topo.role(TP.SQL)]
        # Detection bounds (derivation):
        #  * data node failure, silent case: declared dead after 4 missed HeartbeatIntervalDbDb,
        #    at most 5 intervals (manual); a kill closes the TCP connection and is seen at once,
        #    so 5 x interval is an upper bound for both;
        #  * + ArbitrationTimeout when the survivors must ask the arbitrator (ndb.md 5.1 step 5);
        #  * API/management links: the same rule with HeartbeatIntervalDbApi;
        #  * + our observation slack (poll period, exec latency).
        self.det_data = HEARTBEATS_TO_DETECT * hb + OBSERVATION_SLACK
        self.det_data_arb = self.det_data + arb_to
        self.det_api = HEARTBEATS_TO_DETECT * hb_api + OBSERVATION_SLACK
        # Recovery bounds (derivation):
        #  * node restart: the NDB test framework's own bound, waitClusterStarted(120) around every
        #    restart (NdbRestarts.cpp), + the container start;
        #  * system restart: waitClusterStarted(120) + the 60 s the framework adds per loop, + the
        #    SQL nodes reconnecting (ndb-wait-connected), + the container starts;
        #  * SQL node restart: mysqld waits ndb-wait-connected then ndb-wait-setup at most;
        #  * management node: [UNVERIFIED] no documented figure, MGMD_START_BOUND.
        #  (ndb-wait-connected and ndb-wait-setup: the my.cnf in use, a twin's from the user's file)
        wait_connected = option_seconds(cfg.mysqld, "ndb-wait-connected", NDB_WAIT_CONNECTED)
        wait_setup = option_seconds(cfg.mysqld, "ndb-wait-setup", NDB_WAIT_SETUP)
        self.rec_node = NDBT_WAIT_CLUSTER_STARTED + CONTAINER_START_SLACK
        self.rec_system = NDBT_WAIT_CLUSTER_STARTED + NDBT_EXTRA_WAIT + wait_connected + CONTAINER_START_SLACK
        self.rec_sql = wait_connected + wait_setup + CONTAINER_START_SLACK
        self.timing = {**tm, "heartbeats_to_detect": HEARTBEATS_TO_DETECT, "observation_slack_s": OBSERVATION_SLACK,
                       "ndbt_wait_cluster_started_s": NDBT_WAIT_CLUSTER_STARTED,
                       "ndb_wait_connected_s": wait_connected, "ndb_wait_setup_s": wait_setup}

    def name_of(self, x) -> str:
        if isinstance(x, TP.Node):
            return x.name
        if isinstance(x, str):
            if x not in self.by_name:
                raise UsageError(f"{self.family}: no node named {x!r} (nodes: {', '.join(self.by_name)})")
            return x
        return self.by_id[int(x)].name

    def names(self, ids) -> list[str]:
        return [self.by_id[i].name for i in sorted(ids)]

    def ids_of(self, nodes) -> set[int]:
        return {self.by_name[self.name_of(x)].nodeid for x in nodes}

