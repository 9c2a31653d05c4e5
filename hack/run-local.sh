#!/usr/bin/env bash
# The local environment (`make run`): kube-apiserver + etcd, the Kong Admin API emulator and
# konductor, with examples/ applied. It prints what Kong holds and how long the first sync
# took, then runs until Ctrl-C, which stops everything it started.
#
# Environment:
#   KONG_MODE=dbless|postgres   emulated Kong's storage mode (default dbless)
#   RUN_ONCE=1                  stop everything and exit after printing (tests, CI)
#   KUBECONFIG + KONG_ADMIN_URL both set: no local API server nor emulator; konductor runs
#                               against that cluster and that Kong (examples/ are not applied
#                               unless APPLY_EXAMPLES=1)
#   ELECTION_NAMESPACE          Lease namespace with leader election (default: default)
#   KONDUCTOR_ARGS              more flags for `konductor run`
#   KONDUCTOR_BIN               the binary (default bin/konductor, built if missing)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT="$PWD"
BIN="${KONDUCTOR_BIN:-$ROOT/bin/konductor}"
KONG_MODE="${KONG_MODE:-dbless}"
RUN_ONCE="${RUN_ONCE:-0}"
# Every process started here inherits this variable: the final check looks for it.
export KONDUCTOR_LOCAL_RUN_ID="${KONDUCTOR_LOCAL_RUN_ID:-$$.$RANDOM.$(date +%s%N)}"

say() { printf 'run-local: %s\n' "$*"; }
die() { printf 'run-local: error: %s\n' "$*" >&2; exit 1; }

case "$KONG_MODE" in
  dbless|postgres) ;;
  *) die "KONG_MODE must be dbless or postgres, not '$KONG_MODE'" ;;
esac

WORK="$(mktemp -d "${TMPDIR:-/tmp}/konductor-local.XXXXXX")"
PGIDS=()   # process groups we started, in start order
NAMES=()
KEEP_WORK=0

# Each background job runs in its own process group (set -m), so a stop signal reaches the
# process and every child it started (kube-apiserver and etcd under localenv), and Ctrl-C on
# the terminal reaches this script only, which then stops them in order.
set -m

start_bg() { # name logfile cmd...
  local name="$1" log="$2"; shift 2
  "$@" >"$log" 2>&1 &
  local pid=$!
  PGIDS+=("$pid")
  NAMES+=("$name")
  say "started $name (pid $pid, process group $pid, log $log)"
}

group_alive() { kill -0 -- "-$1" 2>/dev/null; }

stop_group() { # pgid name
  local pgid="$1" name="$2" i
  group_alive "$pgid" || return 0
  kill -TERM -- "-$pgid" 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do # 15 s
    group_alive "$pgid" || return 0
    sleep 0.1
  done
  say "$name did not stop on SIGTERM within 15s; killing it"
  kill -KILL -- "-$pgid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    group_alive "$pgid" || return 0
    sleep 0.1
  done
}

# leftovers prints the pids of live processes that carry our run id, other than this shell
# and the subshell running the check. The scan itself runs without the variable.
leftovers() {
  env -u KONDUCTOR_LOCAL_RUN_ID KLR_ID="$KONDUCTOR_LOCAL_RUN_ID" KLR_SELF="$$" bash -c '
    for f in /proc/[0-9]*/environ; do
      pid=${f#/proc/}; pid=${pid%/environ}
      if [ "$pid" = "$KLR_SELF" ] || [ "$pid" = "$PPID" ]; then continue; fi
      if { tr "\0" "\n" <"$f"; } 2>/dev/null | grep -qxF "KONDUCTOR_LOCAL_RUN_ID=$KLR_ID"; then echo "$pid"; fi
    done'
}

CLEANED=0
cleanup() {
  local rc=$?
  [ "$CLEANED" = 1 ] && return
  CLEANED=1
  trap '' INT TERM
  set +e
  local i
  for ((i = ${#PGIDS[@]} - 1; i >= 0; i--)); do
    stop_group "${PGIDS[$i]}" "${NAMES[$i]}"
  done
  wait 2>/dev/null
  local left=""
  for pg in "${PGIDS[@]}"; do
    group_alive "$pg" && left="$left $pg"
  done
  local strays
  strays="$(leftovers)"
  strays="${strays//$'\n'/ }"
  if [ -n "$left" ] || [ -n "$strays" ]; then
    say "WARNING: still running: process groups [$left ] processes [$strays]"
    rc=1
  else
    say "stopped; nothing left running"
  fi
  if [ "$rc" != 0 ] || [ "$KEEP_WORK" = 1 ]; then
    say "logs kept in $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

show_log() { say "---- $1"; tail -n 40 "$1" | sed 's/^/    /' >&2 || true; }

wait_for() { # seconds description command...
  local secs="$1" what="$2"; shift 2
  local deadline=$((SECONDS + secs))
  local rc
  while :; do
    rc=0
    "$@" || rc=$?
    [ "$rc" = 0 ] && return 0
    if [ "$rc" = 2 ] || ((SECONDS >= deadline)); then
      return 1
    fi
    sleep 0.2
  done
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { # first free port from $1 up
  local p="$1"
  while port_busy "$p"; do p=$((p + 1)); done
  echo "$p"
}

kong_get() { # path
  local hdr=()
  [ -n "${CONTROLLER_KONG_ADMIN_TOKEN:-}" ] && hdr=(-H "Kong-Admin-Token: $CONTROLLER_KONG_ADMIN_TOKEN")
  curl -fsS --max-time 5 "${hdr[@]}" "$KONG$1"
}

if [ ! -x "$BIN" ]; then
  say "building $BIN"
  go build -o "$BIN" ./cmd/konductor
fi
say "building hack/localenv"
go build -o "$WORK/localenv" ./hack/localenv

if [ -n "${KUBECONFIG:-}" ] && [ -n "${KONG_ADMIN_URL:-}" ]; then
  EXTERNAL=1
  KCFG="$KUBECONFIG"
  KONG="${KONG_ADMIN_URL%/}"
  say "KUBECONFIG and KONG_ADMIN_URL are set: running against $KCFG and $KONG (no local API server, no emulator)"
  root="$(kong_get / || true)"
  [ -n "$root" ] || die "Kong Admin API $KONG does not answer GET /"
  if grep -q '"database":"off"' <<<"$root"; then KONG_MODE=dbless; else KONG_MODE=postgres; fi
  say "Kong at $KONG runs with database: $KONG_MODE"
else
  EXTERNAL=0
  say "envtest binaries (built once, about 7 minutes cold; cached afterwards)"
  ASSETS="$(hack/envtest-assets.sh)"
  start_bg "kube-apiserver+etcd" "$WORK/localenv.log" \
    "$WORK/localenv" serve --assets "$ASSETS" --crds "$ROOT/config/crd" --dir "$WORK"
  LOCALENV_PGID="${PGIDS[-1]}"
  KCFG="$WORK/kubeconfig"
  localenv_ready() { [ -s "$KCFG" ] || { group_alive "$LOCALENV_PGID" || return 2; return 1; }; }
  if ! wait_for 120 "the API server" localenv_ready; then
    show_log "$WORK/localenv.log"
    die "kube-apiserver + etcd did not start"
  fi
  say "kube-apiserver ready: $(sed -n 's/^apiserver: //p' "$WORK/localenv.log"), kubeconfig $KCFG"

  KONG_PORT="$(free_port 8001)"
  [ "$KONG_PORT" = 8001 ] || say "port 8001 is busy; the emulator listens on $KONG_PORT"
  KONG="http://127.0.0.1:$KONG_PORT"
  PROXY_PORT="$(free_port 8000)"
  PROXY_TLS_PORT="$(free_port 8443)"
  # The emulator's proxy routes requests with Kong's router over what konductor configured;
  # the examples' pods do not run here, so an in-process echo server answers for each target.
  start_bg "kong-emulator" "$WORK/kongemu.log" \
    "$BIN" kongemu --listen "127.0.0.1:$KONG_PORT" --mode "$KONG_MODE" \
    --proxy-listen "127.0.0.1:$PROXY_PORT" --proxy-listen-tls "127.0.0.1:$PROXY_TLS_PORT" \
    --proxy-backends echo --allow-debug-header
  if ! wait_for 30 "the Kong emulator" kong_get / >/dev/null 2>&1; then
    show_log "$WORK/kongemu.log"
    die "the Kong emulator did not start"
  fi
  say "Kong Admin API emulator ($KONG_MODE) at $KONG"
fi

if [ "$EXTERNAL" = 0 ] || [ "${APPLY_EXAMPLES:-0}" = 1 ]; then
  say "applying examples/"
  if command -v kubectl >/dev/null 2>&1; then
    kubectl --kubeconfig "$KCFG" apply -f examples/ | sed 's/^/    /'
  else
    "$WORK/localenv" apply --kubeconfig "$KCFG" -f examples/ | sed 's/^/    /'
  fi
fi

HEALTH_PORT="$(free_port 10254)"
METRICS_PORT="$(free_port $((HEALTH_PORT + 1)))"
args=(run --kubeconfig "$KCFG" --kong-admin-url "$KONG"
  --election-namespace "${ELECTION_NAMESPACE:-default}"
  --health-probe-bind-address "127.0.0.1:$HEALTH_PORT"
  --metrics-bind-address "127.0.0.1:$METRICS_PORT"
  --log-format json) # this script reads the first sync's line from the JSON log
if [ "$KONG_MODE" = dbless ]; then
  args+=(--leader-elect=false)
fi
# shellcheck disable=SC2206 # word splitting of extra flags is intended
args+=(${KONDUCTOR_ARGS:-})
started=$SECONDS
start_bg "konductor" "$WORK/konductor.log" "$BIN" "${args[@]}"
KONDUCTOR_PGID="${PGIDS[-1]}"
say "konductor ${args[*]}"

synced() {
  grep -q '"first sync completed"' "$WORK/konductor.log" && return 0
  group_alive "$KONDUCTOR_PGID" || return 2
  return 1
}
if ! wait_for 180 "the first sync" synced; then
  show_log "$WORK/konductor.log"
  die "konductor did not complete its first sync"
fi
ready="$(curl -fsS --max-time 5 "http://127.0.0.1:$HEALTH_PORT/readyz" 2>&1 || true)"
line="$(grep '"first sync completed"' "$WORK/konductor.log" | head -n1)"
since="$(sed -n 's/.*"sinceStart":"\([^"]*\)".*/\1/p' <<<"$line")"

echo
echo "==== What Kong holds now ($KONG, $KONG_MODE) ===="
"$WORK/localenv" kong --url "$KONG"
if [ "$KONG_MODE" = dbless ]; then
  echo "(the whole declarative configuration: curl -s $KONG/config)"
fi
if [ "$EXTERNAL" = 0 ]; then
  echo
  echo "==== A request through the proxy ===="
  code="$(curl -s -o "$WORK/proxy-answer.json" -w '%{http_code}' --max-time 5 -H 'Host: echo.example.com' \
    "http://127.0.0.1:$PROXY_PORT/echo/hello" || true)"
  pod="$(sed -n 's/^ *"pod": "\(.*\)",*$/\1/p' "$WORK/proxy-answer.json" 2>/dev/null | head -n1)"
  path="$(sed -n 's/^ *"path": "\(.*\)",*$/\1/p' "$WORK/proxy-answer.json" 2>/dev/null | head -n1)"
  echo "GET http://echo.example.com/echo/hello -> ${code:-no answer}, answered by ${pod:-nobody} with path ${path:-?}"
fi
echo
echo "==== First sync ===="
echo "first sync completed ${since:-?} after the sync loop started (cache sync included); $((SECONDS - started))s after konductor was launched"
echo "readyz: ${ready:-not ready}"
echo
echo "kubectl:    kubectl --kubeconfig $KCFG get ingress -A"
echo "Kong:       curl -s $KONG/routes"
if [ "$EXTERNAL" = 0 ]; then
  echo "proxy:      curl -s -H 'Kong-Debug: 1' -i http://127.0.0.1:$PROXY_PORT/<path>   (https on $PROXY_TLS_PORT; an echo server answers for each target)"
fi
echo "health:     http://127.0.0.1:$HEALTH_PORT/readyz   metrics: http://127.0.0.1:$METRICS_PORT/metrics"
echo "logs:       $WORK/konductor.log"
echo

if [ "$RUN_ONCE" = 1 ]; then
  say "RUN_ONCE=1: stopping"
  exit 0
fi

KEEP_WORK=0
say "running; Ctrl-C stops everything"
# Wait for konductor; a signal interrupts the wait and runs the traps.
set +e
wait "$KONDUCTOR_PGID"
rc=$?
set -e
show_log "$WORK/konductor.log"
KEEP_WORK=1
die "konductor exited on its own (status $rc)"
