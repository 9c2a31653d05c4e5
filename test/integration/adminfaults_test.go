package integration

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
)

// The case (d): a DB-less gateway failing half of its requests with 500 for
// KONDUCTOR_FAULT_SECONDS (3 s in `make test`; `make test-faults` runs the minute) while
// objects change; the changes all reach Kong once it recovers, and Kong
// never holds fewer routes than before. Then a 429 with Retry-After: the configuration is
// sent again no sooner than the gateway asked.
func TestAdminAPIFaultsAreSurvived(t *testing.T) {
	parallel(t)
	ns := newNamespace(t)
	apps(t, ns, 10)
	kong := startEmulator(t, kongemu.DBLess)
	startReplica(t, replicaSpec{name: "r1", namespace: ns, gateways: []string{kong.URL}, args: []string{"--leader-elect=false"}})
	require.Eventually(t, func() bool { return routesOf(kong.Emulator) == 10 }, time.Minute, 20*time.Millisecond)

	// Half of every request fails with 500 while five Ingresses are added. Kong's routes are
	// sampled throughout: they never go below the 10 it held.
	fewest := make(chan int, 1)
	stopSampling := make(chan struct{})
	go func() {
		least := routesOf(kong.Emulator)
		for {
			select {
			case <-stopSampling:
				fewest <- least
				return
			case <-time.After(5 * time.Millisecond):
				least = min(least, routesOf(kong.Emulator))
			}
		}
	}()
	mark := kong.AuditMark()
	kong.InjectFault(kongemu.Fault{Status: 500, Fraction: 0.5})
	for i := 10; i < 15; i++ {
		name := fmt.Sprintf("app-%04d", i)
		createAll(t, app(ns, name, name+".example.com"))
	}
	time.Sleep(faultDuration(t)) // the fault lasts; nothing is measured over it
	kong.ClearFaults()
	require.Eventually(t, func() bool { return routesOf(kong.Emulator) == 15 }, 30*time.Second, 20*time.Millisecond,
		"every change reaches Kong once it recovers")
	close(stopSampling)
	require.Equal(t, 10, <-fewest, "Kong never held fewer routes than before the fault")
	require.NotEmpty(t, kong.FaultHits(), "the fault was hit")
	for _, e := range kong.AuditSince(mark) {
		require.Equal(t, "config", e.Entity, "DB-less: only whole configurations are sent")
	}

	// 429 with Retry-After: 2 on the next POST /config.
	kong.InjectFault(kongemu.Fault{Method: "POST", PathPrefix: "/config", Status: 429, RetryAfter: 2, Count: 1})
	hitsBefore := len(kong.FaultHits())
	mark = kong.AuditMark()
	createAll(t, app(ns, "app-late", "app-late.example.com"))
	require.Eventually(t, func() bool { return routesOf(kong.Emulator) == 16 }, 30*time.Second, 20*time.Millisecond)
	hits := kong.FaultHits()[hitsBefore:]
	require.Len(t, hits, 1)
	require.Equal(t, 429, hits[0].Status)
	var accepted []kongemu.AuditEntry
	for _, e := range kong.AuditSince(mark) {
		if e.Entity == "config" {
			accepted = append(accepted, e)
		}
	}
	require.NotEmpty(t, accepted)
	require.GreaterOrEqual(t, accepted[0].Time.Sub(hits[0].Time), 2*time.Second,
		"the configuration was sent again no sooner than Retry-After")
}

// faultDuration is how long TestAdminAPIFaultsAreSurvived keeps the gateway failing:
// KONDUCTOR_FAULT_SECONDS, default 3.
func faultDuration(t *testing.T) time.Duration {
	v := os.Getenv("KONDUCTOR_FAULT_SECONDS")
	if v == "" {
		return 3 * time.Second
	}
	secs, err := strconv.Atoi(v)
	require.NoError(t, err, "KONDUCTOR_FAULT_SECONDS")
	return time.Duration(secs) * time.Second
}
