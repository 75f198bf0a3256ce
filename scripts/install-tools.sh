#!/usr/bin/env bash
# Installs the external tools the tests run for real, pinned, idempotently.
# Debian packages: prometheus (promtool), prometheus-alertmanager (amtool), chromium (the report's browser test),
# buildah and debootstrap (the container image, built and run without a daemon: scripts/image.sh).
# The image's local base (a debootstrapped Debian bookworm + CPython 3.11) is made once under $TOOLS/image.
# Go tools (helm, helm-unittest, kubeconform) build into $TOOLS/bin from the Go module proxy.
set -euo pipefail
TOOLS=${1:-$(pwd)/.tools}
mkdir -p "$TOOLS/bin"

log() { printf 'install-tools: %s\n' "$*" >&2; }

apt_install() {
  local missing=()
  command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  { command -v alertmanager || command -v prometheus-alertmanager; } >/dev/null 2>&1 && command -v amtool >/dev/null 2>&1 || missing+=(prometheus-alertmanager)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v buildah >/dev/null 2>&1 || missing+=(buildah)
  # debian-archive-keyring: debootstrap checks the bookworm Release signature (not preinstalled on Ubuntu)
  { command -v debootstrap || PATH=$PATH:/usr/sbin command -v debootstrap; } >/dev/null 2>&1 \
    && [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debootstrap debian-archive-keyring)
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  log "apt-get install ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
    || { $sudo apt-get update -q >/dev/null && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
  # The Debian packages start services; the tests run their own instances on free ports.
  for svc in prometheus prometheus-alertmanager; do
    $sudo systemctl stop "$svc" >/dev/null 2>&1 || $sudo service "$svc" stop >/dev/null 2>&1 || true
  done
}

apt_install

# The container image's base for builds without a registry (cached; about a minute the first time).
TOOLS="$TOOLS" PATH=$PATH:/usr/sbin "$(dirname "$0")/image.sh" base

# Go-built tools: see scripts/install-go-tools.sh (owned by the Helm chart work).
if [ -x "$(dirname "$0")/install-go-tools.sh" ]; then
  "$(dirname "$0")/install-go-tools.sh" "$TOOLS"
fi
log "tools ready in $TOOLS"
