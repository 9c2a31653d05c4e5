package manager

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/konductor/konductor/internal/config"
	"github.com/konductor/konductor/internal/dataplane"
	"github.com/konductor/konductor/internal/kongemu"
	"github.com/konductor/konductor/internal/kongstate"
)

// countedKong is a DB-less Kong emulator behind a proxy that counts its GET / requests.
func countedKong(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	target, err := url.Parse(kongURL(t, kongemu.DBLess))
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var roots atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/" {
			roots.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &roots
}

// From the controller's start to its first push, each gateway is asked GET / once: whether
// leader election is decided by asking (DecideLeaderElection) or set (then Start checks that
// no gateway has a database), the same answer serves the gateway's mode and router (its first
// Sync) and its edition (the first round's translation options).
func TestStartAsksEachGatewayRootOnce(t *testing.T) {
	for _, election := range []string{"--leader-elect=false", ""} {
		t.Run("election "+election, func(t *testing.T) {
			ctx := context.Background()
			a, rootsA := countedKong(t)
			b, rootsB := countedKong(t)
			args := []string{"--kong-admin-url", a + "," + b}
			if election != "" {
				args = append(args, election)
			}
			c := controllerForStart(t, ctx, parse(t, args...))
			require.NoError(t, c.askGatewaysAtStart(ctx))
			// The first round: its translation options, then the push to each gateway.
			_, _ = c.facts.Learn(ctx, nil)
			for _, g := range c.gateways {
				require.NoError(t, g.Sync(ctx, &dataplane.Target{State: &kongstate.State{}}))
			}
			require.Equal(t, int32(1), rootsA.Load(), "GET / of %s", a)
			require.Equal(t, int32(1), rootsB.Load(), "GET / of %s", b)
		})
	}
}

// controllerForStart is the part of New that the start's questions to the gateways use.
func controllerForStart(t *testing.T, ctx context.Context, cfg *config.Config) *Controller {
	t.Helper()
	log := logr.Discard()
	election, err := DecideLeaderElection(ctx, cfg, log)
	require.NoError(t, err)
	decided := *cfg
	decided.LeaderElect, decided.LeaderElectAuto = election.Enabled, false
	gateways, err := buildGateways(&decided, nil, dataplane.NewRouterFlavors(nil), election.Roots, log)
	require.NoError(t, err)
	clients, err := gatewaySchemas(&decided, gateways, nil)
	require.NoError(t, err)
	return &Controller{cfg: &decided, election: election, log: log, gateways: gateways, facts: dataplane.NewGatewayFacts(clients)}
}

// A gateway whose first Sync came before the start's questions (it asked GET / itself) is
// not asked again, and counts as the DB-less gateway it synced as, not as one that did not
// answer.
func TestStartAfterTheFirstSyncAsksNothing(t *testing.T) {
	ctx := context.Background()
	a, roots := countedKong(t)
	c := controllerForStart(t, ctx, parse(t, "--kong-admin-url", a, "--leader-elect=false"))
	require.NoError(t, c.gateways[0].Sync(ctx, &dataplane.Target{State: &kongstate.State{}}))
	got, ok := c.askGateways(ctx)[a]
	require.True(t, ok, "the gateway's answer is its first Sync's")
	require.Equal(t, rootAnswer{root: dataplane.Root{Database: false}}, got)
	require.NoError(t, c.askGatewaysAtStart(ctx))
	require.Equal(t, int32(1), roots.Load())
}
