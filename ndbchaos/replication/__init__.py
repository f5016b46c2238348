"""NDB Cluster Replication between two clusters this project starts (issue 42).

* ``layout``: the two clusters' layouts, subnets, server ids, the binlog options (a compose overlay);
* ``pair``: ``ReplicationPair``: both clusters up, the link between them, the channel configured
  and verified, observed (lag, state), torn down;
* ``channel``: the channel's state and the lag as typed values, and the SQL they are read with;
* ``convergence``: after a heal, every acknowledged row on the replica exactly once, in its final
  value (a pure check over the history and both sides' rows).
"""
