#!/usr/bin/env bash
# Runs the integration tests (a real kube-apiserver + etcd) verbosely and prints one line per
# test, so a log shows which ran and none was skipped; the whole output only when one failed.
set -uo pipefail
cd "$(dirname "$0")/.."
assets="$(hack/envtest-assets.sh)" || exit 1
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
KUBEBUILDER_ASSETS="$assets" ${GO:-go} test -race -timeout 40m -parallel 6 -v "$@" ./test/integration/... >"$log" 2>&1
status=$?
# The Gateway API conformance suite once more under Kong's expressions router, whose class
# declares two more features (docs/gateway-api.md, "Conformance"); its lines are marked.
if [ "$status" -eq 0 ] && [ "$#" -eq 0 ]; then
  explog="$(mktemp)"
  KONDUCTOR_CONFORMANCE_ROUTER=expressions KUBEBUILDER_ASSETS="$assets" ${GO:-go} test -race -timeout 20m -v \
    -run '^TestGatewayAPIConformance$' ./test/integration/ >"$explog" 2>&1
  status=$?
  sed -E 's/^(--- (PASS|FAIL|SKIP): TestGatewayAPIConformance)/\1 (expressions router)/' "$explog" >>"$log"
  rm -f "$explog"
fi
if [ "$status" -ne 0 ]; then
  echo "== integration tests failed; full output:"
  cat "$log"
fi
grep -E '^(--- (PASS|FAIL|SKIP)|ok |FAIL|panic:)' "$log"
passed=$(grep -c '^--- PASS' "$log")
failed=$(grep -c '^--- FAIL' "$log")
skipped=$(grep -c '^--- SKIP' "$log")
echo "integration: $passed passed, $failed failed, $skipped skipped"
exit "$status"
