#!/usr/bin/env bash
# Builds and inspects the container image with buildah: no daemon, no Docker engine.
#
#   scripts/image.sh base                  the local base image (below), made once and cached
#   scripts/image.sh build [--local-base] [--tag T] [-- BUILDAH-BUD-ARGS]
#                                          the Dockerfile, with VERSION, REVISION and CREATED from the repo
#   scripts/image.sh buildah ARGS...       buildah on this project's image storage
#
# Storage: $TOOLS/containers (vfs driver, chroot isolation), so builds neither need nor touch
# the machine's container storage, and the layer cache lives with the other cached tools.
#
# The local base: the Dockerfile's BASE_IMAGE is python:3.11-slim-bookworm pinned by digest,
# which needs a registry. Where none is reachable (CI, this repo's tests), --local-base builds
# FROM localhost/sanlens-base:bookworm instead: Debian bookworm (debootstrap minbase) with
# Debian's CPython 3.11 and venv, i.e. the same Debian release and Python minor version. Its
# rootfs is debootstrapped once (about a minute) into $TOOLS/image/bookworm-rootfs.tar.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOLS=${TOOLS:-$ROOT/.tools}
STORE=$TOOLS/containers
BASE_TAG=localhost/sanlens-base:bookworm
ROOTFS_TAR=$TOOLS/image/bookworm-rootfs.tar
# What the rootfs holds; a change here makes a new tarball.
DEBOOTSTRAP_SUITE=bookworm
DEBOOTSTRAP_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBOOTSTRAP_PACKAGES=python3,python3-venv,python-is-python3,ca-certificates

export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot PATH=$PATH:/usr/sbin:/sbin

log() { printf 'image: %s\n' "$*" >&2; }

bah() {
  buildah --root "$STORE/storage" --runroot "$STORE/run" --storage-driver vfs "$@"
}

need() {
  command -v "$1" >/dev/null 2>&1 || { log "$1 not found: run scripts/install-tools.sh (make tools)"; exit 1; }
}

sudo_if_needed() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Every mount point below $1, deepest first, unmounted (lazily if busy).
unmount_below() {
  local m
  awk -v d="$(realpath "$1")" 'index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    sudo_if_needed umount "$m" 2>/dev/null || sudo_if_needed umount -l "$m"
  done
}

rootfs() {
  local stamp="$DEBOOTSTRAP_SUITE $DEBOOTSTRAP_PACKAGES"
  if [ -s "$ROOTFS_TAR" ] && [ "$(cat "$ROOTFS_TAR.stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  need debootstrap
  mkdir -p "$(dirname "$ROOTFS_TAR")"
  local dir
  dir=$(mktemp -d "$TOOLS/image/rootfs.XXXX")
  log "debootstrap $DEBOOTSTRAP_SUITE ($DEBOOTSTRAP_PACKAGES) from $DEBOOTSTRAP_MIRROR"
  sudo_if_needed debootstrap --variant=minbase --include="$DEBOOTSTRAP_PACKAGES" \
    "$DEBOOTSTRAP_SUITE" "$dir" "$DEBOOTSTRAP_MIRROR" >"$TOOLS/image/debootstrap.log" 2>&1 \
    || { log "debootstrap failed: see $TOOLS/image/debootstrap.log"; unmount_below "$dir"; sudo_if_needed rm -rf "$dir"; exit 1; }
  # debootstrap mounts proc (and on some hosts sys, dev/pts) in the target and does not always
  # unmount them; a live proc in the tarball makes tar fail on vanishing files.
  unmount_below "$dir"
  sudo_if_needed rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/debootstrap
  sudo_if_needed tar -C "$dir" --numeric-owner --one-file-system -cf "$ROOTFS_TAR.tmp" .
  sudo_if_needed rm -rf "$dir"
  mv "$ROOTFS_TAR.tmp" "$ROOTFS_TAR"
  printf '%s\n' "$stamp" >"$ROOTFS_TAR.stamp"
}

base() {
  need buildah
  if bah inspect --type image "$BASE_TAG" >/dev/null 2>&1 \
    && [ "$(bah inspect --type image --format '{{index .ImageAnnotations "io.github.sanlens.rootfs"}}' "$BASE_TAG" 2>/dev/null)" = "$(cat "$ROOTFS_TAR.stamp" 2>/dev/null)" ]; then
    log "$BASE_TAG present"
    return 0
  fi
  rootfs
  log "importing $ROOTFS_TAR as $BASE_TAG"
  local c
  c=$(bah from scratch)
  bah add "$c" "$ROOTFS_TAR" / >/dev/null
  bah config --env LANG=C.UTF-8 \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --annotation "io.github.sanlens.rootfs=$(cat "$ROOTFS_TAR.stamp")" \
    --cmd python3 "$c"
  bah commit --rm --quiet "$c" "$BASE_TAG" >/dev/null
}

build() {
  local tag=localhost/sanlens:dev base_arg=()
  while [ $# -gt 0 ]; do
    case $1 in
      --local-base) base; base_arg=(--build-arg "BASE_IMAGE=$BASE_TAG"); shift ;;
      --tag) tag=$2; shift 2 ;;
      --) shift; break ;;
      *) log "unknown argument $1"; exit 2 ;;
    esac
  done
  need buildah
  local version revision created
  version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/pyproject.toml" | head -1)
  revision=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
  # the commit's time, not the clock's: the same commit gives the same label
  created=$(TZ=UTC git -C "$ROOT" log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null || echo 1970-01-01T00:00:00Z)
  # Behind a TLS-inspecting proxy the builder's pip trusts an extra CA ($PIP_CERT, else
  # $REQUESTS_CA_BUNDLE or $SSL_CERT_FILE): the RUN steps get the same bundle and a pip.conf
  # naming it, as read-only mounts that no layer keeps. The hashes of requirements/ decide
  # what is installed whichever CA the connection went through.
  local trust=() bundle=${PIP_CERT:-${REQUESTS_CA_BUNDLE:-${SSL_CERT_FILE:-}}}
  if [ -n "$bundle" ] && [ -f "$bundle" ]; then
    mkdir -p "$TOOLS/image"
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$TOOLS/image/pip.conf"
    trust=(--volume "$bundle:/etc/ssl/certs/ca-certificates.crt:ro" --volume "$TOOLS/image/pip.conf:/etc/pip.conf:ro")
    log "RUN steps trust the CA bundle $bundle"
  fi
  log "building $tag (VERSION=$version REVISION=$revision CREATED=$created)"
  # docker format: the OCI image config has no HEALTHCHECK. No --layers: with vfs storage every
  # cached step is a full copy of the rootfs, slower than running the steps again.
  bah bud --format docker --isolation chroot --network host \
    --build-arg "VERSION=$version" --build-arg "REVISION=$revision" --build-arg "CREATED=$created" \
    "${base_arg[@]}" "${trust[@]}" --tag "$tag" --file "$ROOT/Dockerfile" "$@" "$ROOT"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
  base) base ;;
  build) build "$@" ;;
  buildah) bah "$@" ;;
  *) sed -n '2,9s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
