#!/bin/bash
# Entrypoint of the ndbchaos/ndb image (a MySQL Cluster binary distribution on Debian).
#
# It takes the commands the official MySQL Cluster image takes, so ndbchaos/data/compose/ndb.yml runs
# unchanged on either image:
#
#   ndb_mgmd [args]      management server, foreground, config from /etc/mysql-cluster.cnf
#   ndbd|ndbmtd [args]   data node, foreground (the process is the angel; it forks the data node)
#   mysqld [args]        SQL node; also when the first argument is an option (-...)
#   anything else        run as given (ndb_mgm, ndb_waiter, mysql, bash ...)
#
# The first start of an SQL node on an empty data directory initializes it and sets the root
# password from the environment, on the same start (no temporary server):
#   MYSQL_ROOT_PASSWORD          the root password
#   MYSQL_ALLOW_EMPTY_PASSWORD   yes: root keeps an empty password
#   MYSQL_RANDOM_ROOT_PASSWORD   yes: a random password, printed once as GENERATED ROOT PASSWORD
#   MYSQL_ROOT_HOST              also create root@<host> with the same password (default: none)
#   MYSQL_DATABASE, MYSQL_USER, MYSQL_PASSWORD   a database and a user with all rights on it
#   /docker-entrypoint-initdb.d/*.sql            run once, after the above
# With none of the password variables set, a random password is generated (as above).
set -eu

say() { echo "[Entrypoint] $*"; }
die() { echo "[Entrypoint] ERROR: $*" >&2; exit 1; }

has_opt() {  # has_opt NAME ARGS... : is --NAME[=...] among ARGS?
  local name=$1 a; shift
  for a in "$@"; do
    case "$a" in --"$name"|--"$name"=*) return 0 ;; esac
  done
  return 1
}

sql_quote() { printf "%s" "$1" | sed "s/\\\\/\\\\\\\\/g; s/'/\\\\'/g"; }

if [ $# -eq 0 ]; then set -- mysqld; fi
case "$1" in -*) set -- mysqld "$@" ;; esac

cmd=$1
shift
case "$cmd" in
  ndb_mgmd)
    say "Starting ndb_mgmd"
    # Options for this start only: a rolling configuration change (ndbchaos.engines.ndb.rolling)
    # leaves them in the data directory, one per line, e.g. "--config-file=<new config.ini>" and
    # "--reload"; they are read and removed here, so the start after this one is a plain one
    # again (ndb_mgmd then uses its configuration cache, which holds what was reloaded).
    once=${NDBCHAOS_MGMD_ONCE:-/var/lib/mysql/ndbchaos-mgmd-once}
    opts=()
    if [ -f "$once" ]; then
      while IFS= read -r line; do
        [ -n "$line" ] && opts+=("$line")
      done < "$once"
      rm -f "$once"
      say "Options for this start only: ${opts[*]}"
    fi
    extra=()
    if ! has_opt config-file "$@" "${opts[@]}" && ! printf '%s\n' "$@" "${opts[@]}" | grep -qx -- '-f'; then
      extra+=(-f /etc/mysql-cluster.cnf)
    fi
    exec ndb_mgmd "$@" "${opts[@]}" "${extra[@]}" --nodaemon
    ;;
  ndbd|ndbmtd)
    say "Starting $cmd"
    exec "$cmd" "$@" --nodaemon
    ;;
  mysqld) ;;
  *) exec "$cmd" "$@" ;;
esac

# -- SQL node ---------------------------------------------------------------------------------
# Options the image supplies only when neither the option files nor the arguments set them.
defaults=$(mysqld "$@" --print-defaults 2>/dev/null || true)
args=("$@")
has_opt datadir $defaults "$@" || args+=(--datadir=/var/lib/mysql)
has_opt basedir $defaults "$@" || args+=(--basedir=/usr/local/mysql)
if [ "$(id -u)" = 0 ] && ! has_opt user $defaults "$@"; then args+=(--user=mysql); fi
datadir=$(mysqld "${args[@]}" --verbose --help 2>/dev/null | awk '$1 == "datadir" { print $2 }')
datadir=${datadir:-/var/lib/mysql}
datadir=${datadir%/}

if [ ! -d "$datadir/mysql" ]; then
  say "Initializing the data directory $datadir"
  mkdir -p "$datadir"
  chown mysql:mysql "$datadir" 2>/dev/null || true
  # --initialize needs an empty directory: the volume may hold lost+found or a stale socket.
  if [ -n "$(ls -A "$datadir" 2>/dev/null | grep -v '^lost+found$')" ]; then
    die "$datadir is not empty but has no mysql system schema; refusing to initialize over it"
  fi
  # No NDB during initialization: the system schema is local (InnoDB) to each SQL node.
  mysqld "${args[@]}" --initialize-insecure --skip-ndbcluster \
    || die "mysqld --initialize-insecure failed"

  init=$(mktemp /tmp/ndbchaos-init.XXXXXX.sql)
  chmod 644 "$init"
  if [ -n "${MYSQL_ROOT_PASSWORD:-}" ]; then
    pw=$MYSQL_ROOT_PASSWORD
  elif [ "${MYSQL_ALLOW_EMPTY_PASSWORD:-}" = yes ] || [ "${MYSQL_ALLOW_EMPTY_PASSWORD:-}" = true ]; then
    pw=""
  else
    pw=$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | cut -c1-20)
    say "GENERATED ROOT PASSWORD: $pw"
  fi
  {
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY '$(sql_quote "$pw")';"
    if [ -n "${MYSQL_ROOT_HOST:-}" ] && [ "$MYSQL_ROOT_HOST" != localhost ]; then
      h=$(sql_quote "$MYSQL_ROOT_HOST")
      echo "CREATE USER IF NOT EXISTS 'root'@'$h' IDENTIFIED BY '$(sql_quote "$pw")';"
      echo "GRANT ALL ON *.* TO 'root'@'$h' WITH GRANT OPTION;"
    fi
    if [ -n "${MYSQL_DATABASE:-}" ]; then
      echo "CREATE DATABASE IF NOT EXISTS \`${MYSQL_DATABASE//\`/}\`;"
    fi
    if [ -n "${MYSQL_USER:-}" ]; then
      [ -n "${MYSQL_PASSWORD:-}" ] || die "MYSQL_USER is set but MYSQL_PASSWORD is not"
      u=$(sql_quote "$MYSQL_USER")
      echo "CREATE USER IF NOT EXISTS '$u'@'%' IDENTIFIED BY '$(sql_quote "$MYSQL_PASSWORD")';"
      if [ -n "${MYSQL_DATABASE:-}" ]; then
        echo "GRANT ALL ON \`${MYSQL_DATABASE//\`/}\`.* TO '$u'@'%';"
      fi
    fi
    for f in /docker-entrypoint-initdb.d/*.sql; do
      [ -f "$f" ] && { cat "$f"; echo; }
    done
  } > "$init"
  args+=(--init-file="$init")
fi

say "Starting MySQL $(mysqld --version | sed 's/^.*Ver //')"
exec mysqld "${args[@]}"
