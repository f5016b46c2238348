#!/usr/bin/env bash
# Builds the framework's local images from Debian packages (no registry needed):
#   debootstrap --variant=minbase bookworm ROOTFS, then `tar | docker import`.
# Each image is tagged with a content hash of its recipe (this file + the package list), so an
# image is rebuilt exactly when its recipe changes and reused otherwise.
#
#   cluster/images/build.sh [galera|tools|all]      build what is missing
#   cluster/images/build.sh --tag NAME              print the tag the recipe gives NAME
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mirror=${NDBCHAOS_DEBIAN_MIRROR:-http://deb.debian.org/debian}

packages() {
  case "$1" in
    # mariadb-server pulls galera-4, rsync, socat, iproute2, procps (SST and ss/ps for probes).
    galera) echo "mariadb-server,mariadb-client,galera-4,galera-arbitrator-4,iproute2,iptables,procps,netcat-openbsd,ca-certificates" ;;
    # The fault helper: joins a target's network namespace; needs iptables, ip/tc and a TCP probe.
    tools)  echo "iptables,iproute2,netcat-openbsd,procps" ;;
    *) echo "unknown image '$1' (expected galera or tools)" >&2; return 2 ;;
  esac
}

tag_of() {
  local name=$1 hash
  hash=$( { cat "$here/build.sh"; packages "$name"; } | sha256sum | cut -c1-12)
  echo "ndbchaos/$name:$hash"
}

build_one() {
  local name=$1 tag rootfs start
  tag=$(tag_of "$name")
  if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "image $tag present"
    return 0
  fi
  command -v debootstrap >/dev/null || { echo "debootstrap is missing (apt-get install debootstrap)" >&2; return 1; }
  rootfs=$(mktemp -d /tmp/ndbchaos-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' RETURN
  start=$SECONDS
  echo "building $tag from Debian packages (debootstrap, about a minute)..."
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
  # Trim what a container never needs.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
         "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
  tar -C "$rootfs" -c . | docker import \
      -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      -c 'LABEL org.opencontainers.image.source=ndbchaos' - "$tag" >/dev/null
  echo "built $tag in $((SECONDS - start))s"
}

case "${1:-all}" in
  --tag) tag_of "$2" ;;
  all) build_one tools; build_one galera ;;
  galera|tools) build_one "$1" ;;
  *) echo "usage: $0 [galera|tools|all] | --tag NAME" >&2; exit 2 ;;
esac
