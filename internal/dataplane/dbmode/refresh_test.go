package dbmode

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
)

// waitListed waits for the listing of Kong in the background to end (refresh.go).
func waitListed(t *testing.T, g *Gateway) {
	t.Helper()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return !g.refreshing
	}, 20*time.Second, 5*time.Millisecond)
}

// knownDumped is when the dump the known state counts as grown from was taken; zero when
// nothing is known.
func knownDumped(g *Gateway) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.known == nil {
		return time.Time{}
	}
	return g.known.dumped
}

// Issue #45: the periodic listing of Kong does not hold a change. Once the known state is
// DumpInterval old, a change is synced against it and Kong is listed in the background
// after it; a change made while the listing runs (Kong answering each list slowly) is synced
// at once against the known state, and reaches Kong before the listing ends. A listing that
// a sync wrote under is thrown away; one with no write under it that matches the known state
// renews it, without any sync listing Kong.
func TestPeriodicListingDoesNotHoldAChange(t *testing.T) {
	e, g := newKong(t, knownOpts)
	as := apps(10)
	_, _ = syncCounted(t, e, g, translate(t, objects(as...)))
	var now atomic.Pointer[time.Time]
	later := time.Now().Add(time.Hour + time.Minute)
	now.Store(&later)
	g.now = func() time.Time { return *now.Load() }
	dumpedBefore := knownDumped(g)

	// Each list of the upstreams' targets (one per upstream) waits 100 ms: the listing
	// takes at least a second.
	e.InjectFault(kongemu.Fault{Method: http.MethodGet, PathPrefix: "/upstreams/", Latency: 100 * time.Millisecond})
	as[1].path = "/one"
	res, _ := syncCounted(t, e, g, translate(t, objects(as...)))
	require.True(t, res.Known)
	require.Eventually(t, func() bool { return len(e.FaultHits()) > 0 }, 5*time.Second, time.Millisecond, "the listing began")

	as[2].path = "/two"
	res, _ = syncCounted(t, e, g, translate(t, objects(as...)))
	require.True(t, res.Known, "the change went against the known state, without listing Kong")
	require.Equal(t, []any{"/two/", "~/two$"}, routePaths(t, e.Entity("routes", routeName(as[2]))))
	g.mu.Lock()
	running := g.refreshing
	g.mu.Unlock()
	require.True(t, running, "the change reached Kong while the listing ran")

	waitListed(t, g)
	require.Equal(t, dumpedBefore, knownDumped(g), "a sync wrote under the listing: it was thrown away")

	// A sync that writes nothing lists again after it; nothing writes under that listing,
	// and Kong holds what is known: the known state is renewed.
	e.ClearFaults()
	res, _ = syncCounted(t, e, g, translate(t, objects(as...)))
	require.True(t, res.Known)
	require.Zero(t, res.Total())
	waitListed(t, g)
	require.Equal(t, later, knownDumped(g), "the listing confirmed the known state")
	res, gets := syncCounted(t, e, g, translate(t, objects(as...)))
	require.True(t, res.Known)
	require.Equal(t, 1, gets, "GET / only: no listing after one that confirmed the known state")
}

// The listing and its diff run beside syncs that write into the known state (go-memdb:
// readers see a snapshot); a listing that syncs wrote under renews nothing. Run with -race.
func TestPeriodicListingBesideWritingSyncs(t *testing.T) {
	e, g := newKong(t, knownOpts)
	as := apps(30)
	_, _ = syncCounted(t, e, g, translate(t, objects(as...)))
	dumpedBefore := knownDumped(g)
	// Each list of an upstream's targets waits 50 ms: the listing outlasts the syncs' first
	// writes, and its diff may run beside the later ones.
	e.InjectFault(kongemu.Fault{Method: http.MethodGet, PathPrefix: "/upstreams/", Latency: 50 * time.Millisecond})
	for round := range 5 {
		g.mu.Lock()
		k, writes := g.known, g.writes
		g.refreshing = true
		g.mu.Unlock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.refresh(k.version, k.enterprise, writes)
		}()
		for i := range 3 {
			as[i].path = fmt.Sprintf("/r%d-%d", round, i)
			res, _ := syncCounted(t, e, g, translate(t, objects(as...)))
			require.True(t, res.Known)
		}
		<-done
		require.Equal(t, dumpedBefore, knownDumped(g), "syncs wrote under the listing")
	}
	requireHoldsExactly(t, g, translate(t, objects(as...)))
}
