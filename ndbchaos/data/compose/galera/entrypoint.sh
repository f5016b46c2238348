#!/bin/sh
# Entrypoint of the Galera containers (mounted, so changing it needs no image rebuild).
#   data        mariadbd as a Galera data node; bootstraps the cluster on the first start of the
#               node with BOOTSTRAP=1, joins the others (and itself, on any later start).
#   arbitrator  garbd in the foreground, a voting member that stores no data.
set -eu
role=${1:?role}
peers=$(echo "$GALERA_PEERS" | tr ',' '\n' | sed 's/$/:4567/' | paste -sd, -)

if [ "$role" = arbitrator ]; then
  # Same evs timers as the data nodes (galera.cnf), so all members judge failures alike.
  exec garbd --address "gcomm://$peers" --group ndbchaos --name "$NODE_NAME" \
    --options "evs.keepalive_period=PT1S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S"
fi

datadir=/var/lib/mysql
mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
# A node killed during a state transfer leaves the SST scripts' pid files in its datadir. In a
# container started again every pid comes from a fresh namespace, so the stale pid is soon
# someone else's (often the new SST script's own): wsrep_sst_rsync then waits 30 s for a
# "previous SST" that is itself, fails with 114 and the node aborts instead of rejoining.
# Nothing of the previous start can be alive here, so the files are stale by construction.
rm -f "$datadir/wsrep_sst.pid" "$datadir/rsync_sst.pid" "$datadir/stunnel.pid"
if [ ! -d "$datadir/mysql" ]; then
  mariadb-install-db --user=mysql --datadir="$datadir" --skip-test-db \
    --auth-root-authentication-method=socket --wsrep-on=OFF > /tmp/install-db.log 2>&1 \
    || { cat /tmp/install-db.log >&2; exit 1; }
fi
# Whole-cluster recovery (ndbchaos.engines.galera.GaleraEngine.bootstrap), one-shot markers
# placed in the stopped container's datadir by the framework:
#   ndbchaos-recover    find this node's last committed position (mariadbd --wsrep-recover),
#                       write it to ndbchaos-recovered-position and exit
#   ndbchaos-bootstrap  this node is the most advanced: mark it safe and form a new primary
wsrep_opts="--wsrep-node-name=$NODE_NAME --wsrep-cluster-address=gcomm://$GALERA_PEERS"
if [ -f "$datadir/ndbchaos-recover" ]; then
  rm -f "$datadir/ndbchaos-recover" "$datadir/ndbchaos-recovered-position"
  # The same wsrep options as a normal start: without a cluster address mariadbd aborts before
  # recovering ("rsync SST method requires wsrep_cluster_address to be configured on startup").
  # mariadbd (as mysql) creates its own log; what it prints before opening it goes to stderr.
  # Both are kept in the datadir; no position line means the recovery failed, and the engine
  # then refuses to bootstrap blindly, quoting this log.
  rm -f /tmp/wsrep-recover.log
  mariadbd --user=mysql $wsrep_opts --wsrep-recover --log-error=/tmp/wsrep-recover.log \
    >/tmp/wsrep-recover.stderr 2>&1 || true
  cat /tmp/wsrep-recover.stderr /tmp/wsrep-recover.log > "$datadir/ndbchaos-recover.log" 2>/dev/null || true
  sed -n 's/.*WSREP: Recovered position: *//p' "$datadir/ndbchaos-recover.log" | tail -n 1 \
    > "$datadir/ndbchaos-recovered-position"
  cat "$datadir/ndbchaos-recover.log" >&2
  exit 0
fi
new=""
# grastate.dat exists once the node has been part of the cluster: every later start joins.
if [ "${BOOTSTRAP:-0}" = 1 ] && [ ! -f "$datadir/grastate.dat" ]; then
  new=--wsrep-new-cluster
fi
if [ -f "$datadir/ndbchaos-bootstrap" ]; then
  rm -f "$datadir/ndbchaos-bootstrap"
  sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$datadir/grastate.dat"
  new=--wsrep-new-cluster
fi
exec mariadbd --user=mysql $wsrep_opts $new
