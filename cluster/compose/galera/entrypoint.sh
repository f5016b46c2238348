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
if [ -f "$datadir/ndbchaos-recover" ]; then
  rm -f "$datadir/ndbchaos-recover" "$datadir/ndbchaos-recovered-position"
  mariadbd --user=mysql --wsrep-recover --log-error=/tmp/wsrep-recover.log >/dev/null 2>&1 || true
  sed -n 's/.*WSREP: Recovered position: *//p' /tmp/wsrep-recover.log | tail -n 1 \
    > "$datadir/ndbchaos-recovered-position"
  cat /tmp/wsrep-recover.log >&2
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
exec mariadbd --user=mysql --wsrep-node-name="$NODE_NAME" \
  --wsrep-cluster-address="gcomm://$GALERA_PEERS" $new
