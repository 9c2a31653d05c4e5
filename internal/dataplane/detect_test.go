package dataplane

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/kong/go-kong/kong"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
)

// rootCounter counts the GET / requests that pass through it.
type rootCounter struct {
	next http.RoundTripper
	n    atomic.Int32
}

func (c *rootCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Path == "/" {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

func countingClient(t *testing.T, url string) (*kong.Client, *rootCounter) {
	t.Helper()
	counter := &rootCounter{next: http.DefaultTransport}
	c, err := kong.NewClient(kong.String(url), &http.Client{Transport: counter})
	require.NoError(t, err)
	return c, counter
}

// Detect, called while the cache syncs, asks GET / so that the first Sync does not; the first
// Sync still checks the target's router against the answer.
func TestDetectBeforeTheFirstSyncAsksOnce(t *testing.T) {
	ctx := context.Background()
	s, err := kongemu.New(kongemu.Options{RouterFlavor: kongemu.RouterExpressions}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	c, counter := countingClient(t, s.URL)
	g := NewDetectingGateway(s.URL, c, nil, logr.Discard())
	g.Flavors = NewRouterFlavors(nil)

	require.NoError(t, g.Detect(ctx))
	require.Equal(t, int32(1), counter.n.Load())
	require.False(t, g.Flavors.Expressions(), "the router is reported by the first Sync, against its target")
	require.NoError(t, g.Detect(ctx))
	require.Equal(t, int32(1), counter.n.Load(), "asked once")

	// The target was rendered for the traditional router: the first Sync refuses it, on
	// Detect's answer, and reports the router so that the next round renders for it.
	require.ErrorContains(t, g.Sync(ctx, &Target{State: &kongstate.State{}}), "rendered again")
	require.Equal(t, int32(1), counter.n.Load(), "the first Sync took Detect's answer")
	require.True(t, g.Flavors.Expressions())
	require.NoError(t, g.Sync(ctx, &Target{State: &kongstate.State{}}))
	require.Equal(t, ProtocolDBLess, g.Protocol())
	require.Equal(t, int32(2), counter.n.Load(), "a refused first Sync leaves the next one to ask")
}

// A Detect that failed leaves the question to the first Sync, which asks again.
func TestDetectFailureIsAskedAgainBySync(t *testing.T) {
	ctx := context.Background()
	s, err := kongemu.New(kongemu.Options{}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	c, counter := countingClient(t, s.URL)
	g := NewDetectingGateway(s.URL, c, nil, logr.Discard())

	s.InjectFault(kongemu.Fault{Method: http.MethodGet, Status: http.StatusServiceUnavailable})
	require.Error(t, g.Detect(ctx))
	s.ClearFaults()
	require.NoError(t, g.Sync(ctx, &Target{State: &kongstate.State{}}))
	require.Equal(t, ProtocolDBLess, g.Protocol())
	require.Equal(t, int32(2), counter.n.Load())
}

// AskEditions, called while the cache syncs, does not record a failure: the first round asks
// again at once instead of waiting RetryAfter.
func TestAskEditionsLeavesAFailureToTheFirstRound(t *testing.T) {
	ctx := context.Background()
	f, servers := factsFor(t, kongemu.Enterprise)
	servers[0].InjectFault(kongemu.Fault{Method: http.MethodGet, Status: http.StatusServiceUnavailable})
	f.AskEditions(ctx)
	servers[0].ClearFaults()
	ee, _ := f.Learn(ctx, nil)
	require.True(t, ee, "asked again by the round")

	f, _ = factsFor(t, kongemu.Enterprise)
	f.AskEditions(ctx)
	ee, _ = f.Learn(ctx, nil)
	require.True(t, ee, "answered before the round")
}
