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
#   cluster/images/build.sh [galera|tools|toxiproxy|all]   build what is missing
#   cluster/images/build.sh --tag NAME                     print the tag the recipe gives NAME
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
    *) echo "unknown image '$1' (expected galera, tools or toxiproxy)" >&2; return 2 ;;
  esac
}

tag_of() {
  local name=$1 hash builder=build_one
  [ "$name" = toxiproxy ] && builder=build_toxiproxy
  hash=$( { declare -f "$builder"; packages "$name"; } | sha256sum | cut -c1-12)
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
  all) build_one tools; build_one galera; build_toxiproxy ;;
  galera|tools) build_one "$1" ;;
  toxiproxy) build_toxiproxy ;;
  *) echo "usage: $0 [galera|tools|toxiproxy|all] | --tag NAME" >&2; exit 2 ;;
esac
