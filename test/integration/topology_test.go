package integration

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
)

// freeAddr is a loopback address nothing listens on (for a replica's probe endpoint).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func readyz(addr string) int {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// KIC's sidecar topology: two replicas, each beside its own DB-less Kong, with default flags.
// Leader election is off, as KIC decides it for DB-less gateways, so both Kongs hold the
// configuration, and each replica is ready only once its own Kong took it.
func TestSidecarReplicasEachConfigureTheirOwnKong(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	apps(t, ns, 3)
	kongA, kongB := startEmulator(t, kongemu.DBLess), startEmulator(t, kongemu.DBLess)
	// B's Kong refuses configuration for now (a Kong still starting, say).
	kongB.InjectFault(kongemu.Fault{Method: http.MethodPost, PathPrefix: "/config", Status: http.StatusServiceUnavailable})

	probeA, probeB := freeAddr(t), freeAddr(t)
	a := startReplica(t, replicaSpec{name: "a", namespace: ns, gateways: []string{kongA.URL},
		args: []string{"--health-probe-bind-address", probeA}})
	b := startReplica(t, replicaSpec{name: "b", namespace: ns, gateways: []string{kongB.URL},
		args: []string{"--health-probe-bind-address", probeB}})
	for _, r := range []*replica{a, b} {
		require.True(t, r.logs.contains("leader election decided", "DB-less mode detected"), "%s logs the decision and its reason:\n%s", r.name, r.logs)
	}

	a.waitFirstSync(t, time.Minute)
	require.Len(t, kongA.Entities("routes"), 3)
	require.Eventually(t, func() bool { return readyz(probeA) == http.StatusOK }, 30*time.Second, 20*time.Millisecond, "a: ready once its Kong holds the configuration")
	require.Eventually(t, func() bool { return kongB.RequestCount(http.MethodPost, "/config") > 0 }, 30*time.Second, 20*time.Millisecond,
		"b pushes to its own Kong although a is running (no lease between them)")
	require.Equal(t, http.StatusInternalServerError, readyz(probeB), "b: not ready while its own Kong has not taken the configuration")
	require.Empty(t, kongB.Entities("routes"))

	kongB.ClearFaults()
	b.waitFirstSync(t, time.Minute)
	require.Len(t, kongB.Entities("routes"), 3)
	require.Eventually(t, func() bool { return readyz(probeB) == http.StatusOK }, 30*time.Second, 20*time.Millisecond, "b: ready once its Kong holds the configuration")

	// A change reaches both Kongs.
	createAll(t, app(ns, "late", "late.example.com"))
	for _, k := range []*kongemu.Server{kongA, kongB} {
		require.Eventually(t, func() bool { return len(k.Entities("routes")) == 4 }, 30*time.Second, 20*time.Millisecond,
			fmt.Sprintf("%s holds the new route", k.URL))
	}
}
