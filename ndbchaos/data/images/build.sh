#!/usr/bin/env bash
# Builds the framework's local images from Debian packages (no registry needed):
#   debootstrap --variant=minbase bookworm ROOTFS, then `tar | docker import`.
# Each image is tagged with a content hash of its own recipe (the function that builds it + its
# package list), so an image is rebuilt exactly when its recipe changes and reused otherwise;
# editing another image's recipe leaves its tag alone.
#
# The toxiproxy image is the exception: a static Go binary (toxiproxy-server, pinned below, built
# with `go install` and CGO_ENABLED=0) imported alone into an otherwise empty image (FROM scratch).
#
# The ndb image is built only when NDBCHAOS_NDB_DIST names a MySQL Cluster binary distribution for
# Linux (the official generic tarball .tar.xz/.tar.gz, or an unpacked one): Debian's runtime
# libraries + the distribution's programs in /usr/local/mysql + our entrypoint (ndb/entrypoint.sh,
# which takes the official image's commands). Its tag hashes the recipe, the entrypoint and the
# distribution's content, so another distribution gives another image.
#
#   ndbchaos/data/images/build.sh [galera|tools|toxiproxy|ndb|ndbhost|all]
#                                                              build what is missing (all: ndb too
#                                                              when NDBCHAOS_NDB_DIST is set; ndbhost,
#                                                              the inventory lab's host, on demand)
#   ndbchaos/data/images/build.sh --tag NAME                         print the tag the recipe gives NAME
#   ndbchaos/data/images/build.sh --check-dist                       validate NDBCHAOS_NDB_DIST (one line)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mirror=${NDBCHAOS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
toxiproxy_version=v2.12.0

packages() {
  case "$1" in
    # mariadb-server pulls galera-4, rsync, socat, iproute2, procps (SST and ss/ps for probes).
    galera) echo "mariadb-server,mariadb-client,galera-4,galera-arbitrator-4,iproute2,iptables,procps,netcat-openbsd,ca-certificates" ;;
    # The fault helper: joins a target's network namespace; needs iptables, ip/tc and a TCP probe.
    tools)  echo "iptables,iproute2,netcat-openbsd,procps" ;;
    # Not Debian packages: the Go module the toxiproxy image is built from.
    toxiproxy) echo "go:github.com/Shopify/toxiproxy/v2/cmd/server@$toxiproxy_version" ;;
    # What the distribution's programs link (ldd of every binary; the distribution's README lists
    # the same set), + procps for ps/kill in a node and ca-certificates for TLS to the cluster.
    ndb)    echo "libc6,libstdc++6,libgcc-s1,libssl3,zlib1g,libzstd1,liblz4-1,libaio1,libnuma1,libtinfo6,procps,ca-certificates" ;;
    # A "host" of the inventory lab (docs/inventory.md): the ndb image's runtime + the
    # distribution, and what a Linux server has: sshd as its main process, iptables, ip, nc.
    ndbhost) echo "$(packages ndb),openssh-server,iptables,iproute2,netcat-openbsd" ;;
    *) echo "unknown image '$1' (expected galera, tools, toxiproxy, ndb or ndbhost)" >&2; return 2 ;;
  esac
}

tag_of() {
  local name=$1 hash
  case "$name" in
    toxiproxy) hash=$( { declare -f build_toxiproxy; packages "$name"; } | sha256sum | cut -c1-12) ;;
    ndb) local digest
         digest=$(dist_digest) || return 1
         hash=$( { declare -f build_ndb bootstrap_rootfs stage_dist; packages ndb; cat "$here/ndb/entrypoint.sh";
                   echo "$digest"; } | sha256sum | cut -c1-12) ;;
    ndbhost) local base
         base=$(tag_of ndb) || return 1
         hash=$( { declare -f build_ndbhost bootstrap_rootfs; packages ndbhost; cat "$here/ndbhost/init.sh";
                   echo "$base"; } | sha256sum | cut -c1-12) ;;
    *) packages "$name" >/dev/null || return 2
       hash=$( { declare -f build_one bootstrap_rootfs; packages "$name"; } | sha256sum | cut -c1-12) ;;
  esac
  echo "ndbchaos/$name:$hash"
}

# -- the NDB distribution ---------------------------------------------------------------------
# Programs copied into the image when the distribution has them; the first five are required.
ndb_required="ndb_mgmd ndbmtd ndb_mgm mysqld mysql"
ndb_optional="ndbd ndb_waiter mysqladmin ndb_config ndb_restore ndbinfo_select_all ndb_desc ndb_show_tables
  ndb_select_all ndb_select_count ndb_print_backup_file ndb_error_reporter ndb_top"

dist_fail() { echo "NDBCHAOS_NDB_DIST=$dist: $*" >&2; return 1; }

# Cheap checks that need no unpacking: the path exists and has a form we read.
dist=${NDBCHAOS_NDB_DIST:-}
dist_kind() {
  [ -n "$dist" ] || { echo "NDBCHAOS_NDB_DIST is not set (a MySQL Cluster .tar.xz/.tar.gz or an unpacked one)" >&2; return 1; }
  [ -e "$dist" ] || { dist_fail "no such file or directory"; return 1; }
  if [ -d "$dist" ]; then echo dir; return 0; fi
  case "$dist" in
    *.tar.xz|*.txz|*.tar.gz|*.tgz) [ -r "$dist" ] && [ -s "$dist" ] || { dist_fail "not a readable, non-empty file"; return 1; }
                                   echo tar ;;
    *) dist_fail "expected a .tar.xz or .tar.gz binary distribution, or a directory"; return 1 ;;
  esac
}

# sha256 of the distribution's content (the tarball's bytes; for a directory, every file's path
# and bytes), cached by path, size and mtime so that repeated --tag calls stay fast.
dist_digest() {
  local kind key cache_f hit sum
  kind=$(dist_kind) || return 1
  if [ "$kind" = tar ]; then
    key="tar $(readlink -f "$dist") $(stat -Lc '%s %Y' "$dist")"
  else
    key="dir $(readlink -f "$dist") $(cd "$dist" && find -L . -type f -printf '%P %s %T@\n' 2>/dev/null | sort | sha256sum | cut -c1-32)"
  fi
  cache_f=${NDBCHAOS_CACHE:-$HOME/.cache/ndbchaos}/ndb-dist-digests
  hit=$(grep -F -x -- "$key" -A1 "$cache_f" 2>/dev/null | sed -n 2p || true)
  if [ -n "$hit" ]; then echo "$hit"; return 0; fi
  if [ "$kind" = tar ]; then
    sum=$(sha256sum < "$dist" | cut -c1-64)
  else
    sum=$(cd "$dist" && find -L . -type f -print0 | sort -z | xargs -0 -r sha256sum | sha256sum | cut -c1-64)
  fi
  mkdir -p "$(dirname "$cache_f")"
  printf '%s\n%s\n' "$key" "$sum" >> "$cache_f"
  echo "$sum"
}

# ELF machine of this host, as e_machine bytes 18-19 (little endian) read by od.
host_machine() {
  case "$(uname -m)" in
    x86_64) echo "3e 00 x86_64" ;;
    aarch64|arm64) echo "b7 00 aarch64" ;;
    *) echo "?? ?? $(uname -m)" ;;
  esac
}

# Unpack (or copy) the distribution's programs, libraries and share/ into STAGE/usr/local/mysql and
# check it: the required programs exist, are ELF executables for this host's architecture.
stage_dist() {
  local stage=$1 kind top="" src b f have want m part parts=()
  kind=$(dist_kind) || return 1
  if [ "$kind" = tar ]; then
    # The generic tarball has one top folder (mysql-cluster-<version>-linux-...); bin/ndbmtd's path
    # inside the archive tells it. Listing reads the whole archive once.
    local members
    members=$(tar -tf "$dist" 2>/dev/null) || { dist_fail "not a readable tar archive"; return 1; }
    b=$(printf '%s\n' "$members" | grep -m1 -E '(^|/)bin/ndbmtd$' || true)
    [ -n "$b" ] || { dist_fail "no bin/ndbmtd in the archive: not a MySQL Cluster binary distribution"; return 1; }
    top=${b%bin/ndbmtd}
    for part in bin lib share; do
      printf '%s\n' "$members" | grep -q -m1 "^${top}${part}/" && parts+=("${top}${part}")
    done
    mkdir -p "$stage/src"
    # Only what the image uses: bin/, lib/ and share/, without static libraries and debug builds.
    tar -xf "$dist" -C "$stage/src" --exclude='*.a' --exclude='*/debug/*' --exclude='*-debug' "${parts[@]}" \
      || { dist_fail "unpacking failed"; return 1; }
    src=$stage/src/$top
  else
    src=$dist
    [ -f "$src/bin/ndbmtd" ] || { dist_fail "no bin/ndbmtd in this directory: not a MySQL Cluster binary distribution"; return 1; }
  fi
  for b in $ndb_required; do
    [ -f "$src/bin/$b" ] || { dist_fail "no bin/$b: the distribution must have $ndb_required"; return 1; }
  done
  want=$(host_machine)
  for b in $ndb_required; do
    have=$(od -An -tx1 -N4 "$src/bin/$b" | tr -d ' \n')
    [ "$have" = 7f454c46 ] || { dist_fail "bin/$b is not an ELF executable"; return 1; }
    m=$(od -An -tx1 -j18 -N2 "$src/bin/$b" | sed 's/^ *//')
    if [ "$m" != "${want% *}" ]; then
      case "$m" in
        "3e 00") m=x86_64 ;; "b7 00") m=aarch64 ;; "28 00") m=arm ;; "03 00") m=i386 ;;
        "15 00") m=ppc64 ;; "16 00") m=s390x ;; *) m="ELF machine ${m/ /}" ;;
      esac
      dist_fail "bin/$b is built for $m, this host is ${want##* }"
      return 1
    fi
  done
  mkdir -p "$stage/usr/local/mysql/bin"
  for b in $ndb_required $ndb_optional; do
    [ -f "$src/bin/$b" ] && cp -p "$src/bin/$b" "$stage/usr/local/mysql/bin/"
  done
  if [ -d "$src/lib" ]; then
    cp -a "$src/lib" "$stage/usr/local/mysql/"
    find "$stage/usr/local/mysql/lib" \( -name '*.a' -o -path '*/debug' \) -prune -exec rm -rf {} +
  fi
  [ -d "$src/share" ] && cp -a "$src/share" "$stage/usr/local/mysql/"
  for f in LICENSE LICENSE.router README; do [ -f "$src/$f" ] && cp -p "$src/$f" "$stage/usr/local/mysql/"; done
  rm -rf "$stage/src"
  return 0
}

build_ndb() {
  local tag rootfs start version
  tag=$(tag_of ndb) || return 1
  if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "image $tag present"
    return 0
  fi
  rootfs=$(mktemp -d /tmp/ndbchaos-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' RETURN
  start=$SECONDS
  # The distribution first: a bad one fails in seconds, before any package is fetched.
  echo "building $tag: checking and unpacking $NDBCHAOS_NDB_DIST..."
  stage_dist "$rootfs" || return 1
  echo "building $tag from Debian packages (debootstrap, about a minute) + the distribution..."
  local stage
  stage=$(mktemp -d /tmp/ndbchaos-stage.XXXXXX)
  mv "$rootfs/usr" "$stage/usr"
  bootstrap_rootfs ndb "$rootfs" || { rm -rf "$stage"; return 1; }
  cp -a "$stage/usr/local/mysql" "$rootfs/usr/local/"
  rm -rf "$stage"
  install -m 0755 "$here/ndb/entrypoint.sh" "$rootfs/usr/local/bin/docker-entrypoint.sh"
  # The mysql account the SQL node runs as (my.cnf: user=mysql), and the directories the
  # programs expect: DataDir (a volume in compose), mysqld's socket, ndb_mgmd's default configdir.
  chroot "$rootfs" groupadd --system mysql
  chroot "$rootfs" useradd --system --gid mysql --home-dir /var/lib/mysql --no-create-home \
      --shell /usr/sbin/nologin mysql
  # (/var/run is a symlink to /run: create the socket folder through the real path, inside the root.)
  mkdir -p "$rootfs/var/lib/mysql" "$rootfs/var/lib/mysql-files" "$rootfs/run/mysqld" \
           "$rootfs/usr/local/mysql/mysql-cluster" "$rootfs/docker-entrypoint-initdb.d"
  chroot "$rootfs" chown mysql:mysql /var/lib/mysql /var/lib/mysql-files /run/mysqld
  version=$(basename "$NDBCHAOS_NDB_DIST" | sed -n 's/^mysql-cluster-\([0-9][0-9.]*\).*/\1/p')
  tar -C "$rootfs" -c . | docker import \
      -c 'ENV PATH=/usr/local/mysql/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      -c 'ENV MYSQL_UNIX_PORT=/var/run/mysqld/mysqld.sock' \
      -c 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' -c 'CMD ["mysqld"]' \
      -c 'EXPOSE 3306 1186 2202' \
      -c 'LABEL org.opencontainers.image.source=ndbchaos' \
      -c "LABEL org.opencontainers.image.version=${version:-unknown}" - "$tag" >/dev/null
  # Every program must find its libraries in the image (a missing one is a recipe bug).
  local out
  if ! out=$(docker run --rm --entrypoint sh "$tag" -c \
        'for b in /usr/local/mysql/bin/*; do ldd "$b" | grep "not found" | sed "s|^|$b: |"; done; mysqld --version' 2>&1) \
     || printf '%s\n' "$out" | grep -q "not found"; then
    docker rmi -f "$tag" >/dev/null 2>&1 || true
    echo "the image $tag cannot run the distribution: $(printf '%s\n' "$out" | grep -m1 . )" >&2
    return 1
  fi
  echo "built $tag ($(printf '%s\n' "$out" | tail -n 1)) in $((SECONDS - start))s"
}


# debootstrap NAME's package list into ROOTFS (minbase bookworm), then trim what a container never
# needs. Prints progress; on failure the last lines of debootstrap's log.
# The inventory lab's host: Debian + sshd + the programs of the ndb image (copied from it, so both
# run the same distribution). Its main process is sshd (init.sh); the cluster's processes are
# started over ssh, as on any server.
build_ndbhost() {
  local tag base rootfs start cid
  tag=$(tag_of ndbhost) || return 1
  if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "image $tag present"
    return 0
  fi
  build_ndb >/dev/null || return 1
  base=$(tag_of ndb) || return 1
  rootfs=$(mktemp -d /tmp/ndbchaos-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' RETURN
  start=$SECONDS
  echo "building $tag from Debian packages (debootstrap, about a minute) + the programs of $base..."
  bootstrap_rootfs ndbhost "$rootfs" || return 1
  cid=$(docker create "$base") || return 1
  mkdir -p "$rootfs/usr/local"
  if ! docker cp "$cid:/usr/local/mysql" - | tar -x -C "$rootfs/usr/local"; then
    docker rm -f "$cid" >/dev/null; echo "copying /usr/local/mysql out of $base failed" >&2; return 1
  fi
  docker rm -f "$cid" >/dev/null
  install -m 0755 "$here/ndbhost/init.sh" "$rootfs/usr/local/sbin/ndbchaos-host-init"
  chroot "$rootfs" groupadd --system mysql
  chroot "$rootfs" useradd --system --gid mysql --home-dir /var/lib/mysql --no-create-home \
      --shell /usr/sbin/nologin mysql
  mkdir -p "$rootfs/var/lib/mysql" "$rootfs/run/mysqld" "$rootfs/run/sshd" "$rootfs/root/.ssh" "$rootfs/etc/ndb"
  chroot "$rootfs" chown mysql:mysql /var/lib/mysql /run/mysqld
  chmod 700 "$rootfs/root/.ssh"
  rm -f "$rootfs"/etc/ssh/ssh_host_*  # each host makes its own keys when it starts
  tar -C "$rootfs" -c . | docker import \
      -c 'ENV PATH=/usr/local/mysql/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      -c 'ENTRYPOINT ["/usr/local/sbin/ndbchaos-host-init"]' -c 'EXPOSE 22' \
      -c 'LABEL org.opencontainers.image.source=ndbchaos' - "$tag" >/dev/null
  echo "built $tag in $((SECONDS - start))s"
}

bootstrap_rootfs() {
  local name=$1 rootfs=$2 start=$SECONDS
  command -v debootstrap >/dev/null || { echo "debootstrap is missing (apt-get install debootstrap)" >&2; return 1; }
  debootstrap --variant=minbase --include="$(packages "$name")" bookworm "$rootfs" "$mirror" \
    > "$rootfs.log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    printf '  ... %3ds %s\n' $((SECONDS - start)) "$(tail -n 1 "$rootfs.log" | cut -c1-70)"
  done
  if ! wait "$pid"; then
    echo "debootstrap failed for $name; last lines of its log:" >&2
    tail -n 20 "$rootfs.log" >&2
    rm -f "$rootfs.log"
    return 1
  fi
  rm -f "$rootfs.log"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
         "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
}

build_one() {
  local name=$1 tag rootfs start
  tag=$(tag_of "$name")
  if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "image $tag present"
    return 0
  fi
  rootfs=$(mktemp -d /tmp/ndbchaos-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' RETURN
  start=$SECONDS
  echo "building $tag from Debian packages (debootstrap, about a minute)..."
  bootstrap_rootfs "$name" "$rootfs" || return 1
  tar -C "$rootfs" -c . | docker import \
      -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      -c 'LABEL org.opencontainers.image.source=ndbchaos' - "$tag" >/dev/null
  echo "built $tag in $((SECONDS - start))s"
}

build_toxiproxy() {
  local tag work start
  tag=$(tag_of toxiproxy)
  if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "image $tag present"
    return 0
  fi
  command -v go >/dev/null || { echo "go is missing: the toxiproxy image is built from source (apt-get install golang-go, or a Go toolchain >= 1.22)" >&2; return 1; }
  work=$(mktemp -d /tmp/ndbchaos-toxiproxy.XXXXXX)
  trap 'rm -rf "$work"' RETURN
  start=$SECONDS
  echo "building $tag: go install toxiproxy server $toxiproxy_version (static, CGO_ENABLED=0)..."
  if ! CGO_ENABLED=0 GOBIN="$work/rootfs" GOFLAGS=-buildvcs=false go install -trimpath \
        -ldflags "-s -w -X github.com/Shopify/toxiproxy/v2.Version=${toxiproxy_version#v}" \
        "github.com/Shopify/toxiproxy/v2/cmd/server@$toxiproxy_version" > "$work/go.log" 2>&1; then
    echo "go install of toxiproxy $toxiproxy_version failed; last lines:" >&2
    tail -n 20 "$work/go.log" >&2
    return 1
  fi
  mv "$work/rootfs/server" "$work/rootfs/toxiproxy-server"
  mkdir -p "$work/rootfs/tmp" "$work/rootfs/etc"
  # The image holds the one static binary: nothing to patch, nothing else to attack.
  tar -C "$work/rootfs" -c . | docker import \
      -c 'ENTRYPOINT ["/toxiproxy-server"]' -c 'CMD ["-host=0.0.0.0", "-port=8474"]' -c 'EXPOSE 8474' \
      -c 'LABEL org.opencontainers.image.source=ndbchaos' - "$tag" >/dev/null
  echo "built $tag in $((SECONDS - start))s"
}

case "${1:-all}" in
  --tag) tag_of "$2" ;;
  --check-dist) d=$(mktemp -d /tmp/ndbchaos-check.XXXXXX); trap 'rm -rf "$d"' EXIT
                stage_dist "$d" && echo "NDBCHAOS_NDB_DIST=$NDBCHAOS_NDB_DIST: a MySQL Cluster distribution for $(uname -m)" ;;
  # ndb first: a distribution that cannot be used fails before anything else is built.
  all) if [ -n "${NDBCHAOS_NDB_DIST:-}" ]; then build_ndb; fi
       build_one tools; build_one galera; build_toxiproxy ;;
  galera|tools) build_one "$1" ;;
  toxiproxy) build_toxiproxy ;;
  ndb) build_ndb ;;
  ndbhost) build_ndbhost ;;
  *) echo "usage: $0 [galera|tools|toxiproxy|ndb|ndbhost|all] | --tag NAME | --check-dist" >&2; exit 2 ;;
esac
