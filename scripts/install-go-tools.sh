#!/usr/bin/env bash
# Builds the Go tools the Helm chart tests run, pinned, from the Go module proxy:
#   helm, the helm-unittest plugin, kubeconform, and the prometheus-operator
#   module (its CRDs become offline JSON Schemas for kubeconform).
# Usage: scripts/install-go-tools.sh DIR   -> DIR/bin, DIR/helm-plugins, DIR/go
# Idempotent: a tool whose pinned version is already present is skipped.
set -euo pipefail

HELM_VERSION=v3.22.0
HELM_UNITTEST_VERSION=v1.1.2
KUBECONFORM_VERSION=v0.8.0
PROM_OPERATOR_VERSION=v0.85.0

TOOLS=$(mkdir -p "${1:-$(pwd)/.tools}" && cd "${1:-$(pwd)/.tools}" && pwd)
BIN=$TOOLS/bin
mkdir -p "$BIN"

export PATH=/usr/local/go/bin:$PATH
export GOPATH=$TOOLS/go GOMODCACHE=$TOOLS/go/mod GOCACHE=$TOOLS/go/cache
# -modcacherw: a module cache that `make clean` (rm -rf .tools) can delete without root.
export GOFLAGS="-mod=mod -modcacherw" GOTOOLCHAIN=local CGO_ENABLED=0

log() { printf 'install-go-tools: %s\n' "$*" >&2; }

command -v go >/dev/null 2>&1 || { log "go not found (expected /usr/local/go/bin/go)"; exit 1; }
rm -rf "$TOOLS"/build-*  # leftovers of an interrupted build

# build NAME MODULE VERSION PACKAGE LDFLAGS: go build PACKAGE from MODULE@VERSION in a
# throwaway module. Plain `go install pkg@v` refuses modules with replace directives,
# so the tool's own single-line replaces are copied into the throwaway go.mod.
build() {
  local name=$1 module=$2 version=$3 pkg=$4 dir src
  dir=$(mktemp -d "$TOOLS/build-$name.XXXX")
  log "building $name $version ($module)"
  (
    cd "$dir"
    go mod init "sanlens-tools/$name" >/dev/null 2>&1
    src=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    sed -n 's/^replace[[:space:]]\+\([^ ]\+\) \([^ ]\+\) => \([^ ]\+\) \([^ ]\+\)$/\1@\2=\3@\4/p' "$src/go.mod" |
      while read -r r; do go mod edit -replace "$r"; done
    go get "$module@$version" >/dev/null
    local ldflags="-s -w $5"
    if [ "$name" = helm ]; then
      # helm's Makefile derives the default Kubernetes version from client-go (v0.N -> 1.N).
      local minor
      minor=$(go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
      for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
        ldflags="$ldflags -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
      done
    fi
    go build -trimpath -ldflags "$ldflags" -o "$BIN/$name.tmp" "$pkg"
  )
  mv "$BIN/$name.tmp" "$BIN/$name"
  rm -rf "$dir"
}

stamp_ok() { [ -x "$BIN/$1" ] && [ "$(cat "$BIN/.$1.version" 2>/dev/null)" = "$2" ]; }
stamp() { printf '%s\n' "$2" >"$BIN/.$1.version"; }

# helm: the version is injected the way helm's own Makefile does.
if stamp_ok helm "$HELM_VERSION"; then
  log "helm $HELM_VERSION present"
else
  build helm helm.sh/helm/v3 "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
    "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  stamp helm "$HELM_VERSION"
fi

if stamp_ok kubeconform "$KUBECONFORM_VERSION"; then
  log "kubeconform $KUBECONFORM_VERSION present"
else
  build kubeconform github.com/yannh/kubeconform "$KUBECONFORM_VERSION" \
    github.com/yannh/kubeconform/cmd/kubeconform "-X main.version=$KUBECONFORM_VERSION"
  stamp kubeconform "$KUBECONFORM_VERSION"
fi

# helm-unittest: a helm plugin = a directory holding plugin.yaml and the binary.
PLUGIN=$TOOLS/helm-plugins/helm-unittest
if stamp_ok helm-unittest "$HELM_UNITTEST_VERSION" && [ -f "$PLUGIN/plugin.yaml" ]; then
  log "helm-unittest $HELM_UNITTEST_VERSION present"
else
  build helm-unittest github.com/helm-unittest/helm-unittest "$HELM_UNITTEST_VERSION" \
    github.com/helm-unittest/helm-unittest/cmd/helm-unittest ""
  mkdir -p "$PLUGIN"
  cp "$BIN/helm-unittest" "$PLUGIN/untt"
  cat >"$PLUGIN/plugin.yaml" <<EOF
name: "unittest"
version: "${HELM_UNITTEST_VERSION#v}"
usage: "unit test helm charts"
description: "helm-unittest, built from source by scripts/install-go-tools.sh"
ignoreFlags: false
platformCommand:
  - command: "\$HELM_PLUGIN_DIR/untt"
EOF
  stamp helm-unittest "$HELM_UNITTEST_VERSION"
fi

# prometheus-operator CRDs (ServiceMonitor, PrometheusRule) for offline schema checks.
CRDS=$TOOLS/crds/prometheus-operator
if [ "$(cat "$CRDS/.version" 2>/dev/null)" = "$PROM_OPERATOR_VERSION" ]; then
  log "prometheus-operator CRDs $PROM_OPERATOR_VERSION present"
else
  log "downloading prometheus-operator $PROM_OPERATOR_VERSION CRDs"
  dir=$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROM_OPERATOR_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  rm -rf "$CRDS" && mkdir -p "$CRDS"
  cp "$dir"/example/prometheus-operator-crd/*.yaml "$CRDS/"
  printf '%s\n' "$PROM_OPERATOR_VERSION" >"$CRDS/.version"
fi

log "go tools ready: $("$BIN/helm" version --short), kubeconform $("$BIN/kubeconform" -v), helm-unittest $HELM_UNITTEST_VERSION"
