#!/usr/bin/env bash
# Builds helm from the Go module proxy (no binary downloads are possible on our machines) in a
# throwaway wrapper module and caches it outside the repository, keyed by version. The chart
# tests (test/integration/chart_test.go) and `make helm` build it.
# Prints the binary's path on its last line of stdout.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v4.3.2}"
CACHE_ROOT="${KONDUCTOR_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/konductor/helm}"
DEST="$CACHE_ROOT/$HELM_VERSION"

if [ -x "$DEST/helm" ]; then
  echo "$DEST/helm"
  exit 0
fi
if [ "${1:-}" = "--cached-only" ]; then
  echo "helm: not built yet in $DEST; run hack/helm.sh" >&2
  exit 1
fi

echo "helm: building helm $HELM_VERSION (about 4 minutes cold on two cores, more while its modules download; later runs reuse $DEST)" >&2
mkdir -p "$DEST"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
go mod init konductor.local/helmwrapper >&2
GOFLAGS=-mod=mod go get "helm.sh/helm/v4/cmd/helm@${HELM_VERSION}" >&2
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=${HELM_VERSION}" \
  -o "$DEST/helm.tmp" helm.sh/helm/v4/cmd/helm >&2
mv "$DEST/helm.tmp" "$DEST/helm"
echo "$DEST/helm"
