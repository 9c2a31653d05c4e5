package dataplane

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/kong/go-database-reconciler/pkg/file"
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

// countedGateway is a DetectingGateway of a Kong emulator of opts, its GET / counted.
func countedGateway(t *testing.T, opts kongemu.Options) (*kongemu.Server, *DetectingGateway, *rootCounter) {
	t.Helper()
	s, err := kongemu.New(opts).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	c, counter := countingClient(t, s.URL)
	return s, NewDetectingGateway(s.URL, c, nil, logr.Discard()), counter
}

// Detect, called while the cache syncs, asks GET / so that the first Sync does not; the first
// Sync still checks the target against the answer's router and reports the router.
func TestDetectBeforeTheFirstSyncAsksOnce(t *testing.T) {
	ctx := context.Background()
	_, g, counter := countedGateway(t, kongemu.Options{RouterFlavor: kongemu.RouterTraditionalCompatible})
	g.Flavors = NewRouterFlavors(nil)
	g.Flavors.Report("http://other", "expressions") // what another gateway said

	root, err := g.Detect(ctx)
	require.NoError(t, err)
	require.Equal(t, "traditional_compatible", root.RouterFlavor)
	require.Equal(t, int32(1), counter.n.Load())
	require.False(t, g.Flavors.Expressions(), "the router is reported at once, for the first round's translation")
	again, err := g.Detect(ctx)
	require.NoError(t, err)
	require.Equal(t, root, again, "the same answer")
	require.Equal(t, int32(1), counter.n.Load(), "asked once")

	// The target was rendered for the expressions router, which this gateway does not run:
	// the first Sync refuses it, on Detect's answer, and reports the router so that the next
	// round renders for it.
	expressionRoute := &kongstate.State{Services: []*file.FService{{Service: kong.Service{Name: kong.String("s"), Host: kong.String("h")},
		Routes: []*file.FRoute{{Route: kong.Route{Name: kong.String("r"), Expression: kong.String(`http.path == "/"`)}}}}}}
	require.ErrorContains(t, g.Sync(ctx, &Target{State: expressionRoute}), "rendered again")
	require.Equal(t, int32(1), counter.n.Load(), "the first Sync took Detect's answer")
	require.False(t, g.Flavors.Expressions())
	require.NoError(t, g.Sync(ctx, &Target{State: &kongstate.State{}}))
	require.Equal(t, ProtocolDBLess, g.Protocol())
	require.Equal(t, int32(2), counter.n.Load(), "a refused first Sync leaves the next one to ask")
}

// The router a gateway said at Detect is the first round's: an expressions Kong given by
// --kong-admin-url gets KIC's expressions in its first push (review: before, the first round
// rendered traditional fields, which Kong 3.7+ takes under that router, pushed them, and
// pushed the expressions a round later).
func TestDetectTellsTheFirstRoundTheRouter(t *testing.T) {
	ctx := context.Background()
	_, g, _ := countedGateway(t, kongemu.Options{RouterFlavor: kongemu.RouterExpressions})
	rounds := 0
	g.Flavors = NewRouterFlavors(func() { rounds++ })
	require.False(t, g.Flavors.Expressions())
	_, err := g.Detect(ctx)
	require.NoError(t, err)
	require.True(t, g.Flavors.Expressions(), "the first round renders for the expressions router")
	require.Equal(t, 1, rounds)
}

// A Detect that failed leaves the question to the first Sync, which asks again.
func TestDetectFailureIsAskedAgainBySync(t *testing.T) {
	ctx := context.Background()
	s, g, counter := countedGateway(t, kongemu.Options{})

	s.InjectFault(kongemu.Fault{Method: http.MethodGet, Status: http.StatusServiceUnavailable})
	_, err := g.Detect(ctx)
	require.Error(t, err)
	s.ClearFaults()
	require.NoError(t, g.Sync(ctx, &Target{State: &kongstate.State{}}))
	require.Equal(t, ProtocolDBLess, g.Protocol())
	require.Equal(t, int32(2), counter.n.Load())
}

// An answer handed over (DecideLeaderElection asked GET / before the gateway was made) is
// what Detect returns and the first Sync takes: the gateway is not asked again.
func TestAnsweredGatewayIsNotAskedAgain(t *testing.T) {
	ctx := context.Background()
	_, g, counter := countedGateway(t, kongemu.Options{})
	g.Answered(Root{RouterFlavor: "traditional_compatible"})
	root, err := g.Detect(ctx)
	require.NoError(t, err)
	require.Equal(t, Root{RouterFlavor: "traditional_compatible"}, *root)
	require.NoError(t, g.Sync(ctx, &Target{State: &kongstate.State{}}))
	require.Equal(t, ProtocolDBLess, g.Protocol())
	require.Equal(t, int32(0), counter.n.Load())
	root, err = g.Detect(ctx)
	require.NoError(t, err)
	require.Nil(t, root, "the mode is known: nothing to ask")
}

// A gateway's edition recorded from the start's GET / (RecordRoot) is not asked again by
// the first round; a failed start leaves the question to the round, which asks at once.
func TestRecordRootSparesTheFirstRoundItsQuestion(t *testing.T) {
	ctx := context.Background()
	s, err := kongemu.New(kongemu.Options{Edition: kongemu.Enterprise}).Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	c, counter := countingClient(t, s.URL)
	f := NewGatewayFacts(func() []*kong.Client { return []*kong.Client{c} })
	f.RecordRoot(c.BaseRootURL(), Root{Enterprise: true})
	ee, _ := f.Learn(ctx, nil)
	require.True(t, ee)
	require.Equal(t, int32(0), counter.n.Load())

	f = NewGatewayFacts(func() []*kong.Client { return []*kong.Client{c} })
	ee, _ = f.Learn(ctx, nil)
	require.True(t, ee, "asked by the round")
	require.Equal(t, int32(1), counter.n.Load())
}

// Learn asks the gateways without holding GatewayFacts' lock: a gateway slow to answer does
// not hold up RecordRoot or another Learn.
func TestLearnDoesNotHoldTheLockWhileAsking(t *testing.T) {
	asked, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			close(asked)
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"version":"3.9.0","configuration":{"database":"off"}}`))
	}))
	t.Cleanup(srv.Close)
	c, err := kong.NewClient(kong.String(srv.URL), srv.Client())
	require.NoError(t, err)
	f := NewGatewayFacts(func() []*kong.Client { return []*kong.Client{c} })
	done := make(chan bool)
	go func() {
		ee, _ := f.Learn(context.Background(), nil)
		done <- ee
	}()
	<-asked
	locked := f.mu.TryLock()
	if locked {
		f.mu.Unlock()
	}
	close(release)
	require.False(t, <-done)
	require.True(t, locked, "GatewayFacts.mu held while GET / was asked")
}

// The mode a GET / said (Detect's, Answered's) is known before the first Sync detects it, for
// the loop to tell a first sync by diff as it starts (SyncsByDiff), and stays known after
// that Sync took the answer.
func TestDetectingGatewayKnowsItsDatabaseBeforeItsFirstSync(t *testing.T) {
	ctx := context.Background()
	_, g, _ := countedGateway(t, kongemu.Options{})
	db, known := g.Database()
	require.False(t, known, "nothing asked yet")
	require.False(t, db)
	_, err := g.Detect(ctx)
	require.NoError(t, err)
	db, known = g.Database()
	require.True(t, known)
	require.False(t, db, "a DB-less emulator")
	require.False(t, SyncsByDiff(g))
	require.NoError(t, g.Sync(ctx, &Target{State: &kongstate.State{}}))
	db, known = g.Database()
	require.True(t, known, "kept after the first Sync took the answer")
	require.False(t, db)

	_, answered, _ := countedGateway(t, kongemu.Options{})
	answered.Answered(Root{Database: true})
	db, known = answered.Database()
	require.True(t, known)
	require.True(t, db)
	require.True(t, SyncsByDiff(answered), "a database-backed gateway syncs by diff, known before its first Sync")
}
