"""NDB Cluster Replication between two clusters this project starts (issue 42).

* ``layout``: the two clusters' layouts, subnets, server ids, the binlog options (a compose overlay);
* ``pair``: ``ReplicationPair``: both clusters up, the link between them, the channel configured
  and verified, observed (lag, state), torn down;
* ``channel``: the channel's state and the lag as typed values, and the SQL they are read with;
* ``convergence``: after a heal, every acknowledged row on the replica exactly once, in its final
  value (a pure check over the history and both sides' rows);
* ``failover``: the manual's channel failover to the standby binlog server, an operator's
  ``Procedure`` of three named steps on the run clock; a fault can land on any of them;
* ``faults``: the applier killed, the binlog server killed (healed by the failover), the link cut,
  a fault on a step of the failover (the operator's retry);
* ``run``: a scenario: the ledger's load on the source, lag sampling, a fault window, the fence
  and the convergence check (``ReplicationReport``).

The scenarios: tests/integration/test_replication.py (marker ``replication``); the figures and
the commands: docs/ndb.md "Replication between two clusters"; the facts: docs/facts.md NDB 15.
"""
