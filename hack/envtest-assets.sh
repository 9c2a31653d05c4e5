#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy (no binary downloads are
# possible on our machines) and caches them outside the repository, keyed by version.
# Prints the folder to use as KUBEBUILDER_ASSETS on its last line of stdout.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
CACHE_ROOT="${KONDUCTOR_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/konductor/envtest}"
DEST="$CACHE_ROOT/${K8S_VERSION}-${ETCD_VERSION}"

if [ -x "$DEST/kube-apiserver" ] && [ -x "$DEST/etcd" ]; then
  echo "$DEST"
  exit 0
fi
if [ "${1:-}" = "--cached-only" ]; then
  echo "envtest-assets: not built yet in $DEST; run hack/envtest-assets.sh" >&2
  exit 1
fi

mkdir -p "$DEST"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
staging_version="v0.${K8S_VERSION#v1.}"

log() { echo "envtest-assets: $*" >&2; }

build_etcd() {
  log "building etcd $ETCD_VERSION (under a minute cold)"
  mkdir -p "$work/etcd"
  cd "$work/etcd"
  cat > go.mod <<MOD
module konductor.local/etcdwrapper

go 1.26
MOD
  cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  GOFLAGS=-mod=mod go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
  CGO_ENABLED=0 go build -trimpath \
    -ldflags "-X go.etcd.io/etcd/api/v3/version.GitSHA=konductor" \
    -o "$DEST/etcd.tmp" go.etcd.io/etcd/server/v3 >&2
  mv "$DEST/etcd.tmp" "$DEST/etcd"
}

build_apiserver() {
  log "building kube-apiserver $K8S_VERSION (about 6-7 minutes cold on two cores; later runs reuse $DEST)"
  mkdir -p "$work/k8s"
  cd "$work/k8s"
  cat > go.mod <<MOD
module konductor.local/apiserverwrapper

go 1.26

require k8s.io/kubernetes ${K8S_VERSION}
MOD
  # k8s.io/kubernetes requires its staging modules at v0.0.0; point each at its real tag.
  GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" >"$work/k8s.json"
  kdir="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
  for m in $(sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) v0\.0\.0$#\1#p' "$kdir/go.mod" | sort -u); do
    echo "replace $m => $m ${staging_version}" >> go.mod
  done
  cat > tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
  GOFLAGS=-mod=mod go mod tidy >&2 || true
  GOFLAGS=-mod=mod go get "k8s.io/kubernetes/cmd/kube-apiserver@${K8S_VERSION}" >&2
  ldflags="-X k8s.io/component-base/version.gitVersion=${K8S_VERSION}"
  ldflags="$ldflags -X k8s.io/component-base/version.gitMajor=1"
  ldflags="$ldflags -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
  ldflags="$ldflags -X k8s.io/component-base/version.gitTreeState=clean"
  ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION}"
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" \
    -o "$DEST/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
  mv "$DEST/kube-apiserver.tmp" "$DEST/kube-apiserver"
}

[ -x "$DEST/etcd" ] || build_etcd
[ -x "$DEST/kube-apiserver" ] || build_apiserver
echo "$DEST"
